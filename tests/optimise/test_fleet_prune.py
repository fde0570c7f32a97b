"""Dominance pruning of a fleet's options (optimise/fleet_prune.py): the optimum over
the kept options equals the optimum over all, by brute force on tiny fleets; what it
removes, by hand; and the greedy hint, the gap report and the fleet's shape cap."""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.catalog import Device, default_catalog
from solver.errors import InputError
from solver.optimise import fleet as fleet_module
from solver.optimise import fleet_classes as classes_module
from solver.optimise import shapes as shapes_module
from solver.optimise.fleet import solve_fleet
from solver.optimise.fleet_classes import build_classes
from solver.optimise.fleet_hint import greedy
from solver.optimise.fleet_options import Option
from solver.optimise.fleet_prune import Limits, prune
from solver.report.fleet_report import render, to_json
from solver.spec.fleet_spec import FleetSpec


def device(name: str, usd: float | None) -> Device:
    """A catalog device at a price of our choosing (None: no rental price)."""
    base = default_catalog().device(name)
    price = dataclasses.replace(base.price, usd_per_gpu_hour=usd) if usd is not None and base.price else None
    return dataclasses.replace(base, price=price)


def option(i: int, dev: str, g: int, cap: int, quality: int = 200) -> Option:
    return Option(i, f"o{i}", dev, g, cap, "memory", 0.0, 0.0, quality)


# ----------------------------------------------------------------- brute force, tiny


