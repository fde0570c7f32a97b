"""Issue 45: a disaggregated plan's KV cache does not cross vendors unless the spec allows
it (search.allow_cross_vendor_kv). The case: Llama-3.1-70B document summarisation
(specs/long-prompts-disaggregated.yaml) on H100 SXM and MI300X only, whose cheapest pair
puts the prompts on H100 (NVIDIA) and the decode on MI300X (AMD): $140.40/h against the
best one-vendor plan's $152.96/h (since the refit of 2026-12-05; on B200 + MI300X the
one-vendor plan is now also the cheapest)."""

from __future__ import annotations

import copy
from functools import cache

from solver.explain.solve import solve
from solver.explain.validate import validate
from solver.optimise.enumerate import exhaustive_disaggregated
from solver.report.solve_json import to_output
from tests.solve_helpers import problem_of

SPEC = {
    "model": "llama-3.1-70b",
    "workload": {"users": 128, "prompt_tokens": 8192, "output_tokens": 512, "batching": "continuous"},
    "sla": {"max_ttft": "3s", "max_tpot": "20ms"},
    "search": {"gpus": ["h100-sxm", "mi300x"], "tp": [1, 4], "weights": ["fp8"], "kv_cache": ["fp8"], "serving": ["disaggregated"]},
}


def _spec(allow: bool | None) -> dict:
    spec = copy.deepcopy(SPEC)
    if allow is not None:
        spec["search"]["allow_cross_vendor_kv"] = allow
    return spec


@cache
def _solved(allow: bool | None):
    problem = problem_of(_spec(allow))
    return problem, solve(problem, explain=True)


def _vendors(c) -> tuple[str, str]:
    return c.prefill.shape.device.vendor, c.shape.device.vendor


def test_by_default_both_pools_are_one_vendor_s_and_allowed_the_cheapest_pair_crosses():
    problem, r = _solved(None)
    assert r.feasible and r.solution.chosen.prefill is not None
    prefill, decode = _vendors(r.solution.chosen)
    assert prefill == decode
    allowed_problem, allowed = _solved(True)
    assert allowed.feasible and _vendors(allowed.solution.chosen) == ("NVIDIA", "AMD")
    # more pairs to choose from: never dearer, and here strictly cheaper
    assert allowed.optimum.cost_cents < r.optimum.cost_cents
    # each is the brute-force optimum under its own rule (optimise/enumerate.py re-derives it)
    for p, res in ((problem, r), (allowed_problem, allowed)):
        want = exhaustive_disaggregated(p)
        assert want is not None and res.optimum.cost_cents == want.cost_cents
        assert validate(p, res.optimum) == []
    assert _solved(False)[1].optimum.cost_cents == r.optimum.cost_cents  # false is the default


def test_the_validator_refuses_a_pair_across_vendors_the_spec_does_not_allow():
    problem, _ = _solved(False)
    crossing = _solved(True)[1].solution.chosen
    assert [v.rule for v in validate(problem, crossing)] == ["search.allow_cross_vendor_kv"]


def test_the_explanation_names_the_rule_and_what_allowing_it_would_choose():
    _, r = _solved(None)
    _, allowed = _solved(True)
    note = to_output(r).cross_vendor_kv
    assert note is not None and not note.allowed and note.vendors == ["AMD", "NVIDIA"]
    assert note.objective_if_allowed == allowed.solution.chosen.cost_usd_per_hour
    assert note.plan_if_allowed is not None and "mi300x" in note.plan_if_allowed and "h100-sxm" in note.plan_if_allowed
    assert "search.allow_cross_vendor_kv: true" in note.note
    crossed = to_output(allowed).cross_vendor_kv
    assert crossed is not None and crossed.allowed and "from NVIDIA to AMD" in crossed.note


def test_one_vendor_searched_needs_no_note():
    spec = copy.deepcopy(SPEC)
    spec["search"]["gpus"] = ["b200", "h100-sxm"]
    assert to_output(solve(problem_of(spec), explain=True)).cross_vendor_kv is None


def test_a_prefill_option_beaten_only_by_another_vendor_s_stays_for_its_own_vendor_s_decode():
    """On A100-80GB and MI300X with FP8 weights, every A100 prefill shape is dominated by
    an MI300X one (more HBM bandwidth and FLOPs for its price). A dominance judged across
    vendors dropped them all, leaving an A100 decode pool nothing it may pair with; judged
    per vendor, they stay unless the KV may cross."""
    from solver.optimise.disaggregated import prefill_options

    def a100_prefill_tps(allow: bool | None) -> list[int]:
        spec = copy.deepcopy(SPEC)
        spec["search"].update(gpus=["a100-80gb", "mi300x"], tp=[1, 2, 4, 8])
        if allow is not None:
            spec["search"]["allow_cross_vendor_kv"] = allow
        problem = problem_of(spec)
        options = prefill_options(problem, problem.workload, problem.shapes)[("fp8", "fp8")]
        return sorted(o.shape.deployment.tp for o in options if o.shape.deployment.device.vendor == "NVIDIA")

    assert a100_prefill_tps(None) != []  # 70B FP8 (~70 GB) plus an 8,192-token KV fits TP 2 and up
    assert a100_prefill_tps(True) == []  # crossing allowed: the MI300X options beat them


def test_a_copy_under_the_other_rule_sharing_the_memo_gets_its_own_rules_options():
    """explain/vendor_pairs re-solves a copy of the problem under the other rule, sharing
    its memo. Options pruned across vendors (crossing allowed) would leave a one-vendor
    copy without the A100 options of the case above; each rule must read its own."""
    from solver.explain.vendor_pairs import with_cross_vendor_kv
    from solver.optimise.disaggregated import prefill_options

    def options(problem):  # type: ignore[no-untyped-def]
        return sorted(o.shape.index for o in prefill_options(problem, problem.workload, problem.shapes)[("fp8", "fp8")])

    spec = copy.deepcopy(SPEC)
    spec["search"].update(gpus=["a100-80gb", "mi300x"], tp=[1, 2, 4, 8], allow_cross_vendor_kv=True)
    crossing = problem_of(spec)
    pruned_across = options(crossing)  # fills the shared memo first
    one_vendor = with_cross_vendor_kv(crossing, False)
    spec["search"]["allow_cross_vendor_kv"] = False
    assert options(one_vendor) == options(problem_of(spec)) != pruned_across
