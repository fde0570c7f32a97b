"""A request trace (the Azure LLM inference layout, read and checked at the edge by
spec/trace_file.py, whose docstring gives the layout and its source) made into requests
and per-slot rates."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from solver.errors import InputError
from solver.spec.trace_file import COLUMNS, parse_trace_rows, read_trace_rows
from solver.traffic.types import Request

__all__ = ["COLUMNS", "Trace", "parse_trace", "read_trace", "slot_counts"]


@dataclass(frozen=True)
class Trace:
    """A trace's requests, arrivals in seconds from its first, in arrival order."""

    requests: tuple[Request, ...]
    source: str

    def counts(self, slot_s: float) -> list[int]:
        return slot_counts(self.requests, slot_s)

    def rates_per_s(self, slot_s: float) -> list[float]:
        return [n / slot_s for n in self.counts(slot_s)]


def slot_counts(requests: Sequence[Request], slot_s: float) -> list[int]:
    """Arrivals per slot [k·slot_s, (k+1)·slot_s), as many slots as reach the last arrival."""
    if not 0 < slot_s < math.inf:
        raise InputError("slot_s", slot_s, "a slot's length in seconds, above 0 and finite")
    if not requests:
        return []
    counts = [0] * (int(max(r.arrival_s for r in requests) // slot_s) + 1)
    for r in requests:
        counts[int(r.arrival_s // slot_s)] += 1
    return counts


def read_trace(path: str | Path) -> Trace:
    """The trace at `path` (InputError naming the path when it cannot be read)."""
    return Trace(tuple(Request(t, p, o) for t, p, o in read_trace_rows(path)), str(path))


def parse_trace(text: str, source: str = "trace") -> Trace:
    """A trace's CSV text (header first) into its requests."""
    return Trace(tuple(Request(t, p, o) for t, p, o in parse_trace_rows(text, source)), source)
