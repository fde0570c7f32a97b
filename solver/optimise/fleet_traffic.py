"""A fleet's services given as request rates, checked by simulation as a solve's plan
is (each percentile target held to its 95 % bound over several seeds, traffic/verify.py): each such service runs on one shape (fleet_classes), simulated at its replicas and
at the rate they serve (all of the demand, or under max_served the part the budget
buys); when it misses a target, its option's cap per replica is lowered to what the
fewest passing replicas carry (or the option dropped when none of a few more pass), and
the fleet solved again, until every rate service passes. A budget sweep runs the same
check at each budget, so a sweep's row and the fleet solved at that budget agree."""

from __future__ import annotations

import dataclasses
import math

from solver.optimise.clock import SolverClock
from solver.optimise.fleet import FleetResult, solve_fleet
from solver.optimise.fleet_classes import ServiceClass
from solver.optimise.fleet_options import RATE_SCALE
from solver.physics.deployment import Workload
from solver.spec.fleet_spec import FleetSpec
from solver.traffic.verify import SEEDS, Settings, simulate_plan, verify_plan

MAX_ROUNDS = 6
MAX_EXTRA_TRIES = 8


def _at_rate(sc: ServiceClass, served: int) -> Workload:
    """The class's workload at the rate its replicas serve (served thousandths of a req/s)."""
    w = sc.problem.workload
    assert w.traffic is not None
    if served >= sc.demand:
        return w
    return dataclasses.replace(w, traffic=dataclasses.replace(w.traffic, requests_per_s=served / RATE_SCALE))


def solve_fleet_verified(
    fs: FleetSpec, classes: list[ServiceClass], *, max_usd_per_hour: float | None = None, clock: SolverClock | None = None
) -> FleetResult:
    settings = Settings()
    res = solve_fleet(fs, classes, max_usd_per_hour=max_usd_per_hour, clock=clock)
    notes: list[str] = []
    for _ in range(MAX_ROUNDS):
        if not res.feasible:
            break
        corrected = False
        for sc in classes:
            if not sc.rate:
                continue
            parts = [a for a in res.assignments if a.service == sc.name]
            if len(parts) != 1:
                if parts:
                    notes.append(f"{sc.name}: split over {len(parts)} shapes; screened, not simulated")
                continue
            a = parts[0]
            served = res.served.get(sc.name, sc.demand)
            shape = sc.problem.shapes[a.option.shape_index]
            w, t = _at_rate(sc, served), sc.problem.targets
            if verify_plan(shape.deployment, w, t, a.replicas, settings).ok:  # held to the 95 % bound over SEEDS seeds, as solve's
                continue
            passing = next(
                (r for r in range(a.replicas + 1, a.replicas + 1 + MAX_EXTRA_TRIES) if simulate_plan(shape.deployment, w, t, r, settings).ok), None
            )  # one seed finds the count to try; the re-solved plan is then held to the bound
            kept = [o for o in sc.options if o.shape_index != a.option.shape_index]
            if passing is not None:
                cap = math.floor(served / passing)
                kept.append(dataclasses.replace(a.option, cap=cap))
                notes.append(f"{sc.name}: {a.replicas} × {a.option.label} missed a target in simulation; {passing} pass")
            else:
                notes.append(f"{sc.name}: no replica count of {a.option.label} up to {a.replicas + MAX_EXTRA_TRIES} passes its simulation; dropped")
            sc.options = sorted(kept, key=lambda o: o.shape_index)
            corrected = True
        if not corrected:
            break
        res = solve_fleet(fs, classes, max_usd_per_hour=max_usd_per_hour, clock=clock)
    for sc in classes:
        if sc.rate and res.feasible and not any("screened" in n and n.startswith(sc.name) for n in notes):
            if any(a.service == sc.name for a in res.assignments):
                notes.append(
                    f"{sc.name}: simulated at {res.served.get(sc.name, sc.demand) / RATE_SCALE:,.4g} requests/s ({SEEDS} seeds × {settings.requests:,} requests): "
                    "every target met by its 95 % bound"
                )
    res.binds += list(dict.fromkeys(notes))
    return res


def sweep_verified(fs: FleetSpec, classes: list[ServiceClass], budgets: list[float]) -> list[tuple[float, FleetResult]]:
    """What each budget buys (max_served), each rate service simulated at what it serves
    as `plan-opt fleet` at that budget simulates it: the sweep's rows are the fleet's
    verified answers, not the screen's. Corrections carry over to later budgets (a cap
    lowered by a simulation stays lowered); the budgets share one command's clock."""
    swept = fs.model_copy(update={"objective": "max_served"})
    clock = SolverClock(fs.solver.time_limit_s)
    return [(b, solve_fleet_verified(swept, classes, max_usd_per_hour=b, clock=clock)) for b in budgets]
