"""Other agents' custom commands as `start` tasks: Claude Code, Gemini, Qwen Code, Codex, opencode.

The command files users already keep (`.claude/commands/*.md`, `.gemini/commands/*.toml`, ...)
are read as tasks named `SOURCE:PATH` (`claude:git:commit`), with each format's expansion rules
kept here, not in the rest of `start`:

- `dirs`: where each source keeps its commands, and the bounded walk that finds and reads them;
- `frontmatter`, `words`: the front matter and argument splitting of the sources;
- `claude`, `gemini` (Gemini CLI and Qwen Code), `codex`, `opencode`: one parser per format,
  from a file's text to a `model.Imported` template of segments (text, argument reference,
  shell snippet, file include);
- `library`: the files found, parsed into tasks for the imported and project layers;
- `expand`: a launch's expansion of one imported task (arguments, snippets, includes).

This module imports nothing: `FORMATS` is read by the settings' defaults on every launch.
"""

from __future__ import annotations

from typing import Final

# The sources, in the order `[settings] import_commands` lists them by default.
FORMATS: Final = ("claude", "gemini", "qwen", "codex", "opencode")
