"""The price of each target (re-solved relaxed and tightened) and of each better weight
format: CP-SAT has no duals, so a target binds when loosening it lowers the optimum."""

from __future__ import annotations

from solver.catalog import Precision
from solver.explain.records import (
    QualityRow,
    SensitivityRow,
    SolveResult,
)
from solver.explain.refilter import Refilter
from solver.optimise.problem import Problem, Shape
from solver.optimise.scenario import (
    Scenario,
    objective_value,
    plan_label,
    relaxes_upward,
    set_targets,
)

SENSITIVITY_STEPS = (("relaxed 50%", 0.5), ("relaxed 10%", 0.1), ("tightened 10%", -0.1), ("tightened 50%", -0.5))


def _step_value(target: str, current: float, frac: float) -> float:
    up = relaxes_upward(target)
    factor = 1 + frac if up else 1 - frac
    v = current * factor
    if target in ("users", "context_tokens", "max_gpus"):
        v = max(1, round(v))
    return v


def sensitivity(problem: Problem, s: Scenario, result: SolveResult) -> None:
    # Re-solves find optima: a target binds when relaxing it lowers the optimum; it is
    # tight when tightening it costs more than the plan (a headroom choice may be dearer).
    base = objective_value(problem, result.optimum)
    plan = objective_value(problem, result.solution.chosen)
    binding: list[str] = []
    again = Refilter(problem, hints=(result.solution.chosen.shape, result.optimum.shape))
    for target in set_targets(s):
        if target == "context_tokens" and s.workload.traffic is not None:
            continue  # under traffic the context follows the length distributions: no target (nor a row of the report)
        current = s.value(target)
        assert current is not None  # set_targets names only the targets that are set
        for change, frac in SENSITIVITY_STEPS:
            v = _step_value(target, current, frac)
            if v == current:
                continue
            if problem.clock.run_out:  # the command's time covers the re-solves
                result.cut_short.append(f"the price of each target (stopped after {len(result.sensitivity)} re-solves)")
                result.binding_targets = binding
                return
            sol = again.solve(s.with_value(target, v))
            if sol.feasible:
                obj = objective_value(problem, sol.chosen)
                result.sensitivity.append(SensitivityRow(target, change, v, plan_label(sol.chosen), obj, obj - base))
                if change.startswith("relaxed") and obj < base - 1e-9 and target not in binding:
                    binding.append(target)
                if change == "tightened 10%" and obj > plan + 1e-9:
                    result.tight_targets.append(target)
            else:
                result.sensitivity.append(SensitivityRow(target, change, v, None, None, None))
                if change == "tightened 10%":
                    result.tight_targets.append(target)
    result.binding_targets = binding


def better_weights(problem: Problem, s: Scenario, result: SolveResult) -> None:
    """The price of quality: for each searched weight format better than the plan's,
    the best plan that uses it (re-solved on its shapes alone)."""
    chosen = result.solution.chosen
    mine = chosen.shape.deployment.weights
    base = objective_value(problem, result.optimum)
    better: dict[str, tuple[Precision, list[Shape]]] = {}
    for sh in problem.shapes:
        w = sh.deployment.weights
        if w.quality_rank > mine.quality_rank:
            better.setdefault(w.name, (w, []))[1].append(sh)
    for name, (w, shapes) in sorted(better.items(), key=lambda kv: -kv[1][0].quality_rank):
        if problem.clock.run_out:
            result.cut_short.append(f"the price of better weights (stopped after {len(result.better_weights)} formats)")
            return
        sol = Refilter(problem, shapes, hints=(chosen.shape,)).solve(s)
        if sol.feasible:
            obj = objective_value(problem, sol.chosen)
            result.better_weights.append(QualityRow(name, w.quality_rank, plan_label(sol.chosen), obj, obj - base))
        else:
            result.better_weights.append(QualityRow(name, w.quality_rank, None, None, None))
