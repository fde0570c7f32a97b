"""The requests a traffic description stands for: arrivals and lengths drawn from a
seeded generator, so the same spec and seed give the same requests on any machine.

Arrivals are a renewal process at `requests_per_s`: exponential gaps (Poisson) for a
cv of 1, else gamma gaps with that coefficient of variation (shape 1/cv², mean
1/rate). Lengths are drawn per request, independently, and clipped to the
distribution's [low, high] (which keeps every request inside the context).
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

import numpy as np

from solver.physics.deployment import LengthDistribution, Traffic
from solver.spec.traffic_fields import lognormal_sigma
from solver.traffic.draws import BULK_DISTS, Uniforms, paired_lengths
from solver.traffic.simulate import Request
from solver.traffic.types import requests_of

MOMENT_DRAWS = 20_000
"""Draws behind a distribution's moments and quantiles (the screen's inputs)."""


def draw_length(dist: LengthDistribution, rng: random.Random) -> int:
    return drawer(dist)(rng)


def drawer(dist: LengthDistribution) -> Callable[[random.Random], int]:
    """draw_length for one distribution, its parameters worked out once (the same draws
    from the same generator: drawing 10^5 requests recomputed σ 2 × 10^5 times)."""
    low, high = dist.low_tokens, dist.high_tokens
    if dist.dist == "fixed":
        fixed = min(high, max(low, round(dist.mean_tokens)))
        return lambda rng: fixed
    if dist.dist == "lognormal":
        assert dist.p99_tokens is not None  # LengthsIn requires it
        sigma = lognormal_sigma(dist.mean_tokens, dist.p99_tokens)
        mu = math.log(dist.mean_tokens) - sigma**2 / 2
        return lambda rng: min(high, max(low, round(rng.lognormvariate(mu, sigma))))
    if dist.dist == "exponential":
        lam = 1.0 / dist.mean_tokens
        return lambda rng: min(high, max(low, round(rng.expovariate(lam))))
    if dist.dist == "uniform":
        return lambda rng: rng.randint(low, high)
    if dist.dist == "empirical":
        samples = dist.samples
        return lambda rng: samples[rng.randrange(len(samples))]
    raise ValueError(f"unknown length distribution {dist.dist!r}")


def draw_gap_s(traffic: Traffic, rate_per_s: float, rng: random.Random) -> float:
    if traffic.arrival_cv == 1.0:
        return rng.expovariate(rate_per_s)
    shape = 1.0 / traffic.arrival_cv**2
    return rng.gammavariate(shape, 1.0 / (rate_per_s * shape))


def draw_requests(traffic: Traffic, count: int, seed: int, rate_per_s: float | None = None) -> list[Request]:
    """`count` requests at `rate_per_s` (default the traffic's), the first at t = 0.
    Lengths and gaps come from separate streams, so a change of rate moves the
    arrivals and keeps every request's lengths."""
    return RequestStream(traffic, seed, rate_per_s).first(count)


class RequestStream:
    """draw_requests for a count that grows: each request is drawn from where the two
    streams stood after the ones before it, so the first n of a longer draw are the
    draw of n, and a stream kept asked for more draws only the new ones (the plans of
    many replicas each simulate a longer prefix of the same seed's requests)."""

    def __init__(self, traffic: Traffic, seed: int, rate_per_s: float | None = None) -> None:
        self.traffic = traffic
        self.rate = traffic.requests_per_s if rate_per_s is None else rate_per_s
        self.gaps = random.Random(f"{seed}:arrivals")
        self.lengths = random.Random(f"{seed}:lengths")
        self.drawn: list[Request] = []
        self.t = 0.0
        self.lock = threading.Lock()  # a served problem's solves share its streams (threads)
        self.prompt: Callable[[random.Random], int] | None = None if traffic.pairs else drawer(traffic.prompt)
        self.output: Callable[[random.Random], int] | None = None if traffic.pairs else drawer(traffic.output)
        # The same numbers drawn in blocks where draws.py can (its module says how they stay
        # the same to the bit): Poisson gaps, and lognormal or fixed lengths. Each stream is
        # drawn one way for its whole life (the blocks hold the generator's state).
        self.bulk_gaps = Uniforms(f"{seed}:arrivals") if traffic.arrival_cv == 1.0 else None
        bulk = not traffic.pairs and traffic.prompt.dist in BULK_DISTS and traffic.output.dist in BULK_DISTS
        self.bulk_lengths = Uniforms(f"{seed}:lengths") if bulk else None

    def first(self, count: int) -> list[Request]:
        """The first `count` requests (a new list)."""
        with self.lock:
            if self.bulk_gaps is not None and self.bulk_lengths is not None:
                return self._first_in_bulk(count)
            return self._first(count)

    def _first_in_bulk(self, count: int) -> list[Request]:
        """_first, every number drawn in blocks: the gaps random.expovariate's
        −log(1 − u) / rate summed from the last arrival, the lengths draws.paired_lengths'."""
        out = self.drawn
        n = count - len(out)
        if n <= 0:
            return out[:count]
        assert self.bulk_gaps is not None and self.bulk_lengths is not None
        gaps = n if out else n - 1  # none before the first request
        block = self.bulk_gaps.ahead(gaps)
        self.bulk_gaps.take(gaps)
        logs = np.fromiter(map(math.log, (1.0 - block).tolist()), dtype=float, count=gaps)
        times = list(accumulate((-logs / self.rate).tolist(), initial=self.t))
        if out:
            del times[0]  # the last arrival drawn, already out
        prompts, outputs = paired_lengths(self.traffic.prompt, self.traffic.output, n, self.bulk_lengths)
        out += requests_of(times, prompts, outputs)
        self.t = times[-1]
        return out[:count]

    def _first(self, count: int) -> list[Request]:
        out, traffic, rate, gaps, lengths = self.drawn, self.traffic, self.rate, self.gaps, self.lengths
        pairs, prompt, output = traffic.pairs, self.prompt, self.output
        t = self.t
        for i in range(len(out), count):
            if i:
                t += draw_gap_s(traffic, rate, gaps)
            if pairs:  # a user's file: the two lengths of one request together
                p, o = pairs[lengths.randrange(len(pairs))]
                out.append(Request(t, p, o))
            else:
                assert prompt is not None and output is not None
                out.append(Request(t, prompt(lengths), output(lengths)))
        self.t = t
        return out[:count]


@dataclass(frozen=True)
class Moments:
    """What the analytic screen reads of the lengths: means, the prompt's second
    moment, and quantiles, from MOMENT_DRAWS seeded draws (so clipping counts)."""

    prompt_mean: float
    prompt_sq_mean: float
    """E[P(P+1)]: a prompt's causal attention pairs are P(P+1)/2."""
    prompt_p2_mean: float
    """E[P²]."""
    output_mean: float
    prompt_quantiles: tuple[float, ...]
    output_quantiles: tuple[float, ...]
    """At QUANTILES."""
    output_overlap: float = 0.5
    """E[min(O, O')]/E[O] for two independent outputs: ∫P(O > x)² dx / E[O], the
    κ of the infinite-server peakedness 1 + (ca² − 1)·κ (1 fixed lengths, ½ exponential)."""

    def prompt_at(self, p: float) -> float:
        return self.prompt_quantiles[QUANTILES.index(p)]

    def output_at(self, p: float) -> float:
        return self.output_quantiles[QUANTILES.index(p)]


QUANTILES = (50.0, 90.0, 95.0, 99.0)


def moments(prompt: LengthDistribution, output: LengthDistribution, cached_tokens: int = 0) -> Moments:
    """`cached_tokens` of every prompt come from the prefix cache: the moments are of
    what is left to prefill (at least a token)."""
    return _moments(prompt, output, cached_tokens)


@lru_cache(maxsize=256)
def _moments(prompt: LengthDistribution, output: LengthDistribution, cached_tokens: int) -> Moments:
    """moments(), kept under one key however it is called: lru_cache keys a call by its
    arguments as given, so moments(p, o) and moments(p, o, 0) drew twice (0.05 s each)."""
    rng = random.Random("moments")
    draw_prompt, draw_output = drawer(prompt), drawer(output)
    ps = sorted(max(1, draw_prompt(rng) - cached_tokens) for _ in range(MOMENT_DRAWS))
    os_ = sorted(draw_output(rng) for _ in range(MOMENT_DRAWS))

    def q(xs: list[int], p: float) -> float:
        return float(xs[min(len(xs) - 1, math.ceil(p / 100 * len(xs)) - 1)])

    n = len(ps)
    return Moments(
        prompt_mean=sum(ps) / n,
        prompt_sq_mean=sum(p * (p + 1) for p in ps) / n,
        prompt_p2_mean=sum(p * p for p in ps) / n,
        output_mean=sum(os_) / n,
        prompt_quantiles=tuple(q(ps, p) for p in QUANTILES),
        output_quantiles=tuple(q(os_, p) for p in QUANTILES),
        # the i-th smallest of n is the smaller of two draws with probability (2(n − i) + 1)/n²
        output_overlap=sum(x * (2 * (n - i) + 1) for i, x in enumerate(os_, 1)) / n**2 / (sum(os_) / n),
    )


def uncached(requests: list[Request], cached_tokens: int) -> list[Request]:
    """The requests as the engine prefills them when `cached_tokens` of each prompt come
    from the prefix cache (at least one token is always computed: the one that samples
    the first output). Their attention to the cached keys is the cost model's
    (IterationModel.cached_tokens)."""
    if not cached_tokens:
        return requests
    return [Request(r.arrival_s, max(1, r.prompt_tokens - cached_tokens), r.output_tokens) for r in requests]
