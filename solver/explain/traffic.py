"""Under traffic, the plan the screen chose is simulated before it is reported; a plan
the simulation refuses gets more replicas, the fewest that pass (or, when none of a
few more do, its shape is dropped), and the model is solved again, until the chosen
plan passes its simulation. The cheapest plan reported is then the cheapest among the
screened plans with every simulated correction applied.

A correction is lazy: a refused plan's shape has its floor raised a step without a
simulation, and the count at the floor is simulated only when a re-solve picks it
again (a miss on its first seed is the next step, as a floor search would have run
it). A floor search run at once simulated counts that the re-solve then passed over
for a cheaper shape; run lazily, every count simulated was the cheapest plan left when
it ran, and the plan found is the same (each re-solve sees a floor no higher than the
search's, and raises it the same steps until the search's floor or a cheaper plan)."""

from __future__ import annotations

import dataclasses
import math
import time

from solver.explain.records import SolveResult
from solver.explain.verdicts import verdict_key
from solver.optimise.model import Solution
from solver.optimise.problem import Problem, Shape
from solver.optimise.scenario import Scenario, solve_scenario
from solver.traffic.verify import SEEDS, Check, Settings, settings_for, verify_plan

MAX_CORRECTIONS_PER_SHAPE = 3
"""Times one shape's plan may be refused (each raises its floor) before the shape is
dropped. The bound is per shape, not per search: a fixed count of refused picks in all
made a spec lose its plan when GPU types were added (more cheap screened picks refused
before the passing one). The loop ends when a plan passes, no screened candidate is
left, or the simulation budget below is spent (then the report says so)."""
MAX_EXTRA_TRIES = 8
"""Replica counts tried above a refused plan's before its shape is dropped."""
MAX_SIMULATIONS = 120
MAX_SIMULATED_REQUESTS = 240_000
"""Simulations one command may run, and the requests they simulate in all (the plan's
corrections first, then the runners-up): the bound on its time, as WORK_FACTOR bounds
CP-SAT's — counted in work, not seconds, so that every machine gives the same answer
(about 6 s here, at some 70 µs a simulated request). A wall-time budget of 6 s made the
answer the machine's: on a slower or busier one the last runner-up went unsimulated."""
MAX_SIMULATION_S = 60.0
"""A guard against a hang only (a request budget that a pathological run of very long
outputs still takes minutes to spend); ordinary commands stop at the budgets above."""


def budget_spent(problem: Problem) -> bool:
    return problem.simulations >= MAX_SIMULATIONS or problem.simulated_requests >= MAX_SIMULATED_REQUESTS or problem.simulation_s >= MAX_SIMULATION_S


def settings_of(problem: Problem, replicas: int = 1) -> Settings:
    sim = problem.spec.simulation
    return settings_for(sim.requests, sim.seed, sim.routing, replicas)


def _simulate(problem: Problem, s: Scenario, shape: Shape, replicas: int, seeds: int = SEEDS) -> Check | None:
    """One verdict (up to SEEDS runs: verify_plan), its runs counted against
    MAX_SIMULATIONS and its requests against MAX_SIMULATED_REQUESTS (None: the budget
    is spent)."""
    if budget_spent(problem):
        return None
    settings = settings_of(problem, replicas)
    # A verdict is a function of these alone (seeded draws): a runner-up's correction
    # that lands on a plan simulated before reads it back, its budget charged as before.
    key = verdict_key(shape, replicas, seeds, settings, s.workload, s.targets)
    check = problem.simulated.get(key)
    if check is None and seeds == 1:
        # a verdict on every seed run before holds this one's run: its first seed's, where
        # it passed (its figures are that run's) or missed on that seed
        full = problem.simulated.get(verdict_key(shape, replicas, SEEDS, settings, s.workload, s.targets))
        if full is not None and (full.ok or len(full.seeds) == 1):
            check = problem.simulated[key] = dataclasses.replace(full, seeds=full.seeds[:1], bounds=())
    if check is None:
        # the spec's seed alone, run before (a correction's floor), is this verdict's first
        # run: a miss there is the verdict, a pass is not run again
        first = problem.simulated.get(verdict_key(shape, replicas, 1, settings, s.workload, s.targets)) if seeds > 1 else None
        start = time.monotonic()
        if first is not None and not first.ok:
            check = problem.simulated[key] = first
        else:
            check = problem.simulated[key] = verify_plan(shape.deployment, s.workload, s.targets, replicas, settings, seeds, first)
        problem.simulation_s += time.monotonic() - start
    problem.simulations += len(check.seeds)
    problem.simulated_requests += settings.requests * len(check.seeds)
    return check


