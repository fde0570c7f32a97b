"""A prefill's routed experts: their grouped GEMMs take the larger of their weight read and
their math (decode's unhidden share, 0), the dense GEMMs the prefill's fitted sum."""

from __future__ import annotations

import pytest

from solver.physics.interconnect import CommEstimate
from solver.physics.prefill import PrefillEstimate, estimate_prefill

NO_FIXED = {"step_overhead_s": 0, "layer_overhead_s": 0, "expert_layer_overhead_s": 0, "request_overhead_s": 0, "prefill_expert_overhead_s": 0}


def _estimate(expert_flops: float) -> PrefillEstimate:
    """Hand numbers: 1 PFLOP/s × 0.5 utilisation = 5e14 FLOP/s; 1e12 B/s × 0.5 = 5e11 B/s."""
    return PrefillEstimate(
        prompt_tokens=128,
        linear_flops=5e12 + expert_flops,
        attention_flops=0.0,
        tp=1,
        matmul_flops_per_s=1e15,
        compute_dtype="fp8",
        compute_efficiency=0.5,
        weight_bytes_read=1e10,
        bandwidth_bytes_per_s=1e12,
        bandwidth_efficiency=0.5,
        comm=CommEstimate(0.0, 0.0, 0, 0.0, 0.0),
        unhidden_share=1.0,
        expert_flops=expert_flops,
        expert_compute_share=0.5,
        routed_bytes_read=8e9,
    )


def test_experts_math_hides_under_their_read_and_the_dense_gemms_sum():
    # Dense: 2e9 B / 5e11 = 4 ms read, 5e12 / 5e14 = 10 ms math, summed (share 1): 14 ms.
    # Experts, math-bound: 8e9 B / 5e11 = 16 ms read; 1.5e13 FLOPs / 0.5 share / 5e14 =
    # 60 ms math: max 60 ms. GEMMs 74 ms (the sum over the whole, max(20, 70) + 20, was 90).
    pre = _estimate(1.5e13)
    assert pre.routed_weights_time_s == pytest.approx(0.016)
    assert pre.expert_time_s == pytest.approx(0.060)
    assert pre.gemm_time_s == pytest.approx(0.074)
    # Experts read-bound: 1e12 FLOPs / 0.5 / 5e14 = 4 ms under a 16 ms read: 14 + 16 = 30 ms
    # (the sum over the whole, max(20, 16) + 16, was 36).
    assert _estimate(1e12).gemm_time_s == pytest.approx(0.030)


def test_mixtral_prompt_reads_every_expert_once_per_gpu(build_deployment):
    # Mixtral-8x7B in bf16 at TP 2, 128 tokens: each of the 8 experts is reached with
    # probability 1 − (1 − 2/8)^128 = 1 − 1e-16; the routed experts are 32 layers × 8 ×
    # 3 × 4,096 × 14,336 = 45,097,156,608 parameters × 2 B, halved over 2 GPUs.
    over = {"factors": {**NO_FIXED, "bandwidth_efficiency": 0.8}}
    d, w, _ = build_deployment("mixtral-8x7b", "h100-sxm", users=1, prompt=128, output=1, tp=2, overrides=over)
    pre = estimate_prefill(d, w)
    assert pre.routed_bytes_read == pytest.approx(45_097_156_608, rel=1e-9)
    assert pre.routed_weights_time_s == pytest.approx(45_097_156_608 / (3.35e12 * 0.8), rel=1e-9)
    # their math, 2 × 128 tokens × 45.1e9 × 2/8 routed parameters = 2.9e12 FLOPs, is far under it:
    assert pre.expert_time_s < pre.routed_weights_time_s
    dense_read_s = pre.weights_time_s - pre.routed_weights_time_s
    dense_math_s = pre.linear_time_s - pre.expert_time_s
    assert pre.gemm_time_s == pytest.approx(dense_read_s + dense_math_s + pre.routed_weights_time_s, rel=1e-9)


def test_dense_model_keeps_the_fitted_sum(build_deployment):
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=512, output=1, overrides={"factors": NO_FIXED})
    pre = estimate_prefill(d, w)
    assert pre.routed_bytes_read == 0.0
    assert pre.gemm_time_s == pytest.approx(pre.weights_time_s + pre.linear_time_s, rel=1e-12)
