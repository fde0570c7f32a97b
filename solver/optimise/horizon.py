"""The plan over a horizon as ONE CP-SAT model: one replica shape for the whole profile
(the one deployment an autoscaler scales, as solve picks one shape), a reserved count
fixed over the profile, and on-demand and spot counts per slot.

The rules, one builder each (the nurse-rostering style of the CP-SAT primer), and a
solver-free validator (`check`) and cost (`cost_usd`) the tests hold CP-SAT to:

- one shape: exactly one option is used; every count of the others is 0.
- cover: in every slot, reserved + on-demand replicas count whole, a spot replica counts
  (1 − its chance of being interrupted in the slot) (in thousandths, rounded down), and
  their sum, less the `survive` replicas that may fail, covers the slot's need: the
  replicas solve's capacity rule gives at the slot's rate (optimise/traffic_candidates).
- spot falls back to on-demand: an interrupted spot replica is replaced by an on-demand
  one; its expected cost, p × on-demand price for the slot, is billed with every spot
  replica-slot, and its expected capacity loss is the discount above.
- floor and cap: at least `min_replicas` replicas, at most `max_gpus` GPUs, every slot.
- readiness lag: a replica started for slot t (the count above slot t−1's, the profile
  repeating, so slot 0 follows the last) is billed from `lag_s` before the slot starts,
  at its tier's price; reserved replicas are always up.
- cost: reserved billed every slot, the rest by the slot they run in.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.optimise.cpsat import cp_model

MILLI = 1000
"""Capacity in thousandths of a replica: a spot replica's expected share is rounded down."""
MICRO_USD = 1e6
"""Cost in the model in micro-dollars (rounded); the reports use the exact float cost."""
TIERS = ("reserved", "on_demand", "spot")


@dataclass(frozen=True)
class Option:
    """One shape the horizon may run, with what solve's capacity rule says it needs."""

    label: str
    gpus_per_replica: int
    need: tuple[int, ...]
    """Replicas per slot solve's rule gives at that slot's rate."""
    usd_per_gpu_hour: dict[str, float]
    """By tier (reserved, on_demand, spot); a tier without an offer is absent."""
    lag_s: float = 0.0
    spot_loss: float = 0.0
    """Chance a spot replica is interrupted within a slot."""
    survive_replicas: int = 0
    """Replicas that may fail in any slot (survive N nodes: N × replicas per node)."""
    index: int = 0
    replica_rate_per_s: float = 0.0
    """A replica's sustainable rate under the SLA, as solve's screen gives it (reported)."""
    replica_binds: str = ""
    """What caps that rate (a target, memory, the scheduler)."""

    @property
    def spot_milli(self) -> int:
        return math.floor(MILLI * (1 - self.spot_loss) + 1e-9)


@dataclass(frozen=True)
class Horizon:
    options: tuple[Option, ...]
    slot_s: float
    min_replicas: int = 0
    max_gpus: int | None = None
    min_reserved: int = 0
    """Reserved replicas the plan must hold at least (the price of one more)."""

    @property
    def slots(self) -> int:
        return len(self.options[0].need) if self.options else 0


@dataclass(frozen=True)
class Schedule:
    option: int
    """Index into Horizon.options."""
    reserved: int
    on_demand: tuple[int, ...]
    spot: tuple[int, ...]
    cost_usd: float = 0.0
    status: str = ""


def _starts(counts: Sequence[int]) -> list[int]:
    """Replicas started for each slot: the rise over the previous slot, cyclically."""
    return [max(0, counts[t] - counts[t - 1]) for t in range(len(counts))]


def cost_usd(h: Horizon, s: Schedule) -> float:
    """The schedule's cost over one pass of the profile, from the rules above (no solver)."""
    o = h.options[s.option]
    slot_h, lag_h, g = h.slot_s / 3600, o.lag_s / 3600, o.gpus_per_replica
    p = o.usd_per_gpu_hour
    total = s.reserved * g * p.get("reserved", 0.0) * slot_h * h.slots
    total += sum(s.on_demand) * g * p.get("on_demand", 0.0) * slot_h
    total += sum(s.spot) * g * (p.get("spot", 0.0) + o.spot_loss * p.get("on_demand", 0.0)) * slot_h
    total += sum(_starts(s.on_demand)) * g * p.get("on_demand", 0.0) * lag_h
    total += sum(_starts(s.spot)) * g * p.get("spot", 0.0) * lag_h
    return total


