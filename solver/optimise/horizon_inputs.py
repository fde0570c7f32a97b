"""From a schedule spec's problem to the horizon model's options: per shape, the
replicas each slot needs, read from solve's own candidates at that slot's rate (the one
capacity rule: optimise/capacity.py and the traffic screen through
optimise/traffic_candidates.py, never re-derived here), its price on every tier, its
readiness lag, its spot interruption risk and the replicas a failure takes."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from solver.catalog import Catalog
from solver.catalog.autoscaling import Autoscaling
from solver.optimise.candidate import Candidate
from solver.optimise.candidates import candidates
from solver.optimise.horizon import Horizon, Option
from solver.optimise.problem import Problem, Shape
from solver.optimise.scenario import scenario_of
from solver.physics.weights import weights_bytes
from solver.spec.schedule_spec import Profile, ScheduleIn


@dataclasses.dataclass(frozen=True)
class Assumptions:
    """The figures the horizon adds to solve's, each with where it comes from."""

    spot_interruptions_per_gpu_hour: float
    provisioning_s: float
    storage_bytes_per_s: float
    sources: dict[str, str]


def assumptions(schedule: ScheduleIn, catalog_figures: Autoscaling) -> Assumptions:
    a, spot, ready = catalog_figures, schedule.spot, schedule.readiness
    src = {
        "spot_interruptions_per_gpu_hour": "the spec" if spot.interruptions_per_gpu_hour is not None else a.spot_source,
        "provisioning_s": "the spec" if ready.provisioning_s is not None else a.provisioning_source,
        "storage_bytes_per_s": "the spec" if ready.storage_bytes_per_s is not None else a.storage_source,
    }
    return Assumptions(
        a.spot_interruptions_per_gpu_hour if spot.interruptions_per_gpu_hour is None else spot.interruptions_per_gpu_hour,
        a.provisioning_s if ready.provisioning_s is None else ready.provisioning_s,
        a.storage_bytes_per_s if ready.storage_bytes_per_s is None else ready.storage_bytes_per_s,
        src,
    )


def at_rate(problem: Problem, rate_per_s: float) -> dict[int, Candidate]:
    """Solve's candidate of each shape at a rate, kept where solve's model admits it
    (model.admissible: its limits and targets), by shape index."""
    from solver.optimise.model import admissible

    w = problem.workload
    assert w.traffic is not None
    wr = dataclasses.replace(w, traffic=dataclasses.replace(w.traffic, requests_per_s=rate_per_s))
    limits = scenario_of(problem).limits()
    return {c.shape.index: c for c in candidates(problem, wr, problem.targets) if admissible(c, limits)}


def replicas_per_node(shape: Shape) -> int:
    """Replicas one node failure takes: those a node holds, or the one it is part of."""
    return max(1, shape.deployment.platform.gpus_per_node // shape.gpus_per_replica)


def tier_prices(shape: Shape, problem: Problem, catalog: Catalog, tiers: Sequence[str]) -> dict[str, float]:
    """The shape's GPU-hour on each tier the spec allows: on-demand as solve prices it
    (the spec's override included), the others from the price book on the same basis."""
    out: dict[str, float] = {}
    for tier in tiers:
        if tier == "on_demand":
            price = shape.device.price
        else:
            assert problem.pricing is not None
            price = catalog.price(shape.device.name, dataclasses.replace(problem.pricing, tier=tier))  # type: ignore[arg-type]
        if price is not None:
            out["reserved" if tier.startswith("reserved") else tier] = price.usd_per_gpu_hour
    return out


def horizon_of(problem: Problem, profile: Profile, schedule: ScheduleIn, catalog: Catalog, figures: Assumptions) -> Horizon:
    """Every shape solve admits at every slot's rate, as the horizon's options."""
    by_rate = {r: at_rate(problem, r) for r in sorted(set(profile.rates_per_s))}
    common = set.intersection(*(set(c) for c in by_rate.values()))
    survive = schedule.availability.survive
    options = []
    for shape in problem.shapes:
        if shape.index not in common:
            continue
        prices = tier_prices(shape, problem, catalog, schedule.tiers)
        if not prices:
            continue
        g = shape.gpus_per_replica
        d = shape.deployment
        lag_s = figures.provisioning_s + weights_bytes(d.model, d.weights) / figures.storage_bytes_per_s
        loss = 1 - math.exp(-figures.spot_interruptions_per_gpu_hour * g * profile.slot_s / 3600)
        per_failure = replicas_per_node(shape) if schedule.availability.unit == "nodes" else 1
        need = tuple(by_rate[r][shape.index].replicas for r in profile.rates_per_s)
        sizing = by_rate[profile.peak_per_s][shape.index].traffic
        mu, binds = (sizing.sustainable.rate_per_s, sizing.binding_target) if sizing is not None else (0.0, "")
        options.append(Option(shape.label, g, need, prices, lag_s, loss, survive * per_failure, shape.index, mu, binds))
    return Horizon(tuple(options), profile.slot_s, schedule.min_replicas, problem.max_gpus)