def optimum(services, devices, owned, quota, budget_cents, max_gpus):
    """The least (cost in cents, quality given up, GPUs, shapes used) over every replica
    vector of every service that serves all its demand within the limits — the fleet
    model's lexicographic objective (optimise/fleet.py), none of it read from there.
    services: [(demand, [Option])]. None: no fleet."""
    per_service = []
    for demand, opts in services:
        ranges = [range(0, -(-demand // o.cap) + 1) for o in opts]
        per_service.append([v for v in itertools.product(*ranges) if sum(n * o.cap for n, o in zip(v, opts)) >= demand])
    best = None
    for choice in itertools.product(*per_service):
        used = [(n, o) for (_, opts), vec in zip(services, choice) for n, o in zip(vec, opts) if n]
        gpus = sum(n * o.gpus_per_replica for n, o in used)
        if max_gpus is not None and gpus > max_gpus:
            continue
        cost, ok = 0, True
        for d, dev in devices.items():
            parts = [(n, o.gpus_per_replica) for n, o in used if o.device == d]
            total = sum(n * g for n, g in parts)
            # owned GPUs in whole replicas: the most any split of owned replicas reaches
            mine = max(
                (
                    s
                    for s in (sum(k * g for k, (_, g) in zip(ks, parts)) for ks in itertools.product(*(range(n + 1) for n, _ in parts)))
                    if s <= owned.get(d, 0)
                ),
                default=0,
            )
            rented = total - mine
            if rented and (dev.price is None or rented > quota.get(d, rented)):
                ok = False
                break
            cost += rented * (round(dev.price.usd_per_gpu_hour * 100) if dev.price else 0)
        if not ok or (budget_cents is not None and cost > budget_cents):
            continue
        key = (cost, sum(200 - o.quality for _, o in used), gpus, len(used))
        best = key if best is None or key < best else best
    return best


NAMES = ["h100-sxm", "a100-80gb", "l40s", "rtx-4090"]


@st.composite
def tiny_fleets(draw):
    devices = {n: device(n, draw(st.sampled_from([None, 1.0, 2.0, 3.5]))) for n in NAMES[: draw(st.integers(2, 4))]}
    names = list(devices)
    services, i = [], 0
    for _ in range(draw(st.integers(1, 2))):
        opts = []
        for _ in range(draw(st.integers(1, 4))):
            opts.append(
                option(
                    i, draw(st.sampled_from(names)), draw(st.sampled_from([1, 2, 4])), draw(st.integers(1, 5)), draw(st.sampled_from([180, 190, 200]))
                )
            )
            i += 1
        services.append((draw(st.integers(1, 5)), opts))
    owned = {names[0]: draw(st.integers(0, 4))} if draw(st.booleans()) else {}
    quota = {names[-1]: draw(st.integers(0, 4))} if draw(st.booleans()) else {}
    budget = draw(st.one_of(st.none(), st.integers(0, 4000)))
    max_gpus = draw(st.one_of(st.none(), st.integers(1, 12)))
    return devices, services, owned, quota, budget, max_gpus


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_fleets())
def test_the_optimum_over_the_kept_options_is_the_optimum_over_all(fleet):
    devices, services, owned, quota, budget, max_gpus = fleet
    limits = Limits(frozenset(d for d, n in owned.items() if n), frozenset(quota), False)
    pruned = [(demand, prune(opts, devices, limits, demand)) for demand, opts in services]
    assert all(kept for _, kept in pruned)  # every service keeps an option
    assert optimum(pruned, devices, owned, quota, budget, max_gpus) == optimum(services, devices, owned, quota, budget, max_gpus)


# ----------------------------------------------------------------- by hand


MARKET = Limits(frozenset(), frozenset(), False)


def test_two_replicas_of_half_the_size_dominate_one_of_twice_it():
    # H100 at $2/GPU-hour: TP 2 holding 50 users costs 400 ¢/h for 2 GPUs; two TP 1
    # replicas of 30 users each cost 2 × 200 = 400 ¢/h, 2 GPUs, and hold 60 ≥ 50.
    devs = {"h100-sxm": device("h100-sxm", 2.0)}
    tp1, tp2 = option(0, "h100-sxm", 1, 30), option(1, "h100-sxm", 2, 50)
    assert prune([tp1, tp2], devs, MARKET, demand=100) == [tp1]
    # At 70 users the TP 2 replica would need ⌈70/30⌉ = 3 TP 1 replicas (600 ¢/h > 400): kept.
    tp2_70 = option(1, "h100-sxm", 2, 70)
    assert prune([tp1, tp2_70], devs, MARKET, demand=100) == [tp1, tp2_70]


def test_a_cheaper_device_dominates_across_the_market_but_not_an_owned_one():
    # L40S at $1 holding 20 users beats an H100 at $3 holding 20 (same GPUs, formats).
    devs = {"l40s": device("l40s", 1.0), "h100-sxm": device("h100-sxm", 3.0)}
    cheap, dear = option(0, "l40s", 1, 20), option(1, "h100-sxm", 1, 20)
    assert prune([cheap, dear], devs, MARKET, demand=40) == [cheap]
    # Owned H100s are free within the inventory: the H100 option is its own pool.
    owned = Limits(frozenset({"h100-sxm"}), frozenset(), False)
    assert prune([cheap, dear], devs, owned, demand=40) == [cheap, dear]
    # A quota on the L40S makes its GPUs a resource apart: nothing dominates across.
    quota = Limits(frozenset(), frozenset({"l40s"}), False)
    assert prune([cheap, dear], devs, quota, demand=40) == [cheap, dear]


def test_a_cap_past_the_demand_counts_as_the_demand():
    # 20 users: a $1 replica of 25 serves them all as well as a $3 one of 40.
    devs = {"l40s": device("l40s", 1.0), "h100-sxm": device("h100-sxm", 3.0)}
    small, big = option(0, "l40s", 1, 25), option(1, "h100-sxm", 1, 40)
    assert prune([small, big], devs, MARKET, demand=20) == [small]
    assert prune([small, big], devs, MARKET, demand=30) == [small, big]


def test_better_formats_are_kept_at_a_higher_cost():
    # quality is a tie-break after cost: a bf16 option (200) beside a cheaper fp8 one (180) stays.
    devs = {"l40s": device("l40s", 1.0), "h100-sxm": device("h100-sxm", 3.0)}
    fp8, bf16 = option(0, "l40s", 1, 20, quality=180), option(1, "h100-sxm", 1, 20, quality=200)
    assert prune([fp8, bf16], devs, MARKET, demand=40) == [fp8, bf16]


def test_identical_options_keep_the_first():
    devs = {"l40s": device("l40s", 1.0)}
    a, b = option(0, "l40s", 1, 20), option(1, "l40s", 1, 20)
    assert prune([a, b], devs, MARKET, demand=40) == [a]


# ----------------------------------------------------------------- the greedy hint


def test_the_greedy_plan_takes_owned_gpus_first_and_keeps_the_quota():
    # Two services of 40 users; a replica holds 20 on either device. 2 owned A100s
    # (free) serve 2 replicas; the rest is H100 at $2, quota 2 GPUs; then L40S at $3.
    from solver.optimise.fleet_classes import ServiceClass

    devs = {"a100-80gb": device("a100-80gb", 5.0), "h100-sxm": device("h100-sxm", 2.0), "l40s": device("l40s", 3.0)}
    opts = [option(0, "a100-80gb", 1, 20), option(1, "h100-sxm", 1, 20), option(2, "l40s", 1, 20)]
    classes = [ServiceClass(f"s{i}", f"s{i}", 40, 1.0, problem=None, options=opts) for i in range(2)]  # type: ignore[arg-type]
    plan = greedy(classes, [opts, opts], devs, {"a100-80gb": 2}, {"h100-sxm": 2}, None, None)
    # s0: A100 (2 replicas, both owned, 0 ¢). s1: no A100 left; H100 400 ¢ within quota 2.
    assert plan.replicas == {(0, 0): 2, (1, 1): 2}
    assert plan.owned == {(0, 0): 2, (1, 1): 0}
    assert plan.served == {0: 40, 1: 40}


# ----------------------------------------------------------------- the model end to end

THREE = {
    "workloads": [
        {"name": "a", "model": "llama-3.1-8b", "workload": {"users": 60, "context_tokens": 8192, "prompt_tokens": 2048}, "sla": {"max_tpot": "40ms"}},
        {"name": "b", "model": "qwen2.5-7b", "workload": {"users": 25, "context_tokens": 4096, "prompt_tokens": 2048}, "sla": {"max_tpot": "30ms"}},
    ],
    "search": {"gpus": ["h100-sxm", "a100-80gb", "l40s", "rtx-4090", "l4"], "tp": [1, 2, 4], "weights": ["bf16", "fp8"], "kv_cache": ["bf16", "fp8"]},
    "inventory": {"a100-80gb": 2},
    "quota": {"h100-sxm": 4},
}


def test_the_fleet_with_and_without_pruning_is_the_same(monkeypatch):
    fs = FleetSpec.model_validate(THREE)
    classes = build_classes(fs, default_catalog())
    pruned = solve_fleet(fs, classes)
    monkeypatch.setattr(fleet_module, "prune", lambda options, *_: list(options))
    whole = solve_fleet(fs, classes)
    assert pruned.status == whole.status == "optimal"
    assert pruned.options_after < pruned.options_before == whole.options_after
    assert round(pruned.cost_usd_per_hour, 2) == round(whole.cost_usd_per_hour, 2)
    assert pruned.gpus == whole.gpus
    assert sorted(a.option.quality for a in pruned.assignments) == sorted(a.option.quality for a in whole.assignments)


def test_a_fleet_stopped_before_its_proof_states_its_gap(monkeypatch):
    # CP-SAT stopped at its first solution, without presolve: the greedy hint (which
    # takes the cheapest option per service in turn, not the best mix) is its plan, unproven.
    from solver.optimise import model as model_module

    real = model_module.new_solver

    def starved(limit):
        s = real(limit)
        s.parameters.stop_after_first_solution = True
        s.parameters.cp_model_presolve = False
        return s

    monkeypatch.setattr(model_module, "new_solver", starved)
    busy = {
        **THREE,
        "inventory": {},
        "workloads": [{**w, "workload": {**w["workload"], "users": 10 * w["workload"]["users"]}} for w in THREE["workloads"]],
    }
    fs = FleetSpec.model_validate(busy)
    res = solve_fleet(fs, build_classes(fs, default_catalog()))
    assert res.status == "feasible" and res.solver_status == "FEASIBLE"
    assert res.bound is not None and res.gap is not None
    assert res.bound <= res.cost_usd_per_hour + 1e-9 and 0 < res.gap <= 1  # a lower bound on the cost
    gap = json.loads(to_json(res))["optimality"]
    assert gap["objective"] == "cost_usd_per_hour" and gap["gap"] == pytest.approx(res.gap, abs=1e-6)
    assert f"gap {res.gap:.2%}" in render(res, "t")


def test_a_proven_fleet_prints_no_gap():
    fs = FleetSpec.model_validate(THREE)
    res = solve_fleet(fs, build_classes(fs, default_catalog()))
    assert res.status == "optimal" and res.gap is None
    assert "optimality" not in json.loads(to_json(res)) and "gap" not in render(res, "t")


def test_a_fleet_has_a_shape_cap_of_its_own(monkeypatch):
    # Solve's cap bounds each class but no longer the fleet's total (a hundred workloads
    # build ~32,000 shapes): the fleet's own cap does.
    fs = FleetSpec.model_validate(THREE)
    built = [len(sc.problem.shapes) for sc in build_classes(fs, default_catalog())]
    assert max(built) < sum(built)
    monkeypatch.setattr(shapes_module, "MAX_SHAPES", max(built))
    assert len(build_classes(fs, default_catalog())) == 2  # main refused: the total passed solve's cap
    monkeypatch.setattr(classes_module, "FLEET_MAX_SHAPES", sum(built) - 1)
    with pytest.raises(InputError) as exc:
        build_classes(fs, default_catalog())
    assert f"{sum(built):,} shapes" in exc.value.message() and f"at most {sum(built) - 1:,} in one run" in exc.value.message()


def test_a_service_alone_costs_its_least_integral_plan():
    # 50 users: L40S at $1 holds 20 a replica (⌈50/20⌉ = 3 replicas, 300 ¢/h), an H100 at
    # $2 holds 60 (1 replica, 200 ¢/h): alone it costs 200 ¢/h — what a fractional
    # relaxation (50/20 × 100 = 250, 50/60 × 200 ≈ 167 ¢/h) does not know.
    from solver.optimise.fleet_classes import ServiceClass
    from solver.optimise.fleet_decompose import least_cost_alone

    devs = {"l40s": device("l40s", 1.0), "h100-sxm": device("h100-sxm", 2.0)}
    opts = [option(0, "l40s", 1, 20), option(1, "h100-sxm", 1, 60)]
    sc = ServiceClass("s", "s", 50, 1.0, problem=None, options=opts)  # type: ignore[arg-type]
    assert least_cost_alone(sc, opts, devs, {}, {}) == 200
    # One owned H100 serves it all, free; with a quota of 0 H100s to rent, the L40S: 300.
    assert least_cost_alone(sc, opts, devs, {"h100-sxm": 1}, {}) == 0
    assert least_cost_alone(sc, opts, devs, {}, {"h100-sxm": 0}) == 300
