"""The solver-free check: a plan re-derived from the physics and the spec alone."""

from __future__ import annotations

import dataclasses

from solver.explain.solve import solve
from solver.explain.validate import validate
from tests.solve_helpers import problem_of

SPEC = {
    "model": "llama-3.1-8b",
    "workload": {"users": 32, "context_tokens": 4096, "output_tokens": 256},
    "sla": {"max_tpot": "20ms"},
    "search": {"gpus": ["h100-sxm", "l40s"]},
    "budget": {"max_usd_per_hour": 20},
}


def test_a_solved_plan_breaks_nothing():
    problem = problem_of(SPEC)
    r = solve(problem, explain=False)
    assert r.violations == [] and validate(problem, r.solution.candidate) == []


def test_the_check_catches_a_plan_that_breaks_the_spec():
    # The same plan held against tighter targets and budgets than it was chosen for: every
    # rule it now breaks is named.
    problem = problem_of(SPEC)
    c = solve(problem, explain=False).solution.candidate
    tpot = solve(problem, explain=False).plan.decode.tpot_s
    tight = dataclasses.replace(
        problem,
        targets=dataclasses.replace(problem.targets, max_tpot_s=tpot / 2),
        spec=problem.spec.model_copy(update={"budget": problem.spec.budget.model_copy(update={"max_usd_per_hour": 0.01})}),
    )
    assert {v.rule for v in validate(tight, c)} == {"max_tpot", "max_usd_per_hour"}
    more_users = dataclasses.replace(problem, workload=dataclasses.replace(problem.workload, users=10 * 32))
    assert "users" in {v.rule for v in validate(more_users, c)}
