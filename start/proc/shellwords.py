"""Splits a command template into words with POSIX quoting; a placeholder is never split.

One pass over the template gives the words (for running the program directly), a shell script in
which each placeholder is a positional parameter quoted for its context (for templates that need
/bin/sh), the optional groups, and every problem found.

`quote` and `join` go the other way: words as a line to show and paste, whatever they hold.

Two additions to POSIX words, both outside quotes and outside `$(...)`:
- `[...]`, an optional group: an unquoted `[` directly followed by a non-blank character opens
  it and the next unquoted `]` closes it. When every placeholder inside has a value, only the
  brackets go; otherwise the group and everything in it go, as if never written. `\\[` is a
  literal bracket, and so is a `[` or `]` standing alone (the shell's `[ test ]`).
- `{args}`, a word of its own that stands for zero or more words: the extra arguments.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from start.base.record import Record
from start.base.template import Placeholder, scan

ARGS: Final = "args"

_BLANKS: Final = " \t\n"
_OPERATORS: Final = "|&;<>()"
_DQ_ESCAPABLE: Final = '$`"\\\n'
# Characters that mean something to the lexer in some mode; `units` keeps each on its own and
# hands every run of other characters over as one unit, which the lexer takes whole.
_SPECIAL: Final = frozenset(" \t\n|&;<>()'\"\\$`#[]")

# Lexer modes. Inside `$(...)` and backquotes quoting starts afresh, as it does at the top level.
_PLAIN: Final = "plain"
_SINGLE: Final = "single"
_DOUBLE: Final = "double"
_SUBST: Final = "subst"
_BACKQUOTE: Final = "backquote"

_UNTERMINATED: Final = {
    _SINGLE: "unterminated single quote",
    _DOUBLE: "unterminated double quote",
    _SUBST: "unterminated command substitution '$('",
    _BACKQUOTE: "unterminated backquote",
}

HEREDOC_PROBLEM: Final = (
    "here-documents ('<<') are not supported; pass the prompt as a file instead: "
    "{prompt_file} with an option of the agent that reads a file, or '< {prompt_file}'"
)

Unit = str | Placeholder


class Word:
    """One word of the template: literal text and placeholders, before any value is filled in."""

    __slots__ = ("first", "open", "parts", "prefix", "quoted")

    def __init__(self, first: bool = False) -> None:
        self.first = first  # the word begins a command: the template's, or one after an operator
        self.parts: list[Unit] = []
        self.quoted = False  # any quote or backslash: the word survives even if it fills empty
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

    @property
    def is_args(self) -> bool:
        """Whether the word is `{args}` alone."""
        return len(self.parts) == 1 and _named(self.parts[0], ARGS)

    @property
    def literal(self) -> str | None:
        """The word's text when it holds no placeholder."""
        if any(isinstance(part, Placeholder) for part in self.parts):
            return None
        return "".join(str(part) for part in self.parts)

    def assignment(self) -> str | None:
        """The variable name when the word is a leading NAME=value assignment: NAME is ASCII
        letters, digits and underscores, not starting with a digit."""
        name, equals, _ = self.prefix.partition("=")
        return name if equals and name.isascii() and name.isidentifier() else None


class Group(Record):
    """An optional group: the units of its brackets and the placeholders inside."""

    start: int
    end: int
    names: frozenset[str]


class Lexed(Record):
    """A template split into words and a shell script, with its groups and problems."""

    units: tuple[Unit, ...]
    words: tuple[Word, ...]
    script: tuple[str | None, ...]  # None marks where {args} goes
    params: dict[str, int]  # placeholder name -> its positional parameter in the script
    shell: bool  # operators or expansions: the template must run under /bin/sh
    groups: tuple[Group, ...]
    required: frozenset[str]  # placeholders used outside any optional group
    problems: tuple[str, ...]

    def script_text(self, args: int = 0) -> str:
        """The shell script, `{args}` referring to the `args` parameters after the values."""
        first = len(self.params) + 1
        refs = " ".join(f'"${{{n}}}"' for n in range(first, first + args))
        return "".join(refs if piece is None else piece for piece in self.script)

    def fill_groups(self, present: Callable[[str], bool]) -> Lexed:
        """The template as if written without its groups: each kept bare or dropped whole."""
        if not self.groups:
            return self
        drop: set[int] = set()
        for group in self.groups:
            if all(present(name) for name in group.names):
                drop.update((group.start, group.end))
            else:
                drop.update(range(group.start, group.end + 1))
        return lex_units([u for i, u in enumerate(self.units) if i not in drop], groups=False)


def units(template: str) -> list[Unit]:
    """The template as placeholders, characters that matter to the lexer, and runs of the others.

    A run of ordinary characters lexes exactly as its characters one by one would (the lexer
    also takes single characters: `lex_units(list(text))`), in one step instead of many.
    """
    found: list[Unit] = []
    for segment in scan(template):
        if isinstance(segment, Placeholder):
            found.append(segment)
        else:
            # Each special character on its own, and each run of others whole.
            for special, run in itertools.groupby(segment, _SPECIAL.__contains__):
                chars = "".join(run)
                found.extend(chars if special else [chars])
    return found


