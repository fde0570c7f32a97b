"""What the explanation re-uses, and that re-using gives the figures a fresh build gives
(issue 44: every bundled spec solved and explained in at most 1 s): a problem builds
the candidates of one workload and targets once; a re-solve outside the memory bound
re-filters them; an option whose one user alone misses a latency target is not sized."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from solver.catalog import default_catalog
from solver.explain.refilter import Refilter
from solver.optimise import capacity
from solver.optimise import problem as problem_module
from solver.optimise.candidates import candidates
from solver.optimise.scenario import plan_label, scenario_of, solve_scenario, wants_batch_variants
from solver.optimise.shapes import build_problem
from solver.spec.solve_spec import load_spec

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _problem(name: str):  # a fresh problem: nothing derived yet
    spec, _ = load_spec(str(SPECS / name))
    return build_problem(spec, default_catalog(), SPECS)


def _figures(cands) -> list[tuple]:  # type: ignore[no-untyped-def]
    """Every figure a candidate gives the model, the reports and the tie-break."""
    return [
        (
            c.shape.index,
            c.batch,
            c.replicas,
            c.tpot_us,
            c.ttft_us,
            c.cost_cents,
            c.purchase_dollars,
            c.tco_cents,
            c.gpus,
            c.rented,
            c.memory_excess,
            c.interconnect_excess,
            c.max_batch_tpot,
            c.max_batch_ttft,
            None if c.prefill is None else (c.prefill.shape.index, c.prefill.replicas),
        )
        for c in cands
    ]


def _count(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> dict[str, int]:
    calls = {"n": 0}
    real = getattr(module, name)

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("name", ["budget-capped.yaml", "owned-inventory.yaml", "long-prompts-disaggregated.yaml"])
def test_candidates_asked_again_are_the_first_build_without_sizing_anything(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan, its headroom and a moved budget ask for the same candidates: the second
    ask sizes no replica (main re-ran every shape's capacity search) and hands out the
    figures a fresh problem builds, in a list of its own (a caller may extend it)."""
    p = _problem(name)
    s = scenario_of(p)
    first = candidates(p, s.workload, s.targets, batch_variants=wants_batch_variants(p))
    calls = _count(monkeypatch, capacity, "replica_capacity")
    monkeypatch.setattr("solver.optimise.candidates.replica_capacity", capacity.replica_capacity)
    again = candidates(p, s.workload, s.targets, batch_variants=wants_batch_variants(p))
    assert calls["n"] == 0
    assert again is not first and _figures(again) == _figures(first)
    again.clear()
    assert _figures(candidates(p, s.workload, s.targets, batch_variants=wants_batch_variants(p))) == _figures(first)
    fresh = _problem(name)
    assert _figures(candidates(fresh, s.workload, s.targets, batch_variants=wants_batch_variants(fresh))) == _figures(first)


def test_a_moved_workload_is_not_answered_from_the_first_build() -> None:
    """The memo is keyed by what the candidates depend on: 10 % fewer users are new candidates."""
    p = _problem("budget-capped.yaml")
    s = scenario_of(p)
    first = candidates(p, s.workload, s.targets, batch_variants=True)
    fewer = dataclasses.replace(s.workload, users=29)  # 32 users less 10 %, rounded
    moved = candidates(p, fewer, s.targets, batch_variants=True)
    assert {c.users for c in first} == {32} and {c.users for c in moved} == {29}


def test_a_moved_budget_on_a_min_tpot_spec_gives_cp_sat_only_the_plans_that_tie(monkeypatch: pytest.MonkeyPatch) -> None:
    """budget-capped (min_tpot: outside the memory bound), its $20/h budget relaxed 50 %:
    CP-SAT is handed only plans within $30/h at the least TPOT (main handed it every
    candidate, over budget or not, and pruned them there), and chooses a fresh full
    solve's plan."""
    from solver.explain import refilter

    p = _problem("budget-capped.yaml")
    s = scenario_of(p)
    again = Refilter(p)
    assert again.solve(s).feasible
    handed: list[list] = []
    real = refilter.optimise

    def spy(cands, *args, **kwargs):  # type: ignore[no-untyped-def]
        handed.append(list(cands))
        return real(cands, *args, **kwargs)

    monkeypatch.setattr(refilter, "optimise", spy)
    monkeypatch.setattr("solver.optimise.scenario.optimise", spy)
    moved = s.with_value("max_usd_per_hour", 30.0)
    got = again.solve(moved)
    assert len(handed) == 1 and handed[0]
    assert all(c.cost_usd_per_hour <= 30.0 for c in handed[0])
    assert len({c.tpot_us for c in handed[0]}) == 1
    want = solve_scenario(_problem("budget-capped.yaml"), moved)
    assert got.feasible and want.feasible and plan_label(got.chosen) == plan_label(want.chosen)
    assert got.chosen.tpot_us == handed[0][0].tpot_us == want.chosen.tpot_us


