"""What an explanation finds, as plain records the reports read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from solver.explain.mixed import MixedPlan
from solver.explain.validate import Violation
from solver.optimise.candidate import Candidate
from solver.optimise.model import (
    Solution,
)
from solver.optimise.problem import Problem
from solver.physics.evaluate import Evaluation

if TYPE_CHECKING:
    from solver.traffic.verify import Check


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


@dataclass(frozen=True)
class CrossVendorNote:
    """Disaggregated plans searched over several vendors' GPUs: the pairing rule followed
    (explain/vendor_pairs.py)."""

    allowed: bool
    """search.allow_cross_vendor_kv."""
    vendors: list[str]
    """The vendors of the devices searched."""
    plan_if_allowed: str | None
    """With the rule on: the plan allowing pairs across vendors would choose, where it
    gains on the objective (None: it does not, or was not re-solved)."""
    objective_if_allowed: float | None
    note: str


@dataclass(frozen=True)
class ServingComparison:
    """With search.serving both ways: the best plan of each, and why the chosen one wins."""

    chosen: str
    """aggregated or disaggregated."""
    aggregated_plan: str | None
    aggregated_objective: float | None
    disaggregated_plan: str | None
    disaggregated_objective: float | None
    reason: str


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
    violations: list[Violation] = field(default_factory=list)
    """What the solver-free check (explain/validate.py) found wrong with the plan: a bug."""
    """Every searched weight format better than the plan's, with the best plan in it."""
    explained: bool = True
    gpu_cap_defaulted: bool = False
    """search.max_gpus was unset and the cheapest plan exceeded its default, so it applies."""
    serving: ServingComparison | None = None
    """With search.serving [aggregated, disaggregated]: the best of each (explain/serving.py)."""
    cross_vendor: CrossVendorNote | None = None
    """Disaggregated plans over several vendors' GPUs: the pairing rule (explain/vendor_pairs.py)."""
    traffic_check: Check | None = None
    """Under traffic: the chosen plan's simulation (explain/traffic.py)."""
    mixed: MixedPlan | None = None
    """With an inventory: replicas of more than one shape (owned GPUs used) that cost
    less than the one-shape plan (explain/mixed.py)."""
    traffic_unmet: str = ""
    """Under traffic, when no plan passed its simulation: why ('' otherwise)."""
    cut_short: list[str] = field(default_factory=list)
    """Explanations the command's time limit (optimise/clock.py) skipped or stopped early."""
    traffic_rejected: list[tuple[str, int, list[str]]] = field(default_factory=list)
    """Under traffic: plans the screen chose and the simulation refused — (shape, replicas,
    the targets missed) — before the one reported."""

    cheapest: Candidate | None = None
    """When a plan within the headroom tolerance (optimise/headroom.py) was chosen over
    the optimum for its headroom: the optimum (None: the plan is the optimum)."""

    @property
    def feasible(self) -> bool:
        return self.solution.feasible

    @property
    def optimum(self) -> Candidate:
        """The proven-optimal plan (the cheapest, for min_cost): what re-solves compare to."""
        return self.cheapest if self.cheapest is not None else self.solution.chosen
