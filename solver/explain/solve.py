"""`plan-opt solve`: the cheapest plan and why — binding constraints, the price of
every target, the runners-up on each other GPU, and, for an impossible spec, the
smallest set of targets that cannot hold together and how far each must move.

CP-SAT has no duals, and a constraint with slack can still block a cheaper discrete
choice; so a target "binds" when loosening it lowers the optimum, measured by
re-solving (DESIGN: binding, honestly).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from solver.optimise.candidates import Candidate, candidates
from solver.optimise.model import LABELS, Limits, Solution, is_feasible, minimal_conflict, optimise
from solver.physics.deployment import Workload
from solver.optimise.enumerate import meets
from solver.physics.deployment import Targets
from solver.physics.evaluate import Evaluation, evaluate
from solver.optimise.shapes import Problem
from solver.spec.solve_spec import DEFAULT_MAX_GPUS

SENSITIVITY_STEPS = (("relaxed 50%", 0.5), ("relaxed 10%", 0.1), ("tightened 10%", -0.1), ("tightened 50%", -0.5))


@dataclass(frozen=True)
class Scenario:
    """The knobs a re-solve may turn: the workload and the user's limits."""

    workload: Workload
    targets: Targets
    max_usd_per_hour: float | None
    max_purchase_usd: float | None
    max_gpus: int | None

    def limits(self) -> Limits:
        return Limits.of(self.targets.max_tpot_s, self.targets.max_ttft_s, self.max_usd_per_hour, self.max_purchase_usd, self.max_gpus)

    def value(self, target: str):
        return {
            "max_tpot": self.targets.max_tpot_s,
            "max_ttft": self.targets.max_ttft_s,
            "users": self.workload.users,
            "context_tokens": self.workload.context_tokens,
            "max_usd_per_hour": self.max_usd_per_hour,
            "max_purchase_usd": self.max_purchase_usd,
            "max_gpus": self.max_gpus,
        }[target]

    def with_value(self, target: str, value) -> Scenario:
        if target == "max_tpot":
            return dataclasses.replace(self, targets=dataclasses.replace(self.targets, max_tpot_s=value))
        if target == "max_ttft":
            return dataclasses.replace(self, targets=dataclasses.replace(self.targets, max_ttft_s=value))
        if target == "users":
            return dataclasses.replace(self, workload=dataclasses.replace(self.workload, users=value))
        if target == "context_tokens":
            # A shorter context trims the output first: the prompt sets the TTFT.
            w = self.workload
            output = min(w.output_tokens, max(1, value - w.prompt_tokens))
            prompt = min(w.prompt_tokens, max(1, value - output))
            return dataclasses.replace(self, workload=dataclasses.replace(w, context_tokens=value, prompt_tokens=prompt, output_tokens=output))
        return dataclasses.replace(self, **{target: value})


def relaxes_upward(target: str) -> bool:
    """max_* targets relax by growing; users and context relax by shrinking."""
    return target.startswith("max_")


def scenario_of(problem: Problem) -> Scenario:
    return Scenario(problem.workload, problem.targets, problem.max_usd_per_hour, problem.max_purchase_usd, problem.max_gpus)


def set_targets(s: Scenario) -> list[str]:
    return [t for t in ("max_tpot", "max_ttft", "users", "context_tokens", "max_usd_per_hour", "max_purchase_usd", "max_gpus") if s.value(t) is not None]


def wants_batch_variants(problem: Problem) -> bool:
    """Smaller batches (more replicas) can win only when they are cheap: the objective
    is TPOT itself, or owned GPUs make extra replicas free."""
    return problem.objective == "min_tpot" or any(n > 0 for n in problem.spec.inventory.values())


def solve_scenario(problem: Problem, s: Scenario, *, shapes=None) -> Solution:
    cands = candidates(problem, s.workload, s.targets, batch_variants=wants_batch_variants(problem), shapes=shapes)
    return optimise(cands, s.limits(), problem.objective, problem.spec.solver.time_limit_s, problem.spec.prefer)


# --------------------------------------------------------------------------- explanation records


@dataclass(frozen=True)
class QualityRow:
    """A better weight format than the plan's, re-solved: what it would cost."""

    weights: str
    quality_rank: int
    plan: str | None
    objective: float | None
    delta: float | None
    """Objective change against the chosen plan (None: no plan with it meets the spec)."""


@dataclass(frozen=True)
class ConstraintRow:
    name: str
    label: str
    value: float
    limit: float | None
    unit: str
    slack: float | None
    note: str = ""


