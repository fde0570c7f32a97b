"""Candidates under traffic: each shape sized by the analytic screen, so the CP-SAT model
(one candidate chosen, its cost and limits as for users) picks the cheapest shape at
the replicas the request rate needs.

For a shape, the screen's sustainable rate μ per replica (every percentile target
held) gives the replicas, ⌈rate / μ⌉, or the floor the simulation set for it
(`Problem.replica_floor`); each replica then takes rate / replicas, and the
candidate's TPOT and TTFT are the screen's at their percentiles at that load, which
the model's max_tpot and max_ttft rules hold against the targets. Its batch is the
requests in a replica on average (Little's law). A shape the idle replica already
fails keeps its idle figures (so the model refuses it, and says which target);
one stopped by memory, the scheduler or an end-to-end target at any rate is left out.
"""

from __future__ import annotations

import dataclasses
import math

from solver.optimise.candidate import Candidate
from solver.optimise.problem import Problem, Shape
from solver.physics.deployment import Targets, Workload
from solver.physics.iteration import iteration_model
from solver.spec.fields import MAX_GPUS
from solver.traffic.requests import Moments, moments
from solver.traffic.screen import (
    IDLE_RATE_PER_S,
    Screen,
    ShapeScreen,
    TrafficSizing,
    engine_limits,
    misses,
    replica_cv,
    screen,
    screen_memo,
    sustainable_rate,
)


def _shaped(shape: Shape, w: Workload) -> tuple[object, ...]:
    """What a shape's screen reads of a workload: its lengths and traffic, less the rate."""
    assert w.traffic is not None
    traffic = dataclasses.replace(w.traffic, requests_per_s=0.0)
    return (shape.index, traffic, w.context_tokens, w.prompt_tokens, w.output_tokens, w.shared_prefix_tokens, w.prefix_hit_rate)


def screened(problem: Problem, shape: Shape, w: Workload, t: Targets) -> ShapeScreen:
    """The shape's screen under `w`'s lengths and targets. It does not depend on the rate
    offered (the iteration cost, the scheduler's limits and the sustainable rate's search
    read none of it), so it is kept by the traffic less its rate: a profile's slots, a
    Pareto's rate points and a fleet's services at other rates share one."""
    assert w.traffic is not None
    shaped = _shaped(shape, w)
    key = (*shaped, t)
    got = problem._traffic.get(key)
    if got is None:
        # The iteration cost, limits and lengths do not depend on the targets: a re-solve
        # under a moved target reuses the first pass's and only re-runs the rate search.
        base = problem._traffic_base.get(shaped)
        if base is None:
            d = shape.deployment
            it = iteration_model(d, w)
            m = moments(w.traffic.prompt, w.traffic.output, it.cached_tokens)
            base = problem._traffic_base[shaped] = (it, engine_limits(d, w), m, {})
        it, limits, m, memo = base
        got = ShapeScreen(it, limits, sustainable_rate(it, limits, m, t, w.traffic.arrival_cv, memo), m, memo)
        problem._traffic[key] = got
    return got


def rate_latencies_at(problem: Problem, shape: Shape, w: Workload, t: Targets, rate_per_replica_s: float) -> tuple[float, float]:
    """(TPOT, TTFT) at their percentiles of one replica taking `rate_per_replica_s`
    requests per second, as the traffic screen puts them."""
    sc = screened(problem, shape, w, t)
    assert w.traffic is not None and sc.moments is not None
    at = screen(sc.cost, sc.limits, sc.moments, rate_per_replica_s, t)
    return at.tpot_q_s, at.ttft_q_s


def offered_rate_per_s(problem: Problem, w: Workload) -> float:
    """The rate a scenario's candidates carry: a diagnosis that serves fewer users serves a
    proportionally lower rate."""
    assert w.traffic is not None
    return w.traffic.requests_per_s * w.users / max(1, problem.workload.users)


