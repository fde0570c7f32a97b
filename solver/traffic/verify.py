"""A plan under traffic, checked by simulation: the spec's requests (seeded) served by
the plan's replicas, iteration by iteration, and the percentiles held to the targets.

One run is one draw: a plan at the edge passes on one seed and misses on the next. So
`verify_plan` runs SEEDS independent seeds (the spec's seed and the next ones, the same
requests each) and holds to each target the one-sided 95 % prediction bound of the
next seed's percentile, mean + t₀.₉₅,ₖ₋₁ · s · √(1 + 1/k) over the k per-seed
estimates (independent runs; the requests within one run are not, so an
order-statistic interval over one run's requests would be too narrow). The plan
passes when every bound meets its target; the margin is target − bound.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass

from solver.physics.deployment import Deployment, Targets, Traffic, Workload
from solver.physics.iteration import iteration_model
from solver.traffic.requests import RequestStream, uncached
from solver.traffic.screen import DEFAULT_PERCENTILE, engine_limits
from solver.traffic.simulate import SimResult, simulate
from solver.traffic.types import Request
from solver.units import meets_time


@dataclass(frozen=True)
class Settings:
    requests: int = 5_000
    seed: int = 0
    routing: str = "round_robin"


SEEDS = 5
"""Independent runs behind a verdict (the spec's seed and the SEEDS − 1 after it)."""
T_95 = 2.131846786326649
"""Student's t, one-sided 95 %, SEEDS − 1 = 4 degrees of freedom."""
PREDICTION = T_95 * math.sqrt(1 + 1 / SEEDS)
"""The bound's multiple of the per-seed standard deviation (2.335). It exceeds
(k − 1)/√k = 1.789, the most any one of k values can lie above their mean in sample
standard deviations (Samuelson's inequality), so one seed past a target puts the bound
past it too: a run that misses settles the verdict without the rest."""
assert PREDICTION >= (SEEDS - 1) / math.sqrt(SEEDS)


@dataclass(frozen=True)
class Bound:
    """One target over SEEDS runs: each run's figure and the 95 % bound on the next
    run's (upper for a time, lower for goodput)."""

    target: str
    """max_ttft, max_tpot, max_e2e or goodput."""
    limit: float
    per_seed: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.per_seed)

    @property
    def bound(self) -> float:
        spread = PREDICTION * statistics.stdev(self.per_seed) if len(self.per_seed) > 1 else 0.0
        return self.mean - spread if self.target == "goodput" else self.mean + spread

    @property
    def margin(self) -> float:
        """How far the bound is inside the target (negative: past it)."""
        return self.bound - self.limit if self.target == "goodput" else self.limit - self.bound

    @property
    def ok(self) -> bool:
        return self.bound >= self.limit if self.target == "goodput" else meets_time(self.bound, self.limit)


REQUESTS_PER_REPLICA = 300
MAX_REQUESTS = 20_000
"""A plan of many replicas is simulated with at least REQUESTS_PER_REPLICA requests
each (a few per replica would be mostly start-up and drain), up to MAX_REQUESTS."""


def settings_for(requests: int, seed: int, routing: str, replicas: int) -> Settings:
    """The spec's simulation settings for a plan of `replicas` (REQUESTS_PER_REPLICA)."""
    return Settings(max(requests, min(MAX_REQUESTS, REQUESTS_PER_REPLICA * replicas)), seed, routing)


@dataclass(frozen=True)
class Check:
    """One simulation of a plan: the percentiles the targets name, each against its limit."""

    replicas: int
    requests_per_s: float
    sim: SimResult
    ttft_q_s: float
    tpot_q_s: float
    e2e_q_s: float
    goodput: float
    targets: Targets
    seeds: tuple[int, ...] = ()
    """The seeds run (the figures above are the first's); () for one run."""
    bounds: tuple[Bound, ...] = ()
    """With every seed run: each target's bound, which decides `failing`."""

    @property
    def failing(self) -> list[str]:
        """The targets the simulation misses (the bounds, over several seeds), by the name
        the constraints use."""
        if self.bounds:
            return [b.target for b in self.bounds if not b.ok] + (["rejected"] if self.sim.rejected else [])
        t = self.targets
        out = []
        if t.max_ttft_s is not None and not meets_time(self.ttft_q_s, t.max_ttft_s):
            out.append("max_ttft")
        if t.max_tpot_s is not None and not meets_time(self.tpot_q_s, t.max_tpot_s):
            out.append("max_tpot")
        if t.max_e2e_s is not None and not meets_time(self.e2e_q_s, t.max_e2e_s):
            out.append("max_e2e")
        if t.min_goodput is not None and self.goodput < t.min_goodput:
            out.append("goodput")
        if self.sim.rejected:
            out.append("rejected")
        return out

    @property
    def ok(self) -> bool:
        return not self.failing


