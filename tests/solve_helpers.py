"""Build a Problem from a spec dict, the way the CLI does."""

from __future__ import annotations

from solver.catalog import default_catalog
from solver.optimise.shapes import build_problem
from solver.spec.solve_spec import parse_spec


def problem_of(spec: dict):
    return build_problem(parse_spec(spec), default_catalog())