@dataclass(frozen=True)
class SensitivityRow:
    target: str
    change: str
    value: float
    plan: str | None
    objective: float | None
    delta: float | None
    """Objective change against the chosen plan (None: infeasible)."""


@dataclass(frozen=True)
class RunnerUp:
    device: str
    plan: str | None
    objective: float | None
    delta: float | None
    reason: str


@dataclass(frozen=True)
class Relaxation:
    target: str
    current: float
    nearest: float | None
    plan: str | None
    note: str


@dataclass
class SolveResult:
    problem: Problem
    solution: Solution
    plan: Evaluation | None = None
    constraints: list[ConstraintRow] = field(default_factory=list)
    batch_capped_by: str | None = None
    replicas_forced_by: str | None = None
    gpu_forced_by: list[str] = field(default_factory=list)
    binding_targets: list[str] = field(default_factory=list)
    sensitivity: list[SensitivityRow] = field(default_factory=list)
    runners_up: list[RunnerUp] = field(default_factory=list)
    conflict: list[str] = field(default_factory=list)
    """The first minimal conflict found."""
    more_conflicts: list[list[str]] = field(default_factory=list)
    """Further conflicts among the targets left once the first is dropped."""
    relaxations: list[Relaxation] = field(default_factory=list)
    tight_targets: list[str] = field(default_factory=list)
    """Targets with little headroom: tightening them by 10 % changes the optimum."""
    better_weights: list[QualityRow] = field(default_factory=list)
    """Every searched weight format better than the plan's, with the best plan in it."""
    explained: bool = True
    gpu_cap_defaulted: bool = False
    """search.max_gpus was unset and the cheapest plan exceeded its default, so it applies."""

    @property
    def feasible(self) -> bool:
        return self.solution.feasible


# --------------------------------------------------------------------------- objective in user units


def objective_value(problem: Problem, c: Candidate) -> float:
    return {
        "min_cost": c.cost_usd_per_hour,
        "min_gpus": float(c.gpus),
        "min_purchase": c.purchase_usd,
        "min_tpot": c.tpot_s,
        "min_tco": c.tco_usd_per_hour,
    }[problem.objective]


def plan_label(c: Candidate) -> str:
    return f"{c.replicas} × {c.shape.label} ({c.gpus} GPU{'s' if c.gpus != 1 else ''}, batch {c.batch})"


# --------------------------------------------------------------------------- solve


def with_default_gpu_cap(problem: Problem) -> Problem:
    """The problem with search.max_gpus at its default, as though the spec said it."""
    search = problem.spec.search.model_copy(update={"max_gpus": DEFAULT_MAX_GPUS})
    return dataclasses.replace(problem, spec=problem.spec.model_copy(update={"search": search}))


def solve(problem: Problem, *, explain: bool = True) -> SolveResult:
    s = scenario_of(problem)
    sol = solve_scenario(problem, s)
    # The default GPU cap enters only where it binds: a spec whose cheapest plan fits
    # under it solves (and is explained) exactly as without it.
    defaulted = sol.feasible and problem.max_gpus is None and sol.candidate.gpus > DEFAULT_MAX_GPUS
    if defaulted:
        problem = with_default_gpu_cap(problem)
        s = scenario_of(problem)
        sol = solve_scenario(problem, s)
    result = SolveResult(problem, sol, explained=explain, gpu_cap_defaulted=defaulted)
    if sol.feasible:
        _explain_plan(problem, s, result)
        if defaulted:
            result.constraints = [
                dataclasses.replace(r, note="the default cap (search.max_gpus unset): a larger search.max_gpus lifts it")
                if r.name == "max_gpus" else r
                for r in result.constraints
            ]
        if explain:
            _sensitivity(problem, s, result)
            _runners_up(problem, s, result)
            _better_weights(problem, s, result)
    elif explain:
        _diagnose(problem, s, result)
    return result


