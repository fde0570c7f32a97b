"""Bursty arrivals in the analytic screen: a stream whose gaps vary more than Poisson's
queues more (Kingman's G/G/1 correction, derived by hand here), holds more decoders at
its peaks, and so sustains less per replica; a replica sharing the stream with others
sees a smoother share."""

from __future__ import annotations

import random
import statistics

import pytest

from solver.physics.deployment import LengthDistribution, Traffic
from solver.traffic.requests import draw_gap_s, moments
from solver.traffic.screen import kingman_factor, peakedness, replica_cv, screen, sustainable_rate
from tests.solve_helpers import problem_of
from tests.traffic.test_screen import OUTPUT, PROMPT, TARGETS, _replica

CHAT = {
    "model": "llama-3.1-70b",
    "workload": {
        "requests_per_s": 20,
        "prompt_tokens": {"dist": "lognormal", "mean": 1000, "p99": 6000},
        "output_tokens": {"dist": "lognormal", "mean": 300, "p99": 1200},
    },
    "sla": {"ttft": {"p99": "2s"}, "tpot": {"p90": "50ms"}},
    "search": {"gpus": ["h100-sxm"], "tp": [4], "weights": ["fp8"], "kv_cache": ["bf16"]},
}


def _sustained(arrival: dict | None) -> float:
    from solver.optimise.traffic_candidates import screened

    spec = {**CHAT, "workload": {**CHAT["workload"], **({"arrival": arrival} if arrival else {})}}
    problem = problem_of(spec)
    (shape,) = [sh for sh in problem.shapes if sh.deployment.tp == 4]
    return screened(problem, shape, problem.workload, problem.targets).sustainable.rate_per_s


def test_a_cv_3_stream_sustains_strictly_less_than_a_poisson_one():
    # The issue: gamma gaps of cv 3 and Poisson arrivals were both "one replica
    # sustains 12.5 req/s". Burstier arrivals queue longer at every rate (Kingman: the
    # wait grows with ca²), so a replica holds the same targets at a lower rate.
    poisson = _sustained(None)
    bursty = _sustained({"process": "gamma", "cv": 3})
    smooth = _sustained({"process": "gamma", "cv": 0.5})
    assert 0 < bursty < poisson <= smooth


def test_kingmans_factor_by_hand():
    # Kingman: W ≈ ρ/(1 − ρ)·E[S]·(ca² + cs²)/2; Pollaczek–Khinchine (M/G/1):
    # W = ρ/(1 − ρ)·E[S]·(1 + cs²)/2. Their ratio is (ca² + cs²)/(1 + cs²):
    # ca = 3, exponential service (cs² = 1): (9 + 1)/2 = 5;
    # ca = 2, fixed service (cs² = 0): 4/1 = 4; Poisson arrivals: 1 for any service;
    # D/D/1 (ca = cs = 0): no wait at all.
    assert kingman_factor(3.0, 1.0) == pytest.approx(5.0)
    assert kingman_factor(2.0, 0.0) == pytest.approx(4.0)
    assert kingman_factor(1.0, 0.7) == pytest.approx(1.0)
    assert kingman_factor(0.0, 0.0) == 0.0


def test_the_screens_prompt_wait_scales_by_kingmans_factor():
    # Fixed 1,000-token prompts: every prefill takes the same time, cs² = 0, so the
    # factor is (ca² + 0)/(1 + 0) = ca²: at one rate, gaps of cv 2 wait 4 times and cv 3
    # 9 times as long as Poisson's for the prompts ahead, and evenly spaced ones (cv 0,
    # D/D/1) not at all. The rest of the mean TTFT (half a decode iteration, the front
    # end, the prompt's own prefill) does not depend on the gaps' cv, so the wait at a
    # cv is the mean TTFT less that at cv 0.
    it, limits = _replica()
    m = moments(LengthDistribution("fixed", 1000.0, 1000, 1000), OUTPUT)
    rate = 0.5 * sustainable_rate(it, limits, m, TARGETS).rate_per_s
    at = {cv: screen(it, limits, m, rate, TARGETS, arrival_cv=cv) for cv in (0.0, 1.0, 2.0, 3.0)}
    wait = {cv: s.ttft_mean_s - at[0.0].ttft_mean_s for cv, s in at.items()}
    assert wait[1.0] > 0
    assert wait[2.0] == pytest.approx(4 * wait[1.0], rel=1e-9)
    assert wait[3.0] == pytest.approx(9 * wait[1.0], rel=1e-9)
    # and every percentile the targets name is at least Poisson's
    assert at[3.0].ttft_q_s > at[1.0].ttft_q_s and at[3.0].tpot_q_s > at[1.0].tpot_q_s


def test_a_replicas_share_of_a_split_stream_by_hand_and_by_draws():
    # Each arrival of a renewal stream sent to one of r replicas at random (p = 1/r): a
    # replica's gap is a geometric sum of N gaps (mean 1/p), of variance
    # E[N]σ² + Var[N]μ² = σ²/p + (1 − p)μ²/p², so its squared cv is p·ca² + (1 − p):
    # ca = 3, r = 5: 9/5 + 4/5 = 2.6. A Poisson stream stays Poisson (cv 1).
    assert replica_cv(3.0, 5) ** 2 == pytest.approx(2.6)
    assert replica_cv(1.0, 7) == pytest.approx(1.0) and replica_cv(3.0, 1) == pytest.approx(3.0)
    rng, keep = random.Random(7), random.Random(8)
    gaps, acc = [], 0.0
    for _ in range(400_000):
        acc += draw_gap_s(Traffic(1.0, OUTPUT, OUTPUT, arrival_cv=3.0), 1.0, rng)
        if keep.random() < 0.2:
            gaps.append(acc)
            acc = 0.0
    scv = statistics.pvariance(gaps) / statistics.fmean(gaps) ** 2
    assert scv == pytest.approx(2.6, rel=0.08)


def test_the_decoders_peakedness_by_hand():
    # Var/mean of the number in a G/G/∞ system ≈ 1 + (ca² − 1)·κ, κ = ∫P(O > x)²dx/E[O]
    # = E[min(O, O')]/E[O]: ½ for exponential lengths (the smaller of two is exponential
    # at twice the rate), 1 for fixed ones; Poisson arrivals give 1 whatever the lengths.
    exp = moments(PROMPT, LengthDistribution("exponential", 300.0, 1, 100_000))
    fixed = moments(PROMPT, LengthDistribution("fixed", 300.0, 300, 300))
    assert exp.output_overlap == pytest.approx(0.5, abs=0.02)
    assert fixed.output_overlap == pytest.approx(1.0)
    assert peakedness(1.0, exp.output_overlap) == pytest.approx(1.0)
    assert peakedness(3.0, 0.5) == pytest.approx(5.0)  # 1 + 8 × ½
