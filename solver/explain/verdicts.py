"""A plan's simulated verdict, kept on its problem by what it is a function of, so that
a command that simulates the plan its solve chose (`plan-opt simulate`, POST /simulate)
reads it back instead of running the same seeds again. Light on purpose: a plan given
whole is simulated without a solve, and without CP-SAT imported."""

from __future__ import annotations

from solver.optimise.problem import Problem, Shape
from solver.physics.deployment import Targets, Workload
from solver.traffic.verify import SEEDS, Check, Settings, verify_plan


def verdict_key(shape: Shape, replicas: int, seeds: int, settings: Settings, w: Workload, t: Targets) -> tuple[object, ...]:
    """What verify_plan's verdict on a plan of the problem is a function of (seeded draws)."""
    return (shape.index, replicas, seeds, settings, w, t)


def plan_check(problem: Problem, shape: Shape, replicas: int, settings: Settings, seeds: int = SEEDS) -> Check:
    """verify_plan of a plan at the problem's workload and targets, read back where the
    solve that chose it ran the same (the same inputs, so the same check)."""
    check = problem.simulated.get(verdict_key(shape, replicas, seeds, settings, problem.workload, problem.targets))
    if check is None:
        check = verify_plan(shape.deployment, problem.workload, problem.targets, replicas, settings, seeds)
    return check
