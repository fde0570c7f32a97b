"""Step 3, prefill compute: the seed's linear term plus causal attention."""

from __future__ import annotations

import pytest

from solver.physics.kernels import attention_flops
from solver.physics.prefill import estimate_prefill


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
    # Everything but the input embedding table: (8,030,261,248 − 128,256 × 4,096) × 2 B.
    # With the roofline's max (prefill_unhidden_share 0) the read is the whole GEMM time.
    over = {
        "factors": {"bandwidth_efficiency": 0.8, "step_overhead_s": 0, "layer_overhead_s": 0, "request_overhead_s": 0, "prefill_unhidden_share": 0}
    }
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=1, output=1, overrides=over)
    pre = estimate_prefill(d, w)
    assert pre.bound == "bandwidth"
    assert pre.ttft_s == pytest.approx(15_009_849_344 / (3.35e12 * 0.8) + pre.attention_time_s)


def test_a_prompts_gemms_take_their_weights_read_and_their_flops_one_after_the_other(build_deployment):
    # Llama-3.1-8B, 2,048 tokens on an H100 SXM, bf16, no fixed costs. The read: the
    # 15,009,849,344 B above at 3.35e12 B/s × 0.8 = 5.601 ms. The FLOPs: 2 × 8,030,261,248
    # × 2,048 = 3.2892e13 at 989.5e12 × 0.803 (the measured matmul share) × 0.5 =
    # 397.3e12 FLOP/s = 82.79 ms. By default (fitted, prefill_unhidden_share 1) the GEMMs
    # take their sum, 88.39 ms; at 0 the larger, 82.79 ms; at 0.5, 82.79 + 2.80 ms.
    base = {"bandwidth_efficiency": 0.8, "compute_efficiency": 0.5, "step_overhead_s": 0, "layer_overhead_s": 0, "request_overhead_s": 0}
    read_s = 15_009_849_344 / (3.35e12 * 0.8)
    flops_s = 2 * 8_030_261_248 * 2048 / (989.5e12 * 0.803 * 0.5)
    for share, want in ((None, read_s + flops_s), (0, flops_s), (0.5, flops_s + 0.5 * read_s)):
        factors = base if share is None else {**base, "prefill_unhidden_share": share}
        over = {"factors": factors, "precision": {"compute_share": 1.0}}  # 16-bit GEMMs at the utilisation itself
        d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=2048, output=1, overrides=over)
        pre = estimate_prefill(d, w)
        assert pre.gemm_time_s == pytest.approx(want, rel=1e-9), share


def test_fixed_cost_per_pass_and_per_layer(build_deployment):
    # 2 ms per pass and 50 µs per layer × 80 layers = 6 ms beside the FLOPs; at TP 4,
    # 100 µs for each of the 3 ranks beyond the first = 0.3 ms more.
    over = {
        "factors": {
            "step_overhead_s": "2ms",
            "layer_overhead_s": "50us",
            "tp_rank_overhead_s": 0,
            "compute_efficiency": 0.5,
            "request_overhead_s": 0,
        }
    }
    d, w, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=4, users=1, prompt=2048, output=1, overrides=over)
    pre = estimate_prefill(d, w)
    assert pre.step_overhead_s == pytest.approx(2e-3 + 80 * 50e-6)
    assert pre.ttft_s == pytest.approx(pre.gemm_time_s + pre.attention_time_s + pre.comm_time_s + 6e-3)
    over["factors"]["tp_rank_overhead_s"] = "100us"
    d, w, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=4, users=1, prompt=2048, output=1, overrides=over)
    assert estimate_prefill(d, w).step_overhead_s == pytest.approx(6e-3 + 3 * 100e-6)
    d, w, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=1, users=1, prompt=8, output=1, weights="int4-awq", overrides=over)
    assert estimate_prefill(d, w).step_overhead_s == pytest.approx(6e-3)  # one GPU: no rank beyond the first


