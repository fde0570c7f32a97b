"""A plan's requests are drawn once per seed and shared (issue 44: the rate form drew
the same seed's requests for every plan it simulated): the first n of a stream that
has grown in steps must be exactly the n requests drawn in one go, request for request,
whatever the lengths' distribution and the arrivals' burstiness. The reference is the
plain loop, written out here: request i takes the i-th gap (none before the first)
from the arrivals' stream and its lengths from the lengths' stream."""

from __future__ import annotations

import random

import pytest

from solver.physics.deployment import LengthDistribution, Traffic
from solver.traffic.requests import RequestStream, draw_gap_s, draw_requests, drawer
from solver.traffic.types import Request
from solver.traffic.verify import plan_requests

LOGNORMAL = LengthDistribution("lognormal", 1000.0, 1, 32_000, 6000.0)
EXPONENTIAL = LengthDistribution("exponential", 300.0, 10, 4000)
UNIFORM = LengthDistribution("uniform", 200.0, 50, 350)
FIXED = LengthDistribution("fixed", 500.0, 500, 500)
EMPIRICAL = LengthDistribution("empirical", 3.0, 1, 9, samples=(1, 2, 3, 9), digest="four")

TRAFFICS = [
    Traffic(20.0, LOGNORMAL, EXPONENTIAL),
    Traffic(3.5, UNIFORM, FIXED, arrival_cv=2.5),
    Traffic(7.0, EMPIRICAL, LOGNORMAL, arrival_cv=0.5),
    Traffic(11.0, FIXED, FIXED, pairs=((100, 10), (2000, 300), (50, 7))),
    # drawn in blocks (draws.py): Poisson gaps with lognormal or fixed lengths
    Traffic(20.0, LOGNORMAL, LengthDistribution("lognormal", 300.0, 1, 8000, 1200.0)),
    Traffic(5.0, FIXED, LOGNORMAL),
    Traffic(9.0, LOGNORMAL, LOGNORMAL, arrival_cv=2.0),
]


def _reference(traffic: Traffic, count: int, seed: int) -> list[Request]:
    gaps, lengths = random.Random(f"{seed}:arrivals"), random.Random(f"{seed}:lengths")
    prompt, output = drawer(traffic.prompt), drawer(traffic.output)
    out, t = [], 0.0
    for i in range(count):
        if i:
            t += draw_gap_s(traffic, traffic.requests_per_s, gaps)
        if traffic.pairs:
            p, o = traffic.pairs[lengths.randrange(len(traffic.pairs))]
        else:
            p = prompt(lengths)
            o = output(lengths)
        out.append(Request(t, p, o))
    return out


@pytest.mark.parametrize("traffic", TRAFFICS)
@pytest.mark.parametrize("seed", [0, 4])
def test_a_grown_stream_is_the_draw_of_its_length(traffic, seed):
    stream = RequestStream(traffic, seed)
    for n in (1, 40, 7, 300, 300, 2000, 650):
        assert stream.first(n) == _reference(traffic, n, seed), n
    assert draw_requests(traffic, 900, seed) == _reference(traffic, 900, seed)


def test_plan_requests_share_one_stream_per_seed_and_return_fresh_lists():
    traffic = Traffic(20.0, LOGNORMAL, EXPONENTIAL)
    short = plan_requests(traffic, 5000, 3, 0)
    long = plan_requests(traffic, 9600, 3, 0)
    assert long[:5000] == short == _reference(traffic, 5000, 3)
    assert long == _reference(traffic, 9600, 3)
    long.clear()  # a caller's list is its own
    assert plan_requests(traffic, 8100, 3, 0) == _reference(traffic, 8100, 3)
    # a prefix cache: prompts less the cached tokens, at least one token computed
    cached = plan_requests(traffic, 300, 3, 600)
    assert [(r.arrival_s, r.prompt_tokens, r.output_tokens) for r in cached] == [
        (r.arrival_s, max(1, r.prompt_tokens - 600), r.output_tokens) for r in _reference(traffic, 300, 3)
    ]


def test_moments_are_drawn_once_however_they_are_asked_for():
    """traffic_candidates asked moments(p, o) and the screen moments(p, o, 0): one key."""
    from solver.traffic.requests import moments

    assert moments(LOGNORMAL, EXPONENTIAL) is moments(LOGNORMAL, EXPONENTIAL, 0) is moments(LOGNORMAL, EXPONENTIAL, cached_tokens=0)


def test_threads_sharing_a_stream_each_get_the_draw():
    """`plan-opt serve` solves a cached problem in several threads at once: a stream
    asked for more by two of them must still hold each request once, in order."""
    import threading

    traffic = Traffic(20.0, LOGNORMAL, EXPONENTIAL)
    stream = RequestStream(traffic, 9)
    got: list[list[Request]] = []

    def ask(n: int) -> None:
        for m in range(50, n, 50):
            got.append(stream.first(m))

    threads = [threading.Thread(target=ask, args=(3000 + 100 * i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    want = _reference(traffic, 3300, 9)
    assert all(g == want[: len(g)] for g in got) and stream.first(3300) == want


def test_a_stream_drawn_in_blocks_at_its_own_rate_is_the_plain_loops():
    """RequestStream at a rate of its own (draw_requests' rate_per_s), drawn in blocks:
    the plain loop's requests, gap by gap at that rate."""
    traffic = Traffic(20.0, LOGNORMAL, LengthDistribution("lognormal", 300.0, 1, 8000, 1200.0))
    stream = RequestStream(traffic, 2, rate_per_s=3.0)
    assert stream.bulk_gaps is not None and stream.bulk_lengths is not None
    at_three = Traffic(3.0, traffic.prompt, traffic.output)
    for n in (5, 1, 800):
        assert stream.first(n) == _reference(at_three, n, 2), n


def test_requests_built_at_once_are_requests_and_refuse_what_request_refuses():
    from solver.traffic.types import requests_of

    built = requests_of([0.0, 0.25, 3.0], [1, 70, 5], [9, 1, 2])
    assert built == [Request(0.0, 1, 9), Request(0.25, 70, 1), Request(3.0, 5, 2)]
    assert [hash(r) for r in built] == [hash(Request(0.0, 1, 9)), hash(Request(0.25, 70, 1)), hash(Request(3.0, 5, 2))]
    with pytest.raises(ValueError, match="prompt_tokens must be at least 1, got 0"):
        requests_of([0.0, 1.0], [4, 0], [1, 1])
    with pytest.raises(ValueError, match="output_tokens must be at least 1, got 0"):
        requests_of([0.0], [4], [0])
    with pytest.raises(ValueError, match="arrival_s must be finite"):
        requests_of([0.0, float("inf")], [4, 4], [1, 1])
    with pytest.raises(ValueError, match="one prompt and one output per arrival"):
        requests_of([0.0], [4, 4], [1])
    assert requests_of([], [], []) == []
