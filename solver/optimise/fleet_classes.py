"""A fleet's service classes: each workload (and each class of its request mix) as its
own solve problem, with the shapes that can serve it at all — the options the fleet
model chooses among."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from solver.catalog import Catalog
from solver.errors import InputError
from solver.optimise.fleet_lazy import lazy_options
from solver.optimise.fleet_options import NONE_SERVES, RATE_SCALE, Option, options_of
from solver.optimise.fleet_prune import fleet_limits
from solver.optimise.problem import Problem
from solver.optimise.shapes import build_problem, check_built, check_work
from solver.spec.fleet_spec import FleetSpec, FleetWorkloadIn
from solver.spec.solve_spec import Spec

FLEET_MAX_SHAPES = 40_000
"""The most shapes one fleet's classes build together: a hundred workloads over the whole
catalog (58 devices × TP 1-8 × 2 × 2 formats) build about 32,000. Dominance pruning
(fleet_prune.py) leaves the model a fifth of their options (12,699 → 2,620 on
bench/bench_fleet.py's hundred), which CP-SAT proves in seconds. Every shape's memory
cap is derived, its full physics only where pruning could keep it (fleet_lazy.py: 9,683
shapes of the 29,552 runnable, about 0.25 ms of CPU each on these machines)."""


@dataclass
class ServiceClass:
    workload: str
    name: str
    demand: int
    priority: float
    problem: Problem
    options: list[Option] = field(default_factory=list)
    why_none: str = ""
    single_shape: bool = False
    rate: bool = False
    """Demand and caps in thousandths of a request per second (RATE_SCALE), not users."""

    def amount(self, value: int) -> str:
        """A demand, a cap or a count served, in the service's unit."""
        return f"{value / RATE_SCALE:,.4g} req/s" if self.rate else f"{value:,} users"


def _class_specs(fs: FleetSpec, w: FleetWorkloadIn, index: int) -> list[tuple[str, Spec]]:
    common = {
        "model": w.model,
        "engine": fs.engine.model_dump(exclude_none=True),
        "sla": w.sla.model_dump(exclude_none=True),
        "search": fs.search.model_dump(),
        "inventory": fs.inventory,
        "pricing": fs.pricing.model_dump(exclude_none=True),
        "overrides": {**fs.overrides.model_dump(exclude_none=True), "model": w.overrides.model_dump(exclude_none=True)},
    }
    base = w.workload.model_dump(exclude_none=True)
    if not w.mix:
        return [(w.name, Spec.model_validate({**common, "workload": base}))]
    out = []
    users = w.workload.users
    assert users is not None  # FleetWorkloadIn refuses requests_per_s
    shares = [c.share for c in w.mix]
    # Largest-remainder split of the users over the classes: they add up exactly.
    raw = [users * s for s in shares]
    counts = [math.floor(x) for x in raw]
    for i in sorted(range(len(raw)), key=lambda i: raw[i] - counts[i], reverse=True)[: users - sum(counts)]:
        counts[i] += 1
    for i, (c, n) in enumerate(zip(w.mix, counts)):
        if n == 0:
            continue
        wl = {"users": n, "kv_fill": w.workload.kv_fill}
        for key in ("context_tokens", "prompt_tokens", "output_tokens"):
            v = getattr(c, key)
            if v is not None:
                wl[key] = v
        try:
            spec = Spec.model_validate({**common, "workload": wl})
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err.get("loc", ()))
            raise InputError(f"workloads[{index}].mix[{i}]", None, f"{where}: {err.get('msg', 'invalid')}".strip(": ")) from None
        ctx = spec.workload.context_tokens
        assert ctx is not None  # WorkloadIn derives the context from the prompt and output
        out.append((f"{w.name}/{c.share:.0%}@{ctx // 1024 if ctx >= 1024 else ctx}{'k' if ctx >= 1024 else ''}", spec))
    return out


def _fleet_field(field: str, i: int) -> str:
    """A workload's spec field as the fleet file spells it (its model, workload and
    SLA sit under workloads[i]; the search, engine and pricing are shared)."""
    if field.startswith("overrides.model"):
        return f"workloads[{i}].overrides" + field.removeprefix("overrides.model")
    if field.split(".")[0].split("[")[0] in ("model", "workload", "sla"):
        return f"workloads[{i}].{field}"
    return field


def build_classes(fs: FleetSpec, catalog: Catalog, base_dir: Path | None = None) -> list[ServiceClass]:
    for name in list(fs.inventory) + list(fs.quota):
        catalog.device(name)
    limits = fleet_limits(fs)[0]
    out = []
    asked = built = 0
    for i, w in enumerate(fs.workloads):
        for cname, spec in _class_specs(fs, w, i):
            where = f"workloads[{i}]" if asked else "search"
            asked += check_work(spec, catalog, asked, where)
            try:
                problem = build_problem(spec, catalog, base_dir)
            except InputError as exc:
                raise exc.relabel(_fleet_field(exc.field, i)) from None
            built += len(problem.shapes)
            check_built(built, where, FLEET_MAX_SHAPES)
            single = fs.single_shape if w.single_shape is None else w.single_shape
            traffic = problem.workload.traffic
            demand = math.ceil(traffic.requests_per_s * RATE_SCALE) if traffic else problem.workload.users
            # A service given as a rate runs on one shape, so that its simulation checks the
            # whole of it (optimise/fleet_traffic.py).
            sc = ServiceClass(w.name, cname, demand, w.priority, problem, single_shape=single or traffic is not None, rate=traffic is not None)
            lazy = lazy_options(problem, limits, demand)  # fleet_lazy.py: the options pruning keeps are the same
            sc.options, sc.why_none = options_of(problem) if lazy is None else (lazy, "" if lazy else NONE_SERVES)
            out.append(sc)
    return out
