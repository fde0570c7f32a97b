"""The fleet by parts: each service priced alone, a bound the whole fleet's model reads.

Alone, a service has every owned GPU and the whole quota to itself and shares no
budget: the least it can cost then, LB_k, is at most what it costs in any fleet (the
fleet only adds the other services' claims on the same inventory, quota and budget).
So with cost_k = Σ_j price_j · g_j · (r_kj − own_kj) — the service's rented GPUs at
their price — each fleet holds cost_k ≥ LB_k, and Σ_k cost_k ≤ the fleet's cost
(rented_d ≥ GPUs_d − owned_d, priced per device). CP-SAT's LP relaxation alone knows a
service's replicas only as fractions; these rows give it each service's integral
least cost, which closes most of its gap on a hundred services (the master — the
fleet model — then only settles who gets the shared GPUs and budget)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from solver.catalog import Device
from solver.optimise.fleet_classes import ServiceClass
from solver.optimise.fleet_options import Option
from solver.optimise.fleet_prune import price_cents

if TYPE_CHECKING:
    from solver.optimise.cpsat import cp_model

ALONE_WORK = 0.05
"""Deterministic work (CP-SAT's units) for one service's least cost: a few dozen options."""


def least_cost_alone(sc: ServiceClass, options: list[Option], devices: dict[str, Device], owned: dict[str, int], quota: dict[str, int]) -> int | None:
    """The service's least rented cost in cents per hour, alone with the inventory and
    quota, serving all its demand: a lower bound (proven) or None (none proven, or none
    serves it alone: the fleet model finds that out itself)."""
    from solver.optimise.cpsat import cp_model
    from solver.optimise.model import new_solver

    m = cp_model.CpModel()
    cap_terms, cost_terms = [], []
    rented_by: dict[str, list[cp_model.LinearExpr]] = {}
    owned_by: dict[str, list[cp_model.LinearExpr]] = {}
    for j, o in enumerate(options):
        top = -(-sc.demand // o.cap)
        g = o.gpus_per_replica
        r = m.new_int_var(0, top, f"r{j}")
        have = owned.get(o.device, 0)
        own = m.new_int_var(0, min(top, have // g), f"own{j}")
        m.add(own <= r)
        owned_by.setdefault(o.device, []).append(g * own)
        rented_by.setdefault(o.device, []).append(g * (r - own))
        cap_terms.append(o.cap * r)
        price = price_cents(devices[o.device])
        if price is None:
            m.add(r == own)
        else:
            cost_terms.append(price * g * (r - own))
    m.add(sum(cap_terms) >= sc.demand)
    for d, terms in owned_by.items():
        m.add(sum(terms) <= owned.get(d, 0))
    for d, terms in rented_by.items():
        if d in quota:
            m.add(sum(terms) <= quota[d])
    m.minimize(sum(cost_terms) if cost_terms else 0)
    sv = new_solver(10.0)
    sv.parameters.max_deterministic_time = ALONE_WORK
    status = sv.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return int(sv.best_objective_bound + 1e-6)  # the proven bound (at OPTIMAL, the optimum)


def add_service_bounds(
    m: cp_model.CpModel,
    classes: list[ServiceClass],
    options: list[list[Option]],
    r: dict[tuple[int, int], cp_model.IntVar],
    owns: dict[tuple[int, int], cp_model.IntVar],
    devices: dict[str, Device],
    owned: dict[str, int],
    quota: dict[str, int],
    cost: cp_model.LinearExprT,
) -> int:
    """Add cost_k ≥ LB_k for each service that must serve all its demand, and cost ≥
    Σ_k LB_k on the fleet's cost itself (the rows imply it, but CP-SAT's search reads the
    objective's own bound: on bench_fleet.py's hundred it then proves the optimum instead
    of stopping 0.04 % short); returns the sum (cents per hour)."""
    total = 0
    for k, sc in enumerate(classes):
        if not options[k]:
            continue
        lb = least_cost_alone(sc, options[k], devices, owned, quota)
        if not lb:
            continue
        terms = []
        for j, o in enumerate(options[k]):
            price = price_cents(devices[o.device])
            if price:
                terms.append(price * o.gpus_per_replica * r[k, j])
                if (k, j) in owns:
                    terms.append(-price * o.gpus_per_replica * owns[k, j])
        m.add(sum(terms) >= lb).with_name(f"least cost of {sc.name} alone")
        total += lb
    if total:
        m.add(cost >= total).with_name("the services' least costs alone, summed")
    return total
