"""Disaggregated serving over GPUs of several vendors: the pools are held to one vendor
unless the spec allows crossing (optimise/kv_vendors.py says why), and the explanation
says so, with what allowing it would change (the problem re-solved with it allowed)."""

from __future__ import annotations

import dataclasses

from solver.explain.records import CrossVendorNote, SolveResult
from solver.explain.serving import objective_amount
from solver.optimise.problem import Problem
from solver.optimise.scenario import Scenario, objective_value, plan_label, solve_scenario, with_serving

WHY = "no engine documents or tests a KV cache handed from a CUDA build to a ROCm one (vLLM's NIXL handshake refuses another attention backend)"


def with_cross_vendor_kv(problem: Problem, allow: bool) -> Problem:
    """The problem with search.allow_cross_vendor_kv set; the memoised physics shared."""
    search = problem.spec.search.model_copy(update={"allow_cross_vendor_kv": allow})
    return dataclasses.replace(problem, spec=problem.spec.model_copy(update={"search": search}))


def note_vendor_pairs(problem: Problem, s: Scenario, result: SolveResult, *, re_solve: bool) -> None:
    """When disaggregated plans are searched over devices of more than one vendor: the
    rule the pairs followed, and (`re_solve`, the rule on, a plan found) the plan allowing
    pairs across vendors would choose where it gains on the objective."""
    if "disaggregated" not in problem.spec.search.serving or s.workload.traffic is not None:
        return
    vendors = sorted({shape.deployment.device.vendor for shape in problem.shapes})
    if len(vendors) < 2:
        return
    allowed = problem.spec.search.allow_cross_vendor_kv
    chosen = result.solution.chosen if result.feasible else None
    if allowed:
        crosses = chosen is not None and chosen.prefill is not None and chosen.prefill.shape.device.vendor != chosen.shape.device.vendor
        note = "pairs across vendors allowed (search.allow_cross_vendor_kv: true)" + (
            f"; this plan sends the KV cache from {chosen.prefill.shape.device.vendor} to {chosen.shape.device.vendor} GPUs: {WHY}, so test the hand-off first"
            if crosses and chosen is not None and chosen.prefill is not None
            else ""
        )
        result.cross_vendor = CrossVendorNote(True, vendors, None, None, note)
        return
    note = f"both pools on one vendor's GPUs ({', '.join(vendors)} searched): {WHY}; search.allow_cross_vendor_kv: true pairs across vendors"
    plan, value = None, None
    if re_solve and chosen is not None:
        # the rule moves only disaggregated plans: their best, allowed, against the plan
        other = solve_scenario(with_serving(with_cross_vendor_kv(problem, True), "disaggregated"), s).candidate
        if other is not None and objective_value(problem, other) < objective_value(problem, chosen) - 1e-9:
            plan, value = plan_label(other), objective_value(problem, other)
            gap = objective_value(problem, chosen) - value
            note += (
                f"; allowed, the plan would be {plan}, {objective_amount(problem.objective, value)} ({objective_amount(problem.objective, gap)} less)"
            )
        elif other is not None:
            note += "; allowing it would not improve the objective"
    result.cross_vendor = CrossVendorNote(False, vendors, plan, value, note)
