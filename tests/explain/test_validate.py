"""The solver-free check: a plan re-derived from the physics and the spec alone."""

from __future__ import annotations

import dataclasses

from solver.explain.solve import solve
from solver.explain.validate import validate
from tests.solve_helpers import problem_of

SPEC = {
    "model": "llama-3.1-8b",
    "workload": {"users": 32, "context_tokens": 4096, "output_tokens": 256},
    "sla": {"max_tpot": "20ms"},
    "search": {"gpus": ["h100-sxm", "l40s"]},
    "budget": {"max_usd_per_hour": 20},
}


def test_a_solved_plan_breaks_nothing():
    problem = problem_of(SPEC)
    r = solve(problem, explain=False)
    assert r.violations == [] and validate(problem, r.solution.candidate) == []


def test_the_check_catches_a_plan_that_breaks_the_spec():
    # The same plan held against tighter targets and budgets than it was chosen for: every
    # rule it now breaks is named.
    problem = problem_of(SPEC)
    c = solve(problem, explain=False).solution.candidate
    tpot = solve(problem, explain=False).plan.decode.tpot_s
    tight = dataclasses.replace(
        problem,
        targets=dataclasses.replace(problem.targets, max_tpot_s=tpot / 2),
        spec=problem.spec.model_copy(update={"budget": problem.spec.budget.model_copy(update={"max_usd_per_hour": 0.01})}),
    )
    assert {v.rule for v in validate(tight, c)} == {"max_tpot", "max_usd_per_hour"}
    more_users = dataclasses.replace(problem, workload=dataclasses.replace(problem.workload, users=10 * 32))
    assert "users" in {v.rule for v in validate(more_users, c)}


def test_owned_gpus_in_a_disaggregated_prefill_pool_are_counted_alike():
    """Issue 43 item 7: 8 owned B200s serving a disaggregated plan's prefill pool, beside
    a rented decode pool of another device. The optimiser counts them as owned (free);
    the validator must count them the same way, in whole replicas of the pool's shape
    (an earlier validator held them against the decode shape's inventory, 0, and
    refused the plan: "8 owned GPUs used, 0 owned"). The plan then rents only what
    whole owned replicas do not cover, at the catalog's price per GPU-hour."""
    spec = {
        "model": "llama-3.1-70b",
        "workload": {"users": 128, "prompt_tokens": 8192, "output_tokens": 512, "batching": "continuous"},
        "sla": {"max_ttft": "3s", "max_tpot": "20ms"},
        "search": {
            "gpus": ["h100-sxm", "b200"],
            "tp": [1, 2, 4, 8],
            "weights": ["bf16", "fp8"],
            "kv_cache": ["bf16", "fp8"],
            "serving": ["disaggregated"],
        },
        "objective": "min_cost",
        "inventory": {"b200": 8},
    }
    problem = problem_of(spec)
    r = solve(problem, explain=False)
    c = r.solution.candidate
    assert c.prefill is not None and r.violations == [] and validate(problem, c) == []
    owned_b200 = 8
    per_device: dict[str, int] = {}
    whole_owned = 0
    for shape, n in c.pools:
        per_device[shape.device.name] = per_device.get(shape.device.name, 0) + n
        if shape.device.name == "b200":  # whole replicas of the pool's TP fit in the 8 owned
            whole_owned += min(n, owned_b200 // shape.gpus_per_replica * shape.gpus_per_replica)
    assert [sh.device.name for sh, _ in c.pools].count("b200") == 1  # one pool of it: no sharing to split
    assert c.gpus - c.rented == whole_owned > 0
    price = {d.name: d.price.usd_per_gpu_hour for d in problem.devices if d.price}
    rented_cost = sum((n - (whole_owned if name == "b200" else 0)) * price[name] for name, n in per_device.items())
    assert abs(c.cost_usd_per_hour - rented_cost) < 1e-9
