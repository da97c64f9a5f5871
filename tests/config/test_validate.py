"""Every validation rule, with its exact message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start.config.validate import check_name
from tests.conftest import problems

AGENT = '[agents.a]\nbin = "a"\ncommand = "{bin} {prompt}"\n'


CASES = [
    pytest.param(
        '[tasks.t]\ncomand = "x"\nprompt = "p"\n',
        ["warning: 2:1: tasks.t.comand: unknown key 'comand' (did you mean 'command'?)"],
        id="unknown-key",
    ),
    pytest.param(
        '[settings]\ndefault_agnet = "a"\n',
        [
            "warning: 2:1: settings.default_agnet: unknown key 'default_agnet' (did you mean 'default_agent'?)"
        ],
        id="unknown-setting",
    ),
    pytest.param(
        '[taks.t]\nprompt = "p"\n',
        ["warning: 1:1: taks: unknown section [taks] (did you mean 'tasks'?)"],
        id="unknown-section",
    ),
    pytest.param(
        'default_agent = "a"\n',
        ["warning: 1:1: default_agent: 'default_agent' is a setting; put it under [settings]"],
        id="setting-at-top-level",
    ),
    pytest.param(
        "[settings]\ncommand_timeout = 0\n",
        [
            "error: 2:1: settings.command_timeout: must be a whole number of seconds from 1 to 86400 (a day), not 0"
        ],
        id="timeout-zero",
    ),
    pytest.param(
        '[settings]\ncommand_timeout = "30"\n',
        [
            "error: 2:1: settings.command_timeout: must be a whole number of seconds from 1 to 86400 (a day), not a string"
        ],
        id="timeout-string",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\ncommand_timeout = true\n',
        [
            "error: 3:1: tasks.t.command_timeout: must be a whole number of seconds from 1 to 86400 (a day), not a boolean"
        ],
        id="timeout-bool",
    ),
    pytest.param(
        "[settings]\ncommand_timeout = 86401\n",
        [
            "error: 2:1: settings.command_timeout: must be a whole number of seconds from 1 to 86400 (a day), not 86401"
        ],
        id="timeout-over-a-day",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\ncommand_timeout = 1000000000\n',
        [
            "error: 3:1: tasks.t.command_timeout: must be a whole number of seconds from 1 to 86400 (a day), not 1000000000"
        ],
        id="timeout-huge",
    ),
    pytest.param(
        "[settings]\ntaskfile_timeout = 0\n",
        [
            "error: 2:1: settings.taskfile_timeout: must be a whole number of seconds from 1 to 86400 (a day), not 0"
        ],
        id="taskfile-timeout-zero",
    ),
    pytest.param(
        '[settings]\ntaskfile_timeout = "10m"\n',
        [
            "error: 2:1: settings.taskfile_timeout: must be a whole number of seconds from 1 to 86400 (a day), not a string"
        ],
        id="taskfile-timeout-string",
    ),
    pytest.param(
        '[settings]\nshell = "bash -e"\n',
        [
            "error: 2:1: settings.shell: 'bash -e' is not one program: a shell is a name on PATH or a "
            'path, without arguments; put options in the command instead (e.g. "set -e; ...")'
        ],
        id="shell-with-arguments",
    ),
    pytest.param(
        '[tasks.t]\ncommand = "true"\nshell = " "\n',
        ['error: 3:1: tasks.t.shell: must name a program, such as "bash" or "python3"'],
        id="shell-blank",
    ),
    pytest.param(
        '[contexts.c]\nprompt = "p"\nrequired = "yes"\n',
        ["error: 3:1: contexts.c.required: must be true or false, not a string"],
        id="bool",
    ),
    pytest.param(
        "[roles.r]\nprompt = 3\n",
        [
            "error: 2:1: roles.r.prompt: must be a string, not an integer",
        ],
        id="string",
    ),
    pytest.param(
        AGENT + "[agents.a.models]\nfast = 1\n",
        ["error: 4:1: agents.a.models: model 'fast' must be a string, not an integer"],
        id="models-table",
    ),
    pytest.param(
        '[agents.a]\nbin = "a"\ncommand = "{bin} {prompt}"\nmodels = "x"\n',
        ['error: 4:1: agents.a.models: must be a table of alias = "model id", not a string'],
        id="models-not-table",
    ),
    pytest.param(
        '[tasks.Code_Review]\nprompt = "p"\n',
        [
            "error: 1:1: tasks.Code_Review: invalid task name 'Code_Review': use lowercase letters "
            "and digits in words joined by single hyphens, such as 'code-review'"
        ],
        id="task-name",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\nalias = "G D R"\n',
        [
            "error: 3:1: tasks.t.alias: invalid alias name 'G D R': use lowercase letters and digits "
            "in words joined by single hyphens, such as 'code-review'"
        ],
        id="alias-name",
    ),
    pytest.param(
        '[roles.r]\ndescription = "nothing"\n',
        ["error: 1:1: roles.r: needs at least one of 'file', 'command' or 'prompt'"],
        id="no-source",
    ),
    pytest.param(
        '[agents.a]\ncommand = "{bin} {prompt}"\n',
        ["error: 1:1: agents.a: missing required field 'bin'"],
        id="agent-bin-required",
    ),
    pytest.param(
        '[agents.a]\nbin = "a"\n',
        ["error: 1:1: agents.a: missing required field 'command'"],
        id="agent-command-required",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\nrole = "revewer"\n[roles.reviewer]\nprompt = "r"\n',
        ["error: 3:1: tasks.t.role: role 'revewer' is not defined (did you mean 'reviewer'?)"],
        id="task-role-ref",
    ),
    pytest.param(
        AGENT + '[tasks.t]\nprompt = "p"\nagent = "b"\n',
        ["error: 6:1: tasks.t.agent: agent 'b' is not defined; defined agents: a"],
        id="task-agent-ref",
    ),
    pytest.param(
        '[settings]\ndefault_agent = "claud"\n',
        ["error: 2:1: settings.default_agent: agent 'claud' is not defined"],
        id="default-agent-ref",
    ),
    pytest.param(
        AGENT + '[settings]\nmcp_agents = ["a", "b"]\n',
        ["error: 5:1: settings.mcp_agents: agent 'b' is not defined; defined agents: a"],
        id="mcp-agents-ref",
    ),
    pytest.param(
        '[settings]\nmcp_agents = "a"\nmcp_permissions = "all"\nmcp_depth = 0\n',
        [
            "error: 2:1: settings.mcp_agents: must be an array of names, not a string",
            "error: 3:1: settings.mcp_permissions: must be one of read-only, edit, full, not 'all'",
            "error: 4:1: settings.mcp_depth: must be a positive integer, not 0",
        ],
        id="mcp-settings-types",
    ),
    pytest.param(
        '[settings]\ndefault_role = "x"\n',
        ["error: 2:1: settings.default_role: role 'x' is not defined"],
        id="default-role-ref",
    ),
    pytest.param(
        AGENT + 'default_model = "fst"\n[agents.a.models]\nfast = "f-1"\nslow = "s-1"\n',
        [
            "error: 4:1: agents.a.default_model: 'fst' is not a key of agents.a.models "
            "(keys: fast, slow) (did you mean 'fast'?)"
        ],
        id="default-model",
    ),
    pytest.param(
        '[tasks.one]\nprompt = "1"\nalias = "x"\n[tasks.two]\nprompt = "2"\nalias = "x"\n',
        [
            "warning: 6:1: tasks.two.alias: alias 'x' is already used by task 'one', which comes "
            "first and keeps it"
        ],
        id="alias-conflict",
    ),
    pytest.param(
        '[tasks.one]\nprompt = "1"\n[tasks.two]\nprompt = "2"\nalias = "one"\n',
        ["warning: 5:1: tasks.two.alias: alias 'one' is the name of another task; the name wins"],
        id="alias-is-a-name",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "{instruction}"\n',
        [
            "error: 2:11: tasks.t.prompt: unknown placeholder {instruction} (did you mean '{instructions}'?)"
        ],
        id="placeholder-near-miss",
    ),
    pytest.param(
        '[contexts.c]\nprompt = "{instructions}"\n',
        [
            "error: 2:11: contexts.c.prompt: placeholder {instructions} is not available in role and "
            "context prompts; it is allowed in task prompts"
        ],
        id="placeholder-scope",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "{banana} {{prompt}}"\n',
        [
            "warning: 2:11: tasks.t.prompt: unknown placeholder {banana} is kept as literal text; "
            "write {{banana}} to silence this"
        ],
        id="placeholder-unknown-word",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "{file_contents} {command_output}"\n',
        [
            "warning: 2:11: tasks.t.prompt: {file_contents} is used but 'file' is not set, so "
            "it is empty",
            "warning: 2:27: tasks.t.prompt: {command_output} is used but 'command' is not set, "
            "so it is empty",
        ],
        id="placeholder-without-source",
    ),
    pytest.param(
        '[roles.r]\nprompt = "{file} {command}"\n[contexts.c]\nprompt = "{file_contnts}"\n',
        [
            "warning: 2:11: roles.r.prompt: {file} is used but 'file' is not set, so it is empty",
            "warning: 2:18: roles.r.prompt: {command} is used but 'command' is not set, so it is "
            "empty",
            "error: 4:11: contexts.c.prompt: unknown placeholder {file_contnts} (did you mean "
            "'{file_contents}'?)",
        ],
        id="placeholder-without-source-typo-still-an-error",
    ),
    pytest.param(
        '[roles.r]\nprompt = "{model} {date}"\n[contexts.c]\nprompt = "{model} {date}"\n',
        [],
        id="model-and-date-everywhere",
    ),
    pytest.param(
        '[tasks.t]\ncommand = "git diff"\nprompt = "p"\nif_no_output = "nothing staged"\n',
        [],
        id="if-no-output-uses-the-command",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\nif_no_output = " "\n',
        [
            "error: 3:1: tasks.t.if_no_output: must be a message, not empty",
            "warning: 3:1: tasks.t.if_no_output: 'if_no_output' is set but the task has no "
            "'command', so it never applies",
        ],
        id="if-no-output-empty-and-without-command",
    ),
    pytest.param(
        '[roles.r]\ncommand = "x"\nif_no_output = "m"\n',
        ["warning: 3:1: roles.r.if_no_output: unknown key 'if_no_output'"],
        id="if-no-output-is-for-tasks",
    ),
    pytest.param(
        '[roles.r]\nprompt = "p"\nfile = "x.md"\ncommand = "ls"\n',
        [
            "warning: 3:1: roles.r.file: 'file' is set but the prompt never uses {file} or "
            "{file_contents}, so it is ignored",
            "warning: 4:1: roles.r.command: 'command' is set but the prompt never uses {command} or "
            "{command_output}, so it is ignored",
        ],
        id="unused-source",
    ),
    pytest.param(
        '[agents.a]\nbin = "a"\ncommand = "{bin} --system \'{role}\'"\n',
        [
            "warning: 3:1: agents.a.command: the command never uses {prompt} or {prompt_file}, so "
            "the composed prompt is not passed to the agent"
        ],
        id="agent-without-prompt",
    ),
    pytest.param(
        '[agents.a]\nbin = "a"\ncommand = "{bin} {instructions} {prompt}"\n',
        [
            "error: 3:18: agents.a.command: placeholder {instructions} is not available in agent "
            "commands; it is allowed in task prompts"
        ],
        id="agent-placeholder-scope",
    ),
    pytest.param(
        '[agents.a]\nbin = "a"\ncommand = "{bin} <<EOF\\n{prompt}\\nEOF"\n',
        [
            "error: 3:1: agents.a.command: here-documents ('<<') are not supported; pass the prompt "
            "as a file instead: {prompt_file} with an option of the agent that reads a file, "
            "or '< {prompt_file}'"
        ],
        id="agent-heredoc",
    ),
    pytest.param(
        '[agents.a]\nbin = "a"\ncommand = "{bin} [--model x] \'{args}\' {prompt}"\n',
        [
            "error: 3:1: agents.a.command: optional group [--model x] holds no placeholder; write "
            "\\[ for a literal '['",
            "error: 3:31: agents.a.command: {args} stands for zero or more arguments, so it must be a "
            "word of its own, unquoted",
        ],
        id="agent-group-and-args",
    ),
    pytest.param(
        AGENT + 'large_prompt = "Read {prompt} first."\n',
        [
            "error: 4:22: agents.a.large_prompt: placeholder {prompt} is not available in an "
            "agent's large_prompt; it is allowed in agent commands",
            "error: 4:1: agents.a.large_prompt: large_prompt must name {prompt_file}: it replaces a "
            "prompt too large for the command line, so it has to tell the agent where the "
            "prompt is (or set large_prompt_stdin = true)",
        ],
        id="large-prompt-without-file",
    ),
    pytest.param(
        '[agents.a]\nbin = "a"\ncommand = "{bin} -f {prompt_file}"\n'
        'large_prompt = "Read {prompt_file}."\n',
        [
            "warning: 4:1: agents.a.large_prompt: the command never uses {prompt}, so large_prompt is never sent"
        ],
        id="large-prompt-unused",
    ),
    pytest.param(
        AGENT + "large_prompt_stdin = true\n",
        [
            "error: 4:1: agents.a.large_prompt_stdin: large_prompt_stdin needs large_prompt: the text "
            "sent as {prompt} while the prompt goes to stdin (it may be empty)"
        ],
        id="large-prompt-stdin-alone",
    ),
    pytest.param(
        "[agents]\nx = 1\n",
        ["error: 2:1: agents.x: must be a table ([agents.x])"],
        id="item-not-table",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\noutput = "yaml"\n',
        [
            'error: 3:1: tasks.t.output: must be "text", "json", or a JSON Schema: '
            '{ schema = "FILE.json" } or { schema = { type = "object", ... } }, not \'yaml\''
        ],
        id="output-unknown",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\noutput = { scheme = "s.json" }\n',
        [
            "error: 3:1: tasks.t.output.scheme: unknown key 'scheme': an output table has only 'schema'",
            'error: 3:1: tasks.t.output: an output table needs schema: { schema = "FILE.json" } '
            'or { schema = { type = "object", ... } }',
        ],
        id="output-table-without-schema",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\noutput = { schema = " " }\n',
        ["error: 3:1: tasks.t.output.schema: must name a JSON Schema file, not be empty"],
        id="output-schema-empty",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\noutput = { schema = 3 }\n',
        [
            "error: 3:1: tasks.t.output.schema: must be the path of a JSON Schema file or a table "
            "(the schema itself), not an integer"
        ],
        id="output-schema-integer",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\n[tasks.t.output.schema]\nconst = 1979-05-27\n',
        ["error: 3:1: tasks.t.output.schema: must be JSON: a date has no JSON form"],
        id="output-schema-date",
    ),
    pytest.param(
        '[agents.a]\nbin = "a"\ncommand = "{bin} {prompt}"\nprint_command = "{bin} {prompt}"\nprint_output = "text"\nprint_permissions = { read-only = "" }\nprint_schema = "--json-schema"\n',
        [
            "error: 7:1: agents.a.print_schema: print_schema must name {schema} (the schema as JSON "
            'text) or {schema_file} (a file holding it), such as "--json-schema {schema}"'
        ],
        id="print-schema-without-placeholder",
    ),
    pytest.param(
        '[agents.a]\nbin = "a"\ncommand = "{bin} {prompt}"\nprint_command = "{bin} {prompt}"\nprint_output = "text"\nprint_permissions = { read-only = "" }\nprint_schema = "--schema {prompt}"\n',
        [
            "error: 7:26: agents.a.print_schema: placeholder {prompt} is not available in an "
            "agent's print_schema; it is allowed in agent commands",
            "error: 7:1: agents.a.print_schema: print_schema must name {schema} (the schema as JSON "
            'text) or {schema_file} (a file holding it), such as "--json-schema {schema}"',
        ],
        id="print-schema-other-placeholder",
    ),
    pytest.param(
        '[agents.a]\nbin = "a"\ncommand = "{bin} {prompt}"\nprint_command = "{bin} {prompt}"\nprint_output = "text"\nprint_permissions = { read-only = "" }\nprint_schema_refused = "no schemas"\n',
        [
            "error: 7:1: agents.a.print_schema_refused: goes with print_schema: it says when the "
            "CLI refused print_schema's options"
        ],
        id="print-schema-refused-alone",
    ),
    pytest.param(
        '[agents.a]\nbin = "a"\ncommand = "{bin} {prompt}"\nprint_command = "{bin} {prompt}"\nprint_output = "text"\nprint_permissions = { read-only = "" }\nprint_schema = "--schema {schema}"\nprint_schema_refused = " "\n',
        [
            "error: 8:1: agents.a.print_schema_refused: must not be empty: it is the text a failed "
            'run prints when the model refuses print_schema, such as "does not support schemas"'
        ],
        id="print-schema-refused-empty",
    ),
]


_NAME_PARTS = ["a", "z9", "0", "-", "--", "A", "_", " ", "\n", "é", ":"]


@given(st.one_of(st.lists(st.sampled_from(_NAME_PARTS), max_size=6).map("".join), st.text()))
def test_a_name_is_what_the_pattern_says_it_is(name: str) -> None:
    # The oracle: the pattern names were matched with before, whole (its `$` let a name end in
    # a newline: `[tasks."x\n"]` was taken as task 'x\n').
    assert (check_name("role", name) is None) == bool(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name))


def test_a_name_that_ends_in_a_newline_is_not_one(conf: Path) -> None:
    assert problems(conf, '[tasks."x\\n"]\nprompt = "p"\n') == [
        "error: 1:1: tasks.x\n: invalid task name 'x\n': use lowercase letters and digits in "
        "words joined by single hyphens, such as 'code-review'"
    ]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_rule(conf: Path, text: str, expected: list[str]) -> None:
    assert problems(conf, text) == expected


def test_every_problem_is_collected_not_only_the_first(conf: Path) -> None:
    found = problems(
        conf,
        '[tasks.a]\ncomand = "x"\n[tasks.B]\nprompt = "p"\n[settings]\ncommand_timeout = -1\n',
    )
    assert len(found) == 4


def test_valid_seed_example_has_no_problems(conf: Path) -> None:
    seed = '''
[roles.code-reviewer]
prompt = "You review code."

[agents.claude]
bin = "claude"
command = "{bin} --model {model} --append-system-prompt '{role}' '{prompt}'"
default_model = "sonnet"
[agents.claude.models]
sonnet = "claude-sonnet-4-5"

[tasks.git-diff-review]
alias = "gdr"
description = "Review git diff changes"
role = "code-reviewer"
agent = "claude"
command = "git diff --staged"
shell = "bash"
command_timeout = 30
prompt = """
Analyze the following git diff.

{instructions}

```diff
{command_output}
```
"""
'''
    assert problems(conf, seed) == []
