"""How each source splits the arguments of a command into words, and Gemini's shell quoting.

`start task NAME WORDS...` joins the words into one text (the instructions); a positional
reference (`$1`) takes a word of that text split by the source CLI's own rules, so quotes typed
inside the text group words as they would in that CLI: `start task claude:x '"a b" c'`.
"""

from __future__ import annotations

import re
from typing import Final

_BLANKS: Final = " \t\n"
# Characters that end a word in npm shell-quote's parse (its control operators).
_OPERATORS: Final = "|&;()<>"


def claude(text: str) -> list[str]:
    """Claude Code's words: shell-style splitting with quotes removed.

    Claude Code splits with the npm `shell-quote` library (anthropics/claude-code#16163): blanks
    separate words; '...' is literal; in "..." a backslash escapes only `"`, `\\` and `$`; outside
    quotes a backslash escapes the next character; an unquoted `#` starts a comment that runs to
    the end; the operators `| & ; ( ) < >` separate words and are not words themselves.
    (`$VAR` and glob words are kept as written: their handling in shell-quote is undocumented.)
    """
    words: list[str] = []
    word: list[str] = []
    started = False
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        index += 1
        if char in _BLANKS or char in _OPERATORS:
            if started:
                words.append("".join(word))
                word, started = [], False
            continue
        if char == "#":
            break
        started = True
        if char == "'":
            end = text.find("'", index)
            end = size if end < 0 else end
            word.append(text[index:end])
            index = end + 1
        elif char == '"':
            while index < size and text[index] != '"':
                if text[index] == "\\" and index + 1 < size and text[index + 1] in '"\\$':
                    index += 1
                word.append(text[index])
                index += 1
            index += 1
        elif char == "\\" and index < size:
            word.append(text[index])
            index += 1
        else:
            word.append(char)
    if started:
        words.append("".join(word))
    return words


def codex(text: str) -> list[str]:
    """Codex's words: the Rust `shlex` crate (comex/rust-shlex, as codex-rs prompt_args.rs uses it).

    Blanks separate words; a word that starts with `#` starts a comment to the end of the line;
    '...' is literal; in "..." a backslash escapes `$`, a backquote, `"`, `\\` and a newline and is
    kept before anything else; outside quotes a backslash escapes the next character. An
    unterminated quote or a trailing backslash drops the last word and ends the split.
    """
    words: list[str] = []
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char in _BLANKS:
            index += 1
            continue
        if char == "#":
            end = text.find("\n", index)
            index = size if end < 0 else end
            continue
        word: list[str] = []
        while index < size and text[index] not in _BLANKS:
            char = text[index]
            if char == '"':
                index += 1
                while True:
                    if index >= size:
                        return words
                    if text[index] == '"':
                        index += 1
                        break
                    if text[index] == "\\":
                        if index + 1 >= size:
                            return words
                        following = text[index + 1]
                        if following in '$`"\\':
                            word.append(following)
                        elif following != "\n":
                            word.append("\\" + following)
                        index += 2
                        continue
                    word.append(text[index])
                    index += 1
            elif char == "'":
                end = text.find("'", index + 1)
                if end < 0:
                    return words
                word.append(text[index + 1 : end])
                index = end + 1
            elif char == "\\":
                if index + 1 >= size:
                    return words
                if text[index + 1] != "\n":
                    word.append(text[index + 1])
                index += 2
            else:
                word.append(char)
                index += 1
        words.append("".join(word))
    return words


_OPENCODE: re.Pattern[str] | None = None
_OUTER_QUOTE: Final = re.compile(r"^[\"']|[\"']$")


def opencode(text: str) -> list[str]:
    """opencode's words: `"..."`, `'...'` or a run of other non-blank characters (an `[Image N]`
    too), each with one leading and one trailing quote character removed; no backslash escapes
    (packages/opencode/src/session/prompt.ts, SessionPrompt.command)."""
    global _OPENCODE
    if _OPENCODE is None:
        _OPENCODE = re.compile(r"""(?:\[Image\s+\d+\]|"[^"]*"|'[^']*'|[^\s"']+)""", re.IGNORECASE)
    return [_OUTER_QUOTE.sub("", word) for word in _OPENCODE.findall(text)]


def gemini(text: str) -> str:
    """Gemini CLI's `{{args}}`: the words after the command, joined by one space
    (packages/cli/src/utils/commands.ts splits the line on /\\s+/)."""
    return " ".join(text.split())


_SPECIAL: Final = re.compile(r"([A-Za-z]:)?([#!\"$&'()*,:;<=>?@\[\\\]^`{|}])")


def shell_quote(arg: str) -> str:
    """`quote([arg])` of npm shell-quote 1.8.3, as Gemini CLI escapes `{{args}}` inside `!{...}`
    on bash (packages/core/src/utils/shell-utils.ts, escapeShellArg); empty stays empty.

    Only for showing a command as Gemini would have run it: start passes the value in an
    environment variable instead (docs/interop.md).
    """
    if not arg:
        return ""
    if re.search(r"[\"\s\\]", arg) and "'" not in arg:
        return "'" + arg + "'"
    if re.search(r"[\"'\s]", arg):
        return '"' + re.sub(r"([\"\\$`!])", r"\\\1", arg) + '"'
    return _SPECIAL.sub(lambda m: (m.group(1) or "") + "\\" + m.group(2), arg)
