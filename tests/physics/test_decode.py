"""Step 2, decode bandwidth: bytes read per step, MoE expert hits, the compute bound."""

from __future__ import annotations

import pytest

from solver.physics.decode import estimate_decode
from solver.physics.kernels import expert_hit_fraction
from tests.solve_helpers import NO_FIXED_COSTS

NO_EFF = {"factors": {"bandwidth_efficiency": 1.0, "compute_efficiency": 1.0, **NO_FIXED_COSTS}}
# Llama-3.1-8B: 8,030,261,248 parameters, of which the untied input embedding is
# 128,256 × 4,096 = 525,336,576; a step reads one row of it per token, not the table.
LLAMA8B_READ_PARAMS = 8_030_261_248 - 525_336_576  # 7,504,924,672


def test_batch1_tpot_is_model_bytes_over_bandwidth(build_deployment):
    # Llama-3.1-8B bf16: 7,504,924,672 × 2 B = 15,009,849,344 B read on an H100 SXM at 3.35 TB/s.
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=1, output=1, overrides=NO_EFF)
    dec = estimate_decode(d, w)
    assert dec.weight_bytes_read == LLAMA8B_READ_PARAMS * 2 == 15_009_849_344
    assert dec.weights_time_s == pytest.approx(15_009_849_344 / 3.35e12)
    assert dec.bound == "bandwidth"
    # The GEMMs read the weights, attention reads 2 tokens × 131,072 B of KV: two kernels, one after the other.
    assert dec.tpot_s == pytest.approx(15_009_849_344 / 3.35e12 + 2 * 131_072 / 3.35e12)


def test_the_step_is_a_sum_of_kernels_not_the_larger_of_memory_and_compute(build_deployment):
    # 64 sequences at 32k context: the GEMMs are weight-bound, attention is KV-bound, and
    # the two add. KV per sequence: 32,768 tokens × 131,072 B = 4,294,967,296 B.
    over = {"factors": {"bandwidth_efficiency": 1.0, "compute_efficiency": 1.0, **NO_FIXED_COSTS}}
    # batching: isolated, the step alone (the engine's continuous default adds the prompts' chunks)
    d, w, _ = build_deployment(
        "llama-3.1-8b", "h100-sxm", users=64, context=32_768, output=256, overrides=over, workload_extra={"batching": "isolated"}
    )
    dec = estimate_decode(d, w)
    weights_s = 15_009_849_344 / 3.35e12  # 4.48 ms
    kv_s = 64 * 4_294_967_296 / 3.35e12  # 82.05 ms
    assert dec.gemm_time_s == pytest.approx(weights_s)  # 64 × 2 × 8.03e9 FLOP = 1.03 PFLOP: 1.04 ms at 989.5 TFLOP/s
    assert dec.attention_time_s == pytest.approx(kv_s)
    assert dec.tpot_s == pytest.approx(weights_s + kv_s)


def test_the_shorter_of_a_kernels_read_and_math_adds_its_unhidden_share(build_deployment):
    # The same step with unhidden_share 0.5: each kernel is max + 0.5 × min. The GEMMs'
    # math: 64 × 2 × 8,030,261,248 FLOP = 1.028 TFLOP at 989.5 TFLOP/s × 0.803, the share of
    # its BF16 peak an H100 SXM's measured matmuls reach (794.5 TFLOP/s in stas00's MAMF
    # table; 1.29 ms); the attention's: 64 × 4 × 32 heads × 128 × 32 layers × 32,768 keys
    # = 1.100 TFLOP (1.38 ms).
    over = {"factors": {"bandwidth_efficiency": 1.0, "compute_efficiency": 1.0, "unhidden_share": 0.5, **NO_FIXED_COSTS}}
    # batching: isolated, the step alone (the engine's continuous default adds the prompts' chunks)
    d, w, _ = build_deployment(
        "llama-3.1-8b", "h100-sxm", users=64, context=32_768, output=256, overrides=over, workload_extra={"batching": "isolated"}
    )
    dec = estimate_decode(d, w)
    weights_s, kv_s = 15_009_849_344 / 3.35e12, 64 * 4_294_967_296 / 3.35e12
    linear_s = 64 * 2 * 8_030_261_248 / (989.5e12 * 0.803)
    attention_s = 64 * 4 * 32 * 128 * 32 * 32_768 / (989.5e12 * 0.803)
    assert dec.gemm_time_s == pytest.approx(weights_s + 0.5 * linear_s)
    assert dec.attention_time_s == pytest.approx(kv_s + 0.5 * attention_s)


