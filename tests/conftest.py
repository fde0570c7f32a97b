"""Shared fixtures: the shipped catalog, and a helper that builds a Deployment the
way the CLI does, from the same input fields."""

from __future__ import annotations

import os
from pathlib import Path

# Every plan the suite solves is re-checked without the solver (solver/explain/validate.py);
# a violation fails the test that produced it.
os.environ["PLAN_OPT_STRICT"] = "1"

import pytest

from solver.catalog import default_catalog
from solver.physics.resolve import resolve
from solver.spec.evaluate_input import parse_input


@pytest.fixture(scope="session")
def catalog():
    return default_catalog()


def build(
    model,
    gpu,
    *,
    users=1,
    context=None,
    prompt=None,
    output=None,
    tp=1,
    pp=1,
    count=None,
    weights="bf16",
    kv="bf16",
    platform=None,
    sla=None,
    overrides=None,
    engine=None,
    workload_extra=None,
):
    """(deployment, workload, targets) for one configuration, through the real input path."""
    hardware = {"gpu": gpu, "tp": tp, "pp": pp}
    if count is not None:
        hardware["count"] = count
    if platform is not None:
        hardware["platform"] = platform
    workload = {"users": users}
    for key, value in (("context_tokens", context), ("prompt_tokens", prompt), ("output_tokens", output)):
        if value is not None:
            workload[key] = value
    workload.update(workload_extra or {})
    data = {
        "model": model,
        "hardware": hardware,
        "precision": {"weights": weights, "kv_cache": kv},
        "workload": workload,
        "sla": sla or {},
        "overrides": overrides or {},
    }
    if engine is not None:
        data["engine"] = engine
    return resolve(parse_input(data), default_catalog())


@pytest.fixture
def build_deployment():
    return build


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory):
    """Each test session starts with an empty topology cache, so the networkx path
    runs, and never touches the user's ~/.cache."""
    import os

    os.environ["PLAN_OPT_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield


@pytest.fixture(scope="session")
def cli_once():
    """`plan-opt ARGV` run in-process from the repository root once per session and read
    by every test that asks the same argv: the golden files and the property tests of one
    command on one bundled input read one run (a solve is deterministic, and the answer is
    a tuple of strings and an int, so no test can alter what another reads)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))
    import record

    runs: dict[tuple[str, ...], tuple[str, str, int]] = {}

    def run(argv: list[str]) -> tuple[str, str, int]:
        key = tuple(str(a) for a in argv)
        if key not in runs:
            runs[key] = record.run_parts(list(key))
        return runs[key]

    return run


@pytest.fixture(scope="session")
def fresh_answer():
    """The fresh solves the price-of-each-target tests hold the explanation to, once per
    session (tests/explain/test_refilter.py and test_refilter_bound.py move the same targets
    of the same specs by the same steps).

    answer(spec file, changes, target, value) -> (feasible, plan label, objective) of a
    fresh problem (nothing memoised, every option derived anew) with that one target moved.
    A tuple of a bool, a string and a number: no test can alter what another reads."""
    import json

    import yaml

    from solver.optimise.scenario import objective_value, plan_label, scenario_of, solve_scenario
    from solver.optimise.shapes import build_problem
    from solver.spec.solve_spec import parse_spec

    specs = Path(__file__).resolve().parents[1] / "specs"
    answers: dict[tuple[str, str, str, float], tuple[bool, str | None, float | None]] = {}

    def answer(name: str, changes: dict, target: str, value: float) -> tuple[bool, str | None, float | None]:
        key = (name, json.dumps(changes, sort_keys=True), target, value)
        if key not in answers:
            data = yaml.safe_load((specs / name).read_text())
            data.update(changes)
            fresh = build_problem(parse_spec(data), default_catalog(), specs)
            sol = solve_scenario(fresh, scenario_of(fresh).with_value(target, value))
            answers[key] = (True, plan_label(sol.chosen), objective_value(fresh, sol.chosen)) if sol.feasible else (False, None, None)
        return answers[key]

    return answer