# The escapes of ANSI-C quotes that read better than a code.
_ANSI_C: Final = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def quote(word: str) -> str:
    """`word` as one shell word to show and paste: as `shlex.quote` has it, unless it holds a
    character a terminal would act on or hide (a control such as ESC or a newline, a bidi or
    zero-width character, a byte that is not UTF-8). Then it goes in ANSI-C quotes (`$'...'`,
    which bash, zsh and ksh read) with each such character as its escape: printing the line
    changes nothing on the terminal, and pasting it gives the word back, byte for byte."""
    import shlex

    if word.isprintable():
        return shlex.quote(word)
    out = []
    for char in word:
        code = ord(char)
        if char in "\\'":
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        elif char in _ANSI_C:
            out.append(_ANSI_C[char])
        elif code < 0x80 or 0xDC80 <= code <= 0xDCFF:
            # An ASCII control, or a byte that was not UTF-8 (read with surrogateescape): the
            # byte itself. Exactly two digits, so a hex digit after it is not taken in.
            out.append(f"\\x{code & 0xFF:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "$'" + "".join(out) + "'"


def join(words: Iterable[str]) -> str:
    """The words as one shell line to show and paste, each as `quote` has it."""
    return " ".join(quote(word) for word in words)


@functools.lru_cache(maxsize=64)
def split(template: str) -> Lexed:
    """Split a command template; `Lexed.problems` says what is wrong with it.

    Cached: a launch asks several questions of one template. Callers never change the result.
    """
    lexed = lex_units(units(template), groups=True)
    if "\x00" in template:
        return lexed._replace(problems=("NUL character", *lexed.problems))
    return lexed


def problems(template: str) -> list[str]:
    """Every problem of a command template, as messages; empty when it is fine.

    This includes problems that show only once its groups are filled, and a missing program.
    """
    lexed = split(template)
    found = list(lexed.problems)
    if not found and lexed.groups:
        found.extend(lexed.fill_groups(_always).problems)
        found.extend(lexed.fill_groups(_never).problems)
    if not found and not lexed.shell:
        missing = missing_program(lexed.words)
        if missing:
            found.append(missing)
    return list(dict.fromkeys(found))


def _always(name: str) -> bool:
    return True


def _never(name: str) -> bool:
    return False


def missing_program(words: Sequence[Word]) -> str | None:
    """Why a template that runs directly has no program, or None."""
    if not words:
        return "agent command is empty"
    if all(word.assignment() is not None for word in words):
        return "agent command sets variables but names no program to run"
    return None


def lex_units(template: Iterable[Unit], *, groups: bool, variables: bool = False) -> Lexed:
    """Lex units; with `variables`, the script refers to each placeholder as the environment
    variable of its name (`${NAME}`, quoted for its context) instead of a positional parameter."""
    lexer = _Lexer(tuple(template), groups, variables)
    return Lexed(
        lexer.units,
        tuple(lexer.words),
        tuple(lexer.script),
        lexer.params,
        lexer.shell,
        tuple(lexer.groups),
        frozenset(lexer.required),
        tuple(lexer.problems),
    )


def _named(unit: Unit | None, name: str) -> bool:
    return isinstance(unit, Placeholder) and unit.name == name


def _boundary(unit: Unit | None, chars: str) -> bool:
    """Whether `unit` is the end of the template or one of `chars`."""
    return unit is None or (isinstance(unit, str) and unit in chars)


def _dollar_problem(name: str) -> str:
    return f"'$' directly before placeholder {{{name}}}; write ${{{{{name}}}}} for a shell variable"


_ARGS_PROBLEM: Final = (
    "{args} stands for zero or more arguments, so it must be a word of its own, unquoted"
)


class _Frame:
    __slots__ = ("depth", "mode")

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.depth = 0  # open parentheses inside `$(`


class _Lexer:
    """One pass over the units with POSIX quoting rules (see the module docstring)."""

    def __init__(self, units: tuple[Unit, ...], groups: bool, variables: bool = False) -> None:
        self.units = units
        self.with_groups = groups
        self.variables = variables
        self.pos = 0
        self.words: list[Word] = []
        self.word: Word | None = None
        self.stack = [_Frame(_PLAIN)]
        self.at_start = True
        self.command = True  # the next word begins a command
        self.script: list[str | None] = []
        self.params: dict[str, int] = {}
        self.shell = False
        self.problems: list[str] = []
        self.groups: list[Group] = []
        self.group_start: int | None = None
        self.group_names: set[str] = set()
        self.nested = 0
        self.required: set[str] = set()
        self._run()

    def _peek(self) -> Unit | None:
        return self.units[self.pos] if self.pos < len(self.units) else None

    def _current(self) -> Word:
        if self.word is None:
            self.word = Word(self.command)
            self.command = False
        return self.word

    def _end_word(self) -> None:
        if self.word is not None:
            self.words.append(self.word)
            self.word = None

    def _ref(self, placeholder: Placeholder, mode: str) -> str:
        number = self.params.setdefault(placeholder.name, len(self.params) + 1)
        ref = f"${{{placeholder.name if self.variables else number}}}"
        if mode == _SINGLE:
            return f"'\"{ref}\"'"
        if mode == _DOUBLE:
            return ref
        return f'"{ref}"'

    def _run(self) -> None:
        while self.pos < len(self.units):
            unit = self.units[self.pos]
            self.pos += 1
            mode = self.stack[-1].mode
            if isinstance(unit, Placeholder):
                self._placeholder(unit, mode)
            elif mode == _SINGLE:
                self.script.append(unit)
                if unit == "'":
                    self.stack.pop()
                else:
                    self._current().add(unit, quoted=True)
            elif mode == _DOUBLE:
                self._double(unit)
            elif self._unquoted(unit):
                break
        self._end_word()
        if len(self.stack) > 1:
            self.problems.append(_UNTERMINATED[self.stack[-1].mode])
        if self.group_start is not None:
            self.problems.append("optional group '[' is not closed with ']'")

    def _placeholder(self, unit: Placeholder, mode: str) -> None:
        if self.group_start is None:
            self.required.add(unit.name)
        else:
            self.group_names.add(unit.name)
        if unit.name == ARGS:
            self._args()
        else:
            self.script.append(self._ref(unit, mode))
        word = self._current()
        word.parts.append(unit)
        word.close(quoted=False)
        self.at_start = False

    def _args(self) -> None:
        following = self._peek()
        ends = _BLANKS + _OPERATORS + ("]" if self.group_start is not None else "")
        alone = len(self.stack) == 1 and self.word is None and _boundary(following, ends)
        if not alone:
            self.problems.append(_ARGS_PROBLEM)
        elif self.group_start is not None:
            self.problems.append(
                "{args} cannot be inside an optional group; it vanishes by itself when there "
                "are no extra arguments"
            )
        elif not self.words or all(word.assignment() is not None for word in self.words):
            self.problems.append("{args} cannot be the program to run")
        self.script.append(None)

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

    def _unquoted(self, char: str) -> bool:
        """Handle one unquoted character; True stops the lexer."""
        if char in _BLANKS:
            self.script.append(char)
            self._end_word()
            self.at_start = True
            return False
        if char == "#" and self.at_start:
            self._comment()
            return False
        if self.with_groups and len(self.stack) == 1 and char in "[]" and self._bracket(char):
            return False
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
            return self._operator(char)
        else:
            self._current().add(char)
        return False

    def _bracket(self, char: str) -> bool:
        """An optional group's bracket: True when it is one, False when it is a literal."""
        following = self._peek()
        if char == "[":
            if _boundary(following, _BLANKS):
                return False  # `[` alone is the shell's test command
            if self.group_start is not None:
                self.problems.append(
                    "optional groups cannot be nested; write \\[ for a literal '['"
                )
                self.nested += 1  # its `]` is not reported again
                return True
            self.group_start = self.pos - 1
            self.group_names = set()
            return True
        if self.group_start is None:
            previous = self.units[self.pos - 2] if self.pos >= 2 else None
            alone = _boundary(previous, _BLANKS) and _boundary(following, _BLANKS + _OPERATORS)
            if not alone:  # `]` alone closes the shell's test command
                self.problems.append("']' without an open optional group; write \\] for a literal")
            return False
        if self.nested:
            self.nested -= 1
            return True
        start, end = self.group_start, self.pos - 1
        if not self.group_names:
            text = "".join(
                "{" + u.name + "}" if isinstance(u, Placeholder) else u
                for u in self.units[start : end + 1]
            )
            self.problems.append(
                f"optional group {text} holds no placeholder; write \\[ for a literal '['"
            )
        self.groups.append(Group(start, end, frozenset(self.group_names)))
        self.group_start = None
        return True

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
                self.command = False  # the command around the substitution goes on
            else:
                self.stack.append(_Frame(_BACKQUOTE))
                self.at_start = True
                self.command = True
            return
        following = self._peek()
        if isinstance(following, Placeholder):
            self.problems.append(_dollar_problem(following.name))
        elif following == "(":
            self.pos += 1
            self.script.append("(")
            self.stack.append(_Frame(_SUBST))
            self.at_start = True
            self.command = True
        else:
            self._current().add(char)

    def _operator(self, char: str) -> bool:
        self.shell = True
        self._end_word()
        self.at_start = True
        # A word after a redirection is its file, not a command.
        self.command = char not in "<>"
        frame = self.stack[-1]
        if char == "<" and self._peek() == "<":
            self.problems.append(HEREDOC_PROBLEM)
            return True  # what follows is a document, not words: lexing it would mislead
        if frame.mode == _SUBST and char == "(":
            frame.depth += 1
        elif frame.mode == _SUBST and char == ")":
            if frame.depth:
                frame.depth -= 1
            else:
                self.stack.pop()
                self.at_start = False
                self.command = False  # the command around the substitution goes on
        return False

    def _comment(self) -> None:
        self.script.append("#")
        while (unit := self._peek()) is not None and unit != "\n":
            self.pos += 1
            self.script.append("{" + unit.name + "}" if isinstance(unit, Placeholder) else unit)