def _explain_plan(problem: Problem, s: Scenario, result: SolveResult) -> None:
    c = result.solution.candidate
    d = c.shape.deployment.replace(replicas=c.replicas)
    ev = evaluate(d, s.workload, s.targets, with_remedies=False)
    result.plan = ev
    rows = [
        ConstraintRow("memory", LABELS["memory"], ev.memory.needed_bytes, ev.memory.usable_bytes, "bytes",
                      ev.memory.margin_bytes, f"room for {c.max_batch_memory} sequences per replica; {c.batch} used"),
        ConstraintRow("max_tpot", LABELS["max_tpot"], ev.decode.tpot_s, s.targets.max_tpot_s, "s",
                      None if s.targets.max_tpot_s is None else s.targets.max_tpot_s - ev.decode.tpot_s,
                      f"decode is {ev.decode.bound}-bound" + (f"; the target allows {_at_least(c)}{c.max_batch_tpot} sequences per replica" if s.targets.max_tpot_s is not None else "")),
        ConstraintRow("max_ttft", LABELS["max_ttft"], ev.ttft_s, s.targets.max_ttft_s, "s",
                      None if s.targets.max_ttft_s is None else s.targets.max_ttft_s - ev.ttft_s,
                      f"prefill is {ev.prefill.bound}-bound"),
        ConstraintRow("interconnect", LABELS["interconnect"], float(d.tp), float(c.shape.domain), "GPUs",
                      float(c.shape.domain - d.tp), ev.verdict("interconnect").note),
    ]
    if s.max_usd_per_hour is not None:
        rows.append(ConstraintRow("max_usd_per_hour", LABELS["max_usd_per_hour"], c.cost_usd_per_hour, s.max_usd_per_hour, "usd_per_hour", s.max_usd_per_hour - c.cost_usd_per_hour))
    if s.max_purchase_usd is not None:
        rows.append(ConstraintRow("max_purchase_usd", LABELS["max_purchase_usd"], c.purchase_usd, s.max_purchase_usd, "usd", s.max_purchase_usd - c.purchase_usd))
    if s.max_gpus is not None:
        rows.append(ConstraintRow("max_gpus", LABELS["max_gpus"], float(c.gpus), float(s.max_gpus), "GPUs", float(s.max_gpus - c.gpus)))
    result.constraints = rows
    result.batch_capped_by = "memory" if c.max_batch_memory <= c.max_batch_tpot else "max_tpot"
    if c.replicas > 1:
        result.replicas_forced_by = result.batch_capped_by


def _better_weights(problem: Problem, s: Scenario, result: SolveResult) -> None:
    """The price of quality: for each searched weight format better than the plan's,
    the best plan that uses it (re-solved on its shapes alone)."""
    chosen = result.solution.candidate
    mine = chosen.shape.deployment.weights
    base = objective_value(problem, chosen)
    better = {}
    for sh in problem.shapes:
        w = sh.deployment.weights
        if w.quality_rank > mine.quality_rank:
            better.setdefault(w.name, (w, []))[1].append(sh)
    for name, (w, shapes) in sorted(better.items(), key=lambda kv: -kv[1][0].quality_rank):
        sol = solve_scenario(problem, s, shapes=shapes)
        if sol.feasible:
            obj = objective_value(problem, sol.candidate)
            result.better_weights.append(QualityRow(name, w.quality_rank, plan_label(sol.candidate), obj, obj - base))
        else:
            result.better_weights.append(QualityRow(name, w.quality_rank, None, None, None))


def _at_least(c: Candidate) -> str:
    """The TPOT cap is searched only up to the memory cap: at that bound it may allow more."""
    return "at least " if c.max_batch_tpot >= max(c.max_batch_memory, 1) else ""


def _step_value(target: str, current, frac: float):
    up = relaxes_upward(target)
    factor = 1 + frac if up else 1 - frac
    v = current * factor
    if target in ("users", "context_tokens", "max_gpus"):
        v = max(1, round(v))
    return v


def _sensitivity(problem: Problem, s: Scenario, result: SolveResult) -> None:
    base = objective_value(problem, result.solution.candidate)
    binding = []
    for target in set_targets(s):
        current = s.value(target)
        for change, frac in SENSITIVITY_STEPS:
            v = _step_value(target, current, frac)
            if v == current:
                continue
            sol = solve_scenario(problem, s.with_value(target, v))
            if sol.feasible:
                obj = objective_value(problem, sol.candidate)
                result.sensitivity.append(SensitivityRow(target, change, v, plan_label(sol.candidate), obj, obj - base))
                if change.startswith("relaxed") and obj < base - 1e-9 and target not in binding:
                    binding.append(target)
                if change == "tightened 10%" and obj > base + 1e-9:
                    result.tight_targets.append(target)
            else:
                result.sensitivity.append(SensitivityRow(target, change, v, None, None, None))
                if change == "tightened 10%":
                    result.tight_targets.append(target)
    result.binding_targets = binding


