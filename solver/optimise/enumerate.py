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
from solver.optimise.candidate import Candidate
from solver.optimise.model import Limits
from solver.optimise.problem import Problem, Shape
from solver.optimise.targets import ceil_us
from solver.physics import validity
from solver.physics.costs import plan_tco
from solver.physics.deployment import Targets
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
            rented = max(0, gpus - shape.owned_usable)
            dev, spec = d.device, problem.spec
            if rented and (
                (dev.price is None and (spec.objective == "min_cost" or spec.budget.max_usd_per_hour is not None))
                or (dev.purchase_usd is None and (spec.objective == "min_purchase" or spec.budget.max_purchase_usd is not None))
                or (spec.objective == "min_tco" and dev.price is None and dev.purchase_usd is None)
            ):
                continue  # GPUs beyond those owned that cannot be had on the spec's terms (never free)
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


@dataclass(frozen=True)
class FoundPair:
    prefill: Shape
    prefill_replicas: int
    decode: Shape
    decode_replicas: int
    cost_cents: int
    gpus: int
    ttft_s: float


def exhaustive_disaggregated(problem: Problem) -> FoundPair | None:
    """The cheapest disaggregated plan by brute force (min_cost, no owned GPUs): every
    decode shape at every replica count, evaluated as a decode-only replica, with every
    prefill shape of its formats at every replica count, its queue in the closed form
    (prompt_queue.queued_prompt_s). Shares no code with optimise/disaggregated.py beyond the
    physics. Returns the least (cost, GPUs)."""
    import dataclasses

    from solver.physics.disaggregation import kv_transfer, link_load_ok, prefill_pool_load
    from solver.physics.memory import estimate_memory
    from solver.physics.prefill import estimate_prefill

    w, t = problem.workload, problem.targets
    iso = dataclasses.replace(w, batching="isolated")
    limit_us = None if t.max_ttft_s is None else math.floor(t.max_ttft_s * 1e6 + 1e-6)
    tpot_limit_us = None if t.max_tpot_s is None else math.floor(t.max_tpot_s * 1e6 + 1e-6)

    def usable(shape: Shape) -> bool:
        d = shape.deployment
        return d.speculation is None and not validity.refusals(d, iso) and not validity.check(d, iso)

    def price(shape: Shape) -> float:
        p = shape.deployment.device.price
        return p.usd_per_gpu_hour if p else 0.0

    prefills = []
    for p_shape in problem.shapes:
        p = p_shape.deployment
        if usable(p_shape) and p.platform.scale_out is not None and estimate_memory(p, iso).max_batch >= 1:
            prefills.append((p_shape, estimate_prefill(p, iso).gpu_time_s))
    best: FoundPair | None = None
    for d_shape in problem.shapes:
        d = d_shape.deployment
        if not usable(d_shape):
            continue
        last = None
        for y in range(1, w.users + 1):
            batch = math.ceil(w.users / y)
            if batch == last:
                continue
            last = batch
            ev = evaluate(d.replace(replicas=y), iso, Targets(), with_remedies=False)
            if not ev.estimates.memory.fits:
                continue
            tpot = ev.estimates.decode.tpot_s
            if tpot_limit_us is not None and ceil_us(tpot) > tpot_limit_us:
                continue
            for p_shape, service in prefills:
                p = p_shape.deployment
                if (p.weights.name, p.kv.name) != (d.weights.name, d.kv.name):
                    continue
                if p.device.vendor != d.device.vendor and not problem.spec.search.allow_cross_vendor_kv:
                    continue  # the KV cache may not cross vendors unless the spec allows it
                transfer = kv_transfer(p, d, w.prompt_tokens)
                if transfer is None:
                    continue
                for x in range(1, w.users + 1):
                    load = prefill_pool_load(
                        w.users, x, service, p.tp if p.dp_ep else 1, tpot, w.output_tokens, transfer.time_s, d.factors.request_overhead_s
                    )
                    if load.saturated or (limit_us is not None and ceil_us(load.ttft_s) > limit_us):
                        continue
                    px, dy = x * p.tp * p.pp, y * d.tp * d.pp
                    if not link_load_ok(w.users, load, transfer, px, dy):
                        continue
                    gpus = px + dy
                    cents = math.ceil(round((px * price(p_shape) + dy * price(d_shape)) * 100, 6))
                    if problem.max_gpus is not None and gpus > problem.max_gpus:
                        break
                    if best is None or (cents, gpus) < (best.cost_cents, best.gpus):
                        best = FoundPair(p_shape, x, d_shape, y, cents, gpus, load.ttft_s)
                    break  # more prefill replicas only cost more
    return best
