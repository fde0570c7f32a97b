"""`plan-opt schedule --replay`: the planned day replayed request by request
(traffic/replay.py), the check the screen-sized slots lack.

What is replayed, each part the plan's own:
- replicas per slot: reserved + on-demand + spot as the plan holds them (a spot replica
  counts whole: the plan's interruption chance a slot is some 1e-5, and its on-demand
  fallback keeps the count);
- the shape's deployment, iteration cost and engine limits (physics/iteration.py,
  traffic/screen.engine_limits), as `simulate` runs a plan;
- the readiness lag the horizon model bills (provisioning + weights at the storage
  bandwidth), each scale-up ordered that lag ahead of its slot (`lead_s = lag_s`: the
  billing rule's "a replica started for a slot is billed from the lag before it"), so
  a plan that honours its own billing is ready on time; `late=True` orders at the slot
  start instead (a reactive autoscaler), the replay of a plan that ignores the lag;
- the arrivals: the profile's rates (grown, as planned) Poisson per slot with the
  workload's lengths, on `seeds` seeds from the spec's simulation seed; or, where the
  profile was binned from a trace, the trace's own requests, once.

A slot is replayed within the whole day, never alone: the queue a slot inherits from
the one before (a burst's backlog, a late scale-up's) is what a transition costs.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.errors import InputError
from solver.explain.schedule import ScheduleResult
from solver.explain.schedule_checks import mean_e2e_s
from solver.physics.iteration import iteration_model
from solver.traffic.replay import Replay, replay
from solver.traffic.screen import engine_limits
from solver.traffic.types import Request
from solver.traffic.verify import SEEDS

SEED_CHOICES = (1, SEEDS)
"""replay's prediction bound is Student's t for SEEDS seeds; one seed has none."""


@dataclass(frozen=True)
class ScheduleReplay:
    replay: Replay
    replicas: tuple[int, ...]
    """Per slot, as replayed (reserved + on-demand + spot)."""
    lag_s: float
    lead_s: float
    source: str
    """"poisson" (the profile's rates) or the trace's name."""
    claimed: tuple[int, ...]
    """The slots the plan claims meet the SLA: every slot of a feasible plan."""

    @property
    def missed(self) -> list[int]:
        return [k for k in self.replay.missing_slots if k in self.claimed]

    @property
    def meets(self) -> bool:
        return not self.missed


def replicas_per_slot(r: ScheduleResult) -> tuple[int, ...]:
    s = r.schedule
    assert s is not None
    return tuple(s.reserved + od + sp for od, sp in zip(s.on_demand, s.spot, strict=True))


def replay_schedule(r: ScheduleResult, seeds: int = 1, *, late: bool = False) -> ScheduleReplay:
    """The plan's day replayed (see the module); `late`: scale-ups ordered at the slot
    start, the lag ignored."""
    if seeds not in SEED_CHOICES:
        raise InputError("--seeds", seeds, f"{' or '.join(map(str, SEED_CHOICES))} (the prediction bound's Student t is for {SEEDS} seeds)")
    s = r.schedule
    if s is None:
        raise InputError("--replay", r.spec.spec.model, "no plan to replay: no shape covers every slot")
    o = r.horizon.options[s.option]
    shape = next(sh for sh in r.problem.shapes if sh.index == o.index)
    d, w = shape.deployment, r.problem.workload
    assert w.traffic is not None
    cost, limits = iteration_model(d, w), engine_limits(d, w)
    sim = r.problem.spec.simulation
    replicas = replicas_per_slot(r)
    lead_s = 0.0 if late else o.lag_s
    prof = r.spec.profile
    targets, routing = r.problem.targets, sim.routing
    if prof.trace is not None:
        requests = [Request(t, p, n) for t, p, n in prof.trace]
        day = replay(prof.slot_s, replicas, cost, limits, targets, requests=requests, lag_s=o.lag_s, lead_s=lead_s,
                     front_end_s=cost.request_overhead_s, routing=routing, seed=sim.seed, seeds=1)  # fmt: skip
        source = prof.trace_name or "trace"
    else:
        day = replay(prof.slot_s, replicas, cost, limits, targets, rates_per_s=prof.rates_per_s, prompt=w.traffic.prompt,
                     output=w.traffic.output, lag_s=o.lag_s, lead_s=lead_s, front_end_s=cost.request_overhead_s,
                     routing=routing, seed=sim.seed, seeds=seeds)  # fmt: skip
        source = "poisson"
    return ScheduleReplay(day, replicas, o.lag_s, lead_s, source, tuple(range(len(replicas))))


@dataclass(frozen=True)
class ReplicaCapacity:
    """What one replica of the plan carries under the SLA, for the autoscaler's target."""

    rate_per_s: float
    """Requests/s one replica carries: the most of any slot whose simulation passed (the
    load the schedule's counts were sized and verified at); the screen's sustainable rate
    only where no simulation passed."""
    e2e_mean_s: float
    """A request's mean time in the replica at that rate (that simulation's, or the screen's)."""
    source: str = ""
    """Where the rate comes from, as the emitted header says it."""

    @property
    def in_system(self) -> float:
        """Requests in the replica, running + waiting, at that rate (Little's law: λ·W)."""
        return self.rate_per_s * self.e2e_mean_s


def replica_capacity(r: ScheduleResult) -> ReplicaCapacity:
    """The plan's replica at the most load it carries in a slot whose simulation passed
    (explain/schedule_checks.SlotChecks.most_loaded): the schedule's counts are that
    check's, so the autoscaler scales where the plan does. Where none passed (the
    simulation budget spent), the screen's sustainable rate that sized the counts, read
    from solve's candidate at the profile's peak (optimise/horizon_inputs.at_rate)."""
    from solver.optimise.horizon_inputs import at_rate

    s = r.schedule
    if s is None:
        raise InputError("--emit", None, "no plan to scale: no shape covers every slot")
    o = r.horizon.options[s.option]
    check = r.checks.most_loaded(o.index) if r.checks is not None else None
    if check is not None:
        seeds = f", passed on {len(check.seeds)} seeds" if check.seeds else ""
        where = f"the most a replica carries in a slot whose simulation passed ({check.requests_per_s:,.2f} requests/s on {check.replicas} replica{'s' if check.replicas != 1 else ''}{seeds})"
        return ReplicaCapacity(check.requests_per_s / check.replicas, mean_e2e_s(check), where)
    sizing = at_rate(r.problem, r.spec.profile.peak_per_s)[o.index].traffic
    if sizing is None or sizing.sustainable.at_rate is None:
        raise InputError("--emit", o.label, "needs the plan's replica sized under traffic (a rate it sustains); this shape has none")
    at = sizing.sustainable.at_rate
    return ReplicaCapacity(at.rate_per_s, at.e2e_mean_s, "its sustainable rate by solve's traffic screen (no slot's simulation passed)")
