"""One iteration under traffic is the same sum of kernels as the decode step and the
prefill: decode-only it is the decode step, prompt-only the idle prefill."""

from __future__ import annotations

import pytest

from solver.catalog import default_catalog
from solver.physics.decode import decode_coefficients
from solver.physics.deployment import Workload
from solver.physics.iteration import iteration_model
from solver.physics.prefill import estimate_prefill
from solver.physics.resolve import resolve
from solver.spec.evaluate_input import parse_input
from solver.traffic.simulate import EngineLimits, Request, simulate

CASES = [
    ("llama-3.1-8b", "h100-sxm", 1),  # dense, one GPU
    ("llama-3.1-70b", "h100-sxm", 4),  # tensor parallel: all-reduces
    ("qwen3-30b-a3b", "h100-sxm", 2),  # mixture of experts: the experts a pass touches
    ("gemma-3-27b", "h100-sxm", 2),  # sliding-window layers
]


def _deployment(model: str, gpu: str, tp: int, prompt: int = 1000, output: int = 300, overrides: dict | None = None):
    spec = {"model": model, "hardware": {"gpu": gpu, "tp": tp}, "workload": {"users": 8, "prompt_tokens": prompt, "output_tokens": output}}
    d, w, _ = resolve(parse_input({**spec, **({"overrides": overrides} if overrides else {})}), default_catalog())
    return d, w


@pytest.mark.parametrize("model, gpu, tp", CASES)
def test_a_decode_only_iteration_is_the_decode_step(model, gpu, tp):
    d, w = _deployment(model, gpu, tp)
    it = iteration_model(d, w)
    dec = decode_coefficients(d, w.context_tokens)
    for batch in (1, 8, 64):
        assert it.iteration_s(batch, batch * w.context_tokens, 0, 0) == pytest.approx(dec.step_s(batch), rel=1e-12)


@pytest.mark.parametrize("model, gpu, tp", CASES)
def test_a_whole_prompt_alone_is_the_idle_prefill(model, gpu, tp):
    d, w = _deployment(model, gpu, tp)
    p = w.prompt_tokens
    # the GPUs' part of it: the front end is no iteration's (the simulator adds it per request)
    assert iteration_model(d, w).iteration_s(0, 0, p, p * (p + 1) / 2) == pytest.approx(estimate_prefill(d, w).gpu_time_s, rel=1e-12)


def test_one_request_alone_sees_the_idle_ttft_and_the_decode_step_at_its_mean_context():
    # A vanishing rate: the simulator's TTFT is one prefill iteration; each later token one
    # decode step over a context growing from P + 1 to P + O − 1 (the cost is linear in
    # it), so the mean step is the step at the mean context P + O/2 (as written by the
    # simulator: prompt + tokens so far, the new one included).
    prompt, output = 1000, 300
    d, w = _deployment("llama-3.1-8b", "h100-sxm", 1, prompt, output, {"factors": {"request_overhead_s": "25ms"}})
    it = iteration_model(d, w)
    limits = EngineLimits(max_num_seqs=256, max_num_batched_tokens=8192, kv_capacity_tokens=100_000)
    (r,) = simulate([Request(0.0, prompt, output)], it, limits, front_end_s=it.request_overhead_s).results
    assert it.request_overhead_s == 0.025  # a server's front end, in the TTFT once
    assert r.ttft_s == pytest.approx(estimate_prefill(d, w).ttft_s, rel=1e-12)
    contexts = [prompt + i for i in range(1, output)]
    mean_ctx = sum(contexts) / len(contexts)
    assert r.tpot_s == pytest.approx(it.iteration_s(1, round(mean_ctx), 0, 0), rel=1e-6)
    ctx_w = Workload(1, round(mean_ctx), prompt, output)
    assert r.tpot_s == pytest.approx(decode_coefficients(d, ctx_w.context_tokens).step_s(1), rel=1e-6)


def test_a_pass_never_costs_less_when_decoders_join_a_prompt_hand_derived():
    # Llama-3.1-8B on one H100, prompt 230 tokens. With the prefill's unhidden share 1
    # its GEMMs alone are weights read + FLOPs; joined by decoders at the decode share 0
    # they were max(read, FLOPs), less than the prompt alone, however many decoders
    # came (the min term dropped). Adding work must not make the pass cheaper:
    # iteration(b decoders + 230 tokens) >= iteration(230 tokens alone) for b >= 1.
    d, w = _deployment("llama-3.1-8b", "h100-sxm", 1, prompt=230, output=100)
    it = iteration_model(d, w)
    alone = it.iteration_s(0, 0, 230, 230 * 231 / 2)
    for b in (1, 2, 32):
        assert it.iteration_s(b, b * w.context_tokens, 230, 230 * 231 / 2) >= alone


@pytest.mark.parametrize("model, gpu, tp", [*CASES, ("llama-3.1-405b", "h200", 8)])
def test_a_pass_is_monotone_in_its_decoders_and_prompt_tokens(model, gpu, tp):
    # property: over a grid of (decoders, prompt tokens), adding either never lowers the cost
    d, w = _deployment(model, gpu, tp, prompt=512, output=128)
    it = iteration_model(d, w)
    ctx = w.context_tokens
    grid_b, grid_k = (0, 1, 4, 32, 128), (0, 1, 16, 230, 512, 2048)

    def cost(b: int, k: int) -> float:
        return it.iteration_s(b, b * ctx, k, k * (k + 1) / 2)

    for b in grid_b:
        for k in grid_k:
            here = cost(b, k)
            for b2 in grid_b:
                if b2 > b:
                    assert cost(b2, k) >= here * (1 - 1e-12), (b, k, b2)
            for k2 in grid_k:
                if k2 > k:
                    assert cost(b, k2) >= here * (1 - 1e-12), (b, k, k2)
