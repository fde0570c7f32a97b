"""Pareto frontiers: every point non-dominated (checked against every candidate plan,
not only the frontier), and the plan `solve` picks lies on the frontier."""

from __future__ import annotations

import pytest

from solver.explain.solve import solve
from solver.optimise.candidates import candidates
from solver.optimise.enumerate import meets
from solver.optimise.pareto import frontiers
from solver.optimise.scenario import scenario_of
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
    # With `prefer: speed` the tie-break at equal cost is latency, so the plan is a
    # frontier point; with the default (quality) it may trade latency for a better
    # format at the same cost — never a higher one.
    problem, fronts = setup
    c = solve(problem_of({**SPEC, "prefer": "speed"}), explain=False).solution.candidate
    assert (c.cost_cents, c.tpot_us) in {(p.candidate.cost_cents, p.candidate.tpot_us) for p in fronts["tpot"].points}
    assert solve(problem, explain=False).solution.candidate.cost_cents == c.cost_cents
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

    from solver.cli.main import main

    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(SPEC))
    assert main(["pareto", str(f), "--plot", str(tmp_path / "front")]) == 0
    out = capsys.readouterr().out
    assert "Pareto-optimal plans" in out
    png = (tmp_path / "front.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    assert (tmp_path / "front.svg").read_text().lstrip().startswith("<?xml")
    assert main(["pareto", str(f), "--axes", "speed"]) == 2


# --------------------------------------------------------------------------- the knee


def test_knee_of_a_hand_made_frontier():
    from solver.optimise.pareto import knee_index

    # Doubling the cost from $1 to $2 cuts latency 100 → 20 ms; after that, three more
    # doublings buy only 20 → 9 ms. In log space normalised to [0, 1]: x = log2(cost)/4 =
    # 0, .25, .5, .75, 1; y = ln(ms/9)/ln(100/9) = 1, .332, .120, .044, 0; x + y is least
    # (.582) at $2, 20 ms: depth (1 − .582)/√2 = .30 below the chord.
    assert knee_index([(1, 100), (2, 20), (4, 12), (8, 10), (16, 9)]) == 1
    # A power law (each doubling halves latency) is a straight line in log-log: no knee.
    assert knee_index([(1, 100), (2, 50), (4, 25), (8, 12.5)]) is None
    # Bending the other way (latency falls fastest at the dear end): no knee either.
    assert knee_index([(1, 100), (2, 95), (4, 80), (8, 10)]) is None
    assert knee_index([(1, 100), (2, 20)]) is None  # two points: nothing between the ends
    # A free cheapest plan (owned GPUs): cost normalised linearly, x = 0, .1, 1; latency
    # in logs, y = ln(ms/15)/ln(100/15) = 1, .152, 0: x + y least (.252) at $1, 20 ms.
    assert knee_index([(0, 100), (1, 20), (10, 15)]) == 1


# --------------------------------------------------------------------------- where a frontier stops

BIG = {
    "model": "llama-3.1-70b",
    "workload": {"users": 96, "context_tokens": 8192, "prompt_tokens": 2048},
    "sla": {"max_ttft": "1s"},
    "search": {"gpus": ["h100-sxm"], "tp": [4, 8], "weights": ["fp8"], "kv_cache": ["fp8"]},
}


def _with(spec: dict, **sections) -> dict:
    out = dict(spec)
    for k, v in sections.items():
        out[k] = {**spec.get(k, {}), **v}
    return out


def test_a_latency_frontier_stops_at_ten_times_its_cheapest_plan():
    full = frontiers(problem_of(_with(BIG, pareto={"max_cost_ratio": None})), ["tpot"])["tpot"]
    cut = frontiers(problem_of(BIG), ["tpot"])["tpot"]
    cap = 10 * full.points[0].cost_usd_per_hour  # the default ratio, 10, times the cheapest point
    kept = [p for p in full.points if p.cost_usd_per_hour <= cap + 1e-9]
    assert len(kept) < len(full.points)  # the uncut frontier runs past 10 × (to batch 1)
    assert [p.label for p in cut.points] == [p.label for p in kept]
    assert cut.max_cost_usd_per_hour == pytest.approx(cap)
    assert cut.beyond.label == full.points[len(kept)].label  # the first point left out, named
    # A spec's own ratio moves the cut.
    three = frontiers(problem_of(_with(BIG, pareto={"max_cost_ratio": 3})), ["tpot"])["tpot"]
    assert [p.label for p in three.points] == [p.label for p in full.points if p.cost_usd_per_hour <= 3 * full.points[0].cost_usd_per_hour + 1e-9]


def test_frontiers_keep_to_the_default_max_gpus_and_a_spec_lifts_it():
    # 96 users at batch 1 on TP 8 is 96 × 8 = 768 GPUs, past the default cap of 512.
    uncut = _with(BIG, pareto={"max_cost_ratio": None})
    capped = frontiers(problem_of(uncut), ["tpot"])["tpot"]
    assert max(p.candidate.gpus for p in capped.points) <= 512
    assert capped.gpu_capped and capped.max_gpus_default
    lifted = frontiers(problem_of(_with(uncut, search={"max_gpus": 1000})), ["tpot"])["tpot"]
    assert max(p.candidate.gpus for p in lifted.points) == 768
    assert not lifted.gpu_capped and lifted.points[-1].value < capped.points[-1].value


def test_solve_applies_the_default_gpu_cap_only_where_the_plan_exceeds_it():
    spec = {
        "model": "llama-3.1-8b",
        "workload": {"users": 15000, "context_tokens": 4096, "output_tokens": 256},
        "sla": {"max_tpot": "7ms"},
        "search": {"gpus": ["h100-sxm"], "tp": [1, 2], "weights": ["fp8"], "kv_cache": ["fp8"]},
    }
    lifted = solve(problem_of(_with(spec, search={"max_gpus": 100_000})), explain=False)
    assert lifted.solution.candidate.gpus > 512 and not lifted.gpu_cap_defaulted
    default = solve(problem_of(spec), explain=False)
    # No plan fits under the default cap of 512 GPUs here, so the default stands aside: a
    # default never turns a spec with a plan into one without (the user's max_gpus would).
    capped = solve(problem_of(_with(spec, search={"max_gpus": 512})), explain=False)
    if capped.feasible:
        assert default.gpu_cap_defaulted and default.solution.candidate.gpus <= 512
    else:
        assert not default.gpu_cap_defaulted and default.solution.candidate.gpus == lifted.solution.candidate.gpus
    # Under the cap the default changes nothing: the same plan as with the cap lifted.
    small = _with(spec, workload={"users": 1500})
    a = solve(problem_of(small), explain=False)
    b = solve(problem_of(_with(small, search={"max_gpus": 100_000})), explain=False)
    assert not a.gpu_cap_defaulted and a.problem.max_gpus is None
    assert (a.solution.candidate.shape.label, a.solution.candidate.replicas) == (b.solution.candidate.shape.label, b.solution.candidate.replicas)


def test_reports_show_the_cut_and_the_knee(tmp_path, capsys):
    import json

    import yaml

    from solver.cli.main import main

    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(BIG))
    assert main(["pareto", str(f), "--axes", "tpot,ttft", "--plot", str(tmp_path / "front")]) == 0
    out = capsys.readouterr().out
    assert "cut at $" in out and "10 × the cheapest plan" in out and "next: $" in out
    assert "knee" in out
    svg = (tmp_path / "front.svg").read_text()
    assert "cut at $" in svg and "knee" in svg
    assert main(["pareto", str(f), "--format", "json", "--axes", "tpot"]) == 0
    d = json.loads(capsys.readouterr().out)["tpot"]
    assert d["cut"]["max_cost_ratio"] == 10 and d["cut"]["next_point"]["cost_usd_per_hour"] > d["cut"]["max_cost_usd_per_hour"]
    assert d["cut"]["max_gpus"] == 512 and d["cut"]["max_gpus_is_default"]
    assert [p["knee"] for p in d["points"]].count(True) == (0 if d["knee"] is None else 1)
    assert main(["pareto", str(f), "--max-cost-ratio", "0.5"]) == 2


