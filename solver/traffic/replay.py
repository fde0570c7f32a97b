"""A day replayed request by request: the plan's replicas per slot, started with their
scale-up lag, serving the day's arrivals in the one simulator (simulate.py, with a
window per replica: windows.py), and per slot the percentiles, goodput and SLA misses.

The scaling rule (pod_windows):
- The day starts with slot 0's replicas running (ready at t = 0).
- A scale-up for slot k (more replicas than slot k − 1) is ordered `lead_s` before the
  slot starts (at the slot start when lead_s = 0: a reactive autoscaler) and each new
  replica is ready `lag_s` after its order: at k·slot − lead_s + lag_s. So a plan that
  orders lag_s ahead (lead_s ≥ lag_s) is ready on time; one that orders at the slot
  start leaves the slot's first lag_s on the old count.
- A scale-down at slot k stops the newest replicas at the slot start (Kubernetes
  removes the most recently started pods first): they take no new request and drain
  the ones they hold. A replica stopped before it was ready never serves, and none is
  stopped that a later slot's order, already due, wants again.
- Arrivals while no replica is ready (a slot of 0) are rejected: each is a miss.

Arrivals are Poisson within each slot at its rate (exact for a piecewise-constant rate:
the gaps are memoryless, so each slot starts afresh), or a trace's requests as given.
A slot's figures are over the requests that arrive in it. Random arrivals count with
their spread: the day is run on `seeds` seeds (verify.SEEDS by default) and every
figure is verify.Bound's mean and one-sided 95 % prediction bound over them (upper
for a time or a count of misses, lower for goodput), the simulator's own verdict rule;
a trace is one realisation, run once.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from solver.errors import InputError
from solver.physics.deployment import LengthDistribution, Targets
from solver.traffic.draws import BULK_DISTS, Uniforms, arrivals, paired_lengths
from solver.traffic.requests import drawer
from solver.traffic.screen import DEFAULT_PERCENTILE
from solver.traffic.simulate import EngineLimits, IterationCost, Request, SimResult, simulate
from solver.traffic.types import percentile
from solver.traffic.verify import SEEDS, Bound
from solver.units import TIME_TOLERANCE

REPLAY_MAX_EVENTS = 60_000_000
"""A day's work bound (simulate's MAX_EVENTS is sized for one plan's few thousand
requests): about fifteen million requests at four events each, some five minutes at
the 48,000 requests a second bench/bench_replay.py measures (2026-12-05)."""


def pod_windows(slot_s: float, replicas: Sequence[int], lag_s: float, lead_s: float = 0.0) -> list[tuple[float, float]]:
    """Each replica's [ready_s, stop_s) under the module's scaling rule, in start order.
    The count wanted at time τ is the slot's, or a later slot's once its order time
    (its start − lead_s, before 0 for the day's first slots) has come, whichever is more: a scale-down never stops a
    replica that a scale-up already ordered for would need again."""
    starts = [k * slot_s for k in range(len(replicas))]
    orders = [t - lead_s for t in starts]  # before 0 for a slot within lead_s of the start: ordered the day before

    def wanted(tau: float, k: int) -> int:
        due = bisect_right(orders, tau)  # orders never decrease: slots [0, due) are ordered by tau
        return max(replicas[k : max(due, k + 1)])

    windows: list[tuple[float, float]] = [(0.0, math.inf)] * replicas[0]
    live = list(range(replicas[0]))  # the replicas running or ordered, oldest first
    for tau, k, at_start in sorted({(t, k, True) for k, t in enumerate(starts)} | {(o, j - 1, False) for j, o in enumerate(orders) if j}):
        n = wanted(tau, k)
        while at_start and len(live) > n:
            i = live.pop()
            windows[i] = (windows[i][0], tau)
        for _ in range(n - len(live)):
            live.append(len(windows))
            windows.append((tau + lag_s, math.inf))
    return windows


def day_requests(slot_s: float, rates_per_s: Sequence[float], prompt: LengthDistribution, output: LengthDistribution, seed: int) -> list[Request]:
    """Poisson arrivals at each slot's rate, lengths drawn per request (requests.drawer);
    gaps and lengths from separate seeded streams, as requests.RequestStream. Drawn in
    bulk (draws.py: the same numbers as the loop below, which draws the lengths that
    draws.py does not take)."""
    uniforms = Uniforms(f"{seed}:arrivals")
    times: list[float] = []
    for k, rate in enumerate(rates_per_s):
        if rate > 0:
            times += arrivals(uniforms, k * slot_s, (k + 1) * slot_s, rate)
    if prompt.dist in BULK_DISTS and output.dist in BULK_DISTS:
        prompts, outputs = paired_lengths(prompt, output, len(times), Uniforms(f"{seed}:lengths"))
        return [Request(t, p, o) for t, p, o in zip(times, prompts, outputs)]
    lengths, draw_prompt, draw_output = random.Random(f"{seed}:lengths"), drawer(prompt), drawer(output)
    return [Request(t, draw_prompt(lengths), draw_output(lengths)) for t in times]


@dataclass(frozen=True)
class SlotReplay:
    """One slot over the seeds: each figure a verify.Bound (per seed, mean, bound); None
    where no request arrived (or, for TPOT, none made two tokens) on any seed."""

    index: int
    start_s: float
    replicas: int
    """Wanted by the plan."""
    ready_at_start: int
    """Taking requests at the slot's start (fewer than wanted while a scale-up is late)."""
    transition: bool
    """The plan's count changes at this slot."""
    arrivals: Bound
    ttft_p50_s: Bound | None
    ttft_p99_s: Bound | None
    tpot_p50_s: Bound | None
    tpot_p99_s: Bound | None
    goodput_per_s: Bound
    """Requests that met every limit, per second of the slot."""
    misses: Bound
    """Requests that missed a limit or were rejected."""
    sla: tuple[Bound, ...]
    """Each target at its own percentile (and min_goodput as a share): the verdict."""

    @property
    def meets(self) -> bool:
        return all(b.ok for b in self.sla)


@dataclass(frozen=True)
class Replay:
    slot_s: float
    seeds: tuple[int, ...]
    slots: tuple[SlotReplay, ...]
    requests: int
    """Requests replayed, all seeds together."""

    @property
    def missing_slots(self) -> list[int]:
        return [s.index for s in self.slots if not s.meets]


def _checked(slot_s: float, replicas: Sequence[int], lag_s: float, lead_s: float, rates: Sequence[float] | None, seeds: int) -> None:
    """Bad input named, as InputError."""
    if not 0 < slot_s < math.inf:
        raise InputError("slot_s", slot_s, "a slot's length in seconds, above 0 and finite")
    if not replicas:
        raise InputError("replicas", list(replicas), "one replica count per slot, at least one slot")
    for k, n in enumerate(replicas):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError(f"replicas[{k}]", n, "a whole number of replicas, 0 or more")
    for name, v in (("lag_s", lag_s), ("lead_s", lead_s)):
        if not 0 <= v < math.inf:
            raise InputError(name, v, "seconds, 0 or more and finite")
    if rates is not None:
        if len(rates) != len(replicas):
            raise InputError("rates_per_s", f"{len(rates)} slots", f"one rate per slot of the replica schedule ({len(replicas)})")
        for k, r in enumerate(rates):
            if not 0 <= r < math.inf:
                raise InputError(f"rates_per_s[{k}]", r, "requests per second, 0 or more and finite")
    if seeds not in (1, SEEDS):
        raise InputError("seeds", seeds, f"1 or {SEEDS} (the prediction bound's Student t is for {SEEDS} seeds)")


def replay(
    slot_s: float,
    replicas: Sequence[int],
    cost: IterationCost,
    limits: EngineLimits,
    targets: Targets,
    *,
    rates_per_s: Sequence[float] | None = None,
    prompt: LengthDistribution | None = None,
    output: LengthDistribution | None = None,
    requests: Sequence[Request] | None = None,
    lag_s: float = 0.0,
    lead_s: float = 0.0,
    front_end_s: float = 0.0,
    routing: str = "round_robin",
    seed: int = 0,
    seeds: int = SEEDS,
) -> Replay:
    """The day of `replicas` per slot under `rates_per_s` (Poisson, lengths `prompt` and
    `output`, on `seeds` seeds from `seed`) or under a trace's `requests` (once); cost,
    limits and front_end_s as simulate() takes them."""
    _checked(slot_s, replicas, lag_s, lead_s, rates_per_s, seeds)
    end_s = len(replicas) * slot_s
    seed_list: tuple[int, ...]
    if requests is not None:
        late = next((r for r in requests if not 0 <= r.arrival_s < end_s), None)
        if late is not None:
            raise InputError(
                "requests", f"an arrival at {late.arrival_s:g} s", f"arrivals within the schedule's {len(replicas)} slots, [0, {end_s:g}) s"
            )
        days, seed_list = [list(requests)], (seed,)
    elif rates_per_s is None or prompt is None or output is None:
        raise InputError("replay", None, "give rates_per_s with prompt and output lengths, or a trace's requests")
    else:
        seed_list = tuple((seed + i) % 2**32 for i in range(seeds))
        days = [day_requests(slot_s, rates_per_s, prompt, output, s) for s in seed_list]
    windows = pod_windows(slot_s, replicas, lag_s, lead_s)
    runs = []
    for day in days:
        sim = simulate(day, cost, limits, max(1, len(windows)), routing, front_end_s=front_end_s,
                       windows=windows or [(0.0, 0.0)], max_events=REPLAY_MAX_EVENTS)  # fmt: skip
        runs.append(_per_slot(sim, slot_s, len(replicas), targets))
    slots = []
    for k, n in enumerate(replicas):
        start = k * slot_s
        ready = sum(1 for a, b in windows if a <= start < b)
        slots.append(_slot(k, start, n, ready, k > 0 and n != replicas[k - 1], [run[k] for run in runs], slot_s, targets))
    return Replay(slot_s, seed_list, tuple(slots), sum(len(d) for d in days))


@dataclass
class _Tally:
    """One slot on one seed: the requests that arrived in it."""

    ttft: list[float]
    tpot: list[float]
    e2e: list[float]
    good: int = 0
    missed: int = 0
    """Served past a limit."""
    rejected: int = 0

    @property
    def arrivals(self) -> int:
        return len(self.ttft) + self.rejected


def _per_slot(sim: SimResult, slot_s: float, n: int, t: Targets) -> list[_Tally]:
    """Each request's times in the slot it arrived in. A day's 731,000 results: the
    RequestResult properties and meets_time written out (the same subtractions and
    division, each limit × (1 + TIME_TOLERANCE) taken once: the same floats, the same
    verdicts)."""
    tallies = [_Tally([], [], []) for _ in range(n)]
    keep_e2e = t.max_e2e_s is not None
    inf, tolerance = math.inf, 1 + TIME_TOLERANCE
    ttft_limit = inf if t.max_ttft_s is None else t.max_ttft_s * tolerance
    tpot_limit = inf if t.max_tpot_s is None else t.max_tpot_s * tolerance
    e2e_limit = inf if t.max_e2e_s is None else t.max_e2e_s * tolerance
    for r in sim.results:
        q = r.request
        arrival, first, finish, made = q.arrival_s, r.first_token_s, r.finish_s, q.output_tokens
        tally = tallies[int(arrival // slot_s)]
        ttft = first - arrival  # RequestResult.ttft_s
        tally.ttft.append(ttft)
        ok = ttft <= ttft_limit
        if made != 1:
            tpot = (finish - first) / (made - 1)  # RequestResult.tpot_s
            tally.tpot.append(tpot)
            ok = ok and tpot <= tpot_limit
        e2e = finish - arrival  # RequestResult.e2e_s
        if keep_e2e:
            tally.e2e.append(e2e)
        if ok and e2e <= e2e_limit:
            tally.good += 1
        else:
            tally.missed += 1
    for q in sim.rejected:
        tallies[int(q.arrival_s // slot_s)].rejected += 1
    for tally in tallies:
        tally.ttft.sort()
        tally.tpot.sort()
        tally.e2e.sort()
    return tallies


def _over_seeds(name: str, limit: float, values: list[float | None]) -> Bound | None:
    got = tuple(v for v in values if v is not None)
    return Bound(name, limit, got) if got else None


def _slot(k: int, start: float, n: int, ready: int, transition: bool, runs: list[_Tally], slot_s: float, t: Targets) -> SlotReplay:
    """A slot's figures over the seeds, and its verdict: each target at its percentile."""
    inf = math.inf

    def q(values: list[float], p: float) -> float | None:
        return percentile(values, p) if values else None

    ttft_limit = t.max_ttft_s if t.max_ttft_s is not None else inf
    tpot_limit = t.max_tpot_s if t.max_tpot_s is not None else inf
    sla: list[Bound | None] = []
    if t.max_ttft_s is not None:
        sla.append(_over_seeds("max_ttft", t.max_ttft_s, [q(r.ttft, t.ttft_percentile or DEFAULT_PERCENTILE) for r in runs]))
    if t.max_tpot_s is not None:
        sla.append(_over_seeds("max_tpot", t.max_tpot_s, [q(r.tpot, t.tpot_percentile or DEFAULT_PERCENTILE) for r in runs]))
    if t.max_e2e_s is not None:
        sla.append(_over_seeds("max_e2e", t.max_e2e_s, [q(r.e2e, t.e2e_percentile or DEFAULT_PERCENTILE) for r in runs]))
    if t.min_goodput is not None:
        sla.append(_over_seeds("goodput", t.min_goodput, [r.good / r.arrivals if r.arrivals else None for r in runs]))
    # a rejected request is a miss whatever the percentiles say
    sla.append(Bound("rejected", 0.0, tuple(float(r.rejected) for r in runs)))
    return SlotReplay(
        index=k,
        start_s=start,
        replicas=n,
        ready_at_start=ready,
        transition=transition,
        arrivals=Bound("arrivals", inf, tuple(float(r.arrivals) for r in runs)),
        ttft_p50_s=_over_seeds("max_ttft", ttft_limit, [q(r.ttft, 50) for r in runs]),
        ttft_p99_s=_over_seeds("max_ttft", ttft_limit, [q(r.ttft, 99) for r in runs]),
        tpot_p50_s=_over_seeds("max_tpot", tpot_limit, [q(r.tpot, 50) for r in runs]),
        tpot_p99_s=_over_seeds("max_tpot", tpot_limit, [q(r.tpot, 99) for r in runs]),
        goodput_per_s=Bound("goodput", 0.0, tuple(r.good / slot_s for r in runs)),
        misses=Bound("misses", 0.0, tuple(float(r.missed + r.rejected) for r in runs)),
        sla=tuple(b for b in sla if b is not None),
    )
