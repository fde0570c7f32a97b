"""The model has exactly one candidate chosen, so whether some targets admit a plan is
read off the candidates (`admissible`); CP-SAT, given the same targets as
assumptions, must agree — on the conflict found and on every smaller set."""

from __future__ import annotations

import itertools
from pathlib import Path

from solver.catalog import default_catalog
from solver.explain.diagnosis import diagnosis_candidates
from solver.optimise.model import build_model, is_feasible, minimal_conflict, new_solver, status_name
from solver.optimise.scenario import scenario_of
from solver.optimise.shapes import build_problem
from solver.spec.solve_spec import load_spec

ROOT = Path(__file__).resolve().parents[2]


def _cpsat_infeasible(cands, limits, assumed: list[str]) -> bool:
    b = build_model(cands, limits, with_assumptions=True)
    b.model.add_assumptions([b.literals[n] for n in assumed if n in b.literals])
    return status_name(new_solver(10.0).solve(b.model)) == "infeasible"


def test_the_conflict_of_the_impossible_spec_is_one_cpsat_proves_and_minimal():
    spec, _ = load_spec(ROOT / "specs" / "impossible.yaml")
    problem = build_problem(spec, default_catalog())
    s = scenario_of(problem)
    cands = diagnosis_candidates(problem, s)  # with the users- and context-relaxed ones
    limits = s.limits()
    core = minimal_conflict(cands, limits)
    assert core  # the spec is impossible because of its targets, not its physics
    assert _cpsat_infeasible(cands, limits, core)
    for k in range(len(core)):
        for smaller in itertools.combinations(core, k):
            assert not _cpsat_infeasible(cands, limits, list(smaller)), smaller
    assert not is_feasible(cands, limits)
