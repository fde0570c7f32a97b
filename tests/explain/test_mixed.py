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