def test_with_a_free_cheapest_plan_the_cut_is_ten_times_the_cheapest_that_costs_anything():
    owned = {**BIG, "inventory": {"h100-sxm": 4}}  # one TP 4 replica is free
    full = frontiers(problem_of(_with(owned, pareto={"max_cost_ratio": None})), ["tpot"])["tpot"]
    cut = frontiers(problem_of(owned), ["tpot"])["tpot"]
    assert full.points[0].cost_usd_per_hour == 0
    paid = next(p.cost_usd_per_hour for p in full.points if p.cost_usd_per_hour > 0)
    assert cut.max_cost_usd_per_hour == pytest.approx(10 * paid)
    assert [p.label for p in cut.points] == [p.label for p in full.points if p.cost_usd_per_hour <= 10 * paid + 1e-9]


def test_every_frontier_point_says_what_a_million_output_tokens_cost():
    # At steady throughput a replica makes `batch` tokens per decode step (isolated prefill:
    # the step is the TPOT), so a million output tokens cost $/hour ÷ 3600 ÷ replicas ×
    # TPOT ÷ batch × 1e6; rented GPUs name their offer; TCO = $/hour when nothing is owned.
    import json

    from solver.report.pareto_report import to_json

    # batching: isolated pinned, the derivation's premise (under the engine's continuous
    # default the TPOT carries the prompts' chunks, and a token's cost is the decode step's)
    problem = problem_of({**SPEC, "workload": {**SPEC["workload"], "batching": "isolated"}})
    from solver.optimise.pareto import frontiers

    for axis in json.loads(to_json(frontiers(problem))).values():
        for p in axis["points"]:
            want = p["cost_usd_per_hour"] / 3600 / p["replicas"] * p["tpot_s"] / p["batch_per_replica"] * 1e6
            assert p["usd_per_million_output_tokens"] == pytest.approx(want, rel=1e-3)
            assert p["tco_usd_per_hour"] == pytest.approx(p["cost_usd_per_hour"])
            assert p["priced_at"]
