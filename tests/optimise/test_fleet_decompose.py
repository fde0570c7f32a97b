"""The fleet by parts (optimise/fleet_decompose.py): each service's least cost alone,
by hand, as a row per service and as a bound on the fleet's cost itself."""

from __future__ import annotations

import dataclasses

from solver.catalog import Device, default_catalog
from solver.optimise.cpsat import cp_model
from solver.optimise.fleet_classes import ServiceClass
from solver.optimise.fleet_decompose import add_service_bounds, least_cost_alone
from solver.optimise.fleet_options import Option


def device(name: str, usd: float) -> Device:
    base = default_catalog().device(name)
    assert base.price is not None
    return dataclasses.replace(base, price=dataclasses.replace(base.price, usd_per_gpu_hour=usd))


DEVICES = {"h100-sxm": device("h100-sxm", 2.0), "l40s": device("l40s", 1.0)}
# Service a: 100 users; on H100 ($2.00 = 200 cents a GPU-hour) TP1 holds 30, TP2 70.
# Alone its least cost is one TP2 and one TP1 (100 users, 3 GPUs): 600 cents; four TP1
# (4 GPUs) or two TP2 (4 GPUs) cost 800. Service b: 50 users, 20 per L40S ($1.00):
# ⌈50/20⌉ = 3 GPUs, 300 cents.
A = [Option(0, "h100 TP1", "h100-sxm", 1, 30, "memory", 0.0, 0.0), Option(1, "h100 TP2", "h100-sxm", 2, 70, "memory", 0.0, 0.0)]
B = [Option(0, "l40s TP1", "l40s", 1, 20, "memory", 0.0, 0.0)]


def service(name: str, demand: int) -> ServiceClass:
    return ServiceClass(name, name, demand, 1.0, None)  # type: ignore[arg-type]  # no physics read here


def test_a_service_alone_costs_its_cheapest_mix() -> None:
    assert least_cost_alone(service("a", 100), A, DEVICES, {}, {}) == 600
    assert least_cost_alone(service("b", 50), B, DEVICES, {}, {}) == 300
    # Within a quota of 2 H100s no mix holds 100 users (TP2: 70; two TP1: 60): none alone.
    assert least_cost_alone(service("a", 100), A, DEVICES, {}, {"h100-sxm": 2}) is None


def test_the_fleet_cost_is_bounded_by_the_services_least_costs_summed() -> None:
    m = cp_model.CpModel()
    classes = [service("a", 100), service("b", 50)]
    options = [A, B]
    r = {(k, j): m.new_int_var(0, 10, f"r_{k}_{j}") for k, opts in enumerate(options) for j in range(len(opts))}
    cost = sum(
        round(DEVICES[o.device].price.usd_per_gpu_hour * 100) * o.gpus_per_replica * r[k, j]
        for k, opts in enumerate(options)
        for j, o in enumerate(opts)
    )  # type: ignore[union-attr]
    assert add_service_bounds(m, classes, options, r, {}, DEVICES, {}, {}, cost) == 600 + 300
    rows = {c.name: c for c in m.proto.constraints}
    summed = rows["the services' least costs alone, summed"].linear
    assert summed.domain[0] == 900  # cost ≥ 600 + 300
    assert rows["least cost of a alone"].linear.domain[0] == 600 and rows["least cost of b alone"].linear.domain[0] == 300
    m.minimize(cost)
    sv = cp_model.CpSolver()
    assert sv.solve(m) == cp_model.OPTIMAL and sv.objective_value == 900
