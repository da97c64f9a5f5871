# The same verbs locally and in CI: make test, make check, make run, make bench; make agents.
# make test: the suite without the tests marked slow, on every core (pytest-xdist).
# make check: ruff (lint and format), mypy --strict, make test, then make test-slow (CI: .ci/run).
PYTHON ?= python3
# Another interpreter gets a venv of its own: make test PYTHON=python3.13 VENV=.venv-3.13 (.ci/run).
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: test test-slow test-all check lint types run bench bench-recording agents mcp-check screenshots \
	skills-check board-check clean

# The virtual environment, refreshed whenever pyproject.toml changes.
$(VENV)/.test-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

$(VENV)/.dev-installed: $(VENV)/.test-installed
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

# Bytecode caches on, whatever the environment says: every test that starts `python -m start`
# would otherwise compile the package again (and pytest rewrite every test module again).
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n auto

test: $(VENV)/.test-installed
	$(PYTEST) -m "not slow"

# The tests marked slow (end to end, real processes per example); CI runs them after `make test`.
test-slow: $(VENV)/.test-installed
	$(PYTEST) -m slow

# Every test in one run, the slow ones included.
test-all: $(VENV)/.test-installed
	$(PYTEST)

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check start tests benchmarks
	$(BIN)/ruff format --check start tests benchmarks

types: $(VENV)/.dev-installed
	$(BIN)/mypy

check: lint types test test-slow

# The main job on the shipped defaults, in a scratch repository with a staged change.
run: $(VENV)/.test-installed
	PATH="$(CURDIR)/$(BIN):$$PATH" sh scripts/demo.sh

# The screenshots of docs/board.md and the README: tests/web/test_screenshots.py in a real
# Chromium (Debian's `chromium`), saved to docs/images/board-serve/.
screenshots: $(VENV)/.test-installed
	START_SCREENSHOTS=$(CURDIR)/docs/images/board-serve START_BROWSER_REQUIRED=1 $(PYTEST) -n 0 tests/web/test_screenshots.py

# Prints the table and writes it, with the machine and the commit, to docs/benchmark-results.md;
# exits 1 if a target is missed.
bench: $(VENV)/.test-installed
	$(BIN)/python benchmarks/run.py --output docs/benchmark-results.md

# What recording a run costs: its pending file against a direct insert into the history, cold and
# warm; writes the figures into docs/performance.md and exits 1 if the direct insert costs less.
bench-recording: $(VENV)/.test-installed
	$(BIN)/python benchmarks/recording.py --output docs/performance.md

# Real MCP clients (MCP Inspector, Claude Code, and any others in MCP_CHECK_NPM) against
# `start mcp`. Not part of `make test`: it needs npm and Node >= 22.19 (docs/mcp.md).
mcp-check: $(VENV)/.test-installed
	PATH="$(CURDIR)/$(BIN):$$PATH" sh scripts/mcp-check.sh

# Real agent CLIs read what `start export skills` writes: Claude Code (against the offline model
# server) and Gemini CLI list the exported skills. Not part of `make test`: it needs `claude` and
# `gemini` on PATH (make agents installs them; docs/interop.md).
skills-check: $(VENV)/.test-installed
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python scripts/skills-check.py

# The board on the real path: Claude Code (against the offline model server) creates items with
# start mcp's board tools, and `start board run` runs them with codex and gemini (docs/board.md).
# Not part of `make test`: it needs `claude`, `codex` and `gemini` on PATH (make agents).
board-check: $(VENV)/.test-installed
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python scripts/board-check.py

# Not part of `make test`: install every CLI of the agent catalog into a scratch prefix
# (AGENTS_PREFIX, default /tmp/start-agents) and re-record tests/fixtures/agent_help: each CLI's
# help, and a probe running it on start's own argv with `-- --version` passed through. Then run
# `start prompt --print` and `start task --print --json` through each CLI, pointed at the offline
# model server (tests/model_server.py), into agent_help/PRINT-RESULTS.md; that step alone:
# $(BIN)/python scripts/agents.py --no-install --print-only.
agents: $(VENV)/.test-installed
	$(BIN)/python scripts/agents.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache dist build
