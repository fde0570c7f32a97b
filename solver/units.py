"""Units: SI inside, explicit GB (1e9) and GiB (2^30) at the edges.

Parsing accepts a plain number (already in the base unit) or a string with a unit,
so a spec can say `max_tpot: 50ms` or `memory_bytes: 24GiB`.
"""

from __future__ import annotations

import re

KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40

_BYTES = {"b": 1, "kb": KB, "mb": MB, "gb": GB, "tb": TB, "kib": KiB, "mib": MiB, "gib": GiB, "tib": TiB}
_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0}
_FLOPS = {"flop/s": 1.0, "gflop/s": 1e9, "tflop/s": 1e12, "pflop/s": 1e15, "tflops": 1e12, "pflops": 1e15, "gflops": 1e9}
_BANDWIDTH = {f"{k}/s": v for k, v in _BYTES.items()}

KINDS = {"bytes": _BYTES, "seconds": _SECONDS, "flop_per_s": _FLOPS, "bytes_per_s": _BANDWIDTH}
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ/]*)\s*$")


def parse_quantity(value: object, kind: str) -> float:
    """'500ms' -> 0.5, '24GiB' -> 25769803776, 800e9 -> 800e9. Raises ValueError naming
    the units allowed."""
    units = KINDS[kind]
    if isinstance(value, bool):
        raise ValueError(f"expected a number or a quantity with a unit ({', '.join(units)})")
    if isinstance(value, int | float):
        return float(value)
    m = _NUMBER.match(str(value))
    if not m:
        raise ValueError(f"expected a number or a quantity with a unit ({', '.join(units)})")
    number, unit = float(m.group(1)), m.group(2).lower()
    if not unit:
        return number
    if unit not in units:
        raise ValueError(f"unknown unit '{m.group(2)}'; allowed: {', '.join(units)}")
    return number * units[unit]


def fmt_bytes(n_bytes: float) -> str:
    """Both units, always labelled: '25.76 GB (23.99 GiB)'."""
    return f"{n_bytes / GB:,.2f} GB ({n_bytes / GiB:,.2f} GiB)"


def fmt_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:,.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:,.1f} ms"
    return f"{s * 1e6:,.1f} µs"


def fmt_rate(x: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:,.1f} {prefix}{unit}"
    return f"{x:,.1f} {unit}"


TIME_TOLERANCE = 1e-9
"""Relative: a time meets its limit when it is at most limit × (1 + TIME_TOLERANCE). The
slack is float noise (two paths to the same figure, `9.5ms` parsed as 9.5 × 1e-3), never
physics: a plan over its target by more than this is refused. The solver-free validator
(explain/validate.py) allows the same."""


def meets_time(seconds: float, limit_s: float) -> bool:
    """The one rule for a time against its limit, wherever a plan is built or chosen: a
    plan exactly at its target meets it (a TPOT set to a plan's own TPOT keeps the plan)."""
    return seconds <= limit_s * (1 + TIME_TOLERANCE)
