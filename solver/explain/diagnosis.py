"""An impossible spec: the smallest set of targets that cannot hold together, and how
far each must move for a plan to exist."""

from __future__ import annotations

from solver.explain.records import (
    Relaxation,
    RunnerUp,
    SolveResult,
)
from solver.explain.runners_up import why_not
from solver.optimise.candidates import candidates
from solver.optimise.enumerate import meets
from solver.optimise.model import (
    is_feasible,
    minimal_conflict,
    optimise,
)
from solver.optimise.problem import Problem
from solver.optimise.scenario import (
    Scenario,
    diagnosis_candidates,
    plan_label,
    solve_scenario,
    wants_batch_variants,
)
from solver.optimise.targets import TARGETS


def diagnose(problem: Problem, s: Scenario, result: SolveResult) -> None:
    cands = diagnosis_candidates(problem, s)
    limit = problem.clock
    result.conflict = minimal_conflict(cands, s.limits(), limit)
    # A target outside one conflict may sit in another: drop the conflict's targets
    # and look again, until what is left can hold together.
    dropped = set(result.conflict)
    while dropped:
        more = minimal_conflict(cands, s.limits(), limit, exclude=dropped)
        if not more:
            break
        result.more_conflicts.append(more)
        dropped |= set(more)
    for target in result.conflict:
        result.relaxations.append(_nearest(problem, s, target))
    for device in problem.devices:
        if device.name in problem.excluded:
            result.runners_up.append(RunnerUp(device.name, None, None, None, problem.excluded[device.name]))
            continue
        shapes = [sh for sh in problem.shapes if sh.device.name == device.name]
        result.runners_up.append(RunnerUp(device.name, None, None, None, why_not(problem, s, shapes)))


def _nearest(problem: Problem, s: Scenario, target: str) -> Relaxation:
    """How far `target` must move, the others held, for a plan to exist."""
    current = s.value(target)
    assert current is not None, f"{target} is in a conflict, so it is set"
    t = TARGETS[target]
    if t.relaxes_upward:
        # Minimise the target's own measure with the target lifted.
        free = s.with_value(target, None)
        cands = candidates(problem, free.workload, free.targets, batch_variants=True)
        objective = t.objective
        if objective is None:  # TTFT: no objective of its own; take the least TTFT among feasible plans
            feasible = [c for c in cands if meets(c, free.limits())]
            if not feasible:
                return Relaxation(target, current, None, None, "not enough alone: another conflict among the other targets remains")
            best = min(feasible, key=lambda c: (c.ttft_us, c.gpus, c.shape.index))
            return Relaxation(target, current, best.ttft_s, plan_label(best), f"lowest TTFT reachable: {best.ttft_s * 1e3:.0f} ms")
        sol = optimise(cands, free.limits(), objective, problem.clock)
        if not sol.feasible:
            return Relaxation(target, current, None, None, "not enough alone: another conflict among the other targets remains")
        c = sol.chosen
        assert t.measure is not None, f"{target} has an objective, so a measure"
        value = t.measure(c)
        shown = {"s": f"{value * 1e3:.1f} ms", "usd_per_hour": f"${value:,.2f}", "usd": f"${value:,.0f}"}.get(t.unit, str(int(value)))
        return Relaxation(target, current, value, plan_label(c), t.reach.format(shown))
    # users and context: bisect for the largest value that still has a plan.
    # Each step asks only whether some candidate is admissible (exactly one is chosen, so
    # no solve is needed: optimise/model.py); the plan is solved once, at the answer.
    lo, hi = 0, int(current)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        moved = s.with_value(target, mid)
        if is_feasible(candidates(problem, moved.workload, moved.targets, batch_variants=wants_batch_variants(problem)), moved.limits()):
            lo = mid
        else:
            hi = mid - 1
    best_sol = solve_scenario(problem, s.with_value(target, lo)) if lo > 0 else None
    if best_sol is None or not best_sol.feasible:  # lo is still 0
        return Relaxation(target, current, None, None, "no plan even at the smallest value")
    what = "users served" if target == "users" else "tokens of context"
    return Relaxation(target, current, float(lo), plan_label(best_sol.chosen), f"most {what} with the rest held: {lo:,}")
