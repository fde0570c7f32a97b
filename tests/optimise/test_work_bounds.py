"""Every input answers in bounded time: a search too large is refused before its
physics runs, and all of a command's CP-SAT solves share WORK_FACTOR time limits."""

from __future__ import annotations

import time

import pytest

from solver.catalog import default_catalog
from solver.errors import InputError
from solver.optimise import clock as clock_module
from solver.optimise import shapes as shapes_module
from solver.optimise.clock import MIN_SOLVE_S, WORK_FACTOR, SolverClock
from solver.optimise.pareto import frontiers
from solver.optimise.shapes import MAX_SHAPES_ASKED, build_problem, shape_count
from solver.spec.solve_spec import parse_spec

BASE = {
    "model": "llama-3.1-8b",
    "workload": {"users": 32, "context_tokens": 4096, "prompt_tokens": 1024},
    "sla": {"max_tpot": "50ms"},
    "search": {"gpus": ["h100-sxm", "l40s"], "tp": [1, 2], "weights": ["bf16", "fp8"], "kv_cache": ["bf16"]},
}


def spec_with(**search):
    data = {**BASE, "search": {**BASE["search"], **search}}
    return parse_spec(data)


def test_the_count_asked_for_is_the_product_of_the_search_lists():
    # 2 devices × 3 distinct TP (a repeat asks for nothing more) × 2 PP × 2 × 1 formats = 24.
    n, words = shape_count(spec_with(tp=[1, 2, 4, 2], pp=[1, 2]), default_catalog())
    assert n == 24
    assert words == "2 devices × 3 TP × 2 PP × 2 weight formats × 1 KV formats"


def test_a_search_asking_too_much_is_refused_before_anything_is_built():
    # 58-odd devices × 1,024 TP × 8 PP × 2 × 1 is far past MAX_SHAPES_ASKED (200,000).
    spec = spec_with(gpus=["all"], tp=list(range(1, 1025)), pp=list(range(1, 9)))
    start = time.monotonic()
    with pytest.raises(InputError) as exc:
        build_problem(spec, default_catalog())
    assert time.monotonic() - start < 2.0
    assert exc.value.field == "search" and f"at most {MAX_SHAPES_ASKED:,}" in exc.value.message()


def test_more_runnable_shapes_than_the_budget_is_refused(monkeypatch):
    # 2 devices × 2 TP × 2 formats = 8 shapes are built; with a budget of 5 that is too many.
    monkeypatch.setattr(shapes_module, "MAX_SHAPES", 5)
    with pytest.raises(InputError) as exc:
        build_problem(spec_with(), default_catalog())
    assert "8 shapes" in exc.value.message() and "at most 5" in exc.value.message()


def test_the_clock_gives_each_solve_the_limit_and_all_of_them_work_factor_limits(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(clock_module.time, "monotonic", lambda: now[0])
    c = SolverClock(10.0)
    assert c.limit_s() == 10.0  # the first solve: the whole limit, and the clock starts
    now[0] += 25.0  # 25 of the 30 s spent
    assert c.limit_s() == pytest.approx(5.0)
    assert not c.run_out
    now[0] += 5.0
    assert c.run_out and c.limit_s() == MIN_SOLVE_S
    assert WORK_FACTOR == 3.0


def _huge_pareto_problem():
    # 10 million users: the users frontier alone would take minutes of 0.5 s steps.
    data = {**BASE, "workload": {**BASE["workload"], "users": 10_000_000}, "solver": {"time_limit_s": 0.2}}
    data["search"] = {**BASE["search"], "gpus": ["h100-sxm"], "tp": [1, 2, 4, 8], "max_gpus": 4096}
    return build_problem(parse_spec(data), default_catalog())


def test_a_pareto_sweep_takes_at_most_work_factor_limits_of_solver_time():
    # With a 0.2 s limit the three frontiers together stop near 3 × 0.2 s of CP-SAT,
    # however fast the machine (a fast one may finish a frontier before the clock runs out).
    problem = _huge_pareto_problem()
    start = time.monotonic()
    fronts = frontiers(problem)
    elapsed = time.monotonic() - start
    assert elapsed < 10.0
    assert sum(f.solve_s for f in fronts.values()) <= WORK_FACTOR * 0.2 + 3 * MIN_SOLVE_S + 0.5


def test_a_pareto_sweep_whose_clock_has_run_out_says_so(monkeypatch):
    # A clock that moves 0.1 s at every reading runs out after a handful of steps
    # (3 × 0.2 s = 0.6 s), on any machine: the frontiers stop and say they were cut.
    now = [0.0]

    def ticking() -> float:
        now[0] += 0.1
        return now[0]

    monkeypatch.setattr(clock_module.time, "monotonic", ticking)
    fronts = frontiers(_huge_pareto_problem())
    assert any(f.out_of_time for f in fronts.values())
