"""Requests over time, served by replicas: an iteration-level simulator of a
continuous-batching engine, scheduling as vLLM V1 does, with two engines' rules told
apart (EngineLimits): SGLang (prefill_schedule "separate", its default without
--enable-mixed-chunk) runs prompt chunks first, as an iteration of their own that every
decoder waits for; vLLM V0's multi-step scheduling (scheduler_steps k > 1) schedules k
decode steps at once, so nothing is admitted until the window in flight is done (a
prompt-only iteration is one step; windows follow each other from the first decode step).
SGLang's overlap scheduler (overlap_schedule) chooses the next batch as the current one
starts, so a request that arrives during an iteration is first seen by the one after
next; its admission (reserve_new_tokens) keeps KV for a share of the running requests'
outputs to come (replica.py says the rule), so requests wait for KV rather than be
recomputed.

The physics says what one iteration costs; what a user sees under traffic also
depends on the queue, the batch the scheduler builds and the KV cache it runs out of.
Each replica repeats one iteration at a time:

1. Every running sequence that has finished its prompt decodes one token (one token
   of the iteration's budget each). A decode step writes the KV of the sequence's
   last token and reads its whole length (prompt + tokens generated: what the cost
   is given as decode_context_tokens). A sequence whose next KV slot needs a new
   block, when none is free, preempts the most recently admitted running request
   (itself, if it is the last): recomputation — its blocks are freed and it goes
   back to the FRONT of the waiting queue, to prefill its prompt and the tokens
   generated so far again. Its first-token time stays as first measured. An
   iteration that preempted admits no waiting request (as vLLM V1).
2. The rest of the budget (separate: all of it, in an iteration without decoders,
   whenever a chunk can run) goes to prompt chunks: first to requests admitted and
   partly prefilled (a chunk as large as the budget and the free blocks allow), then
   to waiting requests in FCFS order, admitted while fewer than max_num_seqs run, the
   budget lasts and the free blocks cover the request's chunk (the first request they
   do not cover stops admission: FCFS, no overtaking).
   Without chunked prefill (vLLM V0) a prompt is prefilled whole in one iteration, and
   an iteration that admits a prompt runs prompts only; it decodes when no waiting
   prompt can be admitted. A recomputation longer than the budget is let through
   alone in its iteration (vLLM V0 would drop it; here every admitted request ends).
3. The iteration takes `cost.iteration_s` of what was scheduled. At its end a request
   whose prompt (or recomputation) completed emits a token — its first, for a new
   request — decoders emit one token each, and a request that has all its output
   tokens finishes and frees its blocks.

An arrival is seen by iterations that start at or after it; an idle replica jumps to
the next arrival. Routing is round robin, or join the shortest queue (fewest
requests waiting or running at the arrival instant, ties to the lowest index; kept in
heaps, routing.py, not scanned). With
windows (a day's replicas scaled up and down, replay.py) only the replicas whose window
holds the arrival instant take it, by the same two rules (windows.py). A
request that could never be served is rejected at arrival, and takes no turn: its
longest KV (prompt + output − 1 tokens, since the last token's KV is never written)
over the replica's whole blocks, or, without chunking, its prompt over the budget.
Nothing is random.

Speed: decode-only stretches are advanced in bulk. While no prompt is being
prefilled and no waiting request can be admitted, the batch stays the same until the
next arrival routed here (with jsq: any arrival), the next completion, or the next
iteration that needs a KV block beyond the free ones; the k iterations before that
are taken at once. A fixed batch's iteration cost is affine in its context (the
physics guarantees it), so the k iterations take k × (first + last) / 2 exactly, and
the blocks they allocate are counted exactly from each sequence's position in its
block. Decoders are kept as
aggregates (count, summed context, counts by position within a block, a heap of
completion steps), so an iteration costs O(1) plus its events, not O(batch).

Bounds: a simulation takes at most budget.MAX_EVENTS iterations, bulk stretches and
arrivals (past it, TooMuchWork names what to reduce) and stops at its caller's
deadline (budget.deadline: Cancelled).
"""

from __future__ import annotations

import gc
import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from operator import attrgetter

from solver.traffic.budget import Work
from solver.traffic.replica import DONE, Replica, Seq
from solver.traffic.routing import ShortestQueue
from solver.traffic.types import (
    METRICS,
    ROUTINGS,
    TIMELINE_POINTS,
    EngineLimits,
    IterationCost,
    ReplicaStats,
    Request,
    RequestResult,
    SimResult,
    percentile,
)
from solver.traffic.windows import Windowed

__all__ = [
    "METRICS",
    "ROUTINGS",
    "EngineLimits",
    "IterationCost",
    "ReplicaStats",
    "Request",
    "RequestResult",
    "SimResult",
    "Work",
    "percentile",
    "simulate",
]
__all__ += ["Replica", "Seq"]  # for tests/traffic/jsq_scan.py


def _downsampled(points: list[tuple[float, int]]) -> list[tuple[float, int]]:
    if len(points) <= TIMELINE_POINTS:
        return points
    size = len(points) / TIMELINE_POINTS
    out = []
    # each stretch's highest point, the first of equals (as max(stretch, key=…) picks),
    # without a slice and a key call per point (a verdict cuts two timelines a run)
    lo = 0
    for i in range(1, TIMELINE_POINTS + 1):
        hi = int(i * size)
        best = points[lo]
        top = best[1]
        for j in range(lo + 1, hi):
            p = points[j]
            if p[1] > top:
                best, top = p, p[1]
        out.append(best)
        lo = hi
    return out


