"""A request turned into cases and skips; every check of the user's input."""
