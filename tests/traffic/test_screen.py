"""The analytic screen sizes every shape before the simulator checks the chosen one:
it must land near the simulation, grow every delay with the rate, and stop at the
limit that really stops a replica."""

from __future__ import annotations

import statistics

import pytest

from solver.catalog import default_catalog
from solver.physics.deployment import LengthDistribution, Targets, Traffic, Workload
from solver.physics.iteration import iteration_model
from solver.physics.resolve import resolve
from solver.spec.evaluate_input import parse_input
from solver.traffic.requests import draw_requests, moments
from solver.traffic.screen import engine_limits, screen, sustainable_rate
from solver.traffic.simulate import simulate

PROMPT = LengthDistribution("lognormal", 1000.0, 1, 6000, 4000.0)
OUTPUT = LengthDistribution("lognormal", 300.0, 1, 2000, 900.0)
TRAFFIC = Traffic(1.0, PROMPT, OUTPUT)
TARGETS = Targets(max_ttft_s=2.0, max_tpot_s=0.05, ttft_percentile=99.0, tpot_percentile=90.0)


def _replica(model="llama-3.1-70b", gpu="h100-sxm", tp=4):
    d, _, _ = resolve(
        parse_input({"model": model, "hardware": {"gpu": gpu, "tp": tp}, "workload": {"users": 8, "prompt_tokens": 1000, "output_tokens": 300}}),
        default_catalog(),
    )
    w = Workload(8, 8192, 1000, 300, (1000 + 150) / 8192, "continuous")
    return iteration_model(d, w), engine_limits(d, w)


@pytest.mark.parametrize("load", [0.3, 0.6])
def test_the_screen_lands_near_the_simulation(load):
    # 5,000 simulated requests at 30 % and 60 % of the sustainable rate: the screen's
    # median TPOT within 10 %, its P90 TPOT and mean TTFT within 25 %, the requests in the
    # replica within 10 %.
    it, limits = _replica()
    m = moments(PROMPT, OUTPUT)
    rate = sustainable_rate(it, limits, m, TARGETS).rate_per_s * load
    s = screen(it, limits, m, rate, TARGETS)
    sim = simulate(draw_requests(TRAFFIC, 5_000, seed=0, rate_per_s=rate), it, limits, front_end_s=it.request_overhead_s)
    assert s.tpot_mean_s == pytest.approx(sim.percentile("tpot_s", 50), rel=0.10)
    assert s.tpot_q_s == pytest.approx(sim.percentile("tpot_s", 90), rel=0.25)
    assert s.ttft_mean_s == pytest.approx(statistics.fmean(r.ttft_s for r in sim.results), rel=0.25)
    assert s.concurrency == pytest.approx(sim.mean_in_system, rel=0.10)


def test_every_delay_grows_with_the_rate():
    it, limits = _replica()
    m = moments(PROMPT, OUTPUT)
    top = sustainable_rate(it, limits, m, TARGETS).rate_per_s
    screens = [screen(it, limits, m, top * f, TARGETS) for f in (0.1, 0.3, 0.5, 0.7, 0.9, 1.0)]
    for a, b in zip(screens, screens[1:]):
        assert a.ttft_q_s <= b.ttft_q_s and a.tpot_q_s <= b.tpot_q_s and a.e2e_q_s <= b.e2e_q_s


def test_a_tighter_target_sustains_less():
    it, limits = _replica()
    m = moments(PROMPT, OUTPUT)
    loose = sustainable_rate(it, limits, m, TARGETS)
    tight = sustainable_rate(it, limits, m, Targets(max_ttft_s=2.0, max_tpot_s=0.03, ttft_percentile=99.0, tpot_percentile=90.0))
    assert 0 < tight.rate_per_s < loose.rate_per_s and tight.binding == "tpot"


def test_a_target_the_idle_replica_misses_sustains_nothing():
    it, limits = _replica()
    idle = Targets(max_tpot_s=0.001, tpot_percentile=50.0)  # 1 ms: below one decode step of a 70B model
    got = sustainable_rate(it, limits, moments(PROMPT, OUTPUT), idle)
    assert got.rate_per_s == 0 and got.binding == "tpot"


def test_sglang_runs_as_many_requests_as_half_its_kv_pool_up_to_its_request_pool():
    # SGLang's max_running_requests: min(KV tokens // 2, request pool), the pool
    # min(max(KV tokens / context × 512, 2048), 4096) — not the 256 of vLLM's max_num_seqs.
    d, _, _ = resolve(
        parse_input(
            {
                "model": "llama-3.1-8b",
                "engine": "sglang",
                "hardware": {"gpu": "h100-sxm"},
                "workload": {"users": 8, "prompt_tokens": 1000, "output_tokens": 300},
            }
        ),
        default_catalog(),
    )
    w = Workload(8, 1300, 1000, 300, 1.0, "continuous")
    limits = engine_limits(d, w)
    kv = limits.kv_capacity_tokens
    pool = min(max(int(kv / 1300 * 512), 2048), 4096)
    assert limits.max_num_seqs == min(kv // 2, pool) and limits.max_num_seqs > 256
    # Set in the spec, max_num_seqs is what runs.
    d2, _, _ = resolve(
        parse_input(
            {
                "model": "llama-3.1-8b",
                "engine": {"name": "sglang", "max_num_seqs": 64},
                "hardware": {"gpu": "h100-sxm"},
                "workload": {"users": 8, "prompt_tokens": 1000, "output_tokens": 300},
            }
        ),
        default_catalog(),
    )
    assert engine_limits(d2, w).max_num_seqs == 64
