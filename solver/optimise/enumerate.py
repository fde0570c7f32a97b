"""Exhaustive search: every allowed configuration — each shape at every replica
count — estimated with the foundation's `evaluate` and checked target by target.
It shares no code with the CP-SAT path beyond the physics, which makes it the test
oracle CP-SAT must agree with, and the baseline the benchmark compares it to.

`meets` is the same check on a precomputed candidate, for the explanations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solver.catalog import Price
from solver.optimise.candidates import Candidate, ceil_us
from solver.optimise.model import Limits
from solver.optimise.problem import Problem, Shape
from solver.physics import validity
from solver.physics.costs import plan_tco
from solver.physics.evaluate import evaluate


def meets(c: Candidate, limits: Limits) -> bool:
    return (
        c.memory_excess <= 0
        and c.interconnect_excess == 0
        and (limits.max_tpot_us is None or c.tpot_us <= limits.max_tpot_us)
        and (limits.max_ttft_us is None or c.ttft_us <= limits.max_ttft_us)
        and (limits.max_cost_cents is None or c.cost_cents <= limits.max_cost_cents)
        and (limits.max_purchase_dollars is None or c.purchase_dollars <= limits.max_purchase_dollars)
        and (limits.max_gpus is None or c.gpus <= limits.max_gpus)
    )


@dataclass(frozen=True)
class Found:
    shape: Shape
    replicas: int
    batch: int
    gpus: int
    cost_usd_per_hour: float
    purchase_usd: float
    tpot_s: float
    ttft_s: float
    key: tuple[int, ...]


def exhaustive(problem: Problem) -> Found | None:
    """The best plan by brute force, with the CP-SAT model's objective, rounding and
    tie-break: (objective, TPOT µs, TTFT µs, GPUs, catalog order, larger batch)."""
    w, t = problem.workload, problem.targets
    best: Found | None = None
    for shape in problem.shapes:
        d = shape.deployment
        if validity.refusals(d, w):
            continue
        last_batch = None
        for replicas in range(1, w.users + 1):
            batch = math.ceil(w.users / replicas)
            if batch == last_batch:
                continue  # the same plan with an idle replica
            last_batch = batch
            ev = evaluate(d.replace(replicas=replicas), w, t, with_remedies=False)
            est = ev.estimates
            if not est.memory.fits:
                continue
            tpot, ttft = est.decode.tpot_s, est.ttft_s
            if t.max_tpot_s is not None and ceil_us(tpot) > math.floor(t.max_tpot_s * 1e6 + 1e-6):
                continue
            if t.max_ttft_s is not None and ceil_us(ttft) > math.floor(t.max_ttft_s * 1e6 + 1e-6):
                continue
            gpus = replicas * d.tp * d.pp
            rented = max(0, gpus - shape.owned)
            price = d.device.price.usd_per_gpu_hour if d.device.price else 0.0
            cost = rented * price if rented else 0.0
            purchase = rented * d.device.purchase_usd if rented and d.device.purchase_usd else 0.0
            if problem.max_gpus is not None and gpus > problem.max_gpus:
                continue
            if problem.max_usd_per_hour is not None and math.ceil(round(cost * 100, 6)) > math.floor(problem.max_usd_per_hour * 100 + 1e-9):
                continue
            if problem.max_purchase_usd is not None and math.ceil(round(purchase, 6)) > math.floor(problem.max_purchase_usd + 1e-9):
                continue
            primary = {
                "min_cost": math.ceil(round(cost * 100, 6)),
                "min_gpus": gpus,
                "min_purchase": math.ceil(round(purchase, 6)),
                "min_tpot": ceil_us(tpot),
                "min_tco": _tco_cents(gpus, gpus - rented, shape, d.device.price),
            }[problem.objective]
            q, speed = (-d.weights.quality_rank, -d.kv.quality_rank), (ceil_us(tpot), ceil_us(ttft))
            order = (*q, *speed) if problem.spec.prefer == "quality" else (*speed, *q)
            key = (primary, *order, gpus, shape.index, -batch)
            if best is None or key < best.key:
                best = Found(shape, replicas, batch, gpus, cost, purchase, tpot, ttft, key)
    return best


def _tco_cents(gpus: int, owned_used: int, shape: Shape, price: Price | None) -> int:
    usd, _ = plan_tco(gpus, owned_used, shape.costs, price.usd_per_gpu_hour if price else None)
    return 10**12 if math.isinf(usd) else math.ceil(round(usd * 100, 6))
