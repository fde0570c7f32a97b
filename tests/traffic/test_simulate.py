"""The traffic simulator against numbers derived without it: iterations worked out by
hand, queueing theory (M/D/1, M/M/1, Little's law), conservation of requests and
tokens, monotone responses to load and replicas, the bulk decode against stepping one
iteration at a time, and percentiles computed by hand."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from solver.traffic.simulate import EngineLimits, Request, SimResult, percentile, simulate


class Linear:
    """1 ms per prompt token, 10 ms per iteration that decodes; records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int, float]] = []

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        self.calls.append((decode_seqs, decode_context_tokens, prefill_tokens, prefill_attention_tokens))
        return 0.001 * prefill_tokens + (0.010 if decode_seqs else 0.0)


class PrefillOnly:
    """Seconds proportional to the prompt tokens alone: 10 ms per token."""

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        return 0.01 * prefill_tokens


class Affine:
    """A small engine: 5 ms a pass, 2 µs per resident token read, 20 µs per prompt token,
    and a little per attention pair; affine in the context, as the physics is."""

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        return 0.005 + 2e-6 * decode_context_tokens + 2e-5 * prefill_tokens + 1e-9 * prefill_attention_tokens


class Counted(Affine):
    """Affine, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        self.calls += 1
        return super().iteration_s(decode_seqs, decode_context_tokens, prefill_tokens, prefill_attention_tokens)


def poisson(rate_per_s: float, sizes: list[tuple[int, int]], seed: int) -> list[Request]:
    rng = random.Random(seed)
    t, out = 0.0, []
    for p, o in sizes:
        t += rng.expovariate(rate_per_s)
        out.append(Request(t, p, o))
    return out


def mixed_sizes(n: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randint(20, 400), rng.randint(1, 120)) for _ in range(n)]


MIXED = EngineLimits(max_num_seqs=16, max_num_batched_tokens=256, kv_capacity_tokens=8192)


# --- by hand


def test_one_request_alone_by_hand():
    cost = Linear()
    r = simulate([Request(2.0, 100, 5)], cost, EngineLimits(4, 64, 10_000), _step_by_step=True)
    (x,) = r.results
    # Chunks [0, 64) and [64, 100): 64 + 36 ms, the first token at 2.1 s; then 4 decodes of 10 ms.
    assert x.first_token_s == pytest.approx(2.1, rel=1e-12)
    assert (x.ttft_s, x.e2e_s, x.tpot_s) == pytest.approx((0.1, 0.14, 0.01), rel=1e-12)
    # Attention: 64·0 + 64·65/2 = 2,080, then 36·64 + 36·37/2 = 2,970; each decode reads
    # the sequence's length, 101 to 104 tokens.
    assert cost.calls == [(0, 0, 64, 2080.0), (0, 0, 36, 2970.0), (1, 101, 0, 0.0), (1, 102, 0, 0.0), (1, 103, 0, 0.0), (1, 104, 0, 0.0)]
    assert r.duration_s == pytest.approx(0.14)
    assert r.replicas[0].busy_s == pytest.approx(0.14) and r.utilisation == pytest.approx(1.0)
    assert r.throughput_tokens_per_s == pytest.approx(5 / 0.14)
    assert r.mean_in_system == pytest.approx(1.0)


def test_the_second_request_waits_for_the_first_with_one_sequence():
    r = simulate([Request(0.0, 100, 5), Request(0.0, 100, 5)], Linear(), EngineLimits(1, 128, 10_000))
    a, b = r.results
    assert (a.first_token_s, a.finish_s) == pytest.approx((0.1, 0.14))
    assert (b.first_token_s, b.finish_s) == pytest.approx((0.24, 0.28))
    assert b.ttft_s == pytest.approx(0.24) and b.tpot_s == pytest.approx(0.01)
    # b waited 0.14 s of a 0.28 s run; the second waits, the first did not.
    assert r.replicas[0].mean_queue == pytest.approx(0.14 / 0.28) and r.replicas[0].max_queue == 2


def test_a_missing_block_preempts_the_last_admitted_by_hand():
    # 3 blocks of 16. Both 16-token prompts take a block each; at the first decode both
    # need a second block, one is free: b (admitted last) is preempted, to prefill
    # 16 + 1 tokens again once a finishes.
    r = simulate([Request(0.0, 16, 10), Request(0.0, 16, 10)], Linear(), EngineLimits(2, 64, 48))
    a, b = r.results
    assert (a.first_token_s, a.finish_s, a.preemptions) == pytest.approx((0.032, 0.032 + 9 * 0.010, 0))
    # b: first token with a at 32 ms; a's 9 decodes end at 122 ms; b's 17-token prefill
    # (17 ms) makes its 2nd token; 8 decodes make the other 8.
    assert (b.first_token_s, b.finish_s, b.preemptions) == pytest.approx((0.032, 0.122 + 0.017 + 0.080, 1))
    stats = r.replicas[0]
    assert (stats.preemptions, stats.iterations, stats.tokens_out) == (1, 1 + 9 + 1 + 8, 20)


def test_without_chunking_a_waiting_prompt_runs_alone():
    a, b = Request(0.0, 10, 3), Request(0.015, 5, 1)
    v0 = simulate([a, b], Linear(), EngineLimits(4, 64, 1024, chunked_prefill=False)).results
    # a: prefill 10 ms, a decode to 20 ms; b (arrived at 15 ms) prefills alone to 25 ms; a's last decode to 35 ms.
    assert (v0[0].finish_s, v0[1].finish_s) == pytest.approx((0.035, 0.025))
    v1 = simulate([a, b], Linear(), EngineLimits(4, 64, 1024)).results
    # chunked: a's decode and b's prompt share the third iteration, 15 ms.
    assert (v1[0].finish_s, v1[1].finish_s) == pytest.approx((0.035, 0.035))


def test_requests_that_can_never_run_are_rejected():
    limits = EngineLimits(4, 64, 64)  # 4 blocks of 16
    fits = Request(0.0, 60, 5)  # longest KV 60 + 5 − 1 = 64 tokens: 4 blocks
    too_long = Request(0.0, 60, 6)  # 65 tokens: 5 blocks
    r = simulate([fits, too_long], Linear(), limits)
    assert [x.request for x in r.results] == [fits] and r.rejected == [too_long]
    assert r.goodput(None, None, None) == 0.5
    whole = simulate([Request(0.0, 65, 1), Request(0.0, 64, 1)], Linear(), EngineLimits(4, 64, 1024, chunked_prefill=False))
    assert [x.prompt_tokens for x in whole.rejected] == [65] and len(whole.results) == 1


def test_jsq_sends_to_the_shortest_queue_and_round_robin_takes_turns():
    reqs = [Request(0.0, 100, 50), Request(0.001, 10, 1), Request(0.5, 10, 1)]
    # At 0.5 s replica 0 still serves the first (100 ms + 49 × 10 ms), replica 1 is empty.
    assert [x.replica for x in simulate(reqs, Linear(), EngineLimits(4, 128, 10_000), 2, "jsq").results] == [0, 1, 1]
    assert [x.replica for x in simulate(reqs, Linear(), EngineLimits(4, 128, 10_000), 2).results] == [0, 1, 0]
    # a tie goes to the lowest index: at 0.001 s both hold one request
    tie = [Request(0.0, 100, 50), Request(0.0, 100, 50), Request(0.001, 10, 1)]
    assert [x.replica for x in simulate(tie, Linear(), EngineLimits(4, 256, 10_000), 2, "jsq").results] == [0, 1, 0]


# --- queueing theory


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_md1_wait_matches_pollaczek_khinchine(seed):
    # One request at a time, each a 100-token prompt of exactly 1 s: M/D/1 with μ = 1.
    rho, mu = 0.5, 1.0
    reqs = poisson(rho * mu, [(100, 1)] * 50_000, seed)
    r = simulate(reqs, PrefillOnly(), EngineLimits(1, 100, 1024, chunked_prefill=False))
    wait = statistics.fmean(x.ttft_s - 1.0 for x in r.results)
    assert wait == pytest.approx(rho / (2 * mu * (1 - rho)), rel=0.03)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mm1_time_in_system_is_one_over_mu_minus_lambda(seed):
    rng = random.Random(seed)
    sizes = [(max(1, math.ceil(rng.expovariate(1 / 100))), 1) for _ in range(20_000)]
    mu = 1 / (0.01 * statistics.fmean(p for p, _ in sizes))
    lam = 0.5 * mu
    longest = max(p for p, _ in sizes)
    r = simulate(poisson(lam, sizes, seed + 100), PrefillOnly(), EngineLimits(1, longest, longest + 16, chunked_prefill=False))
    assert statistics.fmean(x.e2e_s for x in r.results) == pytest.approx(1 / (mu - lam), rel=0.05)


def test_littles_law_on_a_long_mixed_run():
    rate = 12.0
    r = simulate(poisson(rate, mixed_sizes(20_000, 7), 8), Affine(), MIXED)
    stats = r.replicas[0]
    # the run decodes several at once, chunks prompts, and queues
    assert stats.iterations < sum(x.request.output_tokens for x in r.results)
    assert stats.max_queue > 3 and r.percentile("tpot_s", 50) > 0.006
    e2e = statistics.fmean(x.e2e_s for x in r.results)
    assert r.mean_in_system == pytest.approx(rate * e2e, rel=0.02)


# --- conservation


def test_every_request_completes_and_every_token_is_counted():
    reqs = poisson(12.0, mixed_sizes(3_000, 3), 4) + [Request(10.0, 8000, 500)]  # one over the 8,192-token cache
    r = simulate(reqs, Affine(), MIXED, replicas=2, routing="jsq")
    assert r.rejected == [Request(10.0, 8000, 500)]
    assert len(r.results) == 3_000
    assert [x.request.arrival_s for x in r.results] == sorted(x.request.arrival_s for x in r.results)
    assert sum(s.tokens_out for s in r.replicas) == sum(x.request.output_tokens for x in r.results)
    for x in r.results:
        assert x.request.arrival_s < x.first_token_s <= x.finish_s
    assert r.goodput(None, None, None) == pytest.approx(3_000 / 3_001)


def test_a_small_cache_preempts_and_still_serves_everyone():
    limits = EngineLimits(max_num_seqs=32, max_num_batched_tokens=512, kv_capacity_tokens=2048)
    reqs = poisson(30.0, [(p, o) for p, o in mixed_sizes(2_000, 5)], 6)
    r = simulate(reqs, Affine(), limits)
    assert r.replicas[0].preemptions > 0 and sum(x.preemptions for x in r.results) == r.replicas[0].preemptions
    assert len(r.results) + len(r.rejected) == 2_000 and not r.rejected
    assert r.replicas[0].tokens_out == sum(x.request.output_tokens for x in r.results)
    # a preempted request keeps the first token it was first given
    for x in r.results:
        assert x.first_token_s <= x.finish_s


# --- monotone in load and in replicas


def p90_ttft(r: SimResult) -> float:
    return r.percentile("ttft_s", 90)


def test_more_load_never_lowers_p90_ttft():
    base = poisson(1.0, mixed_sizes(3_000, 11), 12)
    p90 = []
    for rate in (4.0, 8.0, 12.0, 14.0, 16.0):
        reqs = [Request(x.arrival_s / rate, x.prompt_tokens, x.output_tokens) for x in base]
        p90.append(p90_ttft(simulate(reqs, Affine(), MIXED)))
    assert p90 == sorted(p90) and p90[-1] > 2 * p90[0]


@pytest.mark.parametrize("routing", ["round_robin", "jsq"])
def test_more_replicas_never_raise_p90_ttft(routing):
    reqs = poisson(30.0, mixed_sizes(3_000, 13), 14)
    p90 = [p90_ttft(simulate(reqs, Affine(), MIXED, replicas=n, routing=routing)) for n in (1, 2, 3, 4)]
    assert p90 == sorted(p90, reverse=True) and p90[0] > 2 * p90[-1]


# --- the bulk decode is exact


@pytest.mark.parametrize(
    "limits, replicas, routing, rate",
    [
        (MIXED, 1, "round_robin", 12.0),
        (MIXED, 1, "round_robin", 3.0),  # light load: long stretches of decoding alone
        (EngineLimits(32, 512, 2048), 1, "round_robin", 30.0),  # preempting
        (EngineLimits(8, 512, 4096, block_size_tokens=32, chunked_prefill=False), 2, "jsq", 20.0),
        (EngineLimits(16, 256, 8192, block_size_tokens=1), 3, "round_robin", 30.0),
    ],
)
def test_bulk_decode_matches_stepping_one_iteration_at_a_time(limits, replicas, routing, rate):
    reqs = poisson(rate, mixed_sizes(1_000, 21), 22)
    cost = Counted()
    bulk = simulate(reqs, cost, limits, replicas, routing)
    step = simulate(reqs, Affine(), limits, replicas, routing, _step_by_step=True)
    assert [(x.replica, x.preemptions) for x in bulk.results] == [(x.replica, x.preemptions) for x in step.results]
    for a, b in zip(bulk.results, step.results):
        assert a.first_token_s == pytest.approx(b.first_token_s, rel=1e-9)
        assert a.finish_s == pytest.approx(b.finish_s, rel=1e-9)
    for a, b in zip(bulk.replicas, step.replicas):
        assert (a.iterations, a.preemptions, a.tokens_out, a.max_queue) == (b.iterations, b.preemptions, b.tokens_out, b.max_queue)
        assert a.busy_s == pytest.approx(b.busy_s, rel=1e-9) and a.mean_queue == pytest.approx(b.mean_queue, rel=1e-9)
    iterations = sum(s.iterations for s in bulk.replicas)
    assert iterations > 3 * len(reqs) and cost.calls < iterations  # the bulk took iterations at once


# --- percentiles and goodput


def test_percentile_by_hand():
    assert percentile([4, 1, 3, 2], 50) == 2.5  # halfway between the 2nd and 3rd of 1, 2, 3, 4
    assert percentile([1, 2, 3, 4], 100) == 4
    assert percentile([1, 2, 3, 4], 25) == pytest.approx(1.75)  # index 0.75
    assert percentile([10, 20], 10) == pytest.approx(11.0)
    assert percentile([7.0], 1) == 7.0
    for bad in (0, -1, 100.5, math.nan):
        with pytest.raises(ValueError):
            percentile([1.0], bad)
    with pytest.raises(ValueError):
        percentile([], 50)


def test_sim_percentiles_and_goodput_by_hand():
    # alone, one after another: TTFT 0.1 s each time; the second waits for the first's 0.14 s
    r = simulate([Request(0.0, 100, 5), Request(0.0, 100, 1)], Linear(), EngineLimits(1, 128, 10_000))
    # TTFTs 0.1 and 0.24; TPOT only for the first (0.01); e2e 0.14 and 0.24
    assert r.percentile("ttft_s", 50) == pytest.approx(0.17)
    assert r.percentile("tpot_s", 90) == pytest.approx(0.01)
    assert r.percentile("e2e_s", 100) == pytest.approx(0.24)
    assert r.goodput(0.2, None, None) == 0.5
    assert r.goodput(0.24, 0.01, 0.24) == 1.0  # exactly at a bound meets it
    assert r.goodput(None, 0.009, None) == 0.5  # a one-token output has no TPOT to miss
    with pytest.raises(ValueError):
        r.percentile("latency", 50)


def test_a_runs_figures_are_its_requests_own_floats():
    """SimResult.values (what the percentiles sort) and goodput read the results
    directly, not through RequestResult's properties: the very floats the properties
    give, every one, and goodput as meets_time counts it, at bounds that are some
    request's own figure (exactly at a bound meets it)."""
    from solver.units import meets_time

    r = simulate(poisson(3.0, mixed_sizes(600, 4), 4), Affine(), MIXED, replicas=2)
    assert r.values("ttft_s") == [x.ttft_s for x in r.results]
    assert r.values("e2e_s") == [x.e2e_s for x in r.results]
    assert r.values("tpot_s") == [x.tpot_s for x in r.results if x.tpot_s is not None]
    assert any(x.tpot_s is None for x in r.results)  # one-token outputs are left out of TPOT
    ttfts, tpots = sorted(r.values("ttft_s")), sorted(r.values("tpot_s"))
    e2es = sorted(r.values("e2e_s"))
    for ttft, tpot, e2e in [(None, None, None), (ttfts[300], None, None), (None, tpots[100], None), (ttfts[500], tpots[400], e2es[450])]:
        good = sum(
            (ttft is None or meets_time(x.ttft_s, ttft))
            and (e2e is None or meets_time(x.e2e_s, e2e))
            and (tpot is None or x.tpot_s is None or meets_time(x.tpot_s, tpot))
            for x in r.results
        )
        assert r.goodput(ttft, tpot, e2e) == good / len(r.results)
    with pytest.raises(ValueError):
        r.values("latency")


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError):
        Request(0.0, 0, 1)
    with pytest.raises(ValueError):
        Request(math.inf, 1, 1)
    with pytest.raises(ValueError):
        EngineLimits(max_num_seqs=256, max_num_batched_tokens=128, kv_capacity_tokens=1024)
    with pytest.raises(ValueError):
        simulate([Request(0.0, 1, 1)], Linear(), MIXED, routing="random")
