"""A plan under traffic is verified on several seeds, and held to a bound on the next
seed's percentile, not to one draw: the bound's arithmetic by hand, the early verdict
it allows, and the 70B chat of specs/chat-70b-at-20-rps.yaml meeting its targets on
seeds it was not chosen on."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from solver.catalog import default_catalog
from solver.explain.solve import solve
from solver.optimise.shapes import build_problem
from solver.report.traffic_json import traffic_out
from solver.report.traffic_text import traffic_lines
from solver.spec.solve_spec import load_spec
from solver.traffic.verify import PREDICTION, SEEDS, Bound, Settings, simulate_plan

CHAT = Path(__file__).parents[2] / "specs" / "chat-70b-at-20-rps.yaml"


def test_the_bound_is_the_one_sided_95_percent_prediction_bound():
    # Five seeds' P90 TPOT of 40, 42, 44, 46, 48 ms: mean 44 ms, sample sd
    # √((16 + 4 + 0 + 4 + 16)/4) = √10 = 3.1623 ms; Student's t at 95 % one-sided with
    # 4 degrees of freedom is 2.132 (any t table), and the next seed's bound is
    # mean + t·sd·√(1 + 1/5) = 44 + 2.132 × 3.1623 × 1.0954 = 51.385 ms: past 50 ms by
    # 1.385 ms, though every seed met it.
    b = Bound("max_tpot", 0.050, (0.040, 0.042, 0.044, 0.046, 0.048))
    assert b.mean == pytest.approx(0.044)
    assert b.bound == pytest.approx(0.044 + 2.132 * math.sqrt(10) * 1e-3 * math.sqrt(1.2), abs=2e-6)
    assert b.margin == pytest.approx(-0.001385, abs=2e-6) and not b.ok
    # goodput is bounded from below: 0.93 ... 0.97, sd √(10e-4/4) = 0.015811, bound
    # 0.95 − 2.132 × 0.015811 × 1.0954 = 0.91307, above a 0.90 target by 0.01307
    g = Bound("goodput", 0.90, (0.93, 0.94, 0.95, 0.96, 0.97))
    assert g.bound == pytest.approx(0.91307, abs=2e-5) and g.margin == pytest.approx(0.01307, abs=2e-5) and g.ok
    assert not Bound("goodput", 0.92, g.per_seed).ok


def test_one_seed_past_a_target_puts_the_bound_past_it():
    # Samuelson's inequality: of k values none lies more than (k − 1)/√k sample sds above
    # their mean, so a multiple of at least that makes the bound at least the largest
    # value — the verdict may stop at the first seed that misses.
    assert SEEDS == 5 and PREDICTION >= (SEEDS - 1) / math.sqrt(SEEDS)
    worst = Bound("max_tpot", 0.050, (0.051, 0.030, 0.030, 0.030, 0.030))
    assert worst.bound >= 0.051 and not worst.ok


@pytest.fixture(scope="module")
def chat():
    spec, _ = load_spec(CHAT)
    problem = build_problem(spec, default_catalog())
    return problem, solve(problem, explain=False)


def test_the_chat_plan_meets_its_targets_on_seeds_it_was_not_chosen_on(chat):
    # The issue: the plan chosen on seed 0 alone missed its P90 TPOT on seeds 103-105
    # (55 ms against 50). Chosen on seeds 0-4 and their bound, it meets both targets
    # on seeds 101-105 with the same 5,000 requests.
    problem, r = chat
    assert r.feasible and r.traffic_check is not None and r.traffic_check.seeds == (0, 1, 2, 3, 4)
    c = r.solution.chosen
    for seed in range(101, 106):
        check = simulate_plan(c.shape.deployment, problem.workload, problem.targets, c.replicas, Settings(problem.spec.simulation.requests, seed))
        assert check.tpot_q_s <= 0.050 and check.ttft_q_s <= 2.0, seed


def test_the_report_gives_each_targets_bound_and_margin(chat):
    problem, r = chat
    t = traffic_out(r)
    assert t is not None and t.simulated is not None and t.simulated.seeds == [0, 1, 2, 3, 4]
    for x in t.targets:
        assert x.bound_s is not None and x.simulated_mean_s is not None and x.margin_s is not None
        assert x.bound_s >= x.simulated_mean_s  # the bound is above the mean by the seeds' spread
        assert x.margin_s == pytest.approx(x.limit_s - x.bound_s) and x.margin_s >= 0
    text = "\n".join(traffic_lines(t, r.solution.chosen.replicas))
    assert "5 seeds (0–4)" in text and "95% bound" in text and "margin" in text
