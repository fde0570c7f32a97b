"""`plan-opt simulate` and POST /simulate simulate the plan their solve chose; the solve
has just run that plan on the same seeds (issue 44: the 70B chat at 20 requests/s ran
its five seeds twice). The check read back must be the check a fresh run gives, and
another seed, request count or replica count must still be simulated."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from solver.catalog import default_catalog
from solver.explain import verdicts
from solver.explain.solve import solve
from solver.explain.traffic import settings_of
from solver.optimise.shapes import build_problem
from solver.spec.solve_spec import load_spec
from solver.traffic.verify import SEEDS, verify_plan

CHAT = Path(__file__).parents[2] / "specs" / "chat-70b-at-20-rps.yaml"


def _problem():
    return build_problem(load_spec(str(CHAT))[0], default_catalog(), CHAT.parent)


def _figures(check):
    return (check.ok, check.seeds, check.ttft_q_s, check.tpot_q_s, check.e2e_q_s, check.goodput, [(b.target, b.per_seed) for b in check.bounds])


def test_the_solves_check_is_read_back_and_is_a_fresh_runs(monkeypatch):
    problem = _problem()
    chosen = solve(problem, explain=False).solution.chosen
    shape, replicas = chosen.shape, chosen.replicas
    settings = settings_of(problem, replicas)
    fresh = verify_plan(shape.deployment, problem.workload, problem.targets, replicas, settings, SEEDS)

    def no_simulation(*args, **kwargs):
        raise AssertionError("the plan was simulated again")

    monkeypatch.setattr(verdicts, "verify_plan", no_simulation)
    kept = verdicts.plan_check(problem, shape, replicas, settings)
    assert _figures(kept) == _figures(fresh)


@pytest.mark.parametrize("change", ["seed", "requests", "replicas", "one_seed"])
def test_another_run_is_simulated(monkeypatch, change):
    problem = _problem()
    chosen = solve(problem, explain=False).solution.chosen
    shape, replicas, seeds = chosen.shape, chosen.replicas, SEEDS
    settings = settings_of(problem, replicas)
    if change == "seed":
        settings = dataclasses.replace(settings, seed=settings.seed + 7)
    elif change == "requests":
        settings = dataclasses.replace(settings, requests=400)
    elif change == "replicas":
        replicas += 1
    else:
        seeds = 1
    ran = []
    monkeypatch.setattr(verdicts, "verify_plan", lambda *a: ran.append(a) or verify_plan(*a))
    verdicts.plan_check(problem, shape, replicas, settings, seeds)
    assert len(ran) == 1
