"""`plan-opt schedule`: the cheapest plan over a traffic profile, and what it saves.

Beside the plan: "peak all day" (solve's cheapest plan at the profile's peak rate,
billed every slot), "on-demand only" (the horizon re-solved on that tier alone), the
cost of surviving failures (re-solved without), the price of one more reserved replica
and of surviving one more failure (re-solved), $ per million tokens over the profile,
and what binds in each slot.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from solver.catalog import Catalog
from solver.catalog.autoscaling import load_autoscaling
from solver.explain.records import SolveResult
from solver.explain.schedule_checks import SlotChecks
from solver.explain.traffic import RUNNER_UP_SEEDS, verified
from solver.optimise.horizon import MILLI, Horizon, Schedule, check
from solver.optimise.horizon_inputs import Assumptions, assumptions, horizon_of, replicas_per_node
from solver.optimise.model import Solution
from solver.optimise.problem import Problem
from solver.optimise.scenario import scenario_of, solve_scenario
from solver.spec.schedule_spec import ScheduleSpec


@dataclass(frozen=True)
class SlotRow:
    start_s: float
    rate_per_s: float
    need: int
    reserved: int
    on_demand: int
    spot: int
    capacity_replicas: float
    binds: str
    simulated: bool = False
    """Whether the need passed solve's simulation at this rate (else the screen alone set it)."""


@dataclass
class ScheduleResult:
    spec: ScheduleSpec
    problem: Problem
    horizon: Horizon
    figures: Assumptions
    schedule: Schedule | None
    peak_all_day_usd: float | None = None
    peak_plan: str = ""
    on_demand_only_usd: float | None = None
    without_survive_usd: float | None = None
    one_more_reserved_usd: float | None = None
    one_more_failure_usd: float | None = None
    half_lag_usd: float | None = None
    tokens: float = 0.0
    slots: list[SlotRow] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    checks: SlotChecks | None = None

    @property
    def hours(self) -> float:
        return self.horizon.slot_s * self.horizon.slots / 3600

    @property
    def usd_per_mtok(self) -> float | None:
        return None if self.schedule is None or not self.tokens else self.schedule.cost_usd / self.tokens * 1e6


def _cost(checks: SlotChecks, h: Horizon, limit_s: float) -> float | None:
    """An alternative's cost, its shape simulated as solve's runners-up are: on the
    spec's seed at every rate (a miss corrected as the plan's), so at least this."""
    s = checks.solve(h, limit_s, RUNNER_UP_SEEDS)[0]
    return None if s is None else s.cost_usd


def _binds(h: Horizon, s: Schedule, t: int) -> str:
    """What holds slot t's count where it is: the rate (with any failures to survive),
    the floor of min_replicas, or reserved replicas sized for other slots."""
    o = h.options[s.option]
    n = s.reserved + s.on_demand[t] + s.spot[t]
    cap = MILLI * (s.reserved + s.on_demand[t]) + o.spot_milli * s.spot[t]
    if cap - MILLI * (o.need[t] + o.survive_replicas) < MILLI:
        return f"rate + survive {o.survive_replicas}" if o.survive_replicas else "rate"
    if h.min_replicas and n == h.min_replicas:
        return "min_replicas"
    if s.on_demand[t] == 0 and s.spot[t] == 0:
        return "reserved (sized for other slots)"
    return "lag (kept up: a restart costs more)"


def _solve_at_peak(problem: Problem) -> Solution:
    """solve's plan at the profile's peak, simulated and corrected as solve prints it
    (explain/traffic.verified; the problem's workload is at the peak), its corrections
    kept off the problem after."""
    floors, steps = dict(problem.replica_floor), dict(problem.floor_steps)
    s = scenario_of(problem)
    try:
        return verified(problem, s, solve_scenario(problem, s), SolveResult(problem, Solution("infeasible", None)))
    finally:
        problem.replica_floor.clear()
        problem.replica_floor.update(floors)
        problem.floor_steps.clear()
        problem.floor_steps.update(steps)


def plan_schedule(ss: ScheduleSpec, problem: Problem, catalog: Catalog) -> ScheduleResult:
    limit_s = ss.spec.solver.time_limit_s
    figures = assumptions(ss.schedule, load_autoscaling())
    checks = SlotChecks(problem, ss.profile.rates_per_s)
    s, h = checks.solve(horizon_of(problem, ss.profile, ss.schedule, catalog, figures), limit_s)
    r = ScheduleResult(ss, problem, h, figures, s, checks=checks)
    w = problem.workload
    assert w.traffic is not None
    per_request = w.traffic.prompt.mean_tokens + w.traffic.output.mean_tokens
    r.tokens = sum(rate * h.slot_s for rate in ss.profile.rates_per_s) * per_request
    peak = _solve_at_peak(problem)
    if peak.feasible:  # solve's plan at the peak, with the same failures to survive, every slot
        c = peak.chosen
        spare = ss.schedule.availability.survive * (replicas_per_node(c.shape) if ss.schedule.availability.unit == "nodes" else 1)
        r.peak_all_day_usd = c.cost_usd_per_hour * (c.replicas + spare) / c.replicas * r.hours
        r.peak_plan = f"{c.replicas}{f' + {spare} to survive' if spare else ''} × {c.shape.label}"
    if s is None:
        return r
    r.violations = check(h, s)
    chosen = h.options[s.option]
    if "on_demand" in chosen.usd_per_gpu_hour:
        od = dataclasses.replace(
            h,
            options=tuple(
                dataclasses.replace(o, usd_per_gpu_hour={"on_demand": o.usd_per_gpu_hour["on_demand"]})
                for o in h.options
                if "on_demand" in o.usd_per_gpu_hour
            ),
        )
        r.on_demand_only_usd = _cost(checks, od, limit_s)
    survive = ss.schedule.availability.survive
    if survive:
        r.without_survive_usd = _cost(
            checks, dataclasses.replace(h, options=tuple(dataclasses.replace(o, survive_replicas=0) for o in h.options)), limit_s
        )
    if "reserved" in chosen.usd_per_gpu_hour:
        r.one_more_reserved_usd = _cost(checks, dataclasses.replace(h, options=(chosen,), min_reserved=s.reserved + 1), limit_s)
    per = [o.survive_replicas // survive if survive else 0 for o in h.options]
    if not survive:  # one failure of the spec's unit: a node's replicas, or one replica
        shapes = {sh.index: sh for sh in problem.shapes}
        unit = ss.schedule.availability.unit
        per = [replicas_per_node(shapes[o.index]) if unit == "nodes" else 1 for o in h.options]
    more = tuple(dataclasses.replace(o, survive_replicas=o.survive_replicas + k) for o, k in zip(h.options, per, strict=True))
    r.one_more_failure_usd = _cost(checks, dataclasses.replace(h, options=more), limit_s)
    r.half_lag_usd = _cost(checks, dataclasses.replace(h, options=tuple(dataclasses.replace(o, lag_s=o.lag_s / 2) for o in h.options)), limit_s)
    for t, rate in enumerate(ss.profile.rates_per_s):
        cap = (MILLI * (s.reserved + s.on_demand[t]) + chosen.spot_milli * s.spot[t]) / MILLI
        row = SlotRow(t * h.slot_s, rate, chosen.need[t], s.reserved, s.on_demand[t], s.spot[t], cap, _binds(h, s, t), checks.simulated(chosen, t))
        r.slots.append(row)
    return r
