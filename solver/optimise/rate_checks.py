"""The rate frontier's two checks against what a solve under traffic accepts: the
rate each of r replicas sustains when they share a bursty stream, and a point's plan
simulated at the spec's rate on SEEDS seeds (so a point priced from the screen alone
is never shown as if the simulation had accepted it)."""

from __future__ import annotations

from solver.optimise.candidate import Candidate
from solver.optimise.problem import Problem
from solver.optimise.traffic_candidates import screened
from solver.physics.deployment import Targets, Workload
from solver.traffic.requests import moments
from solver.traffic.screen import replica_cv, sustainable_rate
from solver.traffic.verify import settings_for, verify_plan

RATE_TOLERANCE = 1e-3
"""A point within the screen's precision of the spec's rate (sustainable_rate's 0.1 %)
claims to serve it, and is simulated at it."""


def per_replica_rate(problem: Problem, c: Candidate, w: Workload, t: Targets, replicas: int) -> float:
    """What each of `replicas` replicas of c's shape sustains: a replica's own rate for a
    Poisson stream (or one replica); for a bursty one, at the smoother share each of
    them sees (replica_cv), which is more."""
    assert c.traffic is not None and w.traffic is not None
    cv = w.traffic.arrival_cv
    if cv == 1 or replicas == 1:
        return c.traffic.sustainable.rate_per_s
    sc = screened(problem, c.shape, w, t)
    m = sc.moments or moments(w.traffic.prompt, w.traffic.output)
    return sustainable_rate(sc.cost, sc.limits, m, t, replica_cv(cv, replicas)).rate_per_s


def simulation_misses(problem: Problem, c: Candidate, w: Workload, t: Targets) -> tuple[str, ...]:
    """The targets c's plan misses, simulated at the spec's rate on SEEDS seeds and held
    to each bound as a solve holds its plan (verify_plan); () when it passes."""
    sim = problem.spec.simulation
    check = verify_plan(c.shape.deployment, w, t, c.replicas, settings_for(sim.requests, sim.seed, sim.routing, c.replicas))
    return tuple(check.failing)
