"""The user's own setup: init writes it, edit changes it, doctor checks it."""