def verified(problem: Problem, s: Scenario, sol: Solution, result: SolveResult, shapes: list[Shape] | None = None, seeds: int = SEEDS) -> Solution:
    """`sol` if its plan passes its simulation (on `seeds` seeds: verify_plan), else the
    plan after the corrections; `shapes` restricts the re-solves (a runner-up's device).
    When no screened candidate passes (or the simulation budget is spent first), there
    is no plan: infeasible, and `result.traffic_unmet` says why."""
    refusals: dict[int, int] = {}
    while True:
        if not sol.feasible:
            if result.traffic_rejected and not result.traffic_unmet:
                result.traffic_unmet = (
                    f"every screened candidate was simulated and refused ({len(result.traffic_rejected)} picks, "
                    f"at most {MAX_CORRECTIONS_PER_SHAPE} corrections a shape): the targets may be out of reach at this rate"
                )
            return sol
        c = sol.chosen
        if problem.clock.run_out:
            result.traffic_unmet = (
                f"the time limit ({problem.spec.solver.time_limit_s:g} s a solve, 3× that in all) was spent before a plan passed its simulation"
            )
            result.cut_short.append(f"the plan's simulated corrections (after {len(result.traffic_rejected)} refused)")
            return Solution("infeasible", None)
        check = _simulate(problem, s, c.shape, c.replicas, seeds)
        if check is None:
            result.traffic_unmet = (
                f"the simulation budget ({MAX_SIMULATIONS} runs or {MAX_SIMULATED_REQUESTS:,} requests) was spent before a plan passed"
            )
            return Solution("infeasible", None)
        idx = c.shape.index
        pending = problem.floor_steps.pop(idx, None)
        if check.ok:
            result.traffic_check = check
            return sol
        if pending is not None and pending[0] == c.replicas == problem.replica_floor.get(idx) and len(check.seeds) == 1:
            # a correction's step, missed on its first seed: the next step (not a refusal
            # of a floor that passed it, so not listed: a floor search's runs were not)
            floor = _step(problem, idx, c.replicas, pending[1], pending[2])
        else:
            result.traffic_rejected.append((c.shape.label, c.replicas, check.failing))
            refusals[idx] = refusals.get(idx, 0) + 1
            if refusals[idx] >= MAX_CORRECTIONS_PER_SHAPE:
                floor = 0  # refused this often: dropped (each round drops a shape or raises a floor, so the loop ends)
            else:
                floor = _step(problem, idx, c.replicas, max(1, math.ceil(c.replicas * 0.1)), 0)
        problem.replica_floor[idx] = floor
        sol = solve_scenario(problem, s, shapes=shapes)


def _step(problem: Problem, shape_index: int, replicas: int, step: int, taken: int) -> int:
    """A refused count's next floor, `step` above it, kept as a correction's (to be
    simulated when picked); 0 (the shape dropped) after MAX_EXTRA_TRIES steps, as
    `corrected_floor` gives up."""
    if taken >= MAX_EXTRA_TRIES:
        return 0
    problem.floor_steps[shape_index] = (replicas + step, step, taken + 1)
    return replicas + step


def plan_verdict(problem: Problem, s: Scenario, shape: Shape, replicas: int, seeds: int = SEEDS) -> Check | None:
    """A plan's verdict on `seeds` seeds, as `verified` checks the plan it chose (its runs
    charged to the same budget, read back where run before; None: the budget is spent):
    `plan-opt schedule` holds each slot's replicas to it."""
    return _simulate(problem, s, shape, replicas, seeds)


def corrected_floor(problem: Problem, s: Scenario, shape: Shape, replicas: int) -> int:
    """A refused plan's correction: the fewest replicas above it, in steps of a tenth
    (at least one), that pass on one seed (a miss on it is a miss of the bound); 0 when
    none of MAX_EXTRA_TRIES does or the budget is spent. The plan at the floor is then
    verified on every seed, and refused again if it misses."""
    step = max(1, math.ceil(replicas * 0.1))
    r = replicas
    for _ in range(MAX_EXTRA_TRIES):
        r += step
        more = _simulate(problem, s, shape, r, seeds=1)
        if more is None:
            return 0
        if more.ok:
            return r
    return 0


def passes_simulation(problem: Problem, s: Scenario, shape: Shape, replicas: int) -> Check | None:
    """One more plan simulated (a headroom choice, explain/solve.py): its check when it
    meets every percentile target, None when it misses one or the budget is spent."""
    check = _simulate(problem, s, shape, replicas)
    return check if check is not None and check.ok else None