def fewest_at_least(problem: Problem, shape: Shape, w: Workload, t: Targets) -> int | None:
    """A floor under the replicas of the shape's candidate under `t` (traffic_candidates,
    one candidate a shape: no variants), from the screens already taken of it, without a
    rate search; None: it has no candidate (the simulation dropped the shape).

    The sustainable rate μ is a rate the screen passed (the search's lo), and every delay
    the screen computes grows with the rate (the premise of that search), so μ is below
    any rate whose screen misses `t`: the least such rate screened so far, r, gives
    ⌈rate / μ⌉ ≥ ⌈rate / r⌉. Poisson arrivals only: with bursty ones fewer replicas may
    do (`_fewest`: each replica's share is smoother), and the floor is the simulation's."""
    traffic = w.traffic
    assert traffic is not None
    floor = problem.replica_floor.get(shape.index)
    if floor == 0:
        return None
    least = max(1, floor or 0)
    base = problem._traffic_base.get(_shaped(shape, w))
    if base is None or traffic.arrival_cv != 1.0:
        return least
    want = (t.ttft_percentile or 0.0, t.tpot_percentile or 0.0, t.e2e_percentile or 0.0, traffic.arrival_cv)
    missed = [key[0] for key, sc in base[3].items() if key[1:] == want and misses(sc, t)]
    if not missed or min(missed) <= IDLE_RATE_PER_S:
        return least  # none missed yet, or the idle replica: its one candidate keeps the idle figures at 1 replica
    rate = offered_rate_per_s(problem, w)
    return max(least, math.ceil(rate / min(missed) * (1 - 1e-12)))


def _screen(sc: ShapeScreen, m: Moments, rate_per_s: float, t: Targets, arrival_cv: float) -> Screen:
    """The screen of `sc`'s shape at a rate, from its memo where it holds the lengths."""
    if sc.moments is None:
        return screen(sc.cost, sc.limits, m, rate_per_s, t, arrival_cv)
    return screen_memo(sc.screens, sc.cost, sc.limits, sc.moments, rate_per_s, t, arrival_cv)


def _fewest(sc: ShapeScreen, m: Moments, rate: float, t: Targets, arrival_cv: float, alone: int) -> int:
    """The fewest replicas whose screen meets the targets when each takes its share of a
    bursty stream: `alone` replicas (each sustaining a replica's rate at the stream's
    own cv) always do; fewer may, as each replica's share is smoother (`replica_cv`)."""
    alone = max(1, alone)
    if arrival_cv == 1.0:
        return alone
    lo, hi = 0, alone
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if misses(_screen(sc, m, rate / mid, t, replica_cv(arrival_cv, mid)), t):
            lo = mid
        else:
            hi = mid
    return hi


MAX_REPLICA_VARIANTS = 16
"""With `variants` (pareto's latency frontiers): replica counts tried above the fewest."""


def traffic_candidates(
    problem: Problem, w: Workload, t: Targets, shapes: list[Shape], relaxed: frozenset[str] = frozenset(), *, variants: bool = False
) -> list[Candidate]:
    """One candidate per shape at the fewest replicas that carry the rate, or (`variants`)
    also more replicas, each taking less of the rate and so lower latencies."""
    traffic = w.traffic
    assert traffic is not None
    rate = offered_rate_per_s(problem, w)
    m = moments(traffic.prompt, traffic.output)
    out: list[Candidate] = []
    for shape in shapes:
        ph = problem.physics(shape, w)
        if not ph.valid or ph.decode is None or ph.max_batch_memory < 1:
            continue
        sc = screened(problem, shape, w, t)
        sust = sc.sustainable
        floor = problem.replica_floor.get(shape.index)
        if floor == 0:
            continue  # simulated and no replica count tried met the targets
        if sust.rate_per_s <= 0:
            if sust.binding not in ("ttft", "tpot"):
                continue
            idle = sust.idle
            out.append(
                Candidate(
                    shape,
                    ph,
                    1,
                    1,
                    w.users,
                    1,
                    idle.tpot_q_s,
                    relaxed,
                    10**9,
                    t,
                    idle.ttft_q_s,
                    TrafficSizing(rate, sust, idle, 0, sc.limits.max_num_seqs),
                )
            )
            continue
        fewest = max(_fewest(sc, m, rate, t, traffic.arrival_cv, math.ceil(rate / sust.rate_per_s * (1 - 1e-12))), floor or 0)
        counts = range(fewest, fewest + (MAX_REPLICA_VARIANTS if variants else 1))
        for replicas in counts:
            if replicas * shape.gpus_per_replica > MAX_GPUS:
                break  # past the most GPUs a plan may have (spec/fields.py)
            at = _screen(sc, m, rate / replicas, t, replica_cv(traffic.arrival_cv, replicas))
            batch = max(1, min(ph.max_batch_memory, math.ceil(at.concurrency)))
            sizing = TrafficSizing(rate, sust, at, floor or 0, sc.limits.max_num_seqs)
            out.append(Candidate(shape, ph, batch, replicas, w.users, batch, at.tpot_q_s, relaxed, 10**9, t, at.ttft_q_s, sizing))
    return out
