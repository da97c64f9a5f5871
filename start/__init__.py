"""start: launch AI coding agents with a role, contexts and a task in one command."""

__version__ = "0.1.0"