MAX_VERIFIED_RUNNERS_UP = 5
"""Runners-up simulated (the cheapest first); the rest are reported as screened."""
SIMULATED_WITHIN = 1.5
"""A runner-up is simulated only where the screen prices it within this factor of the
plan (under an objective that more replicas never lower: `PER_REPLICA`). A simulation
only adds replicas to a screened plan, so a runner-up the screen already prices above
the plan loses whatever its simulation says; simulating it would only sharpen the size
of its loss. Those within the factor are the close calls, where the simulated gap is
worth its time (a correction of the size seen on chat-70b-at-20-rps, +13 to +25 %
replicas: l40s 31 -> 35, h100-sxm 4 -> 5, moves a small gap a lot); past it the
screen's price, a floor, already says it loses by a third or more, and is reported as
such ("screened, not simulated"). A stated design choice, not a fitted figure."""
PER_REPLICA = ("min_cost", "min_gpus", "min_purchase", "min_tco")
"""The objectives that a plan's replicas only raise (min_tpot falls with them: there
every runner-up up to MAX_VERIFIED_RUNNERS_UP is simulated)."""


def screened_far(problem: Problem, base: float, objective: float | None) -> bool:
    """Whether a runner-up at `objective` (screened) is past SIMULATED_WITHIN of the plan's
    `base`, so reported from the screen alone."""
    return problem.objective in PER_REPLICA and objective is not None and objective > base * SIMULATED_WITHIN + 1e-9


RUNNER_UP_SEEDS = 1
"""A runner-up is simulated on the spec's seed alone: it costs at least the plan (the
plan is the cheapest screened one, and a simulation only adds replicas), and the other
seeds could only add more (a miss on one seed is a miss of the bound), so one seed
shows it loses and gives a floor under its cost, at a fifth of the time."""


def verify_runners_up(problem: Problem, s: Scenario, result: SolveResult) -> None:
    """Each of the cheapest runners-up simulated and corrected as the plan was, so the
    gap to the plan is between two simulated plans."""

    from solver.optimise.scenario import objective_value, plan_label

    base = objective_value(problem, result.solution.chosen)
    done = 0
    out = []
    for ru in result.runners_up:
        if ru.plan is None:
            out.append(ru)
            continue
        if screened_far(problem, base, ru.objective):
            assert ru.objective is not None
            far = (
                f"{ru.objective / base:.1f} × the plan's, past the {SIMULATED_WITHIN:g} × that is simulated" if base > 0 else "the plan costs nothing"
            )
            note = f"screened, not simulated: {far}; a simulation only adds replicas, so at least this"
            out.append(dataclasses.replace(ru, reason=f"{ru.reason} ({note})"))
            continue
        if done >= MAX_VERIFIED_RUNNERS_UP:
            out.append(dataclasses.replace(ru, reason=ru.reason + " (screened, not simulated)"))
            continue
        done += 1
        shapes = [sh for sh in problem.shapes if sh.device.name == ru.device]
        if budget_spent(problem):
            out.append(dataclasses.replace(ru, reason=ru.reason + " (screened: the simulation budget is spent)"))
            continue
        if problem.clock.run_out:
            out.append(dataclasses.replace(ru, reason=ru.reason + " (screened: the time limit is spent)"))
            if "the runners-up's simulations (stopped by the time limit)" not in result.cut_short:
                result.cut_short.append("the runners-up's simulations (stopped by the time limit)")
            continue
        scratch = SolveResult(problem, solve_scenario(problem, s, shapes=shapes))
        sol = verified(problem, s, scratch.solution, scratch, shapes=shapes, seeds=RUNNER_UP_SEEDS)
        if not sol.feasible:
            why = scratch.traffic_unmet or "no plan on it passes its simulation"
            out.append(dataclasses.replace(ru, plan=None, objective=None, delta=None, reason=why))
            continue
        obj = objective_value(problem, sol.chosen)
        check = scratch.traffic_check
        note = (
            (
                f"loses on the objective (simulated on seed {problem.spec.simulation.seed}, at least this)"
                if obj >= base - 1e-9
                else "cheaper, within the headroom tolerance: less room under its limits (simulated)"
            )
            if check is not None and check.ok
            else "loses on the objective (its simulation misses " + ", ".join(check.failing if check else ["?"]) + ")"
        )
        out.append(dataclasses.replace(ru, plan=plan_label(sol.chosen), objective=obj, delta=obj - base, reason=note))
    out.sort(key=lambda r: (r.delta is None, r.delta if r.delta is not None else 0.0, r.device))
    result.runners_up = out
