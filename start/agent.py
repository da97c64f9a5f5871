"""The agent command template becomes argv and environment; values never pass through a shell."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final, NamedTuple

from start.errors import StartError
from start.template import Placeholder, names, render, scan

SHELL: Final = "/bin/sh"
SHELL_NAME: Final = "start"  # $0 of the script: sh names it in its own error messages

_BLANKS: Final = " \t\n"
_OPERATORS: Final = "|&;<>()"
_DQ_ESCAPABLE: Final = '$`"\\\n'
_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?==)")

# Lexer modes. Inside `$(...)` and backquotes quoting starts afresh, as it does at the top level.
_PLAIN: Final = "plain"
_SINGLE: Final = "single"
_DOUBLE: Final = "double"
_SUBST: Final = "subst"
_BACKQUOTE: Final = "backquote"
_HEREDOC: Final = "heredoc"

_UNTERMINATED: Final = {
    _SINGLE: "unterminated single quote",
    _DOUBLE: "unterminated double quote",
    _SUBST: "unterminated command substitution '$('",
    _BACKQUOTE: "unterminated backquote",
}


class AgentTemplateError(StartError):
    """An agent command template that cannot be split into arguments."""


class AgentValueError(StartError):
    """A placeholder value that no command argument can carry."""


class AgentCommand(NamedTuple):
    """What to exec: argv, the variables the template sets, and whether argv runs /bin/sh."""

    argv: tuple[str, ...]
    env: dict[str, str]
    uses_shell: bool


def placeholders(template: str) -> list[str]:
    """The placeholder names a command template uses, in order of first use."""
    return names(template)


def needs_shell(template: str) -> bool:
    """Whether the template uses shell operators or expansions, so it must run under /bin/sh."""
    lexed = _Lexer(template)
    if lexed.problems:
        raise AgentTemplateError(_message(lexed.problems[0], template))
    return lexed.shell


def assignments(template: str) -> list[tuple[str, str]]:
    """The leading NAME=value words of a template (the agent's environment), placeholders kept."""
    lexed = _Lexer(template)
    found: list[tuple[str, str]] = []
    for word in lexed.words:
        name = _assignment(word)
        if name is None:
            break
        found.append((name, render(tuple(word.parts), {})[len(name) + 1 :]))
    return found


def validate(template: str) -> list[str]:
    """Every syntax problem of a command template, as messages; empty when it is fine."""
    lexed = _Lexer(template)
    problems = list(lexed.problems)
    if not lexed.shell and not problems:
        missing = _missing_program(lexed.words)
        if missing:
            problems.append(missing)
    return problems


def build(template: str, values: Mapping[str, str]) -> AgentCommand:
    """Split the template into words, then fill each placeholder with its value verbatim.

    A template with shell operators runs as `/bin/sh -c SCRIPT start V1 V2 ...`, where the script
    refers to each value as a positional parameter quoted for its context.
    """
    lexed = _Lexer(template)
    if lexed.problems:
        raise AgentTemplateError(_message(lexed.problems[0], template))
    for name in lexed.params:
        value = values.get(name)
        if value is not None and "\x00" in value:
            raise AgentValueError(
                f"the value of {{{name}}} contains a NUL character, "
                "which no command argument can carry"
            )
    if lexed.shell:
        args = tuple(values.get(name, "{" + name + "}") for name in lexed.params)
        script = "".join(lexed.script)
        return AgentCommand((SHELL, "-c", script, SHELL_NAME, *args), {}, uses_shell=True)
    missing = _missing_program(lexed.words)
    if missing:
        raise AgentTemplateError(_message(missing, template))
    argv, env = _expand(lexed.words, values)
    if not argv:
        raise AgentTemplateError(
            _message("no program to run once the placeholders are filled", template)
        )
    return AgentCommand(tuple(argv), env, uses_shell=False)


def _message(problem: str, template: str) -> str:
    return f"{problem} in agent command: {template}"


def _dollar_problem(name: str) -> str:
    return f"'$' directly before placeholder {{{name}}}; write ${{{{{name}}}}} for a shell variable"


class _Word:
    """One word of the template: literal text and placeholders, before any value is filled in."""

    __slots__ = ("open", "parts", "prefix", "quoted")

    def __init__(self) -> None:
        self.parts: list[str | Placeholder] = []
        self.quoted = False  # any quote or backslash: the word survives even if it renders empty
        self.prefix = ""  # the leading unquoted literal text, for assignments and tilde expansion
        self.open = True  # the prefix is still the whole word

    def add(self, text: str, *, quoted: bool = False) -> None:
        if self.parts and isinstance(self.parts[-1], str):
            self.parts[-1] += text
        else:
            self.parts.append(text)
        if quoted:
            self.close(quoted=True)
        elif self.open:
            self.prefix += text

    def close(self, *, quoted: bool) -> None:
        self.open = False
        self.quoted = self.quoted or quoted


def _assignment(word: _Word) -> str | None:
    match = _ASSIGNMENT.match(word.prefix)
    return match.group() if match else None


def _missing_program(words: list[_Word]) -> str | None:
    if not words:
        return "agent command is empty"
    if all(_assignment(word) is not None for word in words):
        return "agent command sets variables but names no program to run"
    return None


def _expand(words: list[_Word], values: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    argv: list[str] = []
    env: dict[str, str] = {}
    command_seen = False
    for word in words:
        text = render(tuple(word.parts), values)
        name = None if command_seen else _assignment(word)
        if name is not None:
            skip = len(name) + 1
            env[name] = _tilde(word.prefix[skip:], word.open, text[skip:])
            continue
        # POSIX decides which words are assignments before expansion, so an empty first word
        # that vanishes below still ends the assignments.
        command_seen = True
        if text or word.quoted:
            argv.append(_tilde(word.prefix, word.open, text))
    return argv, env


def _tilde(prefix: str, whole: bool, text: str) -> str:
    """Expand a leading unquoted `~` or `~user`, ending at the first `/`, as sh would."""
    if not prefix.startswith("~"):
        return text
    slash = prefix.find("/")
    if slash < 0 and not whole:
        return text
    head = prefix if slash < 0 else prefix[:slash]
    return os.path.expanduser(head) + text[len(head) :]


class _Frame:
    __slots__ = ("depth", "mode")

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.depth = 0  # open parentheses inside `$(`


class _Heredoc(NamedTuple):
    delimiter: str
    quoted: bool
    strip_tabs: bool


class _Lexer:
    """One pass over the template with POSIX quoting rules.

    It yields the words (for the direct path), the shell script with each placeholder replaced by
    a positional parameter quoted for its context (for the shell path), and every problem found.
    """

    def __init__(self, template: str) -> None:
        self.units: list[str | Placeholder] = []
        for segment in scan(template):
            if isinstance(segment, Placeholder):
                self.units.append(segment)
            else:
                self.units.extend(segment)
        self.pos = 0
        self.words: list[_Word] = []
        self.word: _Word | None = None
        self.stack = [_Frame(_PLAIN)]
        self.at_start = True
        self.script: list[str] = []
        self.params: dict[str, int] = {}
        self.shell = False
        self.problems: list[str] = []
        self.heredocs: list[_Heredoc] = []
        if "\x00" in template:
            self.problems.append("NUL character")
        self._run()

    def _peek(self) -> str | Placeholder | None:
        return self.units[self.pos] if self.pos < len(self.units) else None

    def _current(self) -> _Word:
        if self.word is None:
            self.word = _Word()
        return self.word

    def _end_word(self) -> None:
        if self.word is not None:
            self.words.append(self.word)
            self.word = None

    def _ref(self, placeholder: Placeholder, mode: str) -> str:
        number = self.params.setdefault(placeholder.name, len(self.params) + 1)
        ref = f"${{{number}}}"
        if mode == _SINGLE:
            return f"'\"{ref}\"'"
        if mode in (_DOUBLE, _HEREDOC):
            return ref
        return f'"{ref}"'

    def _run(self) -> None:
        while self.pos < len(self.units):
            unit = self.units[self.pos]
            self.pos += 1
            mode = self.stack[-1].mode
            if isinstance(unit, Placeholder):
                self.script.append(self._ref(unit, mode))
                word = self._current()
                word.parts.append(unit)
                word.close(quoted=False)
                self.at_start = False
            elif mode == _SINGLE:
                self.script.append(unit)
                if unit == "'":
                    self.stack.pop()
                else:
                    self._current().add(unit, quoted=True)
            elif mode == _DOUBLE:
                self._double(unit)
            else:
                self._unquoted(unit)
        self._end_word()
        if len(self.stack) > 1:
            self.problems.append(_UNTERMINATED[self.stack[-1].mode])
        if self.heredocs:
            self._heredoc_bodies()

    def _double(self, char: str) -> None:
        self.script.append(char)
        if char == '"':
            self.stack.pop()
        elif char == "\\":
            self._backslash(quoted=True)
        elif char in "$`":
            self._expansion(char)
        else:
            self._current().add(char, quoted=True)

    def _unquoted(self, char: str) -> None:
        if char in _BLANKS:
            self.script.append(char)
            self._end_word()
            self.at_start = True
            if char == "\n" and self.heredocs:
                self._heredoc_bodies()
            return
        if char == "#" and self.at_start:
            self._comment()
            return
        self.script.append(char)
        self.at_start = False
        if char in "'\"":
            self.stack.append(_Frame(_SINGLE if char == "'" else _DOUBLE))
            self._current().close(quoted=True)
        elif char == "\\":
            self._backslash(quoted=False)
        elif char in "$`":
            self._expansion(char)
        elif char in _OPERATORS:
            self._operator(char)
        else:
            self._current().add(char)

    def _backslash(self, *, quoted: bool) -> None:
        following = self._peek()
        if following is None:
            if not quoted:  # inside quotes the unterminated quote is the problem to report
                self.problems.append("backslash at the end")
            return
        if isinstance(following, Placeholder):
            if quoted:
                # Inside double quotes `\{` keeps its backslash; doubled, sh reads no `\$` either.
                self.script.append("\\")
                self._current().add("\\", quoted=True)
            else:
                name = following.name
                self.problems.append(
                    f"backslash before placeholder {{{name}}} outside quotes; "
                    f"write {{{{{name}}}}} for the literal text"
                )
            return
        if quoted and following not in _DQ_ESCAPABLE:
            self._current().add("\\", quoted=True)
            return
        self.pos += 1
        self.script.append(following)
        if following != "\n":  # a backslash-newline joins lines and leaves nothing
            self._current().add(following, quoted=True)

    def _expansion(self, char: str) -> None:
        self.shell = True
        if char == "`":
            if self.stack[-1].mode == _BACKQUOTE:
                self.stack.pop()
            else:
                self.stack.append(_Frame(_BACKQUOTE))
                self.at_start = True
            return
        following = self._peek()
        if isinstance(following, Placeholder):
            self.problems.append(_dollar_problem(following.name))
        elif following == "(":
            self.pos += 1
            self.script.append("(")
            self.stack.append(_Frame(_SUBST))
            self.at_start = True
        else:
            self._current().add(char)

    def _operator(self, char: str) -> None:
        self.shell = True
        self._end_word()
        self.at_start = True
        frame = self.stack[-1]
        if char == "<" and self._peek() == "<":
            self.pos += 1
            self.script.append("<")
            if self._peek() == "<":  # bash's here-string, not a here-document
                self.pos += 1
                self.script.append("<")
                return
            strip_tabs = self._peek() == "-"
            if strip_tabs:
                self.pos += 1
                self.script.append("-")
            self._heredoc_delimiter(strip_tabs)
        elif frame.mode == _SUBST and char == "(":
            frame.depth += 1
        elif frame.mode == _SUBST and char == ")":
            if frame.depth:
                frame.depth -= 1
            else:
                self.stack.pop()
                self.at_start = False

    def _comment(self) -> None:
        self.script.append("#")
        while (unit := self._peek()) is not None and unit != "\n":
            self.pos += 1
            self.script.append("{" + unit.name + "}" if isinstance(unit, Placeholder) else unit)

    def _heredoc_delimiter(self, strip_tabs: bool) -> None:
        while (blank := self._peek()) in (" ", "\t"):
            self.script.append(str(blank))
            self.pos += 1
        text: list[str] = []
        quoted = False
        closing: str | None = None
        while (unit := self._peek()) is not None:
            if isinstance(unit, Placeholder):
                self.problems.append(f"placeholder {{{unit.name}}} in a here-document delimiter")
                return
            if closing is None and (unit in _BLANKS or unit in _OPERATORS):
                break
            self.pos += 1
            self.script.append(unit)
            if unit == closing:
                closing = None
            elif closing is None and unit in "'\"":
                closing, quoted = unit, True
            elif closing is None and unit == "\\":
                quoted = True
            else:
                text.append(unit)
        if closing is not None:
            self.problems.append(_UNTERMINATED[_SINGLE if closing == "'" else _DOUBLE])
        elif not text and not quoted:
            self.problems.append("missing here-document delimiter after '<<'")
        else:
            self.heredocs.append(_Heredoc("".join(text), quoted, strip_tabs))

    def _heredoc_bodies(self) -> None:
        for doc in self.heredocs:
            self._heredoc_body(doc)
        self.heredocs.clear()

    def _heredoc_body(self, doc: _Heredoc) -> None:
        while self.pos < len(self.units):
            end = self.pos
            while end < len(self.units) and self.units[end] != "\n":
                end += 1
            line = self.units[self.pos : end]
            self.pos = min(end + 1, len(self.units))
            literal = "".join(u for u in line if isinstance(u, str))
            done = len(literal) == len(line) and (
                (literal.lstrip("\t") if doc.strip_tabs else literal) == doc.delimiter
            )
            if done:
                self.script.append(literal)
            else:
                self._heredoc_line(line, doc.quoted)
            if end < len(self.units):
                self.script.append("\n")
            if done:
                return
        self.problems.append(f"here-document not closed by a line '{doc.delimiter}'")

    def _heredoc_line(self, line: list[str | Placeholder], quoted: bool) -> None:
        """A body line: like double quotes when the delimiter is unquoted, else never expanded."""
        index = 0
        while index < len(line):
            unit = line[index]
            following = line[index + 1] if index + 1 < len(line) else None
            index += 1
            if isinstance(unit, Placeholder):
                if quoted:
                    self.problems.append(
                        f"placeholder {{{unit.name}}} in a here-document with a quoted "
                        "delimiter is never filled; leave the delimiter unquoted"
                    )
                    self.script.append("{" + unit.name + "}")
                else:
                    self.script.append(self._ref(unit, _HEREDOC))
                continue
            self.script.append(unit)
            if quoted or following is None:
                continue
            if unit == "\\" and isinstance(following, Placeholder):
                self.script.append("\\")
            elif unit == "\\" and isinstance(following, str) and following in "$`\\":
                self.script.append(following)
                index += 1
            elif unit == "$" and isinstance(following, Placeholder):
                self.problems.append(_dollar_problem(following.name))
