"""plan-opt: the cheapest hardware that serves a language model at your latency targets."""

__version__ = "0.1.0"
