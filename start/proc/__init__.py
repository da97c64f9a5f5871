"""Processes: commands and agents run in groups of their own, their argv, the watchdog."""
