"""Issue 44: a refused plan's correction is lazy. Its shape's floor is raised a step
without a simulation; the count at the floor is simulated only when a re-solve picks
it. The plan found is the one a floor search run at once finds, and no simulation is
spent on a count dearer than a plan the re-solve prefers."""

from __future__ import annotations

import math
from types import SimpleNamespace

import solver.explain.traffic as traffic
from solver.catalog import default_catalog
from solver.explain.records import SolveResult
from solver.explain.traffic import SEEDS
from solver.optimise.scenario import objective_value, scenario_of, solve_scenario
from solver.optimise.shapes import build_problem
from solver.spec.solve_spec import parse_spec
from tests.explain.test_traffic_solve import SPEC  # Llama-3.1-8B at 10 req/s over three GPUs


def _verdicts(monkeypatch, passes):
    """_simulate replaced by `passes(shape, replicas, seed)`, seeds run in order until one
    misses (verify_plan's rule); the runs made are logged as (shape, replicas, seeds)."""
    runs: list[tuple[int, int, int]] = []

    def verdict(problem, s, shape, replicas, seeds=SEEDS):
        for i in range(seeds):
            if not passes(shape, replicas, i):
                runs.append((shape.index, replicas, i + 1))
                return SimpleNamespace(ok=False, failing=["max_tpot"], seeds=tuple(range(i + 1)))
        runs.append((shape.index, replicas, seeds))
        return SimpleNamespace(ok=True, failing=[], seeds=tuple(range(seeds)))

    monkeypatch.setattr(traffic, "_simulate", verdict)
    return runs


def _first_pick(spec):
    problem = build_problem(parse_spec(spec), default_catalog())
    s = scenario_of(problem)
    result = SolveResult(problem, solve_scenario(problem, s))
    return problem, s, result