def test_the_price_of_a_tight_tpot_sizes_no_option_that_misses_it_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """latency-critical-8b-eagle at TPOT ≤ 2.5 ms (5 ms tightened 50 %): an option whose
    TPOT with one user alone is over 2.5 ms meets it at no batch, so its TTFT cap (a
    dozen queue sums) is never searched; main searched it for every option."""
    p = _problem("latency-critical-8b-eagle.yaml")
    s = scenario_of(p)
    moved = s.with_value("max_tpot", 0.0025)
    sized: list[int] = []
    real = problem_module.Problem.ttft_cap

    def spy(self, physics, workload, max_ttft_s, upper):  # type: ignore[no-untyped-def]
        sized.append(physics.shape.index)
        return real(self, physics, workload, max_ttft_s, upper)

    monkeypatch.setattr(problem_module.Problem, "ttft_cap", spy)
    got = Refilter(p).solve(moved)
    monkeypatch.setattr(problem_module.Problem, "ttft_cap", real)
    by_index = {sh.index: sh for sh in p.shapes}
    for i in sized:  # each option sized can meet 2.5 ms with one user alone
        dec = p.physics(by_index[i], s.workload).decode
        assert dec is not None and dec.tpot_s(1) <= 0.0025 * (1 + 1e-9), by_index[i].label
    slow = [sh for sh in p.shapes if (ph := p.physics(sh, s.workload)).valid and ph.decode and ph.decode.tpot_s(1) > 0.0025 * (1 + 1e-9)]
    assert len(slow) > len(p.shapes) / 2  # most options: an 8B model's step is rarely under 2.5 ms
    want = solve_scenario(_problem("latency-critical-8b-eagle.yaml"), moved)
    assert got.feasible == want.feasible
    if want.feasible:
        assert plan_label(got.chosen) == plan_label(want.chosen)


def test_one_pool_of_owned_gpus_rents_only_what_whole_replicas_leave() -> None:
    """owned-inventory owns 8 A100-80GB: 3 replicas of TP 4 hold 12 GPUs, 2 replicas (8
    GPUs) owned whole, so 4 rented; 2 replicas of TP 8 hold 16, one owned, 8 rented; 3
    of TP 2 hold 6, all owned (a TP group is never part owned, part rented)."""
    p = _problem("owned-inventory.yaml")
    s = scenario_of(p)
    by_tp = {}
    for c in candidates(p, s.workload, s.targets, batch_variants=True):
        d = c.shape.deployment
        if c.shape.device.name == "a100-80gb" and c.prefill is None and d.pp == 1:
            by_tp.setdefault(d.tp, c)
    for tp, replicas, rented in ((4, 3, 4), (8, 2, 8), (2, 3, 0)):
        c = dataclasses.replace(by_tp[tp], replicas=replicas)
        assert (c.gpus, c.rented) == (tp * replicas, rented), (tp, replicas)


def test_plans_left_out_by_the_budget_are_exactly_those_over_it() -> None:
    """candidates(within=...) leaves out only plans whose GPUs, rented at the device's
    price, cost more than the $20/h budget (gpus × $/GPU-hour, in cents, rounded up):
    the plans that meet every rule are the same as without it."""
    from solver.optimise.model import admissible

    p = _problem("budget-capped.yaml")
    s = scenario_of(p)
    every = candidates(p, s.workload, s.targets, batch_variants=True)
    kept = candidates(p, s.workload, s.targets, batch_variants=True, within=(None, 2000, None))
    kept_keys = {f[:3] for f in _figures(kept)}
    left = [c for c in every if (c.shape.index, c.batch, c.replicas) not in kept_keys]
    assert left and len(kept) + len(left) == len(every)
    for c in left:
        price = c.shape.device.price
        assert price is not None and c.gpus * price.usd_per_gpu_hour * 100 > 2000, c.shape.label
    limits = s.limits()
    assert _figures([c for c in every if admissible(c, limits)]) == _figures([c for c in kept if admissible(c, limits)])