def test_the_front_end_adds_to_ttft_and_to_no_gpu_time(build_deployment):
    # A server's 30 ms per request (HTTP, tokenising, streaming) is TTFT beside the GPUs' work.
    base = {"step_overhead_s": 0, "layer_overhead_s": 0}
    d0, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=1000, output=1, overrides={"factors": {**base, "request_overhead_s": 0}})
    d1, _, _ = build_deployment(
        "llama-3.1-8b", "h100-sxm", users=1, prompt=1000, output=1, overrides={"factors": {**base, "request_overhead_s": "30ms"}}
    )
    idle, served = estimate_prefill(d0, w), estimate_prefill(d1, w)
    assert served.gpu_time_s == idle.gpu_time_s == idle.ttft_s
    assert served.ttft_s == pytest.approx(idle.ttft_s + 0.030)


def test_routed_experts_run_at_the_formats_expert_share(build_deployment):
    # Qwen3-30B-A3B: 128 experts, 8 per token. Routed parameters R from total = rest + R
    # and active = rest + R·8/128: R = (30,532,122,624 − 3,353,032,704) / (1 − 8/128);
    # the share applies to the R·8/128 of the 2 × active FLOPs per token.
    over = {"factors": {"compute_efficiency": 0.5, "request_overhead_s": 0}, "precision": {"compute_share": 1.0, "expert_compute_share": 0.25}}
    d, w, _ = build_deployment("qwen3-30b-a3b", "h100-sxm", users=1, prompt=4096, output=1, overrides=over)
    pre = estimate_prefill(d, w)
    m = d.model
    routed_active = (m.total_params - m.active_params) / (1 - 8 / 128) * 8 / 128
    assert pre.expert_flops == pytest.approx(2 * routed_active * 4096)
    rate = 989.5e12 * 0.803 * 0.5  # BF16 dense × the H100 SXM's measured matmul share, TP 1
    dense_s = (2 * m.active_params * 4096 - pre.expert_flops) / rate
    assert pre.linear_time_s == pytest.approx(dense_s + pre.expert_flops / 0.25 / rate)
    assert pre.expert_time_s == pytest.approx(pre.expert_flops / 0.25 / rate)


def test_attention_runs_in_the_kv_dtype_not_the_weights(build_deployment):
    # FP8 weights on an H100 run their GEMMs at 1,979 TFLOP/s × 0.709 (its measured FP8
    # matmuls: 1,402.6 TFLOP/s in stas00's MAMF table), but attention over a 16-bit cache
    # at the BF16 rate, 989.5 × 0.803 (794.5 measured), × the 16-bit format's prefill share
    # (catalogs/fitted.yaml): 4 × 32 × 128 × 32 × 4096·4097/2 FLOP.
    over = {"factors": {"compute_efficiency": 0.5}, "precision": {"compute_share": 1.0}}
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=4096, output=1, weights="fp8", overrides=over)
    pre = estimate_prefill(d, w)
    assert pre.matmul_flops_per_s == pytest.approx(1979e12 * 0.709)
    assert pre.attention_compute_dtype == "bf16"
    assert d.kv.name == "bf16" and d.kv.compute_share != d.weights.compute_share == 1.0
    assert pre.attention_time_s == pytest.approx(4 * 32 * 128 * 32 * (4096 * 4097 / 2) / (989.5e12 * 0.803 * 0.5 * d.kv.compute_share))


def test_fp8_weights_use_fp8_tensor_cores_where_they_exist(build_deployment):
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=2048, output=1, weights="fp8")
    assert estimate_prefill(d, w).matmul_flops_per_s == pytest.approx(1979e12 * 0.709)  # 1,402.6 measured
    # An A100 has no FP8 tensor cores: FP8 weights run as weight-only kernels at FP16 rate,
    # 312 TFLOP/s × 0.869 (271.2 measured in stas00's MAMF table).
    d, w, _ = build_deployment("llama-3.1-8b", "a100-80gb", users=1, prompt=2048, output=1, weights="fp8")
    pre = estimate_prefill(d, w)
    assert pre.compute_dtype == "fp16"
    assert pre.matmul_flops_per_s == pytest.approx(312e12 * 0.869)