def test_a_shape_refused_at_r_that_passes_two_steps_up_gets_that_count(monkeypatch):
    # One shape searched: the floor search would find r + 2 steps (r + 1 step misses on
    # the first seed), so the plan is that count, and the one refusal is the pick at r.
    spec = {**SPEC, "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]}}
    problem, s, result = _first_pick(spec)
    first = result.solution.chosen
    r, step = first.replicas, max(1, math.ceil(first.replicas * 0.1))
    # at r the plan misses on its second seed (the first passes), at r + step on its first
    runs = _verdicts(monkeypatch, lambda shape, n, seed: n >= r + 2 * step or (n == r and seed == 0))
    sol = traffic.verified(problem, s, result.solution, result)
    assert sol.feasible and sol.chosen.shape.index == first.shape.index
    assert sol.chosen.replicas == r + 2 * step
    assert [(n, seeds) for _, n, seeds in runs] == [(r, 2), (r + step, 1), (r + 2 * step, SEEDS)]
    assert result.traffic_rejected == [(first.shape.label, r, ["max_tpot"])]


def test_no_count_dearer_than_the_plan_is_simulated(monkeypatch):
    # The first pick's shape misses at every count; every other shape passes. A floor
    # search run at once simulated it a step up and on, at counts dearer than the next
    # shape; lazily, each count simulated was the cheapest plan left when it ran.
    problem, s, result = _first_pick(SPEC)
    first = result.solution.chosen
    costs = {(first.shape.index, first.replicas): objective_value(problem, first)}
    runs = _verdicts(monkeypatch, lambda shape, n, seed: shape.index != first.shape.index)
    resolve = traffic.solve_scenario

    def priced(problem, s, shapes=None):
        sol = resolve(problem, s, shapes=shapes)
        if sol.feasible:
            costs[(sol.chosen.shape.index, sol.chosen.replicas)] = objective_value(problem, sol.chosen)
        return sol

    monkeypatch.setattr(traffic, "solve_scenario", priced)
    sol = traffic.verified(problem, s, result.solution, result)
    assert sol.feasible and sol.chosen.shape.index != first.shape.index
    plan = objective_value(problem, sol.chosen)
    assert all((shape, n) in costs and costs[(shape, n)] <= plan + 1e-9 for shape, n, _ in runs)
    assert result.traffic_rejected == [(first.shape.label, first.replicas, ["max_tpot"])]


def test_a_floor_refused_past_its_first_seed_is_a_refusal(monkeypatch):
    # A count reached by a step that passes its first seed and misses a later one is a
    # refusal of its own (listed, counted towards MAX_CORRECTIONS_PER_SHAPE), as the
    # floor search's verified floor was; after that many the shape is dropped.
    spec = {**SPEC, "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]}}
    problem, s, result = _first_pick(spec)
    first = result.solution.chosen
    runs = _verdicts(monkeypatch, lambda shape, n, seed: seed == 0)
    sol = traffic.verified(problem, s, result.solution, result)
    assert not sol.feasible
    counts = [first.replicas]
    for _ in range(traffic.MAX_CORRECTIONS_PER_SHAPE - 1):
        counts.append(counts[-1] + max(1, math.ceil(counts[-1] * 0.1)))
    assert [n for _, n, _ in runs] == counts
    assert [n for _, n, _ in result.traffic_rejected] == counts
    assert problem.replica_floor[first.shape.index] == 0


def test_a_correction_gives_up_after_its_steps(monkeypatch):
    # Every count misses on its first seed: the shape is tried at r and `steps` steps
    # above it (each a pick), then dropped, with one refusal listed.
    spec = {**SPEC, "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]}}
    problem, s, result = _first_pick(spec)
    first = result.solution.chosen
    r, step = first.replicas, max(1, math.ceil(first.replicas * 0.1))
    runs = _verdicts(monkeypatch, lambda shape, n, seed: False)
    steps = traffic.MAX_EXTRA_TRIES
    sol = traffic.verified(problem, s, result.solution, result)
    assert not sol.feasible
    assert [n for _, n, _ in runs] == [r + i * step for i in range(steps + 1)]
    assert len(result.traffic_rejected) == 1


def test_a_one_seed_verdict_is_read_from_the_five_seed_one(monkeypatch):
    # A runner-up's one-seed verdict on a plan whose five seeds ran is their first run:
    # read back, equal to a fresh run's figures, not simulated again.
    from solver.explain.solve import solve
    from solver.traffic.verify import verify_plan

    problem = build_problem(parse_spec(SPEC), default_catalog())
    chosen = solve(problem, explain=False).solution.chosen
    settings = traffic.settings_of(problem, chosen.replicas)
    fresh = verify_plan(chosen.shape.deployment, problem.workload, problem.targets, chosen.replicas, settings, 1)

    def no_simulation(*args, **kwargs):
        raise AssertionError("simulated again")

    monkeypatch.setattr(traffic, "verify_plan", no_simulation)
    kept = traffic.plan_verdict(problem, scenario_of(problem), chosen.shape, chosen.replicas, seeds=1)
    assert kept is not None
    figures = [(c.ok, c.seeds, c.bounds, c.ttft_q_s, c.tpot_q_s, c.e2e_q_s, c.goodput, c.sim.results) for c in (kept, fresh)]
    assert figures[0] == figures[1]


def test_the_schedules_peak_solve_leaves_no_correction_behind(monkeypatch):
    # plan-opt schedule's solve at the peak keeps its corrections off the problem: its
    # floors and its corrections not yet simulated both (a stale step would read a later
    # pick at that count as a step, not a refusal).
    from solver.explain import schedule

    problem, _, result = _first_pick(SPEC)
    first = result.solution.chosen
    _verdicts(monkeypatch, lambda shape, n, seed: shape.index != first.shape.index)
    problem.replica_floor[999], problem.floor_steps[999] = 7, (7, 1, 1)
    sol = schedule._solve_at_peak(problem)
    assert sol.feasible and sol.chosen.shape.index != first.shape.index
    assert problem.replica_floor == {999: 7} and problem.floor_steps == {999: (7, 1, 1)}
