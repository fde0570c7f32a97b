"""A traffic profile from a CSV file: `slot_start,requests_per_s`, one row per slot, in
order, without gaps. A start is HH:MM (within a day) or a number of hours from the
profile's start; each must be the previous one plus the slot. Read at the edge: every
bad row is refused at its line."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from solver.errors import InputError
from solver.spec.quantities import RATE
from solver.spec.text_file import read_text_file

MAX_FILE_BYTES = 2**20
FIELD = "traffic_profile.csv"


def _start_s(text: str, source: str, line: int) -> float:
    t = text.strip()
    allowed = "a slot start: HH:MM (e.g. 07:30) or hours from the start (e.g. 7.5)"
    try:
        if ":" in t:
            hh, mm = t.split(":")
            h, m = int(hh), int(mm)
            if not (0 <= h <= 24 and 0 <= m < 60):
                raise ValueError
            return h * 3600.0 + m * 60.0
        x = float(t)
    except ValueError:
        raise InputError("slot_start", text, allowed, source=source, line=line) from None
    if not math.isfinite(x) or x < 0:
        raise InputError("slot_start", text, allowed, source=source, line=line)
    return x * 3600.0


def _rate(text: str, source: str, line: int) -> float:
    try:
        x = float(text)
    except ValueError:
        x = float("nan")
    if not (math.isfinite(x) and RATE.lo <= x <= RATE.hi):
        raise InputError("requests_per_s", text, f"must be a number from {RATE}", source=source, line=line)
    return x


def read_profile(path: Path, slot_s: float, max_slots: int) -> tuple[float, ...]:
    """Each slot's rate, in order."""
    source = str(path)
    text = read_text_file(path, FIELD, "a CSV file", MAX_FILE_BYTES, f"a profile has at most {max_slots:,} slots")
    rows = [(n, r) for n, r in enumerate(csv.reader(text.splitlines()), start=1) if r and any(c.strip() for c in r)]
    if not rows or [c.strip() for c in rows[0][1]] != ["slot_start", "requests_per_s"]:
        raise InputError(
            "CSV header", ",".join(rows[0][1]) if rows else "", "must be slot_start,requests_per_s", source=source, line=rows[0][0] if rows else 1
        )
    rates: list[float] = []
    first = None
    for n, row in rows[1:]:
        if len(row) != 2:
            raise InputError("CSV row", ",".join(row), "must be two cells: slot_start,requests_per_s", source=source, line=n)
        start = _start_s(row[0], source, n)
        first = start if first is None else first
        want = first + len(rates) * slot_s
        if abs(start - want) > 1e-6 and abs(start + 86_400 - want) > 1e-6:  # HH:MM wraps past midnight
            raise InputError(
                "slot_start",
                row[0],
                f"must follow the previous slot by traffic_profile.slot ({slot_s:g} s): expected {want / 3600:g} h",
                source=source,
                line=n,
            )
        rates.append(_rate(row[1], source, n))
        if len(rates) > max_slots:
            raise InputError(FIELD, source, f"holds over {max_slots:,} slots", source=source, line=n)
    if not rates:
        raise InputError(FIELD, source, "holds no slots (a header slot_start,requests_per_s, then one row per slot)")
    return tuple(rates)
