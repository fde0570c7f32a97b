"""The price of each target is answered from the first pass's per-option figures
(issue 44 item 1): a moved target re-filters them, never re-screens, and its answer is
the one a fresh solve with that target moved gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver.catalog import default_catalog
from solver.explain.solve import solve
from solver.optimise import traffic_candidates
from solver.optimise.scenario import plan_label, scenario_of, solve_scenario
from solver.optimise.shapes import build_problem
from solver.physics.decode import DecodeCoefficients
from solver.spec.solve_spec import load_spec

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _problem(name: str):  # a fresh problem: no figures memoised yet
    spec, _ = load_spec(str(SPECS / name))
    return build_problem(spec, default_catalog(), SPECS)


@pytest.mark.parametrize("name", ["chat-llama70b.yaml", "latency-critical-8b.yaml", "budget-capped.yaml"])
def test_each_moved_target_answers_as_a_fresh_solve(name: str, fresh_answer) -> None:
    result = solve(_problem(name))
    assert result.sensitivity, "the spec sets targets, so the explanation prices them"
    for row in result.sensitivity:
        # nothing reused: every option screened anew (tests/conftest.py, once a session)
        feasible, label, objective = fresh_answer(name, {}, row.target, row.value)
        if row.plan is None:
            assert not feasible, (row.target, row.change)
        else:
            assert feasible, (row.target, row.change)
            assert (label, objective) == (row.plan, row.objective), (row.target, row.change)


def test_a_moved_budget_refilters_without_re_deriving_any_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget moves only which options pass: the second solve evaluates no decode step
    and no prompt queue (main re-derived every shape's TPOT at its batch)."""
    p = _problem("chat-llama70b.yaml")
    s = scenario_of(p)
    first = solve_scenario(p, s)
    assert first.feasible
    calls = {"n": 0}
    for name in ("tpot_s", "ttft_under_load_s"):
        real = getattr(DecodeCoefficients, name)

        def counted(self, batch, _real=real):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            return _real(self, batch)

        monkeypatch.setattr(DecodeCoefficients, name, counted)
    # a $/hour budget half again the plan's price: the same options, filtered anew
    moved = solve_scenario(p, s.with_value("max_usd_per_hour", first.chosen.cost_usd_per_hour * 1.5))
    assert moved.feasible and plan_label(moved.chosen) == plan_label(first.chosen)
    assert calls["n"] == 0


def test_a_moved_latency_target_under_traffic_does_not_rebuild_the_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under traffic the iteration cost, engine limits and lengths of each shape do not
    depend on the targets: a re-solve with a moved TPOT target only re-runs the rate search."""
    p = _problem("chat-70b-at-20-rps.yaml")
    s = scenario_of(p)
    solve_scenario(p, s)
    calls = {"n": 0}
    real = traffic_candidates.iteration_model

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(traffic_candidates, "iteration_model", counted)
    tpot = s.targets.max_tpot_s
    assert tpot is not None
    solve_scenario(p, s.with_value("max_tpot", tpot * 0.9))
    assert calls["n"] == 0


def test_a_moved_budget_under_traffic_screens_nothing_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rate a re-solve under a moved budget screens was screened by the first pass:
    the screen memo answers them all (main screened each shape's plan again)."""
    from solver.traffic import screen as screen_module

    p = _problem("chat-70b-at-20-rps.yaml")
    s = scenario_of(p)
    first = solve_scenario(p, s)
    assert first.feasible
    calls = {"n": 0}
    real = screen_module.screen

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(screen_module, "screen", counted)
    monkeypatch.setattr(traffic_candidates, "screen", counted)
    moved = solve_scenario(p, s.with_value("max_usd_per_hour", first.chosen.cost_usd_per_hour * 1.5))
    assert moved.feasible and plan_label(moved.chosen) == plan_label(first.chosen)
    assert calls["n"] == 0


def test_a_plan_simulated_once_is_not_simulated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner-up's correction may land on a plan the explanation simulated already
    (chat-70b-at-20-rps: l40s TP4 fp8/fp8 at 30 replicas, one seed, twice on main): its
    seeded verdict is read back, so no (plan, replicas, seeds) is simulated twice."""
    from solver.explain import traffic as explain_traffic

    seen: list[tuple[object, ...]] = []
    real = explain_traffic.verify_plan

    def counted(d, w, t, replicas, settings, seeds, first=None):  # type: ignore[no-untyped-def]
        seen.append((id(d), replicas, seeds, settings))  # a shape keeps one Deployment
        return real(d, w, t, replicas, settings, seeds, first)

    monkeypatch.setattr(explain_traffic, "verify_plan", counted)
    p = _problem("chat-70b-at-20-rps.yaml")
    result = solve(p)
    assert result.feasible and len(seen) > 1
    assert len(seen) == len(set(seen))
    # the budget is charged per verdict read, as when each was simulated: at least the runs made
    assert p.simulations >= len(seen)
