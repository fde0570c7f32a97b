"""The CP-SAT model: choose one candidate plan, subject to one named constraint per
physical limit and per user target, at the least objective.

Encoding (DESIGN: precomputed coefficients beat products of variables by orders of
magnitude): the physics of every candidate is computed in Python and enters as an
integer coefficient; one boolean per candidate, exactly one true; each constraint is
a linear sum over the booleans, so "the chosen plan's TPOT ≤ target" reads
Σ x_c · tpot_us(c) ≤ target_us. The objective is primary × n + a deterministic
tie-break rank, so the optimum is unique and the answer reproducible.

Two paths: `optimise` without assumptions; `diagnose`, only when that is infeasible,
on a model whose user targets are enforced by assumption literals, for a minimal
conflicting set (an unsat core shrunk by deletion).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from solver.optimise.candidate import Candidate
from solver.optimise.clock import SolverClock
from solver.optimise.targets import TARGETS

if TYPE_CHECKING:
    from solver.optimise.cpsat import cp_model

# The user's targets, each a named constraint (memory and interconnect are physical,
# always on): one registry, solver/optimise/targets.py.
PRIMARY: dict[str, Callable[[Candidate], int]] = {
    "min_cost": lambda c: c.cost_cents,
    "min_gpus": lambda c: c.gpus,
    "min_purchase": lambda c: c.purchase_dollars,
    "min_tpot": lambda c: c.tpot_us,
    "min_tco": lambda c: c.tco_cents,
}


@dataclass(frozen=True)
class Limits:
    """The user's limits in the model's integer units (None: not set)."""

    max_tpot_us: int | None = None
    max_ttft_us: int | None = None
    max_cost_cents: int | None = None
    max_purchase_dollars: int | None = None
    max_gpus: int | None = None

    @classmethod
    def of(cls, values: dict[str, float | None]) -> Limits:
        """The targets' values in the spec's units (by name) in the model's integers."""
        out: dict[str, int] = {}
        for name, v in values.items():
            t = TARGETS[name]
            if t.limit_field and v is not None:
                assert t.to_model is not None, name  # every target with a limit field rounds to it
                out[t.limit_field] = t.to_model(v)
        return cls(**out)


@dataclass(frozen=True)
class Solution:
    status: str
    """optimal, feasible (time limit hit), infeasible, or unknown."""
    candidate: Candidate | None
    objective_value: int | None = None
    wall_s: float = 0.0

    @property
    def proven_optimal(self) -> bool:
        return self.status == "optimal"

    @property
    def feasible(self) -> bool:
        return self.candidate is not None

    @property
    def chosen(self) -> Candidate:
        """The plan of a feasible solution; asking an infeasible one is a caller's bug."""
        if self.candidate is None:
            raise ValueError(f"a solution that is {self.status} has no plan")
        return self.candidate


def new_solver(time_limit: float | SolverClock) -> cp_model.CpSolver:
    """A CP-SAT solver with a time limit: a number of seconds, or the next share of a
    command's clock."""
    from solver.optimise.cpsat import cp_model

    s = cp_model.CpSolver()
    s.parameters.num_workers = 1  # reproducible, and fastest at this size
    s.parameters.random_seed = 0
    s.parameters.max_time_in_seconds = time_limit.limit_s() if isinstance(time_limit, SolverClock) else time_limit
    return s


def _rank(cands: list[Candidate], prefer: str = "quality") -> list[int]:
    """Tie-break rank: tie_key without the objective."""
    order = sorted(range(len(cands)), key=lambda i: tie_key(cands[i], "min_gpus", prefer)[1:])
    rank = [0] * len(cands)
    for r, i in enumerate(order):
        rank[i] = r
    return rank


@dataclass
class _Built:
    model: cp_model.CpModel
    x: list[cp_model.IntVar]
    cands: list[Candidate]
    literals: dict[str, cp_model.IntVar] = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    """One named constraint: a candidate's integer coefficient at most the limit. The
    model has exactly one candidate chosen, so a rule holds for a plan exactly when its
    candidate's coefficient is within the limit — which lets feasibility questions be
    answered without a solver (`admissible`)."""

    name: str
    coeff: Callable[[Candidate], int]
    limit: int
    physical: bool = False
    """memory and interconnect: never relaxed, never an assumption."""


