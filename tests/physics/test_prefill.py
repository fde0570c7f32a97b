"""Step 3, prefill compute: the seed's linear term plus causal attention."""

from __future__ import annotations

import pytest

from solver.physics.prefill import attention_flops, estimate_prefill


def test_causal_attention_flops_llama_8b(build_deployment):
    d, _, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=1000, output=1)
    # QK and AV, 2 FLOP per multiply-add, 32 heads × 128, 32 layers, token i sees i keys.
    assert attention_flops(d, 1000) == 4 * 32 * 128 * 32 * (1000 * 1001 // 2)


def test_sliding_window_caps_attention_flops(build_deployment):
    d, _, _ = build_deployment("gpt-oss-20b", "h100-sxm", users=1, prompt=1000, output=1, weights="mxfp4")
    per_pair = 4 * 64 * 64  # 64 query heads × head_dim 64
    full = 12 * (1000 * 1001 // 2)
    window = 12 * (128 * 129 // 2 + (1000 - 128) * 128)
    assert attention_flops(d, 1000) == per_pair * (full + window)


def test_one_token_prompt_is_bounded_by_reading_the_weights(build_deployment):
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=1, output=1)
    pre = estimate_prefill(d, w)
    assert pre.bound == "bandwidth"
    assert pre.ttft_s == pytest.approx(16_060_522_496 / (3.35e12 * 0.8))


def test_fp8_weights_use_fp8_tensor_cores_where_they_exist(build_deployment):
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=2048, output=1, weights="fp8")
    assert estimate_prefill(d, w).peak_flops_per_s == 1979e12
    # An A100 has no FP8 tensor cores: FP8 weights run as weight-only kernels at FP16 rate.
    d, w, _ = build_deployment("llama-3.1-8b", "a100-80gb", users=1, prompt=2048, output=1, weights="fp8")
    pre = estimate_prefill(d, w)
    assert (pre.compute_dtype, pre.peak_flops_per_s) == ("fp16", 312e12)


def test_tensor_parallel_multiplies_throughput(build_deployment):
    d, w, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=4, users=1, prompt=8192, output=1)
    pre = estimate_prefill(d, w)
    assert pre.effective_flops_per_s == 4 * 989.5e12 * 0.5
    flops = 2 * 70_553_706_496 * 8192 + 4 * 64 * 128 * 80 * (8192 * 8193 // 2)
    assert pre.compute_time_s == pytest.approx(flops / (4 * 989.5e12 * 0.5))
