"""Metamorphic pairs (issue 43 item 8): a change that only widens the choice never makes
the answer worse. More budget never serves a smaller priority-weighted share of demand
(fleet, max_served); more GPU types never turn a spec with a plan into one without, nor
make it dearer (solve). Hypothesis draws the pairs; each case stays under a few seconds."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.catalog import default_catalog
from solver.explain.solve import solve
from solver.optimise.fleet import solve_fleet
from solver.optimise.fleet_classes import build_classes
from solver.optimise.scenario import objective_value
from solver.spec.fleet_spec import FleetSpec
from tests.solve_helpers import problem_of

GPUS = ["rtx-4090", "l40s", "a100-80gb", "h100-sxm", "l4", "h200"]


def _weighted_share(res, classes) -> float:
    demand: dict[str, int] = {}
    for sc in classes:
        demand[sc.workload] = demand.get(sc.workload, 0) + sc.demand
    return sum(sc.priority * res.served.get(sc.name, 0) / demand[sc.workload] for sc in classes)


@st.composite
def budget_pairs(draw):
    workloads = []
    for i in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            load = {"users": draw(st.integers(1, 200)), "context_tokens": draw(st.sampled_from([2048, 8192])), "output_tokens": 256}
            sla = {"max_tpot": f"{draw(st.integers(20, 80))}ms"}
        else:  # a rate service: its demand counts in thousandths of a request per second
            load = {"requests_per_s": draw(st.sampled_from([0.5, 2, 10, 40])), "prompt_tokens": 1000, "output_tokens": 200}
            sla = {"ttft": {"p99": "2s"}, "tpot": {"p90": "60ms"}}
        workloads.append({"name": f"w{i}", "model": "llama-3.1-8b", "priority": draw(st.integers(1, 5)), "workload": load, "sla": sla})
    spec = {
        "workloads": workloads,
        "search": {
            "gpus": draw(st.lists(st.sampled_from(GPUS), min_size=1, max_size=3, unique=True)),
            "tp": [1, 2],
            "weights": ["bf16", "fp8"],
            "kv_cache": ["bf16"],
        },
        "objective": "max_served",
    }
    low = draw(st.floats(0.5, 40))
    return spec, low, low + draw(st.floats(0.01, 40))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(budget_pairs())
def test_more_budget_never_serves_a_smaller_weighted_share(pair):
    spec, low, high = pair
    fs = FleetSpec.model_validate(spec)
    classes = build_classes(fs, default_catalog())
    a = solve_fleet(fs, classes, max_usd_per_hour=low)
    b = solve_fleet(fs, classes, max_usd_per_hour=high)
    assert a.status == "optimal" and b.status == "optimal", (spec, low, high)
    # the objective counts shares in millionths, rounded down per class: a tolerance of one each
    assert _weighted_share(b, classes) >= _weighted_share(a, classes) - 1e-5 * len(classes) * 5, (spec, low, high)


@st.composite
def gpu_pairs(draw):
    fewer = draw(st.lists(st.sampled_from(GPUS), min_size=1, max_size=3, unique=True))
    more = fewer + draw(st.lists(st.sampled_from([g for g in GPUS if g not in fewer]), min_size=1, max_size=2, unique=True))
    spec = {
        "model": draw(st.sampled_from(["llama-3.1-8b", "qwen2.5-7b"])),
        "workload": {"users": draw(st.integers(1, 300)), "context_tokens": draw(st.sampled_from([2048, 8192])), "output_tokens": 256},
        "sla": {"max_tpot": f"{draw(st.integers(15, 80))}ms"},
        "search": {"tp": [1, 2, 4], "weights": ["bf16", "fp8"], "kv_cache": ["bf16", "fp8"]},
        "objective": draw(st.sampled_from(["min_cost", "min_gpus"])),
    }
    return spec, fewer, more


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_pairs())
def test_more_gpu_types_never_lose_a_plan_nor_cost_more(pair):
    spec, fewer, more = pair
    pa = problem_of({**spec, "search": {**spec["search"], "gpus": fewer}})
    pb = problem_of({**spec, "search": {**spec["search"], "gpus": more}})
    a, b = solve(pa, explain=False), solve(pb, explain=False)
    if a.feasible:
        assert b.feasible, (spec, fewer, more)
        assert objective_value(pb, b.optimum) <= objective_value(pa, a.optimum) + 1e-9, (spec, fewer, more)
