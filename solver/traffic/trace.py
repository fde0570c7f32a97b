"""A request trace read into requests and per-slot rates, in the column layout of the
public Azure LLM inference traces (github.com/Azure/AzurePublicDataset,
AzureLLMInferenceDataset2023.md and AzureLLMInferenceDataset2024.md, "Schema": TIMESTAMP
"Invocation time", ContextTokens, GeneratedTokens; data/AzureLLMInferenceTrace_conv.csv
begins `TIMESTAMP,ContextTokens,GeneratedTokens` then rows such as
`2023-11-16 18:15:46.6805900,374,44`; read 2026-12-05).

TIMESTAMP is a date and time (`YYYY-MM-DD HH:MM:SS` with any number of fractional
digits, the Azure files have seven) or a plain number of seconds, one form for the whole
file; arrivals are taken from the earliest row (t = 0) and sorted. Other columns beside
the three are ignored. Every bad row is refused with its line, field, value and what is
allowed (InputError: exit 2), never skipped. The rows are read at the edge
(spec/trace_file.py, which the schedule spec reads too); here they become requests.
"""

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