def test_tensor_parallel_multiplies_throughput(build_deployment):
    over = {"factors": {"compute_efficiency": 0.5}, "precision": {"compute_share": 1.0}}
    d, w, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=4, users=1, prompt=8192, output=1, overrides=over)
    pre = estimate_prefill(d, w)
    assert pre.effective_flops_per_s == pytest.approx(4 * 989.5e12 * 0.803 * 0.5)
    linear, attention = 2 * 70_553_706_496 * 8192, 4 * 64 * 128 * 80 * (8192 * 8193 // 2)
    # attention at the 16-bit KV format's own prefill share (catalogs/fitted.yaml)
    rate = 4 * 989.5e12 * 0.803 * 0.5
    assert pre.compute_time_s == pytest.approx(linear / rate + attention / (rate * d.kv.compute_share))


# ------------------------------------------------------------------ measured matmul share
# A device's matmuls reach a share of its datasheet peak (catalogs/devices.yaml
# matmul_share, from the maximum achievable matmul FLOPS stas00/ml-engineering's table
# measures): MI300X BF16 668.4 of 1,307.4 TFLOP/s = 0.511, H100 SXM 794.5 of 989.5 = 0.803
# (each device's prompt at its share: tests/physics/test_compute_share.py).


def test_mxfp4_experts_on_an_mi300x_run_at_its_16_bit_matmul_rate(build_deployment):
    # CDNA3 has no FP4 matrix cores: vLLM serves gpt-oss-120b's MXFP4 experts on an
    # MI300X by dequantising them in the kernel (SemiAnalysisAI/InferenceX PR #1061), so
    # its prefill matmuls run at the 16-bit rate: 1,307.4e12 × 0.511 × 0.5.
    over = {"factors": {"compute_efficiency": 0.5}, "precision": {"compute_share": 1.0}}
    d, w, _ = build_deployment("gpt-oss-120b", "mi300x", users=1, prompt=2048, output=1, weights="mxfp4", overrides=over)
    pre = estimate_prefill(d, w)
    assert pre.compute_dtype in ("fp16", "bf16")
    assert pre.effective_flops_per_s == pytest.approx(1307.4e12 * 0.511 * 0.5)


def test_a_dtype_without_its_own_measurement_takes_the_nearest_measured_one(catalog):
    from solver.physics.compute import matmul_share

    h100, mi300x, rtx4090 = catalog.device("h100-sxm"), catalog.device("mi300x"), catalog.device("rtx-4090")
    assert matmul_share(h100, "fp16") == 0.803  # fp16 and bf16 are one tensor rate
    assert matmul_share(h100, "int8") == 0.709  # 8-bit integer at FP8's measured share
    assert matmul_share(mi300x, "fp8") == 0.511  # no FP8 measurement: the 16-bit share
    assert matmul_share(rtx4090, "fp16") == 1.0  # not measured: the datasheet figure


def test_an_fp4_prompt_on_a_b200_runs_at_nvfp4s_measured_share_not_fp8s(build_deployment):
    # pytorch/ao PR #2427's NVFP4 matmuls on a B200 reached 5.50e15 of the 9.00e15 dense
    # peak (0.611), under the 0.763 FP8 reaches of its 4.5e15: Llama-3.3-70B in FP4, one
    # 2,048-token prompt, utilisation 0.5: 9.0e15 × 0.611 × 0.5 = 2.75e15 FLOP/s, 1.6 times
    # the FP8 rate (4.5e15 × 0.763 × 0.5 = 1.72e15), not the twice its datasheet claims.
    over = {"factors": {"compute_efficiency": 0.5}, "precision": {"compute_share": 1.0}}
    d, w, _ = build_deployment("llama-3.3-70b", "b200", users=1, prompt=2048, output=1, weights="fp4", overrides=over)
    pre = estimate_prefill(d, w)
    assert pre.compute_dtype == "fp4"
    assert pre.effective_flops_per_s == pytest.approx(9000e12 * 0.611 * 0.5)


def test_an_fp4_prompt_on_a_gb200_runs_at_b200s_nvfp4_share_scaled_by_their_fp8_shares(build_deployment):
    # One method for Blackwell FP4: B200's measured NVFP4 share (0.611) times GB200's
    # mamf-finder FP8 share over B200's (0.723 / 0.763). At utilisation 0.5 a GB200 prompt's
    # matmuls run at 10.0e15 × 0.611 × 0.723 / 0.763 × 0.5 = 2.8948e15 FLOP/s (the catalog
    # rounds the share to 0.579: 2.895e15), 1.05 times B200's 2.75e15 where the FP8 peaks are
    # 5.0e15 and 4.5e15; a cuBLASLt run at 0.763 of GB200's peak would make it 1.39 times.
    over = {"factors": {"compute_efficiency": 0.5}, "precision": {"compute_share": 1.0}}
    d, w, _ = build_deployment("llama-3.3-70b", "gb200", users=1, prompt=2048, output=1, weights="fp4", overrides=over)
    pre = estimate_prefill(d, w)
    assert pre.compute_dtype == "fp4"
    assert pre.effective_flops_per_s == pytest.approx(10000e12 * 0.611 * 0.723 / 0.763 * 0.5, rel=1e-3)


def test_a_spec_can_set_the_matmul_share(build_deployment):
    over = {"factors": {"compute_efficiency": 0.5}, "gpu": {"matmul_share": {"bf16": 1.0}}, "precision": {"compute_share": 1.0}}
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=2048, output=1, weights="bf16", overrides=over)
    assert estimate_prefill(d, w).effective_flops_per_s == 989.5e12 * 0.5


