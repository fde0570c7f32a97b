"""The steps that carry prompt tokens under continuous batching: a chunk's tokens reach
routed experts as the decoders' do, and an engine that runs prompts apart (SGLang's
prefill_schedule "separate") makes every decoder wait for whole prompt passes."""

from __future__ import annotations

import dataclasses
import math

import pytest

from solver.physics.decode import estimate_decode
from solver.physics.kernels import kernel_time_s


def _coefficients(build_deployment, engine: str, users: int, prompt: int, output: int, model: str = "qwen3-30b-a3b"):
    d, w, _ = build_deployment(model, "h100-sxm", users=users, prompt=prompt, output=output, engine={"name": engine})
    return estimate_decode(d, dataclasses.replace(w, batching="continuous")).coefficients


def test_a_chunk_step_reads_every_expert_its_prompt_tokens_reach(build_deployment):
    # Qwen3-30B-A3B routes each token to k = 8 of E = 128 experts. Four decoders reach
    # 1 − (1 − 8/128)^4 = 1 − (15/16)^4 = 0.2275 of them; with a 500-token chunk in the
    # step its 504 tokens reach 1 − (15/16)^504 = 1 − 7.7e-15 of them: all but none.
    c = _coefficients(build_deployment, "vllm", users=4, prompt=1000, output=500)
    rate = c.bandwidth_bytes_per_s * c.bandwidth_efficiency * c.weight_bandwidth_share
    decoders_only = (c.dense_weight_bytes + c.routed_weight_bytes * (1 - (15 / 16) ** 4)) / rate
    with_chunk = (c.dense_weight_bytes + c.routed_weight_bytes * (1 - (15 / 16) ** 504)) / rate
    assert c.weights_time_s(4) == pytest.approx(decoders_only)
    assert c.weights_time_s(4, 500) == pytest.approx(with_chunk)
    assert with_chunk > 2 * decoders_only  # the routed experts are most of the model's bytes
    # the chunk step's matmuls read them: never faster than that read
    assert c.gemm_time_s(4, 500) >= with_chunk


def test_vllm_mixes_chunks_into_the_step_and_sglang_runs_them_apart(build_deployment):
    mixed = _coefficients(build_deployment, "vllm", users=4, prompt=1000, output=500)
    apart = _coefficients(build_deployment, "sglang", users=4, prompt=1000, output=500)
    assert not mixed.separate_prefill and mixed.pass_mix(4) is None
    assert apart.separate_prefill and apart.chunk_mix(4) is None


def test_few_users_wait_for_a_pass_per_prompt(build_deployment):
    # 4 users, 1,000-token prompts over 500 output steps: 4 × 1000 / 500 = 8 prompt tokens
    # arrive a step, λ = 8 / 1000 = 0.008 prompts. A step is followed by a pass when one or
    # more arrived: 1 − e^(−0.008) = 0.0079681 passes a step, each of 8 / 0.0079681 = 1004.0
    # tokens (now and then two prompts share one).
    c = _coefficients(build_deployment, "sglang", users=4, prompt=1000, output=500)
    passes, tokens = c.pass_mix(4)
    assert passes == pytest.approx(0.0079681, rel=1e-4)
    assert tokens == pytest.approx(1004.0, rel=1e-4)
    # the decoders' mean step: their own step, then their share of a pass
    assert c.step_s(4) == pytest.approx(c.step_s(4, 0) + passes * c.prompt_pass_s(tokens))


def test_a_pass_is_a_prefill_of_its_tokens_alone(build_deployment):
    # A pass carries no decoders: it reads the experts its 1,004 tokens reach (all of
    # them, 1 − (15/16)^1004 = 1), takes their matmuls at the prefill's unhidden share (1:
    # the read and the math one after the other), their all-reduces (none at TP 1) and
    # the step's fixed cost.
    c = _coefficients(build_deployment, "sglang", users=4, prompt=1000, output=500)
    rate = c.bandwidth_bytes_per_s * c.bandwidth_efficiency * c.weight_bandwidth_share
    read = (c.dense_weight_bytes + c.routed_weight_bytes * (1 - (15 / 16) ** 1004)) / rate
    math_s = 1004 * c.prefill_flops_per_token / (c.matmul_flops_per_s * c.compute_efficiency)
    assert c.prefill_unhidden_share == 1.0  # catalogs/fitted.yaml
    want = kernel_time_s(read, math_s, True, 1.0) + c.comm_fixed_s + 1004 * c.comm_per_sequence_s + c.step_overhead_s
    assert c.prompt_pass_s(1004) == pytest.approx(want)
    assert c.prompt_pass_s(1004) == pytest.approx(read + math_s + c.step_overhead_s)  # TP 1: no communication


def test_a_saturated_loop_runs_one_pass_a_step_of_every_arrival(build_deployment):
    # 1,000 users, 128-token prompts over 128 steps: 1,000 prompt tokens a step, λ = 7.8
    # prompts: 1 − e^(−7.8125) = 0.999596 of the steps are followed by a pass, of
    # 1000 / 0.999596 = 1000.4 tokens, within SGLang's 8,192-token budget.
    c = _coefficients(build_deployment, "sglang", users=1000, prompt=128, output=128)
    passes, tokens = c.pass_mix(1000)
    assert passes == pytest.approx(-math.expm1(-1000 / 128), rel=1e-9)
    assert passes == pytest.approx(0.999596, rel=1e-5)
    assert tokens == pytest.approx(1000.4, rel=1e-4)


def test_a_prompt_longer_than_the_budget_takes_budget_sized_passes(build_deployment):
    # 2 users, 20,000-token prompts over 1,000 steps: 40 prompt tokens a step, λ = 0.002;
    # 1 − e^(−0.002) = 0.0019980 passes would carry 20,020 tokens, over the 8,192-token
    # budget: 40 / 8192 = 0.0048828 passes a step, each of a budget's 8,192 tokens.
    c = _coefficients(build_deployment, "sglang", users=2, prompt=20_000, output=1000)
    assert c.prefill_budget_tokens == 8192
    passes, tokens = c.pass_mix(2)
    assert passes == pytest.approx(40 / 8192)
    assert tokens == pytest.approx(8192)
