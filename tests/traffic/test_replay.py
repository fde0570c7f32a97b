"""A day replayed with its scale-ups' lag: the scaling rule worked out by hand, a late
scale-up's misses counted by hand on a deterministic trace (and none when it is ordered
a lag ahead), scale-downs that drain, Poisson days with ample replicas that miss
nothing, and every bad input named."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.physics.deployment import LengthDistribution, Targets
from solver.traffic.replay import day_requests, pod_windows, replay
from solver.traffic.simulate import EngineLimits, Request
from solver.traffic.verify import SEEDS

INF = math.inf


class Constant:
    """Every iteration takes 0.1 s, whatever it holds."""

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        return 0.1


# One request at a time, a budget that takes any prompt here whole: with one output token
# a request is one 0.1 s iteration, so each replica is a deterministic server of 10 requests/s.
ONE_AT_A_TIME = EngineLimits(max_num_seqs=1, max_num_batched_tokens=1024, kv_capacity_tokens=1 << 16)
SLA = Targets(max_ttft_s=0.45, ttft_percentile=99.0)


def test_the_scaling_rule_by_hand():
    # replicas [1, 3, 2] over 100 s slots, lag 30 s. Ordered at the slot start (lead 0):
    # the two added for slot 1 are ready at 100 + 30 = 130 s; slot 2 stops the newest at 200 s.
    assert pod_windows(100, [1, 3, 2], lag_s=30) == [(0.0, INF), (130.0, INF), (130.0, 200.0)]
    # ordered a lag ahead (lead 30 s): ordered at 70 s, ready at 100 s, on time
    assert pod_windows(100, [1, 3, 2], lag_s=30, lead_s=30) == [(0.0, INF), (100.0, INF), (100.0, 200.0)]
    # a scale-down then up: the stopped replica is not reused, a new one is started
    assert pod_windows(10, [2, 1, 2], lag_s=0) == [(0.0, INF), (0.0, 10.0), (20.0, INF)]
    # ordered at 20 s with a 10 s lag, the new one is ready at 30 s
    assert pod_windows(10, [2, 1, 2], lag_s=10) == [(0.0, INF), (0.0, 10.0), (30.0, INF)]
    # ordered a slot ahead, slot 2's second replica is wanted from 10 s, when slot 1
    # would scale down: the scale-down is skipped, nothing stops or starts
    assert pod_windows(10, [2, 1, 2], lag_s=10, lead_s=10) == [(0.0, INF), (0.0, INF)]


def _even(rate_per_s: float, start_s: float, end_s: float) -> list[Request]:
    n = round((end_s - start_s) * rate_per_s)
    return [Request(start_s + i / rate_per_s, 100, 1) for i in range(n)]


# 20 s slots: 5 requests/s on one replica, then 15/s on two (each then 7.5/s of its 10/s)
TRACE = _even(5, 0, 20) + _even(15, 20, 40) + _even(15, 40, 60) + _even(15, 60, 80)
PLAN = [1, 2, 2, 2]


def test_a_late_scale_up_misses_in_the_first_slot_after_the_step_and_recovers():
    day = replay(20, PLAN, Constant(), ONE_AT_A_TIME, SLA, requests=TRACE, lag_s=5)
    # Slot 1 (20-40 s), arrivals i = 0.. at 20 + i/15 s. The second replica is ready at 25 s,
    # so i = 0..74 queue on the first: request i starts at 20 + 0.1·i and ends 0.1 later,
    # TTFT 0.1 + i·(0.1 − 1/15) = 0.1 + i/30 > 0.45 for i ≥ 11: 64 misses. Round robin's
    # turn is at 75 then, so odd i go to the new replica (TTFT 0.1) and even ones queue
    # behind the first's backlog (its last ends at 27.5 s): i = 76 + 2m starts at
    # 27.5 + 0.1·m, arrives at 25.0667 + 0.1333·m, TTFT 2.5333 − m/30 > 0.45 for m ≤ 62:
    # 63 more (the last arriving at 33.3 s). 127 in all; slots 2 and 3 are clean.
    assert [s.misses.mean for s in day.slots] == [0, 127, 0, 0]
    assert [s.meets for s in day.slots] == [True, False, True, True]
    assert day.missing_slots == [1]
    assert [s.transition for s in day.slots] == [False, True, False, False]
    assert [s.ready_at_start for s in day.slots] == [1, 1, 2, 2]
    # goodput: slot 0 all 100 requests in 20 s; slot 1 (300 − 127)/20
    assert day.slots[0].goodput_per_s.mean == pytest.approx(5.0)
    assert day.slots[1].goodput_per_s.mean == pytest.approx(173 / 20)
    # a one-token output has no TPOT
    assert day.slots[1].tpot_p99_s is None and day.slots[0].ttft_p50_s is not None
    assert day.slots[0].ttft_p50_s.mean == pytest.approx(0.1)  # no queue at 5/s: the iteration alone
    assert day.seeds == (0,) and day.requests == len(TRACE)


def test_ordered_a_lag_ahead_or_without_lag_nothing_misses():
    for lag_s, lead_s in ((5, 5), (0, 0), (5, 7)):
        day = replay(20, PLAN, Constant(), ONE_AT_A_TIME, SLA, requests=TRACE, lag_s=lag_s, lead_s=lead_s)
        assert [s.misses.mean for s in day.slots] == [0, 0, 0, 0], (lag_s, lead_s)
        assert day.missing_slots == []
        assert [s.ready_at_start for s in day.slots] == PLAN


def test_a_scale_down_drains_the_requests_in_flight():
    # Two replicas, then one at 10 s: the newest stops at 10 s with a request of 50 tokens
    # (50 iterations, 5 s) started at 9 s; it still finishes, on its replica, at 14 s.
    reqs = [Request(8.0, 10, 50), Request(9.0, 10, 50), Request(15.0, 10, 1), Request(16.0, 10, 1)]
    day = replay(10, [2, 1], Constant(), ONE_AT_A_TIME, Targets(max_ttft_s=1.0), requests=reqs)
    assert [s.misses.mean for s in day.slots] == [0, 0]
    assert [s.arrivals.mean for s in day.slots] == [2, 2]


def test_a_slot_without_replicas_rejects_its_arrivals():
    reqs = _even(2, 0, 10) + _even(2, 10, 20)
    day = replay(10, [1, 0], Constant(), ONE_AT_A_TIME, SLA, requests=reqs)
    assert [s.misses.mean for s in day.slots] == [0, 20]
    assert not day.slots[1].meets and day.slots[1].goodput_per_s.mean == 0
    none = replay(10, [0, 0], Constant(), ONE_AT_A_TIME, SLA, requests=reqs)
    assert [s.misses.mean for s in none.slots] == [20, 20] and none.missing_slots == [0, 1]


def test_jsq_routes_around_the_backlog_but_the_arrivals_before_the_new_replica_miss_alike():
    # Before 25 s one replica is open, so whatever the rule the 64 misses counted above
    # happen; after it JSQ sends arrivals to the empty replica first, round robin half of
    # them behind the backlog (63 more): JSQ misses at least 64 and at most round robin's 127.
    day = replay(20, PLAN, Constant(), ONE_AT_A_TIME, SLA, requests=TRACE, lag_s=5, routing="jsq")
    assert 64 <= day.slots[1].misses.mean <= 127
    assert [s.misses.mean for i, s in enumerate(day.slots) if i != 1] == [0, 0, 0]


def test_a_trace_replayed_keeps_its_per_slot_counts():
    from solver.traffic.trace import read_trace

    trace = read_trace(Path(__file__).resolve().parents[2] / "specs" / "synthetic-azure-layout-trace.csv")
    counts = trace.counts(120)
    limits = EngineLimits(max_num_seqs=64, max_num_batched_tokens=8192, kv_capacity_tokens=1 << 20)
    day = replay(120, [2] * len(counts), Constant(), limits, Targets(max_ttft_s=600.0), requests=trace.requests)
    assert [s.arrivals.mean for s in day.slots] == counts
    assert day.requests == sum(counts) == len(trace.requests)


LENGTHS = LengthDistribution("fixed", 100, 100, 100)
ONE_TOKEN = LengthDistribution("fixed", 1, 1, 1)


def test_poisson_arrivals_per_slot_have_the_slots_rates():
    # Poisson counts: mean rate·slot, sd its square root; 4 sd either way fails 1 in 16,000
    rates = [0.5, 20.0, 3.0]
    reqs = day_requests(100, rates, LENGTHS, ONE_TOKEN, seed=7)
    for k, rate in enumerate(rates):
        n = sum(1 for r in reqs if 100 * k <= r.arrival_s < 100 * (k + 1))
        assert abs(n - rate * 100) <= 4 * math.sqrt(rate * 100), (k, n)
    assert reqs == day_requests(100, rates, LENGTHS, ONE_TOKEN, seed=7)  # seeded


def test_a_poisson_day_with_ample_replicas_and_no_lag_misses_nothing():
    # Each replica serves 10/s; at most 1.6/s a replica here (ρ ≤ 0.16): an M/D/1 wait
    # past 0.35 s needs 4 requests queued at once, probability well under 1e-4.
    rates, plan = [2.0, 8.0, 3.0], [2, 5, 2]
    day = replay(50, plan, Constant(), ONE_AT_A_TIME, SLA, rates_per_s=rates, prompt=LENGTHS, output=ONE_TOKEN)
    assert day.seeds == tuple(range(SEEDS))
    assert day.missing_slots == []
    for s, rate in zip(day.slots, rates, strict=True):
        assert len(s.arrivals.per_seed) == SEEDS and s.misses.bound == pytest.approx(0, abs=1e-9)
        assert s.goodput_per_s.mean == pytest.approx(s.arrivals.mean / 50)
        # the interval: a goodput bound below its mean, a time bound above it (seeds differ)
        assert s.goodput_per_s.bound <= s.goodput_per_s.mean and s.ttft_p99_s is not None and s.ttft_p99_s.bound >= s.ttft_p99_s.mean
        assert abs(s.arrivals.mean - rate * 50) <= 4 * math.sqrt(rate * 50 / SEEDS)


def test_bad_inputs_are_named():
    ok = dict(requests=TRACE)
    cases = [
        ((0, PLAN), ok, "slot_s"),
        ((20, []), ok, "replicas"),
        ((20, [1, -1, 2, 2]), ok, "replicas[1]"),
        ((20, PLAN), dict(requests=TRACE, lag_s=-1), "lag_s"),
        ((20, PLAN), dict(rates_per_s=[1.0], prompt=LENGTHS, output=ONE_TOKEN), "rates_per_s"),
        ((20, PLAN), dict(rates_per_s=[1.0, 1, 1, math.nan], prompt=LENGTHS, output=ONE_TOKEN), "rates_per_s[3]"),
        ((20, PLAN), dict(requests=TRACE, seeds=3), "seeds"),
        ((20, [1, 1]), ok, "requests"),  # the trace runs past two slots
        ((20, PLAN), {}, "replay"),
    ]
    for (slot_s, plan), kw, field in cases:
        with pytest.raises(InputError) as e:
            replay(slot_s, plan, Constant(), ONE_AT_A_TIME, SLA, **kw)  # type: ignore[arg-type]
        assert e.value.field == field, (field, str(e.value))


def test_an_order_due_before_the_day_starts_is_ready_on_time():
    # slot 60 s, lag 150 s ordered 150 s ahead: slot 1's replica (from 60 s) is ordered at
    # 60 − 150 = −90 s, the day before (the day repeats, as the horizon bills it), and
    # ready at −90 + 150 = 60 s: on time, not at 0 + 150 = 150 s
    assert pod_windows(60, [1, 2], lag_s=150, lead_s=150) == [(0.0, INF), (60.0, INF)]
