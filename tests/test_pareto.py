"""Pareto frontiers: every point non-dominated (checked against every candidate plan,
not only the frontier), and the plan `solve` picks lies on the frontier."""

from __future__ import annotations


import pytest

from solver.candidates import candidates
from solver.enumerate import meets
from solver.pareto import frontiers
from solver.solve import scenario_of, solve
from tests.solve_helpers import problem_of

SPEC = {
    "model": "llama-3.1-8b",
    "workload": {"users": 48, "context_tokens": 4096, "output_tokens": 256},
    "sla": {"max_tpot": "30ms", "max_ttft": "800ms"},
    "search": {"gpus": ["rtx-4090", "l40s", "a100-80gb", "h100-sxm"], "tp": [1, 2, 4], "weights": ["bf16", "fp8"], "kv_cache": ["bf16", "fp8"]},
}


def _dominates(a, b) -> bool:
    return a[0] <= b[0] and a[1] <= b[1] and (a[0] < b[0] or a[1] < b[1])


@pytest.fixture(scope="module")
def setup():
    problem = problem_of(SPEC)
    return problem, frontiers(problem)


@pytest.mark.parametrize("axis", ["tpot", "ttft"])
def test_no_plan_dominates_a_frontier_point(setup, axis):
    problem, fronts = setup
    points = fronts[axis].points
    assert len(points) >= 3
    s = scenario_of(problem)
    lifted = s.with_value(f"max_{axis}", None)
    every = [c for c in candidates(problem, lifted.workload, lifted.targets, batch_variants=True) if meets(c, lifted.limits())]
    metric = (lambda c: c.tpot_us) if axis == "tpot" else (lambda c: c.ttft_us)
    for p in points:
        mine = (p.candidate.cost_cents, metric(p.candidate))
        assert not any(_dominates((c.cost_cents, metric(c)), mine) for c in every), p.label
    # Strictly better on one axis, worse on the other, point after point.
    for a, b in zip(points, points[1:]):
        assert a.cost_usd_per_hour < b.cost_usd_per_hour and a.value > b.value


def test_the_solve_plan_lies_on_both_latency_frontiers(setup):
    problem, fronts = setup
    c = solve(problem, explain=False).solution.candidate
    assert (c.cost_cents, c.tpot_us) in {(p.candidate.cost_cents, p.candidate.tpot_us) for p in fronts["tpot"].points}
    # On the TTFT frontier: no cheaper plan meets the other targets with a lower TTFT.
    ttft = fronts["ttft"].points
    assert any(p.candidate.cost_cents <= c.cost_cents and p.candidate.ttft_us <= c.ttft_us for p in ttft)


def test_users_frontier_serves_fewer_users_for_less(setup):
    problem, fronts = setup
    pts = fronts["users"].points
    assert pts[0].value == 48  # the spec's users first, at the least cost
    for a, b in zip(pts, pts[1:]):
        assert b.cost_usd_per_hour < a.cost_usd_per_hour and b.value < a.value


def test_cli_draws_the_picture(tmp_path, capsys):
    import yaml

    from solver.cli import main

    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(SPEC))
    assert main(["pareto", str(f), "--plot", str(tmp_path / "front")]) == 0
    out = capsys.readouterr().out
    assert "Pareto-optimal plans" in out
    png = (tmp_path / "front.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    assert (tmp_path / "front.svg").read_text().lstrip().startswith("<?xml")
    assert main(["pareto", str(f), "--axes", "speed"]) == 2
