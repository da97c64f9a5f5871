"""A launch's expansion of one imported task, by the rules of the format it came from.

The arguments are the launch's instructions: `$ARGUMENTS` and `{{args}}` are that text (empty when
none was given) and `$1`... are its words, split by the source CLI's rules
(start.config.interop.words). Shell snippets run at launch with the launch's other commands
(start.proc.shell); a snippet reads the arguments from environment variables, never from its own
text. File includes are read through the launch's wall (start.base.wall.Reader). docs/interop.md
describes each format's rules.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Final

from start.base import fs
from start.base.errors import CommandError, signal_name
from start.base.paths import expand
from start.base.wall import Reader
from start.config.interop import words
from start.config.interop.model import ALL, PARAM, REST, Arg, Imported, Include, Snippet, Text
from start.config.model import Agent, Config, Task
from start.proc.shell import CommandResult, CommandSpec

# Files are cut at this many lines: Claude Code (CHANGELOG 1.0.53) and Gemini CLI
# (packages/core/src/utils/fileUtils.ts, DEFAULT_MAX_LINES_TEXT_FILE) alike.
MAX_LINES: Final = 2000
# Gemini CLI also cuts each line at this many characters (fileUtils.ts).
MAX_LINE_CHARS: Final = 2000
NOT_RUN: Final = "[command output: not run]"
_ANSI: Final = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# What Qwen Code's checkArgumentSafety calls dangerous in arguments pasted into a command.
_UNSAFE: Final = re.compile(r"\$\(|`|<\(|>\(|;|\||&&| &|& |>\s|\d>|<\s|\d<")


def attachment(path: str, text: str) -> str:
    """How a file that Claude Code or opencode would attach is added to the one prompt string."""
    ending = "" if text.endswith("\n") or not text else "\n"
    return f'<file path="{path}">\n{text}{ending}</file>'


class Expansion:
    """One imported task on its way to its text: its snippets queued, its files read."""

    def __init__(
        self,
        task: Task,
        instructions: str | None,
        values: Mapping[str, str],
        config: Config,
        reader: Reader | None,
        agent: Agent | None = None,
    ) -> None:
        imported = task.imported
        assert imported is not None
        self.task = task
        self.imported: Imported = imported
        self.format = imported.format
        self.raw = fs.arg_text(instructions) if instructions is not None else ""
        if self.format == "claude":
            self.words = words.claude(self.raw)
        elif self.format == "codex":
            self.words = words.codex(self.raw)
        elif self.format == "opencode":
            self.words = words.opencode(self.raw)
        else:
            self.words = self.raw.split()
        self.values = values
        self.notes: list[str] = []
        self.first = 0
        env = {arg.variable: fs.arg_text(self.value(arg)) for arg in imported.refs()}
        env.setdefault("START_INSTRUCTIONS", fs.arg_text(self.all))
        self.specs = [
            CommandSpec(
                command=snippet.command,
                shell=config.settings.shell,
                timeout=float(config.settings.command_timeout),
                cwd=config.root,
                output_limit=config.settings.command_output_limit,
                # Claude Code and opencode use standard output; Gemini CLI both streams, in order.
                separate=self.format in ("claude", "opencode"),
                label=f"task {task.name}: {snippet.literal}",
                env=env,
                # Gemini CLI and Qwen Code run a command's snippets one after another
                # (shellProcessor.ts); Claude Code runs them at once (Promise.all in 2.1.332).
                chain=f"task {task.name}" if self.format in ("gemini", "qwen") else "",
            )
            for snippet in imported.snippets()
        ]
        self.files = self._read(config, reader)
        declared = {param.name for param in task.params}
        unused = [name for name in values if name not in declared]
        if unused:
            shown = ", ".join(f"{name}=..." for name in unused)
            self.notes.append(
                f"{task.name}: the prompt does not use {shown}; accepted and not used, as Codex "
                "does"
            )
        if agent is not None and imported.model is not None and not agent.runs(self.format):
            self.notes.append(
                f"{task.name} asks for the model '{imported.model}' in its front matter, for "
                f"{self.format}; not used with the agent {agent.name}"
            )

    @property
    def all(self) -> str:
        """What `$ARGUMENTS` / `{{args}}` stands for."""
        if self.format in ("gemini", "qwen"):
            return words.gemini(self.raw)
        if self.format == "codex":
            return " ".join(self.words)
        return self.raw

    def value(self, arg: Arg) -> str:
        if arg.form == ALL:
            return self.all
        if arg.form == PARAM:
            return self.values.get(arg.name, "")
        if arg.position < len(self.words):
            if arg.form == REST:
                return " ".join(self.words[arg.position :])
            return self.words[arg.position]
        return ""

    def queue(self, specs: list[CommandSpec]) -> None:
        """Add the snippets to the launch's commands, which all run at once."""
        self.first = len(specs)
        specs.extend(self.specs)

    # --- files -----------------------------------------------------------------------------

    def _read(self, config: Config, reader: Reader | None) -> dict[str, str | None]:
        """Each named file's text by its path as written; None when it is not there to read."""
        texts: dict[str, str | None] = {}
        layer = self.task.origin.layer
        for include in self.imported.includes():
            if include.path in texts:
                continue
            if reader is None:
                texts[include.path] = None
                continue
            path = expand(include.path, config.root)
            relative = not (include.path.startswith("~") or os.path.isabs(include.path))
            try:
                read = reader.read(path, layer=layer, relative=relative)
            except fs.FileError as error:
                texts[include.path] = None
                self.notes.append(
                    f"{self.task.name}: @{include.path}: {error.reason}; {self._left}"
                )
                continue
            if b"\x00" in read.data[:8192]:
                texts[include.path] = None
                self.notes.append(f"{self.task.name}: @{include.path} is binary; {self._left}")
                continue
            text = fs.capped_text(read.data, read.truncated).removeprefix("\ufeff")
            if read.truncated:
                self.notes.append(
                    f"{self.task.name}: @{include.path} is cut to its first {len(read.data):,} "
                    "bytes (settings.file_size_limit)"
                )
            texts[include.path] = self._cap(include.path, text)
        return texts

    @property
    def _left(self) -> str:
        if self.format in ("gemini", "qwen"):
            return "its @{...} is left in the prompt, as Gemini CLI does"
        return "it is not attached (the text stays)"

    def _cap(self, path: str, text: str) -> str:
        lines = text.replace("\r\n", "\n").split("\n")
        if self.format in ("gemini", "qwen"):
            lines = [
                line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "... [truncated]"
                for line in lines
            ]
        if len(lines) > MAX_LINES:
            self.notes.append(
                f"{self.task.name}: @{path} is cut to its first {MAX_LINES} lines, as "
                f"{'Gemini CLI' if self.format in ('gemini', 'qwen') else 'Claude Code'} does"
            )
            lines = lines[:MAX_LINES]
        return "\n".join(lines)

    # --- the text --------------------------------------------------------------------------

    def finish(self, results: Sequence[CommandResult] | None) -> str:
        """The task's text, with the snippets' results (None: not run, as `start show` does)."""
        snippets = self.imported.snippets()
        outputs: list[str] = []
        for index, snippet in enumerate(snippets):
            if results is None:
                outputs.append(NOT_RUN)
            else:
                outputs.append(self._output(snippet, results[self.first + index]))
        refs = self.imported.refs()
        missing: list[str] = []
        pieces: list[str] = []
        output = iter(outputs)
        for segment in self.imported.segments:
            if isinstance(segment, Text):
                pieces.append(segment.text)
            elif isinstance(segment, Arg):
                given = segment.form in (ALL, PARAM) or segment.position < len(self.words)
                if self.format == "claude" and not given:
                    # Claude Code keeps a reference to a word not given (CHANGELOG 2.1.210).
                    missing.append(segment.literal)
                    pieces.append(segment.literal)
                else:
                    pieces.append(self.value(segment))
            elif isinstance(segment, Snippet):
                pieces.append(next(output))
            else:
                pieces.append(self._include(segment))
        if missing:
            shown = ", ".join(dict.fromkeys(missing))
            self.notes.append(
                f"{self.task.name}: {shown} had no word to take; left as written, as Claude "
                "Code does"
            )
        text = self._append("".join(pieces), refs)
        if self.format == "opencode":
            text = text.strip()  # SessionPrompt.command trims the whole template
        attached = [
            attachment(path, content)
            for path, content in self.files.items()
            if content is not None and self.format in ("claude", "opencode")
        ]
        return "\n\n".join([text, *attached]) if attached else text

    def _include(self, include: Include) -> str:
        if self.format in ("gemini", "qwen"):
            content = self.files.get(include.path)
            return include.literal if content is None else content
        return include.literal  # attached after the text, the mention stays

    def _append(self, text: str, refs: list[Arg]) -> str:
        """The arguments where the template has no place for them, as the source does."""
        if not self.raw.strip():
            return text
        name = self.task.name
        if self.format == "claude":
            # Claude Code 2.1.332 appends them only when it filled no placeholder at all: a word
            # not given is not filled (decision D-C3).
            if any(ref.form == ALL or ref.position < len(self.words) for ref in refs):
                return text
            return f"{text}\n\nARGUMENTS: {self.raw}"
        if self.format in ("gemini", "qwen"):
            # Only `{{args}}` counts (FileCommandLoader.ts, command-factory.ts): Qwen Code's
            # `$ARGUMENTS` in a shell command is filled, and the arguments are appended too.
            if any(ref.literal == "{{args}}" for ref in refs):
                return text
            return f"{text}\n\n{self.imported.command} {self.raw}".rstrip()
        if self.format == "opencode":
            if refs:
                return text
            return f"{text}\n\n{self.raw}"
        # Codex drops words it has no place for; start never does (decision D-X4).
        if refs and not any(ref.form == PARAM for ref in refs):
            return text
        self.notes.append(
            f"{name}: Codex would drop your words here (the prompt has no place for them); "
            "start added them at the end"
        )
        return f"{text.rstrip(chr(10))}\n\n{self.raw}" if text.strip() else self.raw

    def _output(self, snippet: Snippet, result: CommandResult) -> str:
        if result.error is not None or result.timed_out:
            raise self._failed(snippet, result)
        if self.format == "claude":
            if result.returncode != 0:
                raise self._failed(snippet, result)
            # Claude Code 2.1.332 puts its Bash tool's note in the place of no output.
            return result.stdout.rstrip("\n") or "(Bash completed with no output)"
        if self.format == "opencode":
            if result.returncode != 0:
                self.notes.append(
                    f"{self.task.name}: {snippet.literal} {result.status}; its output is used "
                    "as opencode does"
                )
            return result.stdout
        # Gemini CLI: both streams, escape sequences removed, trimmed; a failure is reported in
        # the prompt (shellProcessor.ts), and the command shown with its arguments quoted.
        text = _ANSI.sub("", result.output).strip()
        code = result.returncode or 0
        if code < 0:
            text += f"\n[Shell command '{self._shown(snippet)}' terminated by signal "
            text += f"{signal_name(-code)}]"
        elif code != 0:
            text += f"\n[Shell command '{self._shown(snippet)}' exited with code {code}]"
        return text

    def _shown(self, snippet: Snippet) -> str:
        quoted = words.shell_quote(self.all)
        # Qwen Code pastes `$ARGUMENTS` with one pair of outer single quotes removed, unless the
        # text looks like shell syntax (checkArgumentSafety), then quoted like `{{args}}`.
        bare = re.sub(r"^'([\s\S]*?)'\Z", r"\1", self.all)
        plain = quoted if _UNSAFE.search(bare) else bare
        return "".join(
            part if isinstance(part, str) else plain if part.literal == "$ARGUMENTS" else quoted
            for part in snippet.parts
        )

    def _failed(self, snippet: Snippet, result: CommandResult) -> CommandError:
        reason = None
        if result.error is not None:
            reason = f"{result.error}; install bash (or sh), or set settings.shell"
        return CommandError(
            f"task '{self.task.name}'",
            snippet.command,
            returncode=result.returncode,
            output=result.output,
            timeout=result.spec.timeout if result.timed_out else None,
            reason=reason,
        )
