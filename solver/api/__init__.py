"""The HTTP API of `plan-opt serve` (an edge, as the CLI is)."""