def rules(limits: Limits) -> list[Rule]:
    out = [
        Rule("memory", lambda c: c.memory_excess, 0, physical=True),
        Rule("interconnect", lambda c: c.interconnect_excess, 0, physical=True),
    ]
    if limits.max_tpot_us is not None:
        out.append(Rule("max_tpot", lambda c: c.tpot_us, limits.max_tpot_us))
    if limits.max_ttft_us is not None:
        out.append(Rule("max_ttft", lambda c: c.ttft_us, limits.max_ttft_us))
    if limits.max_cost_cents is not None:
        out.append(Rule("max_usd_per_hour", lambda c: c.cost_cents, limits.max_cost_cents))
    if limits.max_purchase_dollars is not None:
        out.append(Rule("max_purchase_usd", lambda c: c.purchase_dollars, limits.max_purchase_dollars))
    if limits.max_gpus is not None:
        out.append(Rule("max_gpus", lambda c: c.gpus, limits.max_gpus))
    return out


@functools.lru_cache(maxsize=256)
def _rules_of(limits: Limits) -> tuple[Rule, ...]:
    """`rules(limits)`, made once per limits (a re-filter asks it of every candidate), the
    latencies last: a conjunction in any order, and a plan over a budget or the GPU cap
    is refused before its TTFT under load is derived."""
    latency = ("max_tpot", "max_ttft")
    made = rules(limits)
    return tuple([r for r in made if r.name not in latency] + [r for r in made if r.name in latency])


def admissible(c: Candidate, limits: Limits, assumed: Collection[str] | None = None) -> bool:
    """Whether choosing `c` meets the physical rules and the targets `assumed` (all
    targets when None), as the CP-SAT model with those assumptions would."""
    for rule in _rules_of(limits):
        if (rule.physical or assumed is None or rule.name in assumed) and rule.coeff(c) > rule.limit:
            return False
    return not any(t in c.relaxed and (assumed is None or t in assumed) for t in ("users", "context_tokens"))


def build_model(cands: list[Candidate], limits: Limits, *, with_assumptions: bool = False) -> _Built:
    from solver.optimise.cpsat import cp_model

    m = cp_model.CpModel()
    x = [m.new_bool_var(f"x{i}") for i in range(len(cands))]
    m.add_exactly_one(x)
    built = _Built(m, x, cands)

    def constrain(name: str, coeffs: list[int], limit: int, *, physical: bool = False) -> None:
        ct = m.add(cp_model.LinearExpr.weighted_sum(x, coeffs) <= limit).with_name(name)
        if with_assumptions and not physical:
            lit = built.literals.get(name) or m.new_bool_var(f"assume_{name}")
            built.literals[name] = lit
            ct.only_enforce_if(lit)

    for rule in rules(limits):
        constrain(rule.name, [rule.coeff(c) for c in cands], rule.limit, physical=rule.physical)
    if with_assumptions:
        # Candidates computed without the users or the context target may be chosen
        # only when that target is not assumed.
        for target in ("users", "context_tokens"):
            relaxed = [xi for xi, c in zip(x, cands) if target in c.relaxed]
            if relaxed:
                lit = m.new_bool_var(f"assume_{target}")
                built.literals[target] = lit
                for xi in relaxed:
                    m.add_implication(xi, lit.Not())
    return built


def status_name(code: cp_model.CpSolverStatus) -> str:
    from solver.optimise.cpsat import cp_model

    return {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "feasible",
        cp_model.INFEASIBLE: "infeasible",
        cp_model.MODEL_INVALID: "invalid",
    }.get(code, "unknown")


def tie_key(c: Candidate, objective: str, prefer: str = "quality") -> tuple[int, ...]:
    """The objective, then (prefer quality) the better weight and KV formats, then lower TPOT,
    lower TTFT, fewer GPUs, aggregated before disaggregated, catalog order, larger batch; prefer speed puts the formats
    after the latencies, and then a solve's plan is never dominated on the Pareto
    frontier of cost against latency."""
    d = c.shape.deployment
    q = (-d.weights.quality_rank, -d.kv.quality_rank)
    speed = (c.tpot_us, c.ttft_us)
    order = (*q, *speed) if prefer == "quality" else (*speed, *q)
    pool = (1, c.prefill.shape.index, c.prefill.replicas) if c.prefill is not None else (0, -1, 0)  # aggregated first: one pool to run
    return (PRIMARY[objective](c), *order, c.gpus, pool[0], c.shape.index, *pool[1:], -c.batch)


