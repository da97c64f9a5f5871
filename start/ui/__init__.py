"""The terminal: the console, live displays, status lines, progress, piped text."""