_STREAMS: dict[tuple[int, int], tuple[Traffic, RequestStream]] = {}
MAX_STREAMS = 32
"""Request streams plan_requests keeps (a bound on memory)."""


def plan_requests(traffic: Traffic, count: int, seed: int, cached_tokens: int) -> list[Request]:
    """The seeded requests a plan is simulated on: the first `count` of the seed's
    stream, drawn once for every plan that runs the same seed (a function of these
    alone; the traffic kept beside its stream, so that the id in the key stays its own)."""
    key = (id(traffic), seed)
    got = _STREAMS.pop(key, None)
    if got is None or got[0] is not traffic:
        if len(_STREAMS) >= MAX_STREAMS:  # the least recently used out (a schedule's rates × seeds outnumber it)
            del _STREAMS[next(iter(_STREAMS))]
        got = (traffic, RequestStream(traffic, seed))
    _STREAMS[key] = got
    return uncached(got[1].first(count), cached_tokens)


def simulate_plan(d: Deployment, w: Workload, targets: Targets, replicas: int, settings: Settings) -> Check:
    traffic = w.traffic
    assert traffic is not None
    cost = iteration_model(d, w)
    requests = plan_requests(traffic, settings.requests, settings.seed, cost.cached_tokens)
    sim = simulate(requests, cost, engine_limits(d, w), replicas=replicas, routing=settings.routing, front_end_s=cost.request_overhead_s)
    qt = targets.ttft_percentile or DEFAULT_PERCENTILE
    qp = targets.tpot_percentile or DEFAULT_PERCENTILE
    qe = targets.e2e_percentile or DEFAULT_PERCENTILE
    has_tpot = any(r.tpot_s is not None for r in sim.results)
    return Check(
        replicas=replicas,
        requests_per_s=traffic.requests_per_s,
        sim=sim,
        ttft_q_s=sim.percentile("ttft_s", qt) if sim.results else float("inf"),
        tpot_q_s=sim.percentile("tpot_s", qp) if has_tpot else 0.0,
        e2e_q_s=sim.percentile("e2e_s", qe) if sim.results else float("inf"),
        goodput=sim.goodput(targets.max_ttft_s, targets.max_tpot_s, targets.max_e2e_s) if sim.results or sim.rejected else 0.0,
        targets=targets,
    )


FIGURES = (("max_ttft", "ttft_q_s"), ("max_tpot", "tpot_q_s"), ("max_e2e", "e2e_q_s"))


def verify_plan(
    d: Deployment, w: Workload, targets: Targets, replicas: int, settings: Settings, seeds: int = SEEDS, first: Check | None = None
) -> Check:
    """The plan on `seeds` seeds from settings.seed, held to each target's bound; the
    first run that misses ends it (its Check, naming what it missed and its seed).
    `first`: the run on settings.seed already made (verify_plan with seeds=1, the same
    inputs: a seeded run is a function of them), not run again."""
    runs: list[Check] = []
    for i in range(seeds):
        seed = (settings.seed + i) % 2**32
        if i == 0 and first is not None:
            run = dataclasses.replace(first, seeds=(), bounds=())
        else:
            run = simulate_plan(d, w, targets, replicas, dataclasses.replace(settings, seed=seed))
        runs.append(run)
        if not run.ok or seeds == 1:
            return dataclasses.replace(run, seeds=tuple((settings.seed + j) % 2**32 for j in range(i + 1)))
    limits = {"max_ttft": targets.max_ttft_s, "max_tpot": targets.max_tpot_s, "max_e2e": targets.max_e2e_s}
    bounds = [Bound(name, limit, tuple(getattr(r, attr) for r in runs)) for name, attr in FIGURES if (limit := limits[name]) is not None]
    if targets.min_goodput is not None:
        bounds.append(Bound("goodput", targets.min_goodput, tuple(r.goodput for r in runs)))
    return dataclasses.replace(runs[0], seeds=tuple((settings.seed + j) % 2**32 for j in range(seeds)), bounds=tuple(bounds))