def prune(cands: list[Candidate], limits: Limits, objective: str, prefer: str = "quality") -> list[Candidate]:
    """Drop candidates that can never be the optimum: those another candidate of the
    same device beats on the objective while being no worse on any coefficient of a
    constraint in force (DESIGN: prune dominated shapes within their device). Exact:
    whenever a dropped candidate is feasible, the one that dominates it is too, and
    better."""

    def coeffs(c: Candidate) -> tuple[int, ...]:
        out = [max(c.memory_excess, 0), c.interconnect_excess]
        if limits.max_tpot_us is not None:
            out.append(c.tpot_us)
        if limits.max_ttft_us is not None:
            out.append(c.ttft_us)
        if limits.max_cost_cents is not None:
            out.append(c.cost_cents)
        if limits.max_purchase_dollars is not None:
            out.append(c.purchase_dollars)
        if limits.max_gpus is not None:
            out.append(c.gpus)
        return tuple(out)

    by_device: dict[str, list[Candidate]] = {}
    for c in cands:
        by_device.setdefault(c.shape.device.name, []).append(c)
    import numpy as np

    kept: list[Candidate] = []
    for group in by_device.values():
        keyed = sorted(((tie_key(c, objective, prefer), c) for c in group), key=lambda kc: kc[0])
        width = len(coeffs(keyed[0][1])) if keyed else 0
        # The front so far as rows of an integer array (grown by doubling), so that
        # "does a kept candidate dominate this one" is one vectorised comparison, not a
        # Python loop over the front (a 32,000-user spec's batch variants made it 16M).
        front = np.empty((max(1, min(len(keyed), 64)), width), dtype=np.int64)
        n = 0
        chosen: list[Candidate] = []
        for _, c in keyed:
            v = np.asarray(coeffs(c), dtype=np.int64)
            if n and bool(np.any(np.all(front[:n] <= v, axis=1))):
                continue
            if n == len(front):
                front = np.concatenate([front, np.empty_like(front)])
            front[n] = v
            n += 1
            chosen.append(c)
        kept += chosen
    kept.sort(key=lambda c: (c.shape.index, -c.batch))
    return kept


def optimise(cands: list[Candidate], limits: Limits, objective: str, time_limit: float | SolverClock = 10.0, prefer: str = "quality") -> Solution:
    """The least-objective candidate meeting every constraint, proven optimal when
    CP-SAT finishes within the time limit."""
    cands = prune(cands, limits, objective, prefer)
    if not cands:
        return Solution("infeasible", None)
    b = build_model(cands, limits)
    primary = PRIMARY[objective]
    n = len(cands)
    rank = _rank(cands, prefer)
    b.model.minimize(sum((primary(c) * n + rank[i]) * b.x[i] for i, c in enumerate(cands)))
    s = new_solver(time_limit)
    code = s.solve(b.model)
    status = status_name(code)
    if status not in ("optimal", "feasible"):
        return Solution(status, None, None, s.wall_time)
    chosen = next(c for xi, c in zip(b.x, cands) if s.boolean_value(xi))
    return Solution(status, chosen, int(s.objective_value), s.wall_time)


def is_feasible(cands: list[Candidate], limits: Limits, time_limit: float | SolverClock = 10.0) -> bool:
    """Some candidate meets every rule (exactly one is chosen, so no solver is needed;
    `time_limit` is kept for the callers' symmetry with optimise)."""
    return any(admissible(c, limits) for c in cands)


def minimal_conflict(
    cands: list[Candidate], limits: Limits, time_limit: float | SolverClock = 10.0, *, exclude: Collection[str] = frozenset()
) -> list[str]:
    """A smallest set of user targets that cannot hold together, even with every
    other target dropped, shrunk by deletion until removing any one makes the rest
    of the set feasible. Targets in `exclude` are left unenforced. Empty when the
    physics alone (memory, interconnect) rules out every candidate, or when nothing
    conflicts. Each question "do these targets admit a plan?" is answered by
    `admissible` over the candidates: exactly the CP-SAT model with those assumptions,
    without a solve."""
    present = {r.name for r in rules(limits) if not r.physical} | {t for c in cands for t in c.relaxed}
    names = [n for n in TARGETS if n in present and n not in exclude]

    def infeasible(subset: list[str]) -> tuple[bool, list[str]]:
        if any(admissible(c, limits, subset) for c in cands):
            return False, []
        return True, subset

    bad, core = infeasible(names)
    if not bad:
        return []  # feasible with every target: nothing to explain
    core = [n for n in names if n in core] or names
    # Deletion: drop each target in turn, the last in TARGETS order first (so that of
    # two targets each conflicting alone, the first named is the one kept); keep it out
    # if the rest still conflict.
    for n in reversed(list(core)):
        trial = [c for c in core if c != n]
        still, _ = infeasible(trial)
        if still:
            core = trial
    return core