def _why_not(problem: Problem, s: Scenario, shapes) -> str:
    """Why no plan on these shapes meets the spec: structural reasons first, then
    the targets that each alone rule them out, with the best the device reaches."""
    phys = [problem.physics(sh, s.workload) for sh in shapes]
    valid = [p for p in phys if p.valid]
    if not phys:
        return "no shape the spec allows is left to search: see the shapes left out"
    if not valid:
        reasons = sorted({r for p in phys for _, r in p.refusals})
        return "cannot run this model: " + "; ".join(reasons[:2])
    if all(not p.interconnect_ok for p in valid):
        return "interconnect: no allowed TP degree fits its scale-up domain"
    if all(p.max_batch_memory < 1 or not p.interconnect_ok for p in valid):
        return "memory: not even one sequence fits beside the weights at any allowed TP, PP and precision"
    cands = candidates(problem, s.workload, s.targets, batch_variants=True, shapes=shapes)
    limits = s.limits()
    alone = []
    for target in set_targets(s):
        if target in ("users", "context_tokens"):
            continue
        relaxed = dataclasses.replace(limits, **{_limit_field(target): None})
        if is_feasible(cands, relaxed):
            alone.append(target)
    if not alone:
        diag = _diagnosis_candidates(problem, s, shapes)
        core = minimal_conflict(diag, limits, problem.spec.solver.time_limit_s)
        if len(core) == 1:
            best = _best_on([c for c in diag if c.memory_excess <= 0 and c.interconnect_excess == 0], core[0])
            return f"ruled out by {core[0]} alone, even for one user" + (f" (best here {best})" if best else "")
        if core:
            return "ruled out by " + ", ".join(core[:-1]) + f" and {core[-1]} together"
        return "memory: not even one user with a short context fits"
    parts = []
    ok_phys = [c for c in cands if c.memory_excess <= 0 and c.interconnect_excess == 0]
    for target in alone:
        best = _best_on(ok_phys, target)
        blame = _comm_blame(ok_phys, target, limits)
        if blame:
            return f"interconnect: its all-reduces push the best {target[4:].upper()} to {best} ({blame} without them), past {target}"
        parts.append(f"{target} (best here {best})" if best else target)
    return "ruled out by " + " or ".join(parts)


def _comm_blame(cands: list[Candidate], target: str, limits: Limits) -> str:
    """When the all-reduces alone push a latency past its target, the interconnect
    is what rules the device out: say so, with the figure without them."""
    if target == "max_tpot" and limits.max_tpot_us is not None:
        without = min((c.tpot_s - c.physics.decode.comm_time_s(c.batch) for c in cands), default=None)
        if without is not None and without * 1e6 <= limits.max_tpot_us:
            return f"{without * 1e3:.1f} ms"
    if target == "max_ttft" and limits.max_ttft_us is not None:
        without = min((c.ttft_s - _prefill_comm(c) for c in cands), default=None)
        if without is not None and without * 1e6 <= limits.max_ttft_us:
            return f"{without * 1e3:.0f} ms"
    return ""


def _prefill_comm(c: Candidate) -> float:
    from solver.physics.interconnect import estimate_comm

    return estimate_comm(c.shape.deployment, c.physics.prompt_tokens).time_s


def _limit_field(target: str) -> str:
    return {
        "max_tpot": "max_tpot_us",
        "max_ttft": "max_ttft_us",
        "max_usd_per_hour": "max_cost_cents",
        "max_purchase_usd": "max_purchase_dollars",
        "max_gpus": "max_gpus",
    }[target]


def _best_on(cands: list[Candidate], target: str) -> str | None:
    if not cands:
        return None
    if target == "max_tpot":
        return f"{min(c.tpot_s for c in cands) * 1e3:.1f} ms"
    if target == "max_ttft":
        return f"{min(c.ttft_s for c in cands) * 1e3:.0f} ms"
    if target == "max_usd_per_hour":
        return f"${min(c.cost_usd_per_hour for c in cands):,.2f}/h"
    if target == "max_purchase_usd":
        return f"${min(c.purchase_usd for c in cands):,.0f}"
    if target == "max_gpus":
        return f"{min(c.gpus for c in cands)} GPUs"
    return None


def _runners_up(problem: Problem, s: Scenario, result: SolveResult) -> None:
    chosen = result.solution.candidate
    base = objective_value(problem, chosen)
    forced = []
    for device in problem.devices:
        if device.name == chosen.shape.device.name:
            continue
        if device.name in problem.excluded:
            result.runners_up.append(RunnerUp(device.name, None, None, None, problem.excluded[device.name]))
            continue
        shapes = [sh for sh in problem.shapes if sh.device.name == device.name]
        sol = solve_scenario(problem, s, shapes=shapes)
        if sol.feasible:
            obj = objective_value(problem, sol.candidate)
            result.runners_up.append(RunnerUp(device.name, plan_label(sol.candidate), obj, obj - base, "loses on the objective"))
        else:
            reason = _why_not(problem, s, shapes)
            result.runners_up.append(RunnerUp(device.name, None, None, None, reason))
            if reason.startswith(("ruled out", "memory", "interconnect")):
                forced.append(f"{device.name}: {reason}")
    result.runners_up.sort(key=lambda r: (r.delta is None, r.delta if r.delta is not None else 0.0, r.device))
    result.gpu_forced_by = forced