def test_a_moe_prefill_pays_for_every_expert_its_prompt_reaches(build_deployment):
    # DeepSeek-R1: 58 MoE layers of 256 routed experts, 8 per token. At 10 µs an expert:
    # a 1,024-token prompt reaches 1 − (1 − 8/256)^1024 = 1 − 7.6e-15 of them, 58 × 256 ×
    # 10 µs = 148.48 ms; a 16-token one 1 − (31/32)^16 = 0.39828, 59.14 ms. Mixtral's
    # 1,024 tokens reach all 32 × 8: 2.56 ms. A dense model has none to reach.
    def cost(model, prompt, weights="fp8"):
        over = {"factors": {"prefill_expert_overhead_s": "10us"}}
        d, w, _ = build_deployment(model, "h200", users=1, prompt=prompt, output=1, tp=8, weights=weights, overrides=over)
        zero, _, _ = build_deployment(
            model, "h200", users=1, prompt=prompt, output=1, tp=8, weights=weights, overrides={"factors": {"prefill_expert_overhead_s": 0}}
        )
        pre, base = estimate_prefill(d, w), estimate_prefill(zero, w)
        assert pre.gpu_time_s - base.gpu_time_s == pytest.approx(pre.expert_overhead_s, rel=1e-12)  # in the TTFT, once
        return pre.expert_overhead_s

    assert cost("deepseek-r1", 1024) == pytest.approx(58 * 256 * 10e-6, rel=1e-9)
    assert cost("deepseek-r1", 16) == pytest.approx(58 * 256 * (1 - (31 / 32) ** 16) * 10e-6, rel=1e-9)
    assert 58 * 256 * (1 - (31 / 32) ** 16) * 10e-6 == pytest.approx(59.14e-3, rel=1e-3)
    assert cost("mixtral-8x7b", 1024, "bf16") == pytest.approx(2.56e-3, rel=1e-9)
    assert cost("llama-3.1-70b", 1024, "bf16") == 0.0


def test_a_share_above_one_stops_at_the_measured_matmul_rate(build_deployment):
    # Utilisation 0.9 × a prefill share of 1.5 would be 1.35 of the H100's measured BF16
    # matmul rate (989.5 × 0.803 TFLOP/s): no kernel runs faster than that, so 1.0.
    over = {"factors": {"compute_efficiency": 0.9}, "precision": {"compute_share": 1.5}}
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=2048, output=1, weights="bf16", overrides=over)
    assert estimate_prefill(d, w).effective_flops_per_s == pytest.approx(989.5e12 * 0.803)
