"""Solving under traffic: the plan reported is one whose simulation meets every
percentile target, and more traffic never buys a cheaper plan."""

from __future__ import annotations

import pytest

from solver.catalog import default_catalog
from solver.explain.solve import solve
from solver.optimise.clock import SolverClock
from solver.optimise.shapes import build_problem
from solver.spec.solve_spec import parse_spec
from solver.traffic.verify import Settings, simulate_plan

SPEC = {
    "model": "llama-3.1-8b",
    "workload": {"requests_per_s": 10, "prompt_tokens": {"dist": "lognormal", "mean": 800, "p99": 4000}, "output_tokens": 200},
    "sla": {"ttft": {"p99": "1s"}, "tpot": {"p90": "30ms"}},
    "search": {"gpus": ["h100-sxm", "l40s", "a100-80gb"], "tp": [1, 2], "weights": ["bf16", "fp8"], "kv_cache": ["bf16"]},
    "simulation": {"requests": 2000},
}


def _solved(rate: float):
    data = {**SPEC, "workload": {**SPEC["workload"], "requests_per_s": rate}}
    problem = build_problem(parse_spec(data), default_catalog())
    return problem, solve(problem, explain=False)


def test_the_plan_reported_meets_its_percentiles_in_simulation():
    problem, r = _solved(10)
    assert r.feasible and r.traffic_check is not None and r.traffic_check.ok
    c = r.solution.chosen
    # Simulated again, independently of the solve: the same requests, the same verdict.
    again = simulate_plan(c.shape.deployment, problem.workload, problem.targets, c.replicas, Settings(2000, 0, "round_robin"))
    assert again.ttft_q_s <= 1.0 and again.tpot_q_s <= 0.030
    assert not r.violations


def test_one_replica_fewer_misses_a_target_or_the_plan_has_one():
    # The replicas are the fewest the screen and simulation allow for this shape.
    problem, r = _solved(10)
    c = r.solution.chosen
    if c.replicas > 1:
        fewer = simulate_plan(c.shape.deployment, problem.workload, problem.targets, c.replicas - 1, Settings(2000, 0, "round_robin"))
        screened_fewer = c.traffic is not None and c.traffic.sustainable.rate_per_s * (c.replicas - 1) < 10
        assert not fewer.ok or screened_fewer


def test_more_traffic_never_costs_less():
    costs = [_solved(rate)[1].solution.chosen.cost_usd_per_hour for rate in (2, 10, 40)]
    assert costs == sorted(costs)


def test_the_cost_per_token_splits_the_replicas_cost_between_input_and_output():
    # Every replica-second is paid by the prompt and output tokens it serves: at the
    # spec's rate, $/M in × input tokens/s + $/M out × output tokens/s = the $/s of the plan.
    from solver.report.traffic_json import traffic_out

    _, r = _solved(10)
    t = traffic_out(r)
    assert t is not None
    c = r.solution.chosen
    tokens_in = t.requests_per_s * t.prompt.mean_tokens
    tokens_out = t.requests_per_s * t.output.mean_tokens
    paid = (t.usd_per_million_input_tokens_at_load * tokens_in + t.usd_per_million_output_tokens_at_load * tokens_out) / 1e6
    assert paid == pytest.approx(c.cost_usd_per_hour / 3600, rel=1e-9)


