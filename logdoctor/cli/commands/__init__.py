"""Subcommands that are more than a few lines: rules, eval, train."""
