"""Step 2, decode bandwidth: bytes read per step, MoE expert hits, the compute bound."""

from __future__ import annotations

import pytest

from solver.physics.decode import estimate_decode, expert_hit_fraction

NO_EFF = {"factors": {"bandwidth_efficiency": 1.0, "compute_efficiency": 1.0}}


def test_batch1_tpot_is_model_bytes_over_bandwidth(build_deployment):
    # Llama-3.1-8B bf16 = 8,030,261,248 × 2 B on an H100 SXM at 3.35 TB/s.
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=1, output=1, overrides=NO_EFF)
    dec = estimate_decode(d, w)
    assert dec.weight_bytes_read == 8_030_261_248 * 2
    assert dec.weights_time_s == pytest.approx(16_060_522_496 / 3.35e12)
    assert dec.bound == "bandwidth"
    assert dec.tpot_s == pytest.approx((16_060_522_496 + 2 * 131_072) / 3.35e12)


def test_every_resident_kv_byte_is_read_each_step(build_deployment):
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=32, context=4096, output=256)
    assert estimate_decode(d, w).kv_bytes_read == 32 * 4096 * 131_072


def test_expert_hit_fraction_grows_with_batch():
    # Mixtral, top-2 of 8: one token touches 1/4; two touch 1 − (3/4)² = 7/16.
    assert expert_hit_fraction(8, 2, 1) == 0.25
    assert expert_hit_fraction(8, 2, 2) == 1 - 0.75**2 == 0.4375
    # Qwen3-30B-A3B, top-8 of 128: batch 64 touches 1 − (15/16)^64 = 1 − e^(64 ln 0.9375)
    # = 1 − e^(−4.1305) = 1 − 0.016075 ≈ 98.39 %.
    assert expert_hit_fraction(128, 8, 64) == pytest.approx(0.98392, abs=1e-5)
    assert expert_hit_fraction(0, 0, 5) == 1.0  # dense


def test_moe_batch1_reads_only_the_active_parameters(build_deployment, catalog):
    d, w, _ = build_deployment("mixtral-8x7b", "h100-sxm", users=1, prompt=1, output=1)
    # total − (routed experts a token skips) = active, 12.88 B × 2 B.
    assert estimate_decode(d, w).weight_bytes_read == pytest.approx(catalog.model("mixtral-8x7b").active_params * 2)


def test_moe_large_batch_reads_nearly_every_expert(build_deployment, catalog):
    d, w, _ = build_deployment("mixtral-8x7b", "h100-sxm", users=64, prompt=16, output=16, tp=2)
    m = catalog.model("mixtral-8x7b")
    routed = 32 * 8 * 3 * 4096 * 14336
    hit = 1 - 0.75**64
    expected = ((m.total_params - routed) + routed * hit) * 2 / 2  # bf16, split over TP=2
    assert estimate_decode(d, w).weight_bytes_read == pytest.approx(expected)


def test_large_batch_short_context_turns_compute_bound(build_deployment):
    # 512 sequences × 2 × 8.03e9 FLOP = 8.2 TFLOP per step at 989.5 TFLOP/s × 0.5 = 16.6 ms,
    # against (16.1 GB weights + 512 × 128 × 128 KiB = 8.6 GB KV) / (3.35 TB/s × 0.8) = 9.2 ms.
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=512, prompt=64, output=64)
    dec = estimate_decode(d, w)
    assert dec.bound == "compute"
    linear = 2 * 8_030_261_248 * 512
    attention = 4 * 32 * 128 * 32 * 128 * 512  # 4 × heads × head_dim × layers × keys × batch
    assert dec.flops == linear + attention
    assert dec.compute_time_s == pytest.approx((linear + attention) / (989.5e12 * 0.5))
    assert dec.tpot_s == pytest.approx(dec.compute_time_s)


def test_pipeline_parallel_adds_memory_not_speed(build_deployment):
    base = dict(users=8, context=4096, output=256, tp=2)
    d1, w, _ = build_deployment("llama-3.1-70b", "h100-sxm", **base)
    d2, _, _ = build_deployment("llama-3.1-70b", "h100-sxm", pp=2, **base)
    assert estimate_decode(d2, w).memory_time_s == pytest.approx(estimate_decode(d1, w).memory_time_s)


def test_tensor_parallel_splits_the_bytes_read(build_deployment):
    d1, w, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=2, users=8, context=4096, output=256)
    d2, _, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=4, users=8, context=4096, output=256)
    a, b = estimate_decode(d1, w), estimate_decode(d2, w)
    assert b.weight_bytes_read == pytest.approx(a.weight_bytes_read / 2)
    assert b.kv_bytes_read == pytest.approx(a.kv_bytes_read / 2)
