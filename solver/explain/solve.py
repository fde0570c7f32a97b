"""`plan-opt solve`: the cheapest plan and why — binding constraints, the price of
every target, the runners-up on each other GPU, and, for an impossible spec, the
smallest set of targets that cannot hold together and how far each must move.

CP-SAT has no duals, and a constraint with slack can still block a cheaper discrete
choice; so a target "binds" when loosening it lowers the optimum, measured by
re-solving (DESIGN: binding, honestly).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from solver.explain.diagnosis import diagnose
from solver.explain.mixed import mixed_plan
from solver.explain.records import (
    ConstraintRow,
    SolveResult,
)
from solver.explain.runners_up import runners_up
from solver.explain.sensitivity import better_weights, sensitivity
from solver.explain.serving import compare_serving
from solver.explain.validate import validate
from solver.explain.vendor_pairs import note_vendor_pairs
from solver.optimise.candidate import Candidate
from solver.optimise.candidates import candidates
from solver.optimise.headroom import most_headroom
from solver.optimise.model import Solution, tie_key
from solver.optimise.problem import Problem, Shape
from solver.optimise.scenario import (
    Scenario,
    scenario_of,
    solve_scenario,
    wants_batch_variants,
    with_default_gpu_cap,
)
from solver.optimise.targets import LABELS
from solver.physics.deployment import Targets
from solver.physics.evaluate import evaluate
from solver.spec.solve_spec import DEFAULT_MAX_GPUS
from solver.units import fmt_seconds

if TYPE_CHECKING:
    from solver.traffic.verify import Check


def verified(problem: Problem, s: Scenario, sol: Solution, result: SolveResult) -> Solution:
    """explain/traffic.verified, its module loaded only under traffic (the users form simulates nothing)."""
    from solver.explain import traffic

    return traffic.verified(problem, s, sol, result)


def verify_runners_up(problem: Problem, s: Scenario, result: SolveResult) -> None:
    """explain/traffic.verify_runners_up, loaded as `verified`."""
    from solver.explain import traffic

    traffic.verify_runners_up(problem, s, result)


def passes_simulation(problem: Problem, s: Scenario, shape: Shape, replicas: int) -> Check | None:
    """explain/traffic.passes_simulation, loaded as `verified`."""
    from solver.explain import traffic

    return traffic.passes_simulation(problem, s, shape, replicas)


def solve(problem: Problem, *, explain: bool = True) -> SolveResult:
    """The plan, simulated under traffic, validated and explained; the spec's time limit
    (optimise/clock.py) covers all of it from here, and `cut_short` names what it skipped."""
    problem.clock.start()
    s = scenario_of(problem)
    sol = solve_scenario(problem, s)
    # The default GPU cap enters only where it binds: a spec whose cheapest plan fits
    # under it solves (and is explained) exactly as without it.
    defaulted = sol.feasible and problem.max_gpus is None and sol.chosen.gpus > DEFAULT_MAX_GPUS
    if defaulted:
        capped = with_default_gpu_cap(problem)
        capped_sol = solve_scenario(capped, scenario_of(capped))
        if capped_sol.feasible:  # a default never turns a spec with a plan into one without
            problem, s, sol = capped, scenario_of(capped), capped_sol
        else:
            defaulted = False
    result = SolveResult(problem, sol, explained=explain, gpu_cap_defaulted=defaulted)
    if problem.workload.traffic is not None:
        result.solution = sol = verified(problem, s, sol, result)
    if sol.feasible:
        result.solution = sol = prefer_headroom(problem, s, sol, result)
        result.violations = validate(problem, sol.chosen, result.traffic_check)
        if result.violations and os.environ.get("PLAN_OPT_STRICT"):
            raise AssertionError(f"the plan breaks {[(v.rule, v.detail) for v in result.violations]}")
        explain_plan(problem, s, result)
        if defaulted:
            result.constraints = [
                dataclasses.replace(r, note="the default cap (search.max_gpus unset): a larger search.max_gpus lifts it")
                if r.name == "max_gpus"
                else r
                for r in result.constraints
            ]
        if explain:
            _timed(problem, result, "the serving comparison", lambda: compare_serving(problem, s, result))
            _timed(problem, result, "the pools across vendors", lambda: note_vendor_pairs(problem, s, result, re_solve=True))
            _timed(problem, result, "the price of each target", lambda: sensitivity(problem, s, result))
            _timed(problem, result, "the runners-up", lambda: runners_up(problem, s, result))
            if problem.workload.traffic is not None and result.runners_up:
                _timed(problem, result, "the runners-up's simulations", lambda: verify_runners_up(problem, s, result))
            _timed(problem, result, "the price of better weights", lambda: better_weights(problem, s, result))
        else:
            note_vendor_pairs(problem, s, result, re_solve=False)  # the rule, without re-solving
    elif explain and not result.traffic_unmet:  # screened plans exist; their simulations all missed
        _timed(problem, result, "the diagnosis", lambda: diagnose(problem, s, result))
    if explain:
        _timed(problem, result, "the mixed plan", lambda: setattr(result, "mixed", mixed_plan(problem, sol)))
    return result


def _timed(problem: Problem, result: SolveResult, what: str, step: Callable[[], None]) -> None:
    """An explanation run only while the command's time is left; else named as skipped."""
    if problem.clock.run_out:
        result.cut_short.append(f"{what} (skipped)")
    else:
        step()


