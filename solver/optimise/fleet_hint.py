"""A greedy fleet, CP-SAT's first solution: each service in turn on the option that
serves all its demand at the least rented cost (then fewest GPUs, then the better
formats), taking owned GPUs while they last and rented ones within their quota, the
budget and max_gpus. Under max_served a service nothing affordable serves whole is
left unserved. It is a hint only: CP-SAT starts its search from it and proves the
optimum (or bounds the gap) on its own."""

from __future__ import annotations

from dataclasses import dataclass, field

from solver.catalog import Device
from solver.optimise.fleet_classes import ServiceClass
from solver.optimise.fleet_options import Option
from solver.optimise.fleet_prune import price_cents


@dataclass
class GreedyPlan:
    replicas: dict[tuple[int, int], int] = field(default_factory=dict)
    """(class, option) → replicas (those absent: 0)."""
    owned: dict[tuple[int, int], int] = field(default_factory=dict)
    """(class, option) → of its replicas, those on owned GPUs."""
    served: dict[int, int] = field(default_factory=dict)


def greedy(
    classes: list[ServiceClass],
    options: list[list[Option]],
    devices: dict[str, Device],
    owned: dict[str, int],
    quota: dict[str, int],
    budget_cents: int | None,
    max_gpus: int | None,
) -> GreedyPlan:
    plan = GreedyPlan()
    have = dict(owned)
    rentable = dict(quota)
    spent = gpus_used = 0
    # The most demanding services first: they are the ones a late choice would strand.
    order = sorted(range(len(classes)), key=lambda k: (-classes[k].priority, -classes[k].demand, k))
    for k in order:
        sc = classes[k]
        best: tuple[tuple[int, int, int, int], int, int, int] | None = None
        for j, o in enumerate(options[k]):
            g = o.gpus_per_replica
            reps = -(-sc.demand // o.cap)
            own = min(reps, have.get(o.device, 0) // g)
            rent = (reps - own) * g
            price = price_cents(devices[o.device])
            if rent and (price is None or rent > rentable.get(o.device, rent)):
                continue
            cost = rent * (price or 0)
            if budget_cents is not None and spent + cost > budget_cents:
                continue
            if max_gpus is not None and gpus_used + reps * g > max_gpus:
                continue
            key = (cost, reps * g, 200 - o.quality, j)
            if best is None or key < best[0]:
                best = (key, j, reps, own)
        if best is None:
            plan.served[k] = 0
            continue
        (cost, g_all, _, _), j, reps, own = best
        o = options[k][j]
        plan.replicas[k, j] = reps
        plan.owned[k, j] = own
        plan.served[k] = sc.demand
        have[o.device] = have.get(o.device, 0) - own * o.gpus_per_replica
        if o.device in rentable:
            rentable[o.device] -= g_all - own * o.gpus_per_replica
        spent += cost
        gpus_used += g_all
    return plan
