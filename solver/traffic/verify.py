"""A plan under traffic, checked by simulation: the spec's requests (seeded) served by
the plan's replicas, iteration by iteration, and the percentiles held to the targets."""

from __future__ import annotations

from dataclasses import dataclass

from solver.physics.deployment import Deployment, Targets, Workload
from solver.physics.iteration import iteration_model
from solver.traffic.requests import draw_requests, uncached
from solver.traffic.screen import DEFAULT_PERCENTILE, engine_limits
from solver.traffic.simulate import SimResult, simulate
from solver.units import meets_time


@dataclass(frozen=True)
class Settings:
    requests: int = 5_000
    seed: int = 0
    routing: str = "round_robin"


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

    @property
    def failing(self) -> list[str]:
        """The targets the simulation misses, by the name the constraints use."""
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


def simulate_plan(d: Deployment, w: Workload, targets: Targets, replicas: int, settings: Settings) -> Check:
    traffic = w.traffic
    assert traffic is not None
    cost = iteration_model(d, w)
    requests = uncached(draw_requests(traffic, settings.requests, settings.seed), cost.cached_tokens)
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