def prefer_headroom(problem: Problem, s: Scenario, sol: Solution, result: SolveResult) -> Solution:
    """The plan within HEADROOM_TOLERANCE of the optimum with the most headroom
    (optimise/headroom.py), the optimum kept as result.cheapest; under traffic only if
    its simulation passes too."""
    cands = candidates(problem, s.workload, s.targets, batch_variants=wants_batch_variants(problem))
    best = most_headroom(cands, s.limits(), problem.objective, sol.chosen, s.workload, s.targets, problem.spec.prefer)
    if tie_key(best, problem.objective) == tie_key(sol.chosen, problem.objective):
        return sol
    if problem.workload.traffic is not None:
        check = passes_simulation(problem, s, best.shape, best.replicas)
        if check is None:
            return sol
        result.traffic_check = check
    result.cheapest = sol.chosen
    return dataclasses.replace(sol, candidate=best, objective_value=None)


def explain_plan(problem: Problem, s: Scenario, result: SolveResult) -> None:
    c = result.solution.chosen
    d = c.shape.deployment.replace(replicas=c.replicas)
    if c.traffic is not None:  # evaluated at the requests a replica holds on average
        ev = evaluate(d, dataclasses.replace(s.workload, users=c.batch * c.replicas), Targets(), with_remedies=False)
    elif c.prefill is not None:  # the decode pool decodes only: no prompt chunks in its steps
        ev = evaluate(d, dataclasses.replace(s.workload, batching="isolated"), dataclasses.replace(s.targets, max_ttft_s=None), with_remedies=False)
    else:
        ev = evaluate(d, s.workload, s.targets, with_remedies=False)
    result.plan = ev
    est = ev.estimates
    ttft = ev.estimates.ttft_s
    rows = [
        ConstraintRow(
            "memory",
            LABELS["memory"],
            est.memory.needed_bytes,
            est.memory.usable_bytes,
            "bytes",
            est.memory.margin_bytes,
            f"room for {c.max_batch_memory} sequences per replica; {c.batch} used",
        ),
        ConstraintRow(
            "max_tpot",
            LABELS["max_tpot"],
            est.decode.tpot_s,
            s.targets.max_tpot_s,
            "s",
            None if s.targets.max_tpot_s is None else s.targets.max_tpot_s - est.decode.tpot_s,
            f"decode is {est.decode.bound}-bound"
            + (f"; the target allows {_at_least(c)}{c.max_batch_tpot} sequences per replica" if s.targets.max_tpot_s is not None else ""),
        ),
        ConstraintRow(
            "max_ttft",
            LABELS["max_ttft"],
            ttft,
            s.targets.max_ttft_s,
            "s",
            None if s.targets.max_ttft_s is None else s.targets.max_ttft_s - ttft,
            f"prefill is {est.prefill.bound}-bound"
            + (
                f"; {fmt_seconds(est.prefill.ttft_s)} on an idle replica, {c.batch} users' prompts queued"
                if ttft > est.prefill.ttft_s * (1 + 1e-6)
                else ""
            )
            + (f"; the target allows {c.max_batch_ttft} users per replica" if c.max_batch_ttft < 10**9 and c.traffic is None else ""),
        ),
        ConstraintRow(
            "interconnect",
            LABELS["interconnect"],
            float(d.tp),
            float(c.shape.domain),
            "GPUs",
            float(c.shape.domain - d.tp),
            ev.verdict("interconnect").note,
        ),
    ]
    if s.max_usd_per_hour is not None:
        rows.append(
            ConstraintRow(
                "max_usd_per_hour",
                LABELS["max_usd_per_hour"],
                c.cost_usd_per_hour,
                s.max_usd_per_hour,
                "usd_per_hour",
                s.max_usd_per_hour - c.cost_usd_per_hour,
            )
        )
    if s.max_purchase_usd is not None:
        rows.append(
            ConstraintRow(
                "max_purchase_usd", LABELS["max_purchase_usd"], c.purchase_usd, s.max_purchase_usd, "usd", s.max_purchase_usd - c.purchase_usd
            )
        )
    if s.max_gpus is not None:
        rows.append(ConstraintRow("max_gpus", LABELS["max_gpus"], float(c.gpus), float(s.max_gpus), "GPUs", float(s.max_gpus - c.gpus)))
    if c.prefill is not None:
        rows = [_disaggregated_row(r, c, s) for r in rows]
    result.constraints = rows
    result.batch_capped_by = c.caps if c.prefill is None else ("memory" if c.max_batch_memory <= c.max_batch_tpot else "max_tpot")
    if c.traffic is not None:
        result.constraints = [_at_percentile(r, c, s, result) for r in rows]
    if c.replicas > 1:
        result.replicas_forced_by = result.batch_capped_by


