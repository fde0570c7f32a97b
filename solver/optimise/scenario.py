"""A scenario: the problem's workload and targets, any of which the explanation may move
(relax, tighten, lift), and the solve of one scenario."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from solver.optimise.candidate import Candidate
from solver.optimise.candidates import candidates
from solver.optimise.model import (
    Limits,
    Solution,
    optimise,
)
from solver.optimise.problem import Problem, Shape
from solver.optimise.targets import TARGETS
from solver.physics.deployment import Targets, Workload
from solver.spec.solve_spec import DEFAULT_MAX_GPUS


@dataclass(frozen=True)
class Scenario:
    """The knobs a re-solve may turn: the workload and the user's limits."""

    workload: Workload
    targets: Targets
    max_usd_per_hour: float | None
    max_purchase_usd: float | None
    max_gpus: int | None

    def limits(self) -> Limits:
        return Limits.of({name: self.value(name) for name in TARGETS})

    def value(self, target: str) -> float | None:
        return {
            "max_tpot": self.targets.max_tpot_s,
            "max_ttft": self.targets.max_ttft_s,
            "users": self.workload.users,
            "context_tokens": self.workload.context_tokens,
            "max_usd_per_hour": self.max_usd_per_hour,
            "max_purchase_usd": self.max_purchase_usd,
            "max_gpus": self.max_gpus,
        }[target]

    def with_value(self, target: str, value: float | None) -> Scenario:
        if target == "max_tpot":
            return dataclasses.replace(self, targets=dataclasses.replace(self.targets, max_tpot_s=value))
        if target == "max_ttft":
            return dataclasses.replace(self, targets=dataclasses.replace(self.targets, max_ttft_s=value))
        if target == "users":
            return dataclasses.replace(self, workload=dataclasses.replace(self.workload, users=_whole(target, value)))
        if target == "context_tokens":
            # A shorter context shortens prompt and output alike: trimming the output
            # alone would make every user resend sooner, and the prompts' queue (the
            # TTFT under a users load) longer than the context it relaxes.
            w = self.workload
            tokens = _whole(target, value)
            share = min(1.0, tokens / max(1, w.prompt_tokens + w.output_tokens))
            prompt = min(w.prompt_tokens, max(1, round(w.prompt_tokens * share)))
            output = min(w.output_tokens, max(1, tokens - prompt))
            return dataclasses.replace(self, workload=dataclasses.replace(w, context_tokens=tokens, prompt_tokens=prompt, output_tokens=output))
        if target == "max_usd_per_hour":
            return dataclasses.replace(self, max_usd_per_hour=value)
        if target == "max_purchase_usd":
            return dataclasses.replace(self, max_purchase_usd=value)
        if target == "max_gpus":
            return dataclasses.replace(self, max_gpus=None if value is None else _whole(target, value))
        raise KeyError(target)


def _whole(target: str, value: float | None) -> int:
    """The value of a target counted in whole numbers (users, tokens, GPUs)."""
    if not isinstance(value, int):
        raise TypeError(f"{target} takes a whole number, not {value!r}")
    return value


def relaxes_upward(target: str) -> bool:
    return TARGETS[target].relaxes_upward


def scenario_of(problem: Problem) -> Scenario:
    return Scenario(problem.workload, problem.targets, problem.max_usd_per_hour, problem.max_purchase_usd, problem.max_gpus)


def set_targets(s: Scenario) -> list[str]:
    return [t for t in TARGETS if s.value(t) is not None]


def wants_batch_variants(problem: Problem) -> bool:
    """Smaller batches (more replicas) can win only when they are cheap: the objective
    is TPOT itself, or owned GPUs make extra replicas free."""
    return problem.objective == "min_tpot" or any(n > 0 for n in problem.spec.inventory.values())


def solve_scenario(problem: Problem, s: Scenario, *, shapes: list[Shape] | None = None) -> Solution:
    cands = candidates(problem, s.workload, s.targets, batch_variants=wants_batch_variants(problem), shapes=shapes)
    return optimise(cands, s.limits(), problem.objective, problem.clock, problem.spec.prefer)


def objective_value(problem: Problem, c: Candidate) -> float:
    return {
        "min_cost": c.cost_usd_per_hour,
        "min_gpus": float(c.gpus),
        "min_purchase": c.purchase_usd,
        "min_tpot": c.tpot_s,
        "min_tco": c.tco_usd_per_hour,
    }[problem.objective]


def plan_label(c: Candidate) -> str:
    gpus = f"{c.gpus} GPU{'s' if c.gpus != 1 else ''}"
    if c.prefill is not None:
        pool = c.prefill
        return f"{pool.replicas} × {pool.shape.label} prefill + {c.replicas} × {c.shape.label} decode ({gpus}, batch {c.batch})"
    return f"{c.replicas} × {c.shape.label} ({gpus}, batch {c.batch})"


def with_serving(problem: Problem, serving: str) -> Problem:
    """The problem with search.serving one way only (aggregated or disaggregated); the
    physics memoised so far is shared."""
    search = problem.spec.search.model_copy(update={"serving": [serving]})
    return dataclasses.replace(problem, spec=problem.spec.model_copy(update={"search": search}))


def with_default_gpu_cap(problem: Problem) -> Problem:
    """The problem with search.max_gpus at its default, as though the spec said it."""
    search = problem.spec.search.model_copy(update={"max_gpus": DEFAULT_MAX_GPUS})
    return dataclasses.replace(problem, spec=problem.spec.model_copy(update={"search": search}))


def diagnosis_candidates(problem: Problem, s: Scenario, shapes: list[Shape] | None = None) -> list[Candidate]:
    """Every shape at several batches, with and without the users and context targets
    (1 user; a 1-token context), so each target can be switched off by assumption."""
    w = s.workload

    def every(workload: Workload, relaxed: frozenset[str] = frozenset()) -> list[Candidate]:
        return candidates(problem, workload, s.targets, batch_variants=True, ignore_tpot_cap=True, relaxed=relaxed, shapes=shapes)

    out = every(w)
    one_user = dataclasses.replace(w, users=1)
    # Memory held at one token a sequence, the requests themselves unchanged (their
    # prompts' queue depends on their lengths, not on the KV they hold).
    tiny = dataclasses.replace(w, kv_fill=1.0 / w.context_tokens)
    out += every(one_user, frozenset({"users"}))
    out += every(tiny, frozenset({"context_tokens"}))
    out += every(dataclasses.replace(tiny, users=1), frozenset({"users", "context_tokens"}))
    return out