def test_a_fixed_cost_per_step_and_per_layer_is_added(build_deployment):
    # 1 ms per step and 20 µs per layer × 32 layers = 1.64 ms on top of the kernels.
    over = {
        "factors": {
            "bandwidth_efficiency": 1.0,
            "compute_efficiency": 1.0,
            "step_overhead_s": "1ms",
            "layer_overhead_s": "20us",
            "sequence_overhead_s": 0,
        }
    }
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=1, output=1, overrides=over)
    dec = estimate_decode(d, w)
    assert dec.step_overhead_s == pytest.approx(1e-3 + 32 * 20e-6)
    assert dec.tpot_s == pytest.approx((15_009_849_344 + 2 * 131_072) / 3.35e12 + 1.64e-3)


def test_each_mixture_of_experts_layer_adds_its_own_fixed_cost(build_deployment):
    # DeepSeek-R1: 61 layers, the first 3 dense (first_k_dense_replace), 58 routing to
    # experts; 10 µs per MoE layer = 0.58 ms per pass. A dense model pays none of it.
    over = {"factors": {"bandwidth_efficiency": 1.0, "compute_efficiency": 1.0, **NO_FIXED_COSTS, "expert_layer_overhead_s": "10us"}}
    d, w, _ = build_deployment("deepseek-r1", "h200", tp=8, users=1, prompt=1, output=1, weights="fp8", kv="fp8", overrides=over)
    assert d.model.moe_layers == 58
    assert estimate_decode(d, w).step_overhead_s == pytest.approx(58 * 10e-6)
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=1, output=1, overrides=over)
    assert estimate_decode(d, w).step_overhead_s == 0


def test_a_quantised_format_reads_at_its_kernels_share_of_bandwidth(build_deployment):
    # AWQ keeps embeddings and LM head in 16-bit: the LM head's 525,336,576 × 2 B are
    # read at full speed, the 6,979,588,096 quantised parameters × (0.5 + 2.5/128) B (4-bit
    # values, an FP16 scale and a 4-bit zero per 128) = 3,626,114,128 B at half speed with a share of 0.5.
    over = {"factors": {"bandwidth_efficiency": 1.0, "compute_efficiency": 1.0, **NO_FIXED_COSTS}, "precision": {"bandwidth_share": 0.5}}
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=1, output=1, weights="int4-awq", overrides=over)
    dec = estimate_decode(d, w)
    head, quantised = 525_336_576 * 2, 6_979_588_096 * (0.5 + 2.5 / 128)
    assert dec.weight_bytes_read == pytest.approx(head + quantised)
    assert dec.weights_time_s == pytest.approx((head + quantised / 0.5) / 3.35e12)


def test_every_resident_kv_byte_is_read_each_step(build_deployment):
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=32, context=4096, output=256)
    assert estimate_decode(d, w).kv_bytes_read == 32 * 4096 * 131_072


