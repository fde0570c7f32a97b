"""The $/Mtok under traffic: a mixed iteration (a prompt chunk beside decoders) is split
between the two by what each would take alone, so prompts no longer pay for the
decoders' part of the iterations they ride in, and input and output still pay for the
plan exactly."""

from __future__ import annotations

import pytest

from solver.physics.deployment import Targets
from solver.traffic.requests import Moments
from solver.traffic.screen import screen, split_mixed
from solver.traffic.simulate import EngineLimits

F, ALPHA, BETA = 0.010, 0.0002, 0.00005
"""A toy iteration: F s fixed, ALPHA s per decoder, BETA s per prompt token."""


class ToyIteration:
    request_overhead_s = 0.0

    def mean_iteration_s(self, b: float, ctx: float, k: float, pairs: float) -> float:
        return 0.0 if b <= 0 and k <= 0 else F + ALPHA * b + BETA * k


def test_split_mixed_adds_up_and_follows_the_parts_alone():
    # 30 ms iteration whose chunk alone takes 20 ms and decoders alone 10 ms: 2/3 of it.
    assert split_mixed(0.030, 0.020, 0.010) == pytest.approx(0.020)
    assert split_mixed(0.030, 0.0, 0.010) == 0.0
    assert split_mixed(0.030, 0.020, 0.0) == pytest.approx(0.030)


def test_the_prompts_pay_their_part_of_the_mixed_iterations_not_all_of_them():
    # λ = 2 requests/s of 1,000-token prompts and 100-token outputs, a 2,048-token budget:
    # each prompt is one chunk, in one mixed iteration beside n decoders.
    # By hand: T_mix(n) = F + αn + βP = 0.06 + 0.0002n, the decode step D(n) = 0.01 + 0.0002n.
    # Fixed point n = λ·Ō/rounds, rounds = (1 − λT_mix)/D + λ: n(0.88 − 0.0004n) + 2n·D = 200·D
    # → 0.9n − 0.04n = 2 → n = 2/0.86.
    m = Moments(1000.0, 1000.0 * 1001.0, 1000.0**2, 100.0, (1000.0,) * 4, (100.0,) * 4)
    limits = EngineLimits(max_num_seqs=1000, max_num_batched_tokens=2048, kv_capacity_tokens=10**9, block_size_tokens=16, chunked_prefill=True)
    s = screen(ToyIteration(), limits, m, 2.0, Targets())  # type: ignore[arg-type]
    n = 2 / 0.86
    assert s.decoding == pytest.approx(n, rel=1e-6)
    t_mix = 0.06 + 0.0002 * n
    prompt_alone, decode_alone = F + BETA * 1000, F + ALPHA * n  # 0.06 s and 0.010465 s
    # The prompts took λ·T_mix = 12.09 % of the time (what they were charged before);
    # they pay λ·T_mix·0.06/(0.06 + 0.010465) = 10.30 % of it.
    assert s.prefill_share == pytest.approx(2 * t_mix, rel=1e-6)
    assert s.prompt_cost_share == pytest.approx(2 * t_mix * prompt_alone / (prompt_alone + decode_alone), rel=1e-6)
    assert s.prompt_cost_share == pytest.approx(0.10297, rel=1e-4)


def test_whole_prompt_iterations_are_the_prompts_alone():
    # Without chunked prefill a prompt runs in an iteration of its own: all its cost is
    # the prompt's, T = F + βP = 0.06 s, so the share is λ·T = 0.12.
    m = Moments(1000.0, 1000.0 * 1001.0, 1000.0**2, 100.0, (1000.0,) * 4, (100.0,) * 4)
    limits = EngineLimits(max_num_seqs=1000, max_num_batched_tokens=2048, kv_capacity_tokens=10**9, block_size_tokens=16, chunked_prefill=False)
    s = screen(ToyIteration(), limits, m, 2.0, Targets())  # type: ignore[arg-type]
    assert s.prompt_cost_share == pytest.approx(2 * 0.06, rel=1e-9)


def test_at_capacity_input_and_output_pay_for_the_replicas_exactly():
    # At the sustainable rate μ per replica: $/M in × μ·P̄ + $/M out × μ·Ō = one replica's $/s.
    from solver.catalog import default_catalog
    from solver.explain.solve import solve
    from solver.optimise.shapes import build_problem
    from solver.report.traffic_json import traffic_out
    from solver.spec.solve_spec import parse_spec

    spec = {
        "model": "llama-3.1-8b",
        "workload": {"requests_per_s": 10, "prompt_tokens": {"dist": "lognormal", "mean": 800, "p99": 4000}, "output_tokens": 200},
        "sla": {"ttft": {"p99": "1s"}, "tpot": {"p90": "30ms"}},
        "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["fp8"], "kv_cache": ["bf16"]},
        "simulation": {"requests": 1000},
    }
    r = solve(build_problem(parse_spec(spec), default_catalog()), explain=False)
    t = traffic_out(r)
    assert t is not None
    c = r.solution.chosen
    mu = t.sustainable_requests_per_s_per_replica
    paid = (
        t.usd_per_million_input_tokens_at_capacity * mu * t.prompt.mean_tokens
        + t.usd_per_million_output_tokens_at_capacity * mu * t.output.mean_tokens
    ) / 1e6
    assert paid == pytest.approx(c.cost_usd_per_hour / 3600 / c.replicas, rel=1e-9)
