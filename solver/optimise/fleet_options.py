"""A fleet's options: a shape serving one service class, as the fleet model sees it
(how many users, or thousandths of a request per second, one replica holds), and the
options not beaten within their device. Read by the classes that build them, the
pruning and lazy physics that trim them, and the model, hint and report that use them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from solver.optimise.candidate import Candidate
from solver.optimise.candidates import candidates
from solver.optimise.problem import Problem

RATE_SCALE = 1000
"""A service given in requests per second counts its demand and each replica's cap in
thousandths of a request per second, so the fleet model's integers hold a rate."""


@dataclass(frozen=True)
class Option:
    """A shape serving one class: replicas of it hold `cap` users each (a rate service:
    `cap` thousandths of a request per second, the screen's sustainable rate)."""

    shape_index: int
    label: str
    device: str
    gpus_per_replica: int
    cap: int
    capped_by: str
    tpot_s: float
    ttft_s: float
    quality: int = 0
    """The weight and KV formats' quality ranks, summed (catalogs/precisions.yaml)."""


def options_of(problem: Problem) -> tuple[list[Option], str]:
    """The shapes that can serve this class at all (memory, interconnect, TPOT and TTFT
    under load hold for at least one user: the capacity rule solve's candidates read), pruned to those not beaten within their device on
    GPUs per replica, users per replica and format quality."""
    good = [o for o in map(option_of, candidates(problem)) if o is not None]
    if not good:
        return [], NONE_SERVES
    return undominated_in_device(good), ""


NONE_SERVES = "no GPU in the search meets this class's targets (try `plan-opt solve` on it alone for the reason)"


def option_of(c: Candidate) -> Option | None:
    """The candidate as a fleet option, or None where it cannot serve one user (or one
    thousandth of a request per second) within the targets."""
    if c.memory_excess > 0 or c.interconnect_excess or c.max_batch_memory < 1 or c.max_batch_tpot < 1:
        return None
    d = c.shape.deployment
    q = d.weights.quality_rank + d.kv.quality_rank
    if c.traffic is not None:  # sized by the traffic screen: its sustainable rate per replica
        rate_cap = math.floor(c.traffic.sustainable.rate_per_s * RATE_SCALE)
        if rate_cap < 1:
            return None
        return Option(c.shape.index, c.shape.label, c.shape.device.name, c.shape.gpus_per_replica, rate_cap, c.caps, c.tpot_s, c.ttft_s, q)
    cap = c.capacity.users  # memory, TPOT and TTFT under load at once (optimise/capacity.py), as solve's
    if cap < 1:
        return None
    return Option(c.shape.index, c.shape.label, c.shape.device.name, c.shape.gpus_per_replica, cap, c.caps, c.tpot_s, c.ttft_s, q)


def undominated_in_device(good: list[Option]) -> list[Option]:
    """The options not beaten within their device, in shape order."""
    kept: list[Option] = []
    by_device: dict[str, list[Option]] = {}
    for o in good:
        by_device.setdefault(o.device, []).append(o)
    for opts in by_device.values():
        # Keep an option unless another of the device needs no more GPUs per replica,
        # holds at least as many users and is of at least the same quality.
        opts.sort(key=lambda o: (o.gpus_per_replica, -o.cap, -o.quality, o.shape_index))
        for o in opts:
            if not any(k.gpus_per_replica <= o.gpus_per_replica and k.cap >= o.cap and k.quality >= o.quality for k in kept if k.device == o.device):
                kept.append(o)
    kept.sort(key=lambda o: o.shape_index)
    return kept
