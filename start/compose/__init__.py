"""A launch composed: selection, sources, the agent's command, the pipeline."""
