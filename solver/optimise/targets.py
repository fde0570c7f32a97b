"""One `Target` per user limit: its spec path, its unit, how it rounds to the model's
integers, which way it relaxes, the candidate figure it constrains, its label, and how
a report writes its value. Every place that names a target reads it here, so the next
one (a request rate, a percentile) is one entry."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from solver.units import TIME_TOLERANCE, fmt_seconds, meets_time  # noqa: F401 (the rule lives in solver.units; re-exported)


class Measured(Protocol):
    """What a target's measure reads off a plan (a candidate has all of it)."""

    @property
    def tpot_s(self) -> float: ...
    @property
    def ttft_s(self) -> float: ...
    @property
    def cost_usd_per_hour(self) -> float: ...
    @property
    def purchase_usd(self) -> float: ...
    @property
    def gpus(self) -> int: ...


US = 1_000_000  # microseconds per second


def ceil_us(seconds: float) -> int:
    """A plan's time in whole microseconds, rounded up (a hair of float noise never costs a microsecond)."""
    return math.ceil(seconds * US - 1e-6)


def floor_us(seconds: float) -> int:
    """A limit in whole microseconds, rounded down."""
    return math.floor(seconds * US + 1e-6)


def time_us(seconds: float, limit_s: float | None) -> int:
    """A plan's time as the model's coefficient against `limit_s` (its target), which the
    model holds as floor_us(limit_s): rounded up, then put on the side of that limit that
    `meets_time` says — at most floor_us(limit_s) when the time meets it, above when it
    does not. So `coefficient ≤ floor_us(limit)` holds exactly when `meets_time` does,
    whatever the microsecond grid: rounding the figure up and the limit down, each alone,
    would refuse a plan at its own TPOT when that is not a whole microsecond; rounding
    both the same way would accept one up to a microsecond over. Without a limit, the
    time rounded up (objectives, frontiers, tie-breaks)."""
    us = ceil_us(seconds)
    if limit_s is None:
        return us
    cap = floor_us(limit_s)
    return min(us, cap) if meets_time(seconds, limit_s) else max(us, cap + 1)


@dataclass(frozen=True)
class Target:
    name: str
    """As the spec's leaf and every report name it: max_tpot, users, ..."""
    spec_path: str
    unit: str
    """s, usd_per_hour, usd, GPUs, users or tokens."""
    label: str
    """The constraint in words, as the conflict report states it."""
    relaxes_upward: bool
    """A limit (max_*) relaxes by growing; a demand (users, context) by shrinking."""
    limit_field: str | None = None
    """The model's `Limits` field it sets (None: a demand the candidates are built for)."""
    to_model: Callable[[float], int] | None = None
    """The spec's value in the model's integer unit, rounded the safe way (down)."""
    measure: Callable[[Measured], float] | None = None
    """The candidate's figure it bounds, in the spec's unit."""
    objective: str | None = None
    """The objective that minimises `measure` (for the nearest relaxation)."""
    reach: str = ""
    """How the nearest relaxation says the least `measure` reachable ({} is the value)."""

    def text(self, value: float | None) -> str:
        if value is None:
            return "—"
        if self.unit == "s":
            return fmt_seconds(value)
        if self.unit == "usd_per_hour":
            return f"${value:,.2f}/h"
        if self.unit == "usd":
            return f"${value:,.0f}"
        return f"{value:,.0f}"


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "max_tpot",
            "sla.max_tpot",
            "s",
            "bandwidth: TPOT ≤ max_tpot",
            True,
            "max_tpot_us",
            floor_us,
            lambda c: c.tpot_s,
            "min_tpot",
            "lowest TPOT reachable: {}",
        ),
        Target(
            "max_ttft",
            "sla.max_ttft",
            "s",
            "compute: TTFT ≤ max_ttft",
            True,
            "max_ttft_us",
            floor_us,
            lambda c: c.ttft_s,
            None,
            "lowest TTFT reachable: {}",
        ),
        Target("users", "workload.users", "users", "serve every concurrent user", False),
        Target("context_tokens", "workload.context_tokens", "tokens", "hold every user's context", False),
        Target(
            "max_usd_per_hour",
            "budget.max_usd_per_hour",
            "usd_per_hour",
            "budget: $/hour ≤ max_usd_per_hour",
            True,
            "max_cost_cents",
            lambda v: math.floor(v * 100 + 1e-9),
            lambda c: c.cost_usd_per_hour,
            "min_cost",
            "least $/hour that meets the rest: {}",
        ),
        Target(
            "max_purchase_usd",
            "budget.max_purchase_usd",
            "usd",
            "budget: purchase ≤ max_purchase_usd",
            True,
            "max_purchase_dollars",
            lambda v: math.floor(v + 1e-9),
            lambda c: c.purchase_usd,
            "min_purchase",
            "least purchase that meets the rest: {}",
        ),
        Target(
            "max_gpus",
            "search.max_gpus",
            "GPUs",
            "GPUs ≤ max_gpus",
            True,
            "max_gpus",
            lambda v: int(v),
            lambda c: float(c.gpus),
            "min_gpus",
            "fewest GPUs that meet the rest: {}",
        ),
    )
}
"""In the order reports list them."""

LABELS: dict[str, str] = {
    "memory": "memory capacity: the batch per replica fits beside the weights",
    "interconnect": "interconnect: the TP group fits one scale-up domain",
    **{name: t.label for name, t in TARGETS.items()},
}
"""Every named constraint of the model: the two physical limits, then the targets."""

CAPPED: dict[str, str] = {"memory": "memory", "max_tpot": "the TPOT target", "max_ttft": "the TTFT target"}
"""What caps a replica's batch (a candidate's `caps`), in words."""