def check(h: Horizon, s: Schedule) -> list[str]:
    """Every rule the schedule breaks, in words (empty: feasible)."""
    o = h.options[s.option]
    bad = []
    for tier, used in (("reserved", s.reserved > 0), ("on_demand", any(s.on_demand)), ("spot", any(s.spot))):
        if used and tier not in o.usd_per_gpu_hour:
            bad.append(f"{tier} replicas of {o.label}, which has no {tier} offer")
    if s.reserved < h.min_reserved:
        bad.append(f"{s.reserved} reserved < {h.min_reserved}")
    for t in range(h.slots):
        cap = MILLI * (s.reserved + s.on_demand[t]) + o.spot_milli * s.spot[t]
        if cap - MILLI * o.survive_replicas < MILLI * o.need[t]:
            bad.append(f"slot {t}: capacity {cap / MILLI:g} replicas less {o.survive_replicas} failed < need {o.need[t]}")
        n = s.reserved + s.on_demand[t] + s.spot[t]
        if n < h.min_replicas:
            bad.append(f"slot {t}: {n} replicas < min_replicas {h.min_replicas}")
        if h.max_gpus is not None and n * o.gpus_per_replica > h.max_gpus:
            bad.append(f"slot {t}: {n * o.gpus_per_replica} GPUs > max_gpus {h.max_gpus}")
    return bad


def upper(h: Horizon, o: Option) -> int:
    """The most replicas of one tier a cheapest plan can hold in a slot."""
    spot_share = max(1, o.spot_milli)
    return max(h.min_replicas, h.min_reserved, math.ceil(MILLI * (max(o.need) + o.survive_replicas) / spot_share))


def _cents(x: float) -> int:
    return round(x * MICRO_USD)


@dataclass
class _Vars:
    use: list = field(default_factory=list)
    reserved: list = field(default_factory=list)
    on_demand: list = field(default_factory=list)
    spot: list = field(default_factory=list)
    cost: list = field(default_factory=list)


def _variables(m: cp_model.CpModel, h: Horizon) -> _Vars:
    v = _Vars()
    for k, o in enumerate(h.options):
        u = upper(h, o)
        v.use.append(m.new_bool_var(f"use_{k}"))
        v.reserved.append(m.new_int_var(0, u if "reserved" in o.usd_per_gpu_hour else 0, f"reserved_{k}"))
        v.on_demand.append([m.new_int_var(0, u if "on_demand" in o.usd_per_gpu_hour else 0, f"od_{k}_{t}") for t in range(h.slots)])
        v.spot.append([m.new_int_var(0, u if "spot" in o.usd_per_gpu_hour else 0, f"spot_{k}_{t}") for t in range(h.slots)])
    return v


def _one_shape(m: cp_model.CpModel, h: Horizon, v: _Vars) -> None:
    m.add_exactly_one(v.use)
    for k in range(len(h.options)):
        for x in [v.reserved[k], *v.on_demand[k], *v.spot[k]]:
            m.add(x == 0).only_enforce_if(v.use[k].Not())
        m.add(v.reserved[k] >= h.min_reserved).only_enforce_if(v.use[k])


def _cover(m: cp_model.CpModel, h: Horizon, v: _Vars) -> None:
    for k, o in enumerate(h.options):
        for t in range(h.slots):
            cap = MILLI * (v.reserved[k] + v.on_demand[k][t]) + o.spot_milli * v.spot[k][t]
            m.add(cap >= MILLI * (o.need[t] + o.survive_replicas)).only_enforce_if(v.use[k])


def _floor_and_cap(m: cp_model.CpModel, h: Horizon, v: _Vars) -> None:
    for k, o in enumerate(h.options):
        for t in range(h.slots):
            n = v.reserved[k] + v.on_demand[k][t] + v.spot[k][t]
            if h.min_replicas:
                m.add(n >= h.min_replicas).only_enforce_if(v.use[k])
            if h.max_gpus is not None:
                m.add(n * o.gpus_per_replica <= h.max_gpus)


def _costs(m: cp_model.CpModel, h: Horizon, v: _Vars) -> None:
    """The objective's terms: each count at its tier's price for a slot, each start at
    its tier's price for the lag (starts ≥ the rise over the previous slot)."""
    slot_h = h.slot_s / 3600
    for k, o in enumerate(h.options):
        g, p, lag_h = o.gpus_per_replica, o.usd_per_gpu_hour, o.lag_s / 3600
        if "reserved" in p:
            v.cost.append(_cents(g * p["reserved"] * slot_h * h.slots) * v.reserved[k])
        od, sp = p.get("on_demand", 0.0), p.get("spot", 0.0)
        for counts, run_usd, start_usd, name in (
            (v.on_demand[k], od, od, "od"),
            (v.spot[k], sp + o.spot_loss * od, sp, "spot"),
        ):
            u = upper(h, o)
            for t in range(h.slots):
                v.cost.append(_cents(g * run_usd * slot_h) * counts[t])
                if lag_h > 0 and start_usd > 0:
                    start = m.new_int_var(0, u, f"start_{name}_{k}_{t}")
                    m.add(start >= counts[t] - counts[t - 1])
                    v.cost.append(_cents(g * start_usd * lag_h) * start)


BUILDERS = (_one_shape, _cover, _floor_and_cap, _costs)


def lower_bound_usd(h: Horizon, o: Option) -> float:
    """No schedule of `o` costs less: each slot's needed capacity at the cheapest price
    per replica of capacity any tier has (spot's over its surviving share), lag free."""
    p = o.usd_per_gpu_hour
    unit = [p[t] for t in ("reserved", "on_demand") if t in p]
    if "spot" in p and o.spot_milli > 0:
        unit.append((p["spot"] + o.spot_loss * p.get("on_demand", 0.0)) * MILLI / o.spot_milli)
    return sum(o.need[t] + o.survive_replicas for t in range(h.slots)) * o.gpus_per_replica * min(unit) * h.slot_s / 3600