def test_attention_reads_the_kv_cache_at_its_share_of_the_weights_bandwidth(build_deployment):
    # The 64 × 32k step of the test above with attention_bandwidth_share 0.8: the KV
    # cache's 64 × 4,294,967,296 B at 3.35 TB/s × 0.9 efficiency × 0.8 = 2.412 TB/s is
    # 113.96 ms; the weights' 15,009,849,344 B still at 3.35 TB/s × 0.9 = 4.98 ms.
    over = {"factors": {**NO_FIXED_COSTS, "bandwidth_efficiency": 0.9, "compute_efficiency": 1.0, "attention_bandwidth_share": 0.8}}
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=64, context=32_768, output=256, overrides=over)
    dec = estimate_decode(d, w)
    assert dec.kv_time_s == pytest.approx(64 * 4_294_967_296 / (3.35e12 * 0.9 * 0.8)) == pytest.approx(0.11396, rel=1e-4)
    assert dec.weights_time_s == pytest.approx(15_009_849_344 / (3.35e12 * 0.9))
    assert dec.attention_time_s == pytest.approx(dec.kv_time_s)  # still KV-bound: 1.38 ms of attention math


def test_the_fitted_attention_share_is_a_share_and_one_on_nvidia_hbm(catalog):
    # bench/fit_defaults.py fits it per engine and memory kind, within (0, 1]; the serving
    # engines' fit split on NVIDIA HBM reads KV as fast as weights. (On AMD Instinct it
    # came out 0.98 while the MI300X two-shot all-reduce ran at the xGMI links' 448 GB/s;
    # at its measured 215 GB/s the fit no longer takes those 2 %: 1.0.)
    vllm = catalog.engine("vllm")
    assert 0 < vllm.efficiency["amd.hbm"].attention_bandwidth_share <= 1
    assert vllm.efficiency["hbm"].attention_bandwidth_share == 1


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
    # total − (routed experts a token skips) = active, 12.88 B, less the input embedding
    # table (32,000 × 4,096 = 131,072,000), × 2 B.
    expected = (catalog.model("mixtral-8x7b").active_params - 131_072_000) * 2
    assert estimate_decode(d, w).weight_bytes_read == pytest.approx(expected)


def test_moe_large_batch_reads_nearly_every_expert(build_deployment, catalog):
    d, w, _ = build_deployment("mixtral-8x7b", "h100-sxm", users=64, prompt=16, output=16, tp=2)
    m = catalog.model("mixtral-8x7b")
    routed = 32 * 8 * 3 * 4096 * 14336
    hit = 1 - 0.75**64
    embedding = 32_000 * 4096  # the input table, read a row per token
    expected = ((m.total_params - routed - embedding) + routed * hit) * 2 / 2  # bf16, split over TP=2
    assert estimate_decode(d, w).weight_bytes_read == pytest.approx(expected)


def test_large_batch_short_context_turns_compute_bound(build_deployment):
    # 512 sequences × 2 × 8.03e9 FLOP = 8.2 TFLOP per step at 989.5 TFLOP/s × 0.803 (the
    # H100 SXM's measured matmul share) × 0.5 = 20.7 ms,
    # against 15.0 GB of weights / (3.35 TB/s × 0.8) = 5.6 ms: the GEMMs are compute-bound.
    # Attention: 512 × 128 tokens × 128 KiB = 8.6 GB of KV / 2.68 TB/s = 3.2 ms, more than
    # its 4 × 32 heads × 128 × 32 layers × 128 keys × 512 = 34.4 GFLOP (0.07 ms).
    over = {"factors": {"bandwidth_efficiency": 0.8, "compute_efficiency": 0.5, **NO_FIXED_COSTS}}
    # batching: isolated, the step alone (the engine's continuous default adds the prompts' chunks)
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=512, prompt=64, output=64, overrides=over, workload_extra={"batching": "isolated"})
    dec = estimate_decode(d, w)
    assert dec.bound == "compute"
    linear = 2 * 8_030_261_248 * 512
    attention = 4 * 32 * 128 * 32 * 128 * 512  # 4 × heads × head_dim × layers × keys × batch
    assert dec.flops == linear + attention
    assert dec.gemm_time_s == pytest.approx(linear / (989.5e12 * 0.803 * 0.5))
    kv_s = 512 * 128 * 131_072 / (3.35e12 * 0.8)
    assert dec.attention_time_s == pytest.approx(kv_s)
    assert dec.tpot_s == pytest.approx(linear / (989.5e12 * 0.803 * 0.5) + kv_s)


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
