"""Under traffic a runner-up is simulated only where the screen prices it within
SIMULATED_WITHIN of the plan: a simulation only adds replicas to a screened plan, so one
already priced far above the plan loses whatever it says (explain/traffic.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from solver.catalog import default_catalog
from solver.explain import traffic as explain_traffic
from solver.explain.solve import solve
from solver.optimise.shapes import build_problem
from solver.spec.solve_spec import load_spec

SPECS = Path(__file__).resolve().parents[2] / "specs"


def test_a_runner_up_priced_far_above_the_plan_is_reported_screened_not_simulated(monkeypatch: pytest.MonkeyPatch) -> None:
    simulated: list[str] = []
    real = explain_traffic.verify_plan

    def counted(d, w, t, replicas, settings, seeds, first=None):  # type: ignore[no-untyped-def]
        simulated.append(d.device.name)
        return real(d, w, t, replicas, settings, seeds, first)

    monkeypatch.setattr(explain_traffic, "verify_plan", counted)
    spec, _ = load_spec(str(SPECS / "chat-70b-at-20-rps.yaml"))
    result = solve(build_problem(spec, default_catalog(), SPECS))
    # The plan, by hand from catalogs/prices.yaml: 2 replicas × 8 MI300X at $2.39/GPU-hour.
    assert result.solution.chosen.shape.device.name == "mi300x"
    assert result.solution.chosen.cost_usd_per_hour == pytest.approx(2 * 8 * 2.39)
    far = [ru for ru in result.runners_up if ru.objective is not None and ru.objective > 1.5 * 2 * 8 * 2.39]
    near = [ru for ru in result.runners_up if ru.objective is not None and ru.objective <= 1.5 * 2 * 8 * 2.39]
    # A100-80GB needs TP 8 for 70B in bf16 at $2.30/GPU-hour: even one replica's 8 GPUs and
    # a second (a replica carries less than the MI300X's) are past 1.5 × $38.24 = $57.36;
    # L40S's 48 GB take 4-GPU replicas by the dozen.
    assert {ru.device for ru in far} == {"a100-80gb", "l40s"}
    assert near, "the close runners-up are still simulated"
    for ru in far:
        assert "screened, not simulated" in ru.reason and ru.device not in simulated
    for ru in near:
        assert "simulated on seed" in ru.reason and ru.device in simulated


def test_an_objective_replicas_lower_simulates_every_runner_up() -> None:
    """min_tpot falls as replicas are added: a screened runner-up's TPOT is no floor."""
    spec, _ = load_spec(str(SPECS / "chat-70b-at-20-rps.yaml"))
    problem = build_problem(spec, default_catalog(), SPECS)
    assert explain_traffic.screened_far(problem, 10.0, 100.0)
    assert not explain_traffic.screened_far(problem, 10.0, 15.0)
    tpot = dataclasses.replace(problem, spec=problem.spec.model_copy(update={"objective": "min_tpot"}))
    assert not explain_traffic.screened_far(tpot, 0.01, 1.0)