def simple_schedules(h: Horizon, k: int) -> list[Schedule]:
    """Plain feasible-looking schedules of option k (all reserved; all on-demand), for an
    upper bound; `check` decides which hold."""
    o = h.options[k]
    each = [max(h.min_replicas, n + o.survive_replicas) for n in o.need]
    zero = (0,) * h.slots
    top = max([*each, h.min_reserved])
    out = [Schedule(k, top, zero, zero)]
    if h.min_reserved == 0:
        out.append(Schedule(k, 0, tuple(each), zero))
    return out


def prune(h: Horizon) -> Horizon:
    """The options whose lower bound is at most the cheapest simple schedule's cost: the
    others cannot hold the optimum. Options alike in every figure keep the first."""
    seen: set[tuple] = set()
    alike = []
    for o in h.options:
        key = (o.gpus_per_replica, o.need, tuple(sorted(o.usd_per_gpu_hour.items())), o.lag_s, o.spot_loss, o.survive_replicas)
        if key not in seen:
            seen.add(key)
            alike.append(o)
    h = Horizon(tuple(alike), h.slot_s, h.min_replicas, h.max_gpus, h.min_reserved)
    bounds = [cost_usd(h, s) for k in range(len(h.options)) for s in simple_schedules(h, k) if not check(h, s)]
    if not bounds:
        return h
    best = min(bounds) * (1 + 1e-9)
    return Horizon(tuple(o for o in h.options if lower_bound_usd(h, o) <= best), h.slot_s, h.min_replicas, h.max_gpus, h.min_reserved)


def _solve_model(h: Horizon, time_limit_s: float) -> tuple[Schedule, bool] | None:
    """The model of every rule over `h`'s options, solved; (schedule, proven optimal)."""
    from solver.optimise.cpsat import cp_model

    m = cp_model.CpModel()
    v = _variables(m, h)
    for build in BUILDERS:
        build(m, h, v)
    m.minimize(sum(v.cost))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_time_in_seconds = time_limit_s
    status = solver.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    k = next(i for i, u in enumerate(v.use) if solver.value(u))
    s = Schedule(k, solver.value(v.reserved[k]), tuple(solver.value(x) for x in v.on_demand[k]), tuple(solver.value(x) for x in v.spot[k]))
    return s, status == cp_model.OPTIMAL


def _memo_key(h: Horizon, o: Option) -> tuple[object, ...]:
    """What one option's model is a function of."""
    prices = tuple(sorted(o.usd_per_gpu_hour.items()))
    return (o.gpus_per_replica, o.need, prices, o.lag_s, o.spot_loss, o.survive_replicas, h.slot_s, h.min_replicas, h.max_gpus, h.min_reserved)


def solve_horizon(
    h: Horizon, time_limit_s: float = 10.0, memo: dict[tuple[object, ...], tuple[Schedule, bool] | None] | None = None
) -> Schedule | None:
    """The cheapest schedule (None: no option can cover the profile); its `option`
    indexes `h.options`.

    The model is one, but CP-SAT proves it far faster branched by hand on its one-hot
    (which shape): with the shape fixed the rest is proven in milliseconds, while the
    one-hot over the 14 shapes of specs/daily-chat-profile.yaml ran past 10 s unproven
    (and 4 % above the optimum). So each shape's model is solved, cheapest lower bound
    first, a shape skipped once its lower bound exceeds the best cost found; the
    cheapest (ties: the first option) is the model's optimum. `memo` keeps each shape's
    solution by what its model is a function of, for a caller that re-solves with a few
    options changed (explain/schedule_checks.py)."""
    pruned = prune(h)
    order = sorted(range(len(pruned.options)), key=lambda k: (lower_bound_usd(pruned, pruned.options[k]), k))
    best: Schedule | None = None
    proven = True
    for k in order:
        o = pruned.options[k]
        if best is not None and lower_bound_usd(pruned, o) > best.cost_usd * (1 + 1e-9):
            continue
        key = _memo_key(pruned, o)
        if memo is not None and key in memo:
            got = memo[key]
        else:
            got = _solve_model(dataclasses.replace(pruned, options=(o,)), time_limit_s)
            if memo is not None:
                memo[key] = got
        if got is None:
            continue
        one, optimal = got
        proven = proven and optimal
        s = Schedule(h.options.index(o), one.reserved, one.on_demand, one.spot)
        s = dataclasses.replace(s, cost_usd=cost_usd(h, s))
        if best is None or s.cost_usd < best.cost_usd - 1e-9 or (abs(s.cost_usd - best.cost_usd) <= 1e-9 and s.option < best.option):
            best = s
    if best is None:
        return None
    return dataclasses.replace(best, status="optimal" if proven else "feasible (time limit)")
