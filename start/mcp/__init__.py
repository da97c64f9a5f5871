"""`start mcp`: the user's tasks as MCP prompts and tools, their contexts and roles as resources.

`library` is the core (no SDK: it loads, trusts, composes and runs like a launch), `report` the
fixed texts the tools return, `server` the MCP SDK adapter, `clients` the registration snippets.
"""
