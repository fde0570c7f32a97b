"""Drawn requests have the rate, the burstiness and the lengths the spec states."""

from __future__ import annotations

import math
import statistics

import pytest

from solver.physics.deployment import LengthDistribution, Traffic
from solver.spec.traffic_fields import lognormal_sigma
from solver.traffic.requests import draw_requests, moments

FIXED = LengthDistribution("fixed", 500.0, 500, 500)


def test_the_lognormal_sigma_gives_back_its_mean_and_p99():
    # mean = exp(mu + s²/2), p99 = exp(mu + 2.3263 s): for mean 1,000 and p99 6,000,
    # ln 6 = 2.3263 s − s²/2 → s = 2.3263 − sqrt(2.3263² − 2 ln 6) = 1.0003.
    s = lognormal_sigma(1000, 6000)
    assert s == pytest.approx(2.3263478740408408 - math.sqrt(2.3263478740408408**2 - 2 * math.log(6)), rel=1e-12)
    mu = math.log(1000) - s**2 / 2
    assert math.exp(mu + s**2 / 2) == pytest.approx(1000)
    assert math.exp(mu + 2.3263478740408408 * s) == pytest.approx(6000)


def test_drawn_lognormal_lengths_have_the_mean_and_p99_asked_for():
    dist = LengthDistribution("lognormal", 1000.0, 1, 10_000_000, 6000.0)
    reqs = draw_requests(Traffic(1.0, dist, FIXED), 40_000, seed=3)
    prompts = sorted(r.prompt_tokens for r in reqs)
    assert statistics.fmean(prompts) == pytest.approx(1000, rel=0.03)
    assert prompts[int(0.99 * len(prompts))] == pytest.approx(6000, rel=0.06)


def test_lengths_are_clipped_to_their_range():
    dist = LengthDistribution("exponential", 300.0, 10, 600)
    reqs = draw_requests(Traffic(1.0, FIXED, dist), 5_000, seed=1)
    assert min(r.output_tokens for r in reqs) >= 10 and max(r.output_tokens for r in reqs) == 600


def test_poisson_gaps_average_one_over_the_rate_with_a_cv_of_one():
    reqs = draw_requests(Traffic(20.0, FIXED, FIXED), 40_000, seed=5)
    gaps = [b.arrival_s - a.arrival_s for a, b in zip(reqs, reqs[1:])]
    assert statistics.fmean(gaps) == pytest.approx(1 / 20, rel=0.02)
    assert statistics.pstdev(gaps) / statistics.fmean(gaps) == pytest.approx(1.0, rel=0.03)


def test_gamma_gaps_have_the_stated_cv():
    reqs = draw_requests(Traffic(20.0, FIXED, FIXED, arrival_cv=3.0), 40_000, seed=5)
    gaps = [b.arrival_s - a.arrival_s for a, b in zip(reqs, reqs[1:])]
    assert statistics.fmean(gaps) == pytest.approx(1 / 20, rel=0.05)
    assert statistics.pstdev(gaps) / statistics.fmean(gaps) == pytest.approx(3.0, rel=0.08)


def test_the_same_seed_gives_the_same_requests_and_a_new_rate_keeps_the_lengths():
    dist = LengthDistribution("lognormal", 800.0, 1, 100_000, 3000.0)
    t = Traffic(4.0, dist, dist)
    a, b = draw_requests(t, 200, seed=9), draw_requests(t, 200, seed=9)
    assert a == b
    c = draw_requests(t, 200, seed=9, rate_per_s=8.0)
    assert [(r.prompt_tokens, r.output_tokens) for r in c] == [(r.prompt_tokens, r.output_tokens) for r in a]
    assert c[-1].arrival_s == pytest.approx(a[-1].arrival_s / 2)


def test_moments_of_fixed_lengths_are_exact():
    m = moments(FIXED, LengthDistribution("fixed", 200.0, 200, 200))
    assert (m.prompt_mean, m.prompt_p2_mean, m.prompt_sq_mean, m.output_mean) == (500, 250_000, 500 * 501, 200)
    assert m.prompt_at(99.0) == 500 and m.output_at(50.0) == 200
