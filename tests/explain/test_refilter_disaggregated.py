"""The price of each target with disaggregated serving (issue 44): a re-solve pairs only
the decode options whose bound (their fewest decode replicas and the least prefill pool
the queue allows, optimise/disaggregated_floor.py) reaches the best plan found, and its
answer is the full solve's and the brute-force oracle's."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.catalog import default_catalog
from solver.explain import refilter
from solver.explain.refilter import Refilter
from solver.optimise.candidates import candidates
from solver.optimise.enumerate import exhaustive, exhaustive_disaggregated
from solver.optimise.model import admissible
from solver.optimise.scenario import objective_value, plan_label, scenario_of, solve_scenario
from solver.optimise.shapes import build_problem
from solver.spec.solve_spec import load_spec
from tests.solve_helpers import problem_of

SPECS = Path(__file__).resolve().parents[2] / "specs"


@st.composite
def both_ways(draw):  # type: ignore[no-untyped-def]
    """Small specs that search both ways of serving under both latency targets."""
    return {
        "model": draw(st.sampled_from(["llama-3.1-8b", "qwen2.5-7b"])),
        "workload": {
            "users": draw(st.integers(2, 16)),
            "prompt_tokens": draw(st.sampled_from([2048, 8192])),
            "output_tokens": draw(st.sampled_from([64, 256])),
            "batching": "continuous",
        },
        "sla": {"max_ttft": draw(st.sampled_from(["1s", "3s"])), "max_tpot": draw(st.sampled_from(["20ms", "50ms"]))},
        "search": {
            "gpus": draw(st.lists(st.sampled_from(["l40s", "a100-80gb", "h100-sxm", "mi300x"]), min_size=2, max_size=3, unique=True)),
            "tp": [1, 2],
            "weights": ["bf16", "fp8"],
            "kv_cache": ["bf16"],
            "serving": ["aggregated", "disaggregated"],
        },
    }


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(both_ways())
def test_each_moved_target_costs_what_brute_force_finds(spec) -> None:  # type: ignore[no-untyped-def]
    p = problem_of(spec)
    again = Refilter(p)  # one per problem, as the price of each target keeps it
    s = scenario_of(p)
    moves = [("max_tpot", s.targets.max_tpot_s * f) for f in (1.5, 0.9)]  # type: ignore[operator]
    moves += [("max_ttft", s.targets.max_ttft_s * f) for f in (1.5, 0.9)]  # type: ignore[operator]
    moves += [("users", max(1, round(s.workload.users * f))) for f in (1.5, 0.5)]
    for target, value in moves:
        moved = s.with_value(target, value)
        got = again.solve(moved)
        oracle = problem_of(spec)  # a fresh problem with the target moved: nothing shared
        oracle.targets, oracle.workload = moved.targets, moved.workload
        agg, dis = exhaustive(oracle), exhaustive_disaggregated(oracle)
        costs = [x for x in (agg.key[0] if agg else None, dis.cost_cents if dis else None) if x is not None]
        if not costs:
            assert not got.feasible, (spec, target, value)
            continue
        assert got.feasible and got.chosen is not None, (spec, target, value)
        assert got.chosen.cost_cents == min(costs), (spec, target, value)


def _problem(name: str):  # type: ignore[no-untyped-def]
    spec, _ = load_spec(str(SPECS / name))
    return build_problem(spec, default_catalog(), SPECS)


@pytest.mark.parametrize(("target", "factor"), [("context_tokens", 1.1), ("max_tpot", 0.9)])
def test_a_moved_target_pairs_few_decode_options_and_answers_as_the_full_solve(monkeypatch: pytest.MonkeyPatch, target: str, factor: float) -> None:
    """long-prompts-disaggregated: main paired every one of its 320 decode options with
    the prefill pools under each moved target (a moved context derived all their
    physics). Now few are paired, the answer is a fresh full solve's, and every pair
    left out is dearer than that answer or breaks a rule."""
    p = _problem("long-prompts-disaggregated.yaml")
    s = scenario_of(p)
    value = s.value(target)
    assert value is not None
    moved = s.with_value(target, value * factor if target == "max_tpot" else round(value * factor))
    paired: set[int] = set()
    inner = refilter.candidates

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        decoding = kwargs.get("decoding")
        paired.update(sh.index for sh in (p.shapes if decoding is None else decoding))
        return inner(*args, **kwargs)

    monkeypatch.setattr(refilter, "candidates", spy)
    got = Refilter(p).solve(moved)
    monkeypatch.setattr(refilter, "candidates", inner)
    assert got.feasible and got.chosen is not None and got.chosen.prefill is not None
    assert 0 < len(paired) < len(p.shapes) / 4, len(paired)
    fresh = _problem("long-prompts-disaggregated.yaml")
    full = solve_scenario(fresh, moved)
    assert full.chosen is not None
    assert (plan_label(got.chosen), objective_value(p, got.chosen)) == (plan_label(full.chosen), objective_value(fresh, full.chosen))
    limits, best = moved.limits(), got.chosen.cost_cents
    every = candidates(fresh, moved.workload, moved.targets)
    left_out = [c for c in every if c.prefill is not None and c.shape.index not in paired]
    assert left_out, "the bound left some decode options unpaired"
    for c in left_out:
        assert not admissible(c, limits) or c.cost_cents > best, (c.shape.label, c.replicas, c.prefill.shape.label, c.prefill.replicas)
    assert math.isfinite(best)
