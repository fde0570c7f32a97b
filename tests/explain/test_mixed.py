"""Owned GPUs are not left idle: with an inventory, solve reports the cheaper plan that
uses them beside rented replicas of another shape (issue: a team owning A100s was told
to rent a new fleet)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from solver.catalog import default_catalog
from solver.explain.solve import solve
from solver.physics.evaluate import evaluate
from tests.solve_helpers import problem_of

ROOT = Path(__file__).resolve().parents[2]
OWNED = yaml.safe_load((ROOT / "specs" / "owned-inventory.yaml").read_text())


@pytest.fixture(scope="module")
def owned():
    problem = problem_of(OWNED)
    return problem, solve(problem)


def test_a_mix_using_the_owned_gpus_is_reported_when_it_costs_less(owned):
    problem, r = owned
    c = r.solution.candidate
    assert c is not None and c.gpus - c.rented == 0  # the one-shape plan uses none of the 8 owned A100s
    m = r.mixed
    assert m is not None
    assert m.cost_usd_per_hour < c.cost_usd_per_hour
    assert m.saving_usd_per_hour == pytest.approx(c.cost_usd_per_hour - m.cost_usd_per_hour)
    assert sum(p.owned_gpus for p in m.parts) == 8
    assert sum(p.users for p in m.parts) == 384
    # Its cost is the rented GPUs at the catalog's price; the owned ones are free.
    cat = default_catalog()
    rent = 0.0
    for p in m.parts:
        price = cat.device(p.plan.split(" ")[0]).price
        rent += (p.gpus - p.owned_gpus) * (price.usd_per_gpu_hour if price else 0.0)
    assert m.cost_usd_per_hour == pytest.approx(rent)
    # Each part meets every target in `evaluate` at the users it carries.
    by_label = {s.label: s for s in problem.shapes}
    for p in m.parts:
        d = by_label[p.plan].deployment.replace(replicas=p.replicas)
        ev = evaluate(d, dataclasses.replace(problem.workload, users=p.users), problem.targets, with_remedies=False)
        assert ev.ok, (p.plan, ev.failing)
        assert p.users_per_replica == -(-p.users // p.replicas)


def test_the_report_prints_the_mix(owned):
    from solver.report.solve_json import to_output
    from solver.report.solve_text import render

    _, r = owned
    assert "A cheaper mix of shapes (GPUs you own used)" in render(r)
    out = to_output(r).mixed_plan
    assert out is not None and len(out.parts) == len(r.mixed.parts)


def test_without_an_inventory_there_is_no_mix_to_report():
    spec = {k: v for k, v in OWNED.items() if k != "inventory"}
    assert solve(problem_of(spec)).mixed is None


MIXBAD = {
    "model": "llama-3.1-70b",
    "workload": {"users": 200, "prompt_tokens": 512, "output_tokens": 512},
    "sla": {"max_ttft": "3s", "max_tpot": "40ms"},
    "search": {"gpus": ["a100-80gb", "rtx-4090", "l40s"], "weights": ["bf16", "fp8"], "kv_cache": ["bf16", "fp8"]},
    "inventory": {"a100-80gb": 5},
}


def test_each_part_owns_whole_replicas_only():
    # 5 owned A100s: a replica is all owned or all rented, so each part's owned GPUs are a
    # whole number of its replicas, and together no more than the 5 owned.
    r = solve(problem_of(MIXBAD))
    m = r.mixed
    assert m is not None
    for p in m.parts:
        per = p.gpus // p.replicas
        assert p.owned_gpus % per == 0 and p.owned_gpus <= p.gpus, p
    assert 0 < sum(p.owned_gpus for p in m.parts) <= 5


def test_a_mix_that_uses_no_owned_gpu_is_not_reported():
    # 3 owned RTX 4090s make no TP 4 replica: any mix would rent everything, which is not
    # the question the mix answers (its saving would show only because of the inventory).
    spec = {**MIXBAD, "workload": {"users": 400, "prompt_tokens": 512, "output_tokens": 512}}
    spec = {**spec, "sla": {"max_ttft": "500ms", "max_tpot": "80ms"}, "inventory": {"rtx-4090": 3}}
    spec["search"] = {**spec["search"], "gpus": ["rtx-4090", "h200", "a100-80gb"]}
    m = solve(problem_of(spec)).mixed
    assert m is None or sum(p.owned_gpus for p in m.parts) > 0


def test_a_device_with_no_price_is_never_rented_for_free():
    # RTX 3080s have no on-demand offer in the price book: 2 owned make one TP 2 replica
    # (8 users fit it), and none is rented at $0.
    spec = {
        "model": "llama-3.1-8b",
        "workload": {"users": 8, "context_tokens": 4096, "prompt_tokens": 1024},
        "sla": {"max_tpot": "60ms"},
        "search": {"gpus": ["rtx-3080"], "tp": [2], "weights": ["bf16"], "kv_cache": ["bf16"]},
    }
    assert default_catalog().device("rtx-3080").price is None
    for owned in (1, 2):
        r = solve(problem_of({**spec, "inventory": {"rtx-3080": owned}}))
        c = r.solution.candidate
        assert c is None or c.rented == 0, (owned, c.gpus, c.rented)
    from solver.optimise.fleet import solve_fleet
    from tests.optimise.test_fleet import fleet

    w = {"name": "chat", "model": spec["model"], "workload": spec["workload"], "sla": spec["sla"]}
    res = solve_fleet(*fleet({"workloads": [w], "search": spec["search"], "inventory": {"rtx-3080": 1}}))
    assert not res.feasible or res.rented.get("rtx-3080", 0) == 0