_paused = 0
_paused_lock = threading.Lock()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while any simulation runs (a count, so that
    simulations in threads nest; off already: left off). A simulation makes no reference
    cycles, but its few hundred thousand live objects made the collector's full passes
    a fifth of its time; other threads' cycles are collected once the last one ends."""
    global _paused
    with _paused_lock:
        mine = _paused > 0 or gc.isenabled()
        if mine:
            _paused += 1
            gc.disable()
    try:
        yield
    finally:
        if mine:
            with _paused_lock:
                _paused -= 1
                if _paused == 0:
                    gc.enable()


def simulate(
    requests: Sequence[Request],
    cost: IterationCost,
    limits: EngineLimits,
    replicas: int = 1,
    routing: str = "round_robin",
    *,
    front_end_s: float = 0.0,
    windows: Sequence[tuple[float, float]] | None = None,
    max_events: int | None = None,
    _step_by_step: bool = False,
) -> SimResult:
    """Serve `requests` on `replicas` identical engines; each reaches its engine
    `front_end_s` after it arrives (the server's parsing and tokenisation, which every
    request's TTFT and end to end include). `windows`, one per replica: replica i takes
    the requests that reach it within [ready_s, stop_s) and drains what it holds after
    (windows.py; a request none takes is rejected); None: every replica, always.
    `max_events`: the work bound (budget.MAX_EVENTS unless given). `_step_by_step`
    turns the bulk decode off (for the test that checks the two agree)."""
    if not 0.0 <= front_end_s < math.inf:
        raise ValueError(f"front_end_s must be finite and not negative, got {front_end_s!r}")
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, got {replicas!r}")
    if routing not in ROUTINGS:
        raise ValueError(f"routing must be one of {', '.join(ROUTINGS)}, got {routing!r}")
    if windows is not None and len(windows) != replicas:
        raise ValueError(f"windows must give one window per replica ({replicas}), got {len(windows)}")
    with _collector_paused():
        return _serve(requests, cost, limits, replicas, routing, front_end_s, _step_by_step, windows, max_events)


def _serve(
    requests: Sequence[Request],
    cost: IterationCost,
    limits: EngineLimits,
    replicas: int,
    routing: str,
    front_end_s: float,
    step_by_step: bool,
    windows: Sequence[tuple[float, float]] | None = None,
    max_events: int | None = None,
) -> SimResult:
    """simulate(), its arguments checked."""
    work = Work(f"{len(requests):,} requests on {replicas:,} replicas ({routing})", max_events)
    engines = [Replica(i, cost, limits, step_by_step, work) for i in range(replicas)]
    windowed = Windowed(engines, windows, routing == "jsq") if windows is not None else None
    jsq = ShortestQueue(engines) if routing == "jsq" and windowed is None else None
    served: list[Seq] = []
    rejected: list[Request] = []
    # never served: its longest KV over the whole blocks (ceil(x / block) > blocks ⟺
    # x > blocks × block) or, without chunking, its prompt over the budget
    kv_tokens = limits.kv_blocks * limits.block_size_tokens
    whole_budget = None if limits.chunked_prefill else limits.max_num_batched_tokens
    turn = 0
    for r in sorted(requests, key=attrgetter("arrival_s")):
        work.events += 1
        if work.events >= work.next_check:
            work.check()
        prompt = r.prompt_tokens
        if prompt + r.output_tokens - 1 > kv_tokens or (whole_budget is not None and prompt > whole_budget):
            rejected.append(r)
            continue
        t = r.arrival_s + front_end_s
        if windowed is not None:
            i = windowed.route(t)
            if i is None:
                rejected.append(r)  # no replica takes requests at t
                continue
            engine = engines[i]
            engine.advance(t)
        elif jsq is None:
            engine = engines[turn]
            turn = turn + 1 if turn + 1 < replicas else 0
            if engine.clock < t:  # else its last iteration ends after t: nothing starts before it
                engine.advance(t)
        else:
            engine = engines[jsq.route(t)]
            engine.advance(t)  # its load was known without advancing it (a quiet stretch)
        s = Seq(r)
        engine.arrive(s, t)
        if jsq is not None:
            jsq.update(engine.index, t)
        elif windowed is not None:
            windowed.update(engine.index, t)
        served.append(s)
    for e in engines:
        e.advance(math.inf)

    assert all(s.state == DONE for s in served)
    results = [RequestResult(s.request, s.replica, s.first_s, s.finish_s, s.preemptions) for s in served]  # type: ignore[arg-type]  # done: first_s set
    duration = max(s.finish_s for s in served) - served[0].request.arrival_s if served else 0.0
    stats = []
    for e in engines:
        st = e.stats
        st.mean_queue = e.wait_area_s / duration if duration > 0 else 0.0
        st.queue_timeline = _downsampled(st.queue_timeline)
        stats.append(st)
    return SimResult(results, stats, duration, rejected)
