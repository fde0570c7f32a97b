"""The `plan-opt` command line: one module per command."""