def _bound_note(check: Check | None, target: str, digits: int) -> str:
    """The verdict's bound over the seeds, beside the first seed's figure."""
    b = next((b for b in check.bounds if b.target == target), None) if check else None
    return f" (seed {check.seeds[0]}), 95% bound over {len(check.seeds)} seeds {b.bound * 1e3:.{digits}f} ms" if b and check else ""


def _at_percentile(row: ConstraintRow, c: Candidate, s: Scenario, result: SolveResult) -> ConstraintRow:
    """Under traffic, TPOT and TTFT are held at their percentiles: the screen's figure at
    the plan's load, with the simulation's beside it."""
    check = result.traffic_check
    t = s.targets
    if row.name == "max_tpot":
        sim = f"; simulated {check.tpot_q_s * 1e3:.1f} ms" if check else ""
        sim += _bound_note(check, "max_tpot", 1)
        p = t.tpot_percentile or 99.0
        return dataclasses.replace(
            row, value=c.tpot_s, slack=None if t.max_tpot_s is None else t.max_tpot_s - c.tpot_s, note=f"P{p:g} at the plan's load, screened{sim}"
        )
    if row.name == "max_ttft":
        sim = f"; simulated {check.ttft_q_s * 1e3:.0f} ms" if check else ""
        sim += _bound_note(check, "max_ttft", 0)
        p = t.ttft_percentile or 99.0
        return dataclasses.replace(
            row, value=c.ttft_s, slack=None if t.max_ttft_s is None else t.max_ttft_s - c.ttft_s, note=f"P{p:g} at the plan's load, screened{sim}"
        )
    if row.name == "memory":
        return dataclasses.replace(
            row, note=f"{c.batch} requests per replica on average (Little's law); KV for {c.max_batch_memory} sequences at the mean length"
        )
    return row


def _disaggregated_row(row: ConstraintRow, c: Candidate, s: Scenario) -> ConstraintRow:
    """Under disaggregated serving the TTFT is the prefill pool's, and the KV crosses the network."""
    pool = c.prefill
    assert pool is not None
    load, tr = pool.load, pool.transfer
    if row.name == "max_ttft":
        t = s.targets.max_ttft_s
        return dataclasses.replace(
            row,
            value=c.ttft_s,
            slack=None if t is None else t - c.ttft_s,
            note=f"prefill pool: {pool.replicas} × {pool.shape.label}, {load.users_per_replica} users per replica; "
            f"queued {fmt_seconds(load.wait_s)} + prompt {fmt_seconds(load.service_s)} + KV transfer {fmt_seconds(load.transfer_s)} "
            f"+ first step {fmt_seconds(load.first_step_s)} + front end {fmt_seconds(load.request_overhead_s)}",
        )
    if row.name == "interconnect":
        return dataclasses.replace(
            row,
            note=f"{row.note}; each prompt's KV ({tr.bytes_per_request / 1e9:,.2f} GB) crosses {tr.link} at "
            f"{tr.bandwidth_bytes_per_s / 1e9:,.0f} GB/s per GPU in {fmt_seconds(tr.time_s)}",
        )
    if row.name == "max_tpot":
        return dataclasses.replace(row, note=row.note.replace("decode is", "decode-only steps are", 1))
    return row


def _at_least(c: Candidate) -> str:
    """The TPOT cap is searched only up to the memory cap: at that bound it may allow more."""
    return "at least " if c.max_batch_tpot >= max(c.max_batch_memory, 1) else ""
