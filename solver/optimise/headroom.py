"""Ties broken by headroom: a flag on a plan whose room under its limits is too thin to
survive what the estimate leaves out, and, when the optimum is thin, the plan within
HEADROOM_TOLERANCE of it with the most room left under its limits instead.

The solve finds the proven optimum first (the cheapest, for min_cost); this only
chooses among the admissible candidates whose objective is within the tolerance of
it, so every target and budget still holds and the cheapest cost stays known
(the report shows both). A plan's headroom is its least slack share: the memory it
leaves free of what it may use, and each latency target's unused share. Shares are
compared in whole percent, so a difference in the noise leaves the usual tie-break
(`model.tie_key`: the objective, then the formats or the latencies) to decide. Under
prefer: quality a plan with a worse weight or KV format than the optimum's is not
eligible: headroom is not bought with quality. The choice among a handful of
candidates is a maximum, with no solve to run.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from solver.optimise.candidate import Candidate
from solver.optimise.model import PRIMARY, Limits, admissible, tie_key
from solver.physics.deployment import Targets, Workload
from solver.physics.memory import estimate_memory

HEADROOM_TOLERANCE = 0.01
"""A plan up to 1 % dearer on the objective than the optimum may be chosen for its headroom."""
THIN_MEMORY_SHARE = 0.05
"""Memory free under 5 % of what the plan may use: fragmentation, a CUDA graph or a longer
prompt than the workload's takes that much."""
THIN_LATENCY_SHARE = 0.03
"""A latency within 3 % of its target: under the estimate's own error (README's validation)."""


@dataclass(frozen=True)
class Headroom:
    """What a plan leaves unused, as shares of each limit (None: no such target)."""

    memory: float
    tpot: float | None
    ttft: float | None

    @property
    def least(self) -> float:
        return min(x for x in (self.memory, self.tpot, self.ttft) if x is not None)

    @property
    def percent(self) -> int:
        """The least share in whole percent: what plans are compared on."""
        return math.floor(round(self.least * 100, 9))

    def thin(self) -> list[str]:
        """The limits with too little room left: memory, max_tpot, max_ttft."""
        out = ["memory"] if self.memory < THIN_MEMORY_SHARE else []
        return out + [name for name, x in (("max_tpot", self.tpot), ("max_ttft", self.ttft)) if x is not None and x < THIN_LATENCY_SHARE]


def headroom(c: Candidate, w: Workload, t: Targets) -> Headroom:
    """The plan's memory free per GPU (of its decode replicas, at its batch) and its
    latencies' room under their targets, as the plan's report puts them."""
    d = c.shape.deployment.replace(replicas=c.replicas)
    mem = estimate_memory(d, dataclasses.replace(w, users=c.batch * c.replicas))
    memory = mem.margin_bytes / mem.usable_bytes if mem.usable_bytes > 0 else 0.0

    def room(value: float, limit: float | None) -> float | None:
        return None if limit is None else (limit - value) / limit

    return Headroom(memory, room(c.tpot_s, t.max_tpot_s), room(c.ttft_s, t.max_ttft_s))


def within_tolerance(
    cands: list[Candidate], limits: Limits, objective: str, optimum: Candidate, tolerance: float = HEADROOM_TOLERANCE
) -> list[Candidate]:
    """The admissible candidates whose objective is at most the optimum's × (1 + tolerance)."""
    primary = PRIMARY[objective]
    bound = primary(optimum) * (1 + tolerance)
    return [c for c in cands if primary(c) <= bound and admissible(c, limits)]


def most_headroom(
    cands: list[Candidate], limits: Limits, objective: str, optimum: Candidate, w: Workload, t: Targets, prefer: str = "quality"
) -> Candidate:
    """When the optimum is thin, of the candidates within the tolerance of it the one
    with the most headroom (whole percent), then by the model's tie-break: the optimum
    itself when none has more. An optimum with room enough stays, and with it the
    spec's own tie-break (formats, latencies, a draft model it asked for)."""
    if not headroom(optimum, w, t).thin():
        return optimum
    near = within_tolerance(cands, limits, objective, optimum, HEADROOM_TOLERANCE)
    if prefer == "quality":  # headroom is never bought with a worse weight or KV format
        near = [c for c in near if _quality(c)[0] >= _quality(optimum)[0] and _quality(c)[1] >= _quality(optimum)[1]]
    if not near:
        return optimum
    return min([optimum, *near], key=lambda c: (-headroom(c, w, t).percent, *tie_key(c, objective, prefer)))


def _quality(c: Candidate) -> tuple[int, int]:
    d = c.shape.deployment
    return d.weights.quality_rank, d.kv.quality_rank
