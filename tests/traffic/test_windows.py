"""Replicas that come and go (simulate's `windows`): windows always open change nothing,
a replica takes requests only inside its window and drains what it holds after it, JSQ
chooses among the open replicas only, and an arrival none takes is rejected."""

from __future__ import annotations

import math
import random

import pytest

from solver.traffic.simulate import EngineLimits, Request, simulate

INF = math.inf


class Constant:
    """Every iteration takes 0.1 s."""

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        return 0.1


class Affine:
    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        return 0.005 + 2e-6 * decode_context_tokens + 2e-5 * prefill_tokens + 1e-9 * prefill_attention_tokens


ONE = EngineLimits(max_num_seqs=1, max_num_batched_tokens=1024, kv_capacity_tokens=1 << 16)
MANY = EngineLimits(max_num_seqs=64, max_num_batched_tokens=2048, kv_capacity_tokens=200_000)


def _poisson(n: int, rate: float, seed: int) -> list[Request]:
    rng, t, out = random.Random(seed), 0.0, []
    for _ in range(n):
        t += rng.expovariate(rate)
        out.append(Request(t, rng.randint(20, 800), rng.randint(1, 300)))
    return out


@pytest.mark.parametrize("routing", ["round_robin", "jsq"])
def test_windows_always_open_are_the_plain_simulation(routing):
    reqs = _poisson(3000, 40.0, 3)
    plain = simulate(reqs, Affine(), MANY, replicas=3, routing=routing)
    open_ = simulate(reqs, Affine(), MANY, replicas=3, routing=routing, windows=[(0.0, INF)] * 3)
    assert [(r.replica, r.first_token_s, r.finish_s) for r in plain.results] == [(r.replica, r.first_token_s, r.finish_s) for r in open_.results]


def test_a_stopped_replica_takes_nothing_new_and_drains():
    # replica 1 stops at 10 s holding a 50-token request started at 9 s (50 iterations of
    # 0.1 s: its last token at 14 s); the arrivals at 15 and 16 s go to replica 0 alone
    reqs = [Request(8.0, 10, 50), Request(9.0, 10, 50), Request(15.0, 10, 1), Request(16.0, 10, 1)]
    sim = simulate(reqs, Constant(), ONE, replicas=2, windows=[(0.0, INF), (0.0, 10.0)])
    assert [r.replica for r in sim.results] == [0, 1, 0, 0]
    assert sim.results[1].finish_s == pytest.approx(14.0) and not sim.rejected


def test_jsq_chooses_among_the_open_replicas_only():
    # replica 1 opens at 5 s. Arrivals every 0.05 s queue on replica 0 before it; the
    # first at or after 5 s finds replica 0 loaded and replica 1 empty: it goes to 1.
    reqs = [Request(i * 0.05, 10, 1) for i in range(120)]
    sim = simulate(reqs, Constant(), ONE, replicas=2, routing="jsq", windows=[(0.0, INF), (5.0, INF)])
    before = [r.replica for r in sim.results if r.request.arrival_s < 5.0 - 1e-9]
    assert set(before) == {0} and len(before) == 100
    assert sim.results[100].replica == 1


def test_an_arrival_no_replica_takes_is_rejected():
    reqs = [Request(1.0, 10, 1), Request(6.0, 10, 1)]
    sim = simulate(reqs, Constant(), ONE, replicas=1, windows=[(0.0, 5.0)])
    assert [r.request.arrival_s for r in sim.results] == [1.0] and [r.arrival_s for r in sim.rejected] == [6.0]


def test_windows_must_match_the_replicas():
    with pytest.raises(ValueError, match="one window per replica"):
        simulate([Request(0.0, 1, 1)], Constant(), ONE, replicas=2, windows=[(0.0, INF)])