def test_the_simulation_budget_is_counted_in_requests_not_seconds(monkeypatch):
    # Two simulations of 2,000 requests each fit a budget of 3,000 requests only once
    # the first has run: the second finds 2,000 spent, under it, and runs; a third
    # finds 4,000 and does not, however fast the machine ran the first two. The answer
    # is then the same on every machine.
    import solver.explain.traffic as traffic

    problem = build_problem(parse_spec(SPEC), default_catalog())
    monkeypatch.setattr(traffic, "MAX_SIMULATED_REQUESTS", 3000)
    assert not traffic.budget_spent(problem)
    problem.simulated_requests = 2000
    assert not traffic.budget_spent(problem)
    problem.simulated_requests = 4000
    assert traffic.budget_spent(problem)
    problem.simulated_requests, problem.simulation_s = 0, traffic.MAX_SIMULATION_S - 1.0
    assert not traffic.budget_spent(problem)  # time is only the hang guard's
    # Without the L40S (whose TP 2 plan screens cheapest and misses its TPOT in
    # simulation), the first plan simulated passes, within the 3,000 requests.
    spec = {**SPEC, "search": {**SPEC["search"], "gpus": ["h100-sxm", "a100-80gb"]}}
    r = solve(build_problem(parse_spec(spec), default_catalog()), explain=False)
    assert r.solution.feasible and r.traffic_rejected == []


def test_refused_screen_picks_do_not_run_out_before_the_passing_one(monkeypatch):
    """Issue 43 item 8: adding GPU types turned a spec with a plan into "no plan exists",
    as the correction loop gave up after a fixed count of refused picks in all. Here the
    simulation is replaced by a verdict that refuses the first 7 shapes picked at any
    replica count (each is then dropped: no floor passes) and passes the 8th: the search
    must reach it, since its bound is per shape, not per search."""
    from types import SimpleNamespace

    import solver.explain.traffic as traffic
    from solver.explain.records import SolveResult
    from solver.optimise.scenario import scenario_of, solve_scenario

    spec = {**SPEC, "search": {**SPEC["search"], "tp": [1, 2, 4], "weights": ["bf16", "fp8"], "kv_cache": ["bf16", "fp8"]}}
    problem = build_problem(parse_spec(spec), default_catalog())
    refused: list[int] = []

    def verdict(problem, s, shape, replicas, seeds=5):
        if shape.index not in refused and len(refused) < 7:
            refused.append(shape.index)
        ok = shape.index not in refused
        return SimpleNamespace(ok=ok, failing=[] if ok else ["max_ttft"], seeds=(0,))

    monkeypatch.setattr(traffic, "_simulate", verdict)
    s = scenario_of(problem)
    result = SolveResult(problem, solve_scenario(problem, s))
    sol = traffic.verified(problem, s, result.solution, result)
    assert len(refused) == 7
    assert sol.feasible, result.traffic_unmet
    assert sol.chosen.shape.index not in refused
    assert len(result.traffic_rejected) == 7


class _SpentAfter(SolverClock):
    """A clock whose command time runs out after `checks` reads of run_out (each
    explanation step and each correction reads it once before it runs)."""

    def __init__(self, time_limit_s: float, checks: int) -> None:
        super().__init__(time_limit_s)
        self.left = checks

    @property
    def run_out(self) -> bool:
        self.left -= 1
        return self.left < 0


def test_the_time_limit_covers_the_explanations():
    """Issue 43 item 8: an explained rate spec ran 16-17 s under --time-limit 2, as its
    re-solves (each re-running the screen) and simulations were under no limit. With the
    command's time spent once the plan is simulated, no explanation runs, and the result
    names each one the limit skipped."""
    problem = build_problem(parse_spec(SPEC), default_catalog())
    problem.clock = _SpentAfter(problem.clock.time_limit_s, checks=1)  # the plan's first simulation only
    r = solve(problem, explain=True)
    assert r.feasible and r.traffic_check is not None and r.traffic_check.ok
    assert r.sensitivity == [] and r.runners_up == [] and r.better_weights == []
    assert any(x.startswith("the price of each target") for x in r.cut_short)
    assert any(x.startswith("the runners-up") for x in r.cut_short)


def test_a_spent_clock_stops_the_corrections_and_says_so():
    problem = build_problem(parse_spec(SPEC), default_catalog())
    problem.clock = _SpentAfter(problem.clock.time_limit_s, checks=0)
    r = solve(problem, explain=True)
    assert not r.feasible and "time limit" in r.traffic_unmet
    assert any("simulated corrections" in x for x in r.cut_short)
