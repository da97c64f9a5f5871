"""`start config set | unset | add | remove`: change config files from the command line (`edit`,
in an editor: start.cli.config_editor)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from start.base.errors import ExitCode, Problem, UsageError
from start.cli.commands import Choice, command
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, common_options, completer, printer
from start.cli.state import get_options
from start.config import schema
from start.config.show import toml_value
from start.setup import edit, layerfile
from start.ui import console

F = TypeVar("F", bound=Callable[..., Any])


def project_option(function: F) -> F:
    """--project; --local, its old name, still works but is not listed."""
    function = click.option("--local", "project", is_flag=True, hidden=True)(function)
    return click.option(
        "--project", is_flag=True, help="Edit the project's .start/ instead of the global config."
    )(function)


# Help for each item field's flag of `config add`; the kinds it applies to come from the schema.
_FIELD_HELP = {
    "bin": ("PATH", "The agent's executable."),
    "command": ("TEXT", "A shell command whose output the prompt can use; an agent's template."),
    "description": ("TEXT", "One line shown in listings and completion."),
    "url": ("URL", "The agent's home page."),
    "models_url": ("URL", "Where the agent's models are listed."),
    "default_model": ("ALIAS", "The model alias used when none is chosen."),
    "models": ("ALIAS=ID", "A model alias and the id it stands for (repeatable)."),
    "large_prompt": ("TEXT", "The prompt sent instead of one too large; names {prompt_file}."),
    "large_prompt_stdin": (None, "Give the agent a too large prompt on stdin."),
    "print_command": ("TEXT", "The agent's headless form, for --print: a command template."),
    "print_output": ("FORMAT", "How the headless answer is read: text, result, codex, ..."),
    "print_permissions": (
        "LEVEL=OPTIONS",
        "The options that give a headless run read-only, edit or full permissions (repeatable).",
    ),
    "file": ("PATH", "A file whose path and contents the prompt can use."),
    "prompt": ("TEXT", "The prompt text; - reads it from stdin."),
    "shell": ("SHELL", "The shell that runs the command."),
    "command_timeout": ("SECONDS", "How long the command may run."),
    "required": (None, "Put the context in every prompt, not only in sessions."),
    "alias": ("NAME", "A short name for the task."),
    "role": ("NAME", "The role the task uses."),
    "agent": ("NAME", "The agent the task uses."),
    "model": ("MODEL", "The model the task uses."),
    "internal": (None, "Leave the task out of listings."),
    "if_no_output": ("TEXT", "Stop with this message when the command prints nothing."),
    "permissions": ("LEVEL", "What a headless run (--print) may do: read-only, edit or full."),
    "params": ("NAME[=DEFAULT]", "A parameter; without =DEFAULT it must be given (repeatable)."),
    "output": (
        "text|json|FILE",
        "The answer a headless run must give: text, json, or JSON matching the schema in FILE.",
    ),
    "print_schema": ("OPTIONS", "The options that hold a headless answer to a task's schema."),
    "resume_command": (
        "TEMPLATE",
        "The headless form that continues a conversation: print_command's and {session}.",
    ),
    "print_schema_refused": (
        "TEXT",
        "What a failed run prints when the model refuses print_schema: ask again without it.",
    ),
    "print_max_turns": (
        "OPTIONS",
        "The options that hold a headless run to {max_turns} turns (a workflow step's max_turns).",
    ),
}
_FIELD_COMPLETION = {
    "role": "complete_roles",
    "agent": "complete_agents",
    "model": "complete_models",
}


def _fields() -> dict[str, str]:
    """Every item field, in schema order, with its type."""
    found: dict[str, str] = {}
    for fields in schema.ITEM_SECTIONS.values():
        for field, field_type in fields.items():
            found.setdefault(field, field_type)
    return found


def _flag(field: str) -> str:
    flags = {
        "models": "--model-alias",
        "params": "--param",
        "print_permissions": "--print-permission",
    }
    return flags.get(field) or "--" + field.replace("_", "-")


def _field_options(function: F) -> F:
    for field, field_type in reversed(_fields().items()):
        metavar, text = _FIELD_HELP[field]
        users = [s for k, s in schema.KIND_OF.items() if field in schema.ITEM_SECTIONS[k]]
        options: dict[str, Any] = {"help": f"{text} ({', '.join(users)})"}
        if field_type == schema.BOOL:
            options["is_flag"] = True
        elif field_type in (schema.MODELS, schema.PARAMS):
            options.update(multiple=True, metavar=metavar)
        elif field_type in (schema.TIMEOUT, schema.SIZE):
            options.update(type=click.IntRange(min=1), metavar=metavar)
        else:
            options["metavar"] = metavar
        if field in _FIELD_COMPLETION:
            options["shell_complete"] = completer(_FIELD_COMPLETION[field])
        function = click.option(_flag(field), field, **options)(function)
    return function


def layer_scope(project: bool) -> layerfile.Scope:
    options = get_options()
    if project and options.no_project:
        raise UsageError(
            "--project edits the project's config, so it cannot be used with --no-project"
        )
    layer: layerfile.Layer = "project" if project else "global"
    return layerfile.Scope(layer, options.workdir, use_project=not options.no_project)


def interactive() -> bool:
    return console.is_tty(sys.stdin)


def show_file_problems(problems: tuple[Problem, ...]) -> None:
    """Problems of an edited file, the file named once (as `start config validate` shows them)."""
    from start.cli.problems import show_problems

    show_problems(printer(), problems)


def print_result(
    path: str, changed: bool, problems: tuple[Problem, ...], copied: edit.Copied | None = None
) -> None:
    data: dict[str, Any] = {
        "file": str(path),
        "changed": changed,
        "problems": [p.as_dict() for p in problems],
    }
    if copied is not None:
        data["copied"] = {"layer": copied.layer, "file": copied.path}
    console.print_json(data)


def _report(
    outcome: layerfile.Outcome,
    done: str,
    unchanged: str,
    copied: tuple[str, edit.Copied] | None = None,
) -> int:
    """The outcome; `copied`, the item (as "agent 'llm'") copied from a lower layer first."""
    if get_options().json:
        print_result(outcome.path, outcome.changed, outcome.problems, copied and copied[1])
        return ExitCode.OK
    if copied is not None:
        what, source = copied
        out = printer()
        out.note(
            f"Copied {what} from the {source.layer} config, with its comments (your copy "
            "replaces it whole):"
        )
        out.note(f"  from {source.path}")
        out.note(f"  into {outcome.path}")
    printer().note(f"{done if outcome.changed else unchanged} ({outcome.path})")
    show_file_problems(outcome.problems)
    return ExitCode.OK


@command(
    "set",
    help="Set a setting, or one field of an item, in your global config (or the project's, "
    "with --project)."
    "\n\nKEY is one of: " + ", ".join(schema.SETTINGS) + " (settings.NAME too, as the file "
    "spells it); or SECTION.NAME.FIELD for a field "
    "of an agent, role, context or task (a table field such as models takes .KEY too). An item "
    "that only a lower layer defines (a built-in agent) is first copied, with its comments.",
    examples=[
        ("Launch gemini unless told otherwise", "start config set default_agent gemini"),
        (
            "Give the shipped llm agent a default model",
            "start config set agents.llm.default_model echo",
        ),
        ("Give commands a minute in this project", "start config set --project command_timeout 60"),
    ],
)
@click.argument("key", shell_complete=completer("complete_settings"))
@click.argument("value", shell_complete=completer("complete_setting_values"))
@project_option
@common_options(DIRECTORY, QUIET, NO_PROJECT)
def set_(key: str, value: str, project: bool) -> int:
    key = edit.setting_key(key)
    if "." in key:
        return _set_field(key, value, project)
    outcome = edit.set_setting(layer_scope(project), key, value)
    shown = f"{key} = {toml_value(edit.parse_setting(key, value))}"
    return _report(outcome, f"Set {shown}", f"Already set: {shown}")


def _set_field(key: str, text: str, project: bool) -> int:
    """`agents.llm.default_model echo`: one field of an item, copied first from a lower layer."""
    section, name, field, sub = edit.item_field(key)
    value = edit.parse_field(section, field, sub, text)
    outcome, copied = edit.set_fields(layer_scope(project), section, name, {field: value})
    kind = schema.KIND_OF[section]
    shown = f"{key} = {toml_value(value[sub] if sub is not None else value)}"
    what = (f"{kind} '{name}'", copied) if copied is not None else None
    return _report(outcome, f"Set {shown}", f"Already set: {shown}", what)


@command(
    examples=[
        ("Go back to the first installed agent", "start config unset default_agent"),
        ("Remove a field of an item", "start config unset agents.llm.default_model"),
    ]
)
@click.argument("key", shell_complete=completer("complete_settings"))
@project_option
@common_options(DIRECTORY, QUIET, NO_PROJECT)
def unset(key: str, project: bool) -> int:
    """Remove a setting, so the next layer's value or the default applies; or one field of an
    item, so the field's default applies.

    KEY is what 'start config set' takes: a setting, or SECTION.NAME.FIELD (a table field such
    as models takes .KEY too).
    """
    scope = layer_scope(project)
    key = edit.setting_key(key)
    unsetting = edit.unset_field if "." in key else edit.unset_setting
    outcome = unsetting(scope, key)
    return _report(outcome, f"Unset {key}", f"{key} is not set in the {scope.layer} config")


@command(
    examples=[
        (
            "A task that reviews the unstaged diff",
            "start config add task review --role code-reviewer --command 'git diff' "
            "--prompt 'Review this: {command_output}'",
        ),
        (
            "A context in every prompt of this project",
            "start config add --project context docs --file docs/README.md --required",
        ),
        (
            "An agent of your own",
            "start config add agent mine --bin mine --command 'mine {prompt}' "
            "--model-alias fast=mine-1",
        ),
    ]
)
@click.argument("kind", type=Choice(list(schema.SECTION_OF)), metavar="KIND")
@click.argument("name", shell_complete=completer("complete_kind_names"))
@_field_options
@project_option
@common_options(DIRECTORY, QUIET, NO_PROJECT)
def add(kind: str, name: str, project: bool, **values: Any) -> int:
    """Add an agent, role, context or task, with fields given as flags.

    KIND is agent, role, context or task; NAME is the new item's name. Each flag below says
    which kinds take it. On a terminal, a missing required field is asked for; --prompt - reads
    the prompt from stdin.
    """
    section = schema.SECTION_OF[kind]
    known = schema.ITEM_SECTIONS[section]
    given = {f: v for f, v in values.items() if v not in (None, False, ())}
    foreign = [_flag(f) for f in given if f not in known]
    if foreign:
        takes = ", ".join(_flag(f) for f in known)
        raise UsageError(f"{', '.join(foreign)}: not a field of a {kind}; a {kind} takes {takes}")
    if given.get("prompt") == "-":
        given["prompt"] = sys.stdin.read()
        if not given["prompt"].strip():
            raise UsageError(
                f"--prompt - read nothing from stdin, and a {kind} with an empty prompt says "
                f"nothing; pipe the text in (cat prompt.md | start config add {kind} {name} "
                "--prompt -), or give --prompt TEXT"
            )
    if "models" in given:
        given["models"] = _models(given["models"])
    if "print_permissions" in given:
        # A level the CLI gives without an option (llm: read-only) is LEVEL= with nothing after.
        given["print_permissions"] = _pairs(
            given["print_permissions"],
            "--print-permission",
            "LEVEL=OPTIONS, such as edit=--yes (read-only= when a level needs no option)",
            empty=True,
        )
    if "params" in given:
        given["params"] = _params(given["params"])
    if given.get("output", "text") not in schema.OUTPUTS:
        given["output"] = {"schema": given["output"]}  # a schema file, beside the config file
    scope = layer_scope(project)
    if edit.in_lower_layer(scope, section, name):
        # A built-in item (say): copied whole with its comments, then the fields given are set.
        fields = {f: given[f] for f in known if f in given}
        outcome, copied = edit.set_fields(scope, section, name, fields)
        what = (f"{kind} '{name}'", copied) if copied is not None else None
        return _report(
            outcome,
            f"Set {', '.join(fields) or 'nothing'} of {kind} '{name}'",
            f"{kind} '{name}' is unchanged",
            what,
        )
    given.update(_missing_fields(section, kind, given))
    fields = {f: given[f] for f in known if f in given}
    outcome = edit.add_item(scope, section, name, fields)
    return _report(outcome, f"Added {kind} '{name}'", f"{kind} '{name}' is unchanged")


def _models(pairs: tuple[str, ...]) -> dict[str, str]:
    return _pairs(pairs, "--model-alias", "ALIAS=ID, such as fast=model-id-1")


def _pairs(pairs: tuple[str, ...], flag: str, form: str, *, empty: bool = False) -> dict[str, str]:
    found: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip() or not (value.strip() or empty):
            raise UsageError(f"{flag} takes {form}; got '{pair}'")
        found[key.strip()] = value.strip()
    return found


def _params(words: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """`--param focus=security` (a default) or `--param depth` (must be given) as the table."""
    found: dict[str, dict[str, str]] = {}
    for word in words:
        name, equals, default = word.partition("=")
        found[name.strip()] = {"default": default} if equals else {}
    return found


def _missing_fields(section: str, kind: str, given: dict[str, Any]) -> dict[str, Any]:
    """Ask for the fields an item needs on a terminal; otherwise say which flags are missing."""
    if section == "agents":
        needed = [f for f in schema.REQUIRED_FIELDS["agents"] if f not in given]
    elif not any(f in given for f in ("file", "command", "prompt")):
        needed = ["prompt"]
    else:
        needed = []
    if not needed:
        return {}
    if not interactive():
        if section == "agents":
            flags = " and ".join(_flag(f) for f in needed)
            raise UsageError(f"an agent needs {flags}")
        raise UsageError(f"a {kind} needs at least one of --file, --command or --prompt")
    return {f: click.prompt(f.replace("_", " ").capitalize(), err=True) for f in needed}


@command(
    examples=[
        ("Remove a task of yours (asks first)", "start config remove task review"),
        ("The same in a script", "start config remove task review --yes"),
    ]
)
@click.argument("kind", type=Choice(list(schema.SECTION_OF)), metavar="KIND")
@click.argument("name", shell_complete=completer("complete_kind_names"))
@project_option
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@common_options(DIRECTORY, QUIET, NO_PROJECT)
def remove(kind: str, name: str, project: bool, yes: bool) -> int:
    """Remove an agent, role, context or task, with its own comments.

    KIND is agent, role, context or task. Asks first on a terminal; without one, --yes is required.
    """
    scope = layer_scope(project)
    section = schema.SECTION_OF[kind]
    if not yes:
        path = edit.find_item(scope, section, name)
        if not interactive():
            raise UsageError(f"not removing {kind} '{name}' without confirmation; pass --yes")
        if not confirm(f"Remove {kind} '{name}' from {path}?", default=False):
            printer().line("Nothing was removed.")
            return ExitCode.ERROR
    outcome = edit.remove_item(scope, section, name)
    return _report(outcome, f"Removed {kind} '{name}'", f"{kind} '{name}' is already gone")


def confirm(question: str, *, default: bool) -> bool:
    answer: bool = click.confirm(console.printable(question), default=default, err=True)
    return answer


def register(group: click.Group) -> None:
    """Add the editing commands to the `config` group."""
    for each in (set_, unset, add, remove):
        group.add_command(each)