# --------------------------------------------------------------------------- impossible specs


def _diagnosis_candidates(problem: Problem, s: Scenario, shapes=None) -> list[Candidate]:
    """Every shape at several batches, with and without the users and context targets
    (1 user; a 1-token context), so each target can be switched off by assumption."""
    w = s.workload
    kw = {"batch_variants": True, "ignore_tpot_cap": True, "shapes": shapes}
    out = candidates(problem, w, s.targets, **kw)
    one_user = dataclasses.replace(w, users=1)
    tiny = dataclasses.replace(w, context_tokens=w.prompt_tokens + 1, output_tokens=1, kv_fill=1.0 / (w.prompt_tokens + 1))
    out += candidates(problem, one_user, s.targets, relaxed=frozenset({"users"}), **kw)
    out += candidates(problem, tiny, s.targets, relaxed=frozenset({"context_tokens"}), **kw)
    out += candidates(problem, dataclasses.replace(tiny, users=1), s.targets, relaxed=frozenset({"users", "context_tokens"}), **kw)
    return out


def _diagnose(problem: Problem, s: Scenario, result: SolveResult) -> None:
    cands = _diagnosis_candidates(problem, s)
    limit = problem.spec.solver.time_limit_s
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
        result.runners_up.append(RunnerUp(device.name, None, None, None, _why_not(problem, s, shapes)))


def _nearest(problem: Problem, s: Scenario, target: str) -> Relaxation:
    """How far `target` must move, the others held, for a plan to exist."""
    current = s.value(target)
    if target in ("max_tpot", "max_ttft", "max_usd_per_hour", "max_purchase_usd", "max_gpus"):
        # Minimise the target's own measure with the target lifted.
        free = s.with_value(target, None)
        cands = candidates(problem, free.workload, free.targets, batch_variants=True)
        objective = {"max_tpot": "min_tpot", "max_ttft": None, "max_usd_per_hour": "min_cost",
                     "max_purchase_usd": "min_purchase", "max_gpus": "min_gpus"}[target]
        if objective is None:  # TTFT: no objective of its own; take the least TTFT among feasible plans
            feasible = [c for c in cands if meets(c, free.limits())]
            if not feasible:
                return Relaxation(target, current, None, None, "not enough alone: another conflict among the other targets remains")
            best = min(feasible, key=lambda c: (c.ttft_us, c.gpus, c.shape.index))
            return Relaxation(target, current, best.ttft_s, plan_label(best), f"lowest TTFT reachable: {best.ttft_s * 1e3:.0f} ms")
        sol = optimise(cands, free.limits(), objective, problem.spec.solver.time_limit_s)
        if not sol.feasible:
            return Relaxation(target, current, None, None, "not enough alone: another conflict among the other targets remains")
        c = sol.candidate
        value = {"max_tpot": c.tpot_s, "max_usd_per_hour": c.cost_usd_per_hour, "max_purchase_usd": c.purchase_usd, "max_gpus": float(c.gpus)}[target]
        note = {
            "max_tpot": f"lowest TPOT reachable: {value * 1e3:.1f} ms",
            "max_usd_per_hour": f"least $/hour that meets the rest: ${value:,.2f}",
            "max_purchase_usd": f"least purchase that meets the rest: ${value:,.0f}",
            "max_gpus": f"fewest GPUs that meet the rest: {int(value)}",
        }[target]
        return Relaxation(target, current, value, plan_label(c), note)
    # users and context: bisect for the largest value that still has a plan.
    lo, hi = 0, int(current)
    best_sol = None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        sol = solve_scenario(problem, s.with_value(target, mid))
        if sol.feasible:
            lo, best_sol = mid, sol
        else:
            hi = mid - 1
    if lo == 0:
        return Relaxation(target, current, None, None, "no plan even at the smallest value")
    what = "users served" if target == "users" else "tokens of context"
    return Relaxation(target, current, float(lo), plan_label(best_sol.candidate), f"most {what} with the rest held: {lo:,}")
