"""Configuration: reading, validating and merging the built-in, global and project layers."""
