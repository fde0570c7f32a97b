"""A fleet class's options derived lazily (optimise/fleet_lazy.py): the options pruning
keeps, the devices the model counts and their order, and every figure of an option,
all equal to deriving every shape of every workload alone (options_of) — on fleets
drawn by hypothesis and on hand-made ones that reach the witness and the tie cases."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.catalog import default_catalog
from solver.optimise.candidates import candidates
from solver.optimise.fleet import solve_fleet
from solver.optimise.fleet_classes import ServiceClass, build_classes
from solver.optimise.fleet_options import option_of, options_of
from solver.optimise.fleet_prune import fleet_limits, prune
from solver.report.fleet_report import to_json
from solver.spec.fleet_spec import FleetSpec

DEVICES = ["a100-80gb", "h100-sxm", "h200", "l40s", "a10g", "mi300x", "l4"]


def fleet(workloads: list[dict], **extra: object) -> FleetSpec:
    search = {"gpus": DEVICES, "tp": [1, 2, 4, 8], "weights": ["bf16", "fp8"], "kv_cache": ["bf16", "fp8"]}
    return FleetSpec.model_validate({"workloads": workloads, "search": search, **extra})


def wl(i: int, model: str, users: int, ctx: int, prompt_share: int, ttft: str, tpot: str) -> dict:
    return {
        "name": f"s{i}",
        "model": model,
        "workload": {"users": users, "context_tokens": ctx, "prompt_tokens": ctx * prompt_share // 4},
        "sla": {"max_ttft": ttft, "max_tpot": tpot},
    }


def devices_of(per_class: list[list]) -> dict:
    """The devices the fleet model counts, in its order (solve_fleet's)."""
    return {o.device: None for opts in per_class for o in opts}


def check_same(fs: FleetSpec) -> list[ServiceClass]:
    """The lazily derived options against every shape derived alone; returns the classes
    (lazy options) for callers that go on to solve them."""
    classes = build_classes(fs, default_catalog())
    full = [options_of(sc.problem)[0] for sc in classes]
    lazy = [sc.options for sc in classes]
    derived = [[o for o in map(option_of, candidates(sc.problem)) if o is not None] for sc in classes]
    by_shape = [{o.shape_index: o for o in opts} for opts in derived]
    for sc, mine, everything in zip(classes, lazy, by_shape):
        for o in mine:  # a lazily derived option is the shape's option derived alone, figure for figure
            assert everything[o.shape_index] == o, sc.name
    assert list(devices_of(lazy)) == list(devices_of(full))
    devices = {o.device: sc.problem.shapes[o.shape_index].device for sc, opts in zip(classes, full) for o in opts}
    limits = fleet_limits(fs)[0]
    for sc, mine, everything in zip(classes, lazy, full):
        assert prune(mine, devices, limits, sc.demand) == prune(everything, devices, limits, sc.demand), sc.name
        assert bool(mine) == bool(everything) and (sc.why_none == "") == bool(everything)
    return classes


MODELS = ["llama-3.1-8b", "qwen2.5-7b", "llama-3.1-70b", "qwen3-30b-a3b", "mixtral-8x7b", "llama-3.2-1b"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    services=st.lists(
        st.tuples(
            st.sampled_from(MODELS),
            st.sampled_from([1, 3, 20, 150, 900]),  # small demands: caps truncated at the demand tie
            st.sampled_from([1024, 4096, 16384]),
            st.integers(1, 3),
            st.sampled_from(["200ms", "1s", "5s"]),
            st.sampled_from(["15ms", "40ms", "100ms"]),
        ),
        min_size=1,
        max_size=3,
    ),
    owned=st.sampled_from([{}, {"a100-80gb": 8}, {"l40s": 2, "h100-sxm": 1}]),
    quota=st.sampled_from([{}, {"h100-sxm": 16}, {"h200": 4, "mi300x": 8}]),
    purchase=st.sampled_from([None, 2_000_000.0]),
)
def test_lazy_options_prune_to_the_same_as_every_shape_derived(services, owned, quota, purchase) -> None:
    workloads = [wl(i, *s) for i, s in enumerate(services)]
    budget = {"max_purchase_usd": purchase} if purchase is not None else {}
    check_same(fleet(workloads, inventory=owned, quota=quota, budget=budget))


def test_a_device_every_shape_of_which_is_beaten_keeps_a_witness() -> None:
    """H100 at $500/GPU-hour: an H200 replica (more memory, more bandwidth, at its
    catalog price) beats each H100 shape's bound, so none is derived for pruning; the
    model still counts the device, as it does with every shape derived (one witness)."""
    fs = fleet([wl(0, "llama-3.1-8b", 100, 4096, 2, "1s", "50ms")], overrides={"gpus": {"h100-sxm": {"price_usd_per_gpu_hour": 500.0}}})
    classes = check_same(fs)
    full = options_of(classes[0].problem)[0]
    assert sum(o.device == "h100-sxm" for o in full) >= 2  # several H100 options survive options_of's own filter
    assert sum(o.device == "h100-sxm" for o in classes[0].options) == 1  # the witness alone derived


def test_lazy_derives_fewer_options_on_a_whole_catalog_fleet() -> None:
    """The point of it: of a fleet over the whole catalog, fewer options derived than
    options_of's (and the same pruned)."""
    workloads = [wl(i, m, 200, 8192, 2, "1s", "50ms") for i, m in enumerate(["llama-3.1-8b", "qwen2.5-32b", "llama-3.1-70b"])]
    fs = FleetSpec.model_validate(
        {"workloads": workloads, "search": {"gpus": ["all"], "tp": [1, 2, 4, 8], "weights": ["bf16", "fp8"], "kv_cache": ["bf16", "fp8"]}}
    )
    classes = check_same(fs)
    assert sum(len(sc.options) for sc in classes) < sum(len(options_of(sc.problem)[0]) for sc in classes)


@pytest.mark.parametrize("objective", ["min_cost", "max_served"])
def test_the_fleet_answer_is_the_one_every_shape_derived_gives(objective: str) -> None:
    """The whole answer (its JSON) on the lazy options equals that on options_of's."""
    workloads = [wl(0, "llama-3.1-8b", 300, 4096, 3, "500ms", "30ms"), wl(1, "qwen2.5-7b", 7, 16384, 1, "2s", "80ms")]
    fs = fleet(workloads, inventory={"a100-80gb": 4}, quota={"h100-sxm": 8}, objective=objective, budget={"max_usd_per_hour": 40.0})
    lazy = build_classes(fs, default_catalog())
    full = build_classes(fs, default_catalog())
    for sc in full:
        sc.options = options_of(sc.problem)[0]
    assert to_json(solve_fleet(fs, lazy)) == to_json(solve_fleet(fs, full))
