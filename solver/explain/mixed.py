"""Owned GPUs left idle: solve chooses one shape for the whole workload, so a team that
owns a few GPUs can be told to rent a new fleet when its own GPUs plus a few rented
replicas of another shape would serve the users for less. With an inventory, the same
workload is put to the fleet model (optimise/fleet.py: replicas of several shapes, each
sized by the one capacity rule, optimise/capacity.py) and a cheaper mix is reported
beside the plan, with the router weights it needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.optimise.fleet import FleetResult
    from solver.optimise.model import Solution
    from solver.optimise.problem import Problem

SERVICE = "workload"


@dataclass(frozen=True)
class MixedPart:
    plan: str
    replicas: int
    gpus: int
    owned_gpus: int
    users: int
    """Users its replicas carry in all (the router's share)."""
    users_per_replica: int
    tpot_s: float
    ttft_s: float


@dataclass(frozen=True)
class MixedPlan:
    """A plan of replicas of more than one shape that costs less than the one-shape plan."""

    cost_usd_per_hour: float
    saving_usd_per_hour: float
    """Against the one-shape plan (its whole cost when solve found none)."""
    parts: tuple[MixedPart, ...]
    status: str
    """The fleet model's: optimal or feasible."""


def mixed_plan(problem: Problem, sol: Solution) -> MixedPlan | None:
    """The cheapest mix of shapes for the workload, when the spec owns GPUs, asks for the
    least $/hour, the mix uses some of them (in whole replicas) and costs less than
    `sol`'s plan (or `sol` has none); else None.
    Users given as a count on aggregated replicas only (a request rate is sized by
    simulation, a disaggregated plan pairs pools)."""
    spec = problem.spec
    if not spec.inventory or spec.objective != "min_cost" or problem.workload.traffic is not None:
        return None
    if list(spec.search.serving) != ["aggregated"] or problem.workload.users < 2:
        return None
    # the fleet model only here: a solve without an inventory (most) never loads it
    from solver.optimise.fleet import solve_fleet
    from solver.optimise.fleet_classes import ServiceClass
    from solver.optimise.fleet_options import options_of
    from solver.spec.fleet_spec import FleetSpec

    options, _ = options_of(problem)
    if len({o.shape_index for o in options}) < 2:
        return None
    service = ServiceClass(SERVICE, SERVICE, problem.workload.users, 1.0, problem, options)
    fs = FleetSpec.model_construct(
        workloads=[],
        search=spec.search,
        objective="min_cost",
        budget=spec.budget,
        inventory=dict(spec.inventory),
        quota={},
        single_shape=False,
        solver=spec.solver,
    )
    res: FleetResult = solve_fleet(fs, [service], clock=problem.clock)
    if not res.feasible or len(res.assignments) < 2:
        return None
    one = sol.chosen.cost_usd_per_hour if sol.feasible else None
    if one is not None and res.cost_usd_per_hour >= one - 0.005:
        return None
    if not any(a.owned_gpus for a in res.assignments):
        return None  # the mix uses none of the GPUs owned: not the question this answers
    parts = [
        MixedPart(a.option.label, a.replicas, a.replicas * a.option.gpus_per_replica, a.owned_gpus, a.carried, a.load, a.tpot_s, a.ttft_s)
        for a in res.assignments
    ]
    saving = (one if one is not None else res.cost_usd_per_hour) - res.cost_usd_per_hour
    return MixedPlan(res.cost_usd_per_hour, saving, tuple(parts), res.status)
