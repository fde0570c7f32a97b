"""Step 1, memory capacity: each expected figure is derived by hand next to it from
the model's config.json fields."""

from __future__ import annotations

import pytest

from solver.physics.memory import (
    activation_peak_bytes,
    estimate_memory,
    kv_bytes_per_sequence,
    kv_bytes_per_token_per_layer,
    kv_shard_fraction,
    max_context_tokens,
    per_gpu_kv_bytes_per_sequence,
)
from solver.physics.weights import weights_bytes

LLAMA8B_EMB = 128256 * 4096  # one embedding matrix (untied: two of them)


def test_gqa_kv_per_token_llama_70b(catalog):
    m = catalog.model("llama-3.1-70b")
    # 2 (K, V) × 80 layers × 8 KV heads × 128 × 2 B = 327,680 B (320 KiB)
    assert kv_bytes_per_token_per_layer(m, catalog.precision("bf16", "kv")) * m.num_layers == 327_680


def test_tp_splits_kv_heads_until_it_runs_out_of_them(build_deployment):
    # Llama-3.1-70B has 8 KV heads: TP=8 leaves one per GPU.
    d, w, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=8, users=4, context=8192, output=256)
    assert estimate_memory(d, w).kv_bytes == 4 * 327_680 * 8192 / 8


def test_tp_beyond_kv_heads_replicates_them(catalog, build_deployment):
    # Qwen3-30B-A3B: 4 KV heads. At TP=8 each GPU still holds one whole head
    # (two GPUs per head), so per-GPU KV is 1/4 of the total, not 1/8:
    # 2 × 48 layers × 1 head × 128 × 2 B = 24,576 B per token per GPU.
    m = catalog.model("qwen3-30b-a3b")
    assert kv_shard_fraction(m, 8) == 1 / 4
    d, w, _ = build_deployment("qwen3-30b-a3b", "h100-sxm", tp=8, users=1, context=1000, output=100)
    assert per_gpu_kv_bytes_per_sequence(d, 1000) == 24_576 * 1000


def test_mla_caches_one_latent_and_every_tp_rank_keeps_all_of_it(catalog, build_deployment):
    m = catalog.model("deepseek-v3")
    # 61 layers × (512 latent + 64 RoPE key) × 2 B = 70,272 B per token: 57x less
    # than expanded K/V of 128 heads × (192 + 128) × 2 B × 61 = 4,997,120 B.
    kv = catalog.precision("bf16", "kv")
    assert kv_bytes_per_sequence(m, kv, 1) == 61 * (512 + 64) * 2 == 70_272
    d, w, _ = build_deployment("deepseek-v3", "h200", tp=8, users=1, context=4096, output=256, weights="fp8")
    assert per_gpu_kv_bytes_per_sequence(d, 4096) == 70_272 * 4096  # not divided by 8


def test_sliding_window_layers_hold_at_most_the_window(catalog):
    m = catalog.model("gpt-oss-20b")
    kv = catalog.precision("bf16", "kv")
    per_layer = 2 * 8 * 64 * 2  # 8 KV heads × head_dim 64
    # 12 full layers hold all 8192 tokens, 12 sliding layers only 128.
    assert kv_bytes_per_sequence(m, kv, 8192) == per_layer * (12 * 8192 + 12 * 128) == 204_472_320
    # Below the window every layer holds every token.
    assert kv_bytes_per_sequence(m, kv, 100) == per_layer * 24 * 100


def test_gemma2_alternating_local_global(catalog):
    m = catalog.model("gemma-2-9b")
    kv = catalog.precision("bf16", "kv")
    per_layer = 2 * 8 * 256 * 2  # 8 KV heads × head_dim 256 = 8,192 B
    assert kv_bytes_per_sequence(m, kv, 8192) == per_layer * (21 * 8192 + 21 * 4096)


def test_int4_awq_carries_group_scales_and_16bit_embeddings(catalog):
    awq = catalog.precision("int4-awq")
    # 4 bits + (FP16 scale + 4-bit zero) per 128 weights = 0.5 + 2.5/128 B.
    assert awq.bytes_per_value == 0.5 + 2.5 / 128 == 0.51953125
    m = catalog.model("qwen2.5-32b")
    emb = 2 * 152064 * 5120  # untied embedding + LM head stay FP16
    expected = emb * 2 + (m.total_params - emb) * 0.51953125
    assert weights_bytes(m, awq) == expected
    # About 19.3 GB: the seed's "approximately 18 GB" leaves out the 3.1 GB of 16-bit embeddings.
    assert expected / 1e9 == pytest.approx(19.33, abs=0.01)


def test_fp8_weights_keep_embeddings_in_16bit(catalog):
    m = catalog.model("llama-3.1-8b")
    assert weights_bytes(m, catalog.precision("fp8")) == 2 * LLAMA8B_EMB * 2 + (8_030_261_248 - 2 * LLAMA8B_EMB) * 1


@pytest.mark.parametrize("name, bytes_per_value", [("fp4", 0.5625), ("mxfp4", 0.53125), ("q8_0", 1.0625), ("q4_0", 0.5625)])
def test_block_formats_pay_for_their_scales(catalog, name, bytes_per_value):
    # NVFP4: FP8 scale per 16; MXFP4: E8M0 scale per 32; GGUF: FP16 scale per 32.
    assert catalog.precisions.get(name).bytes_per_value == bytes_per_value


def test_pipeline_stage_holds_its_layers_and_one_embedding_matrix(build_deployment):
    # Llama-3.1-8B, bf16, PP=3: the heaviest stage has ceil(32/3) = 11 layers.
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", pp=3, users=1, context=4096, output=256)
    layers_bytes = (8_030_261_248 - 2 * LLAMA8B_EMB) * 2
    assert estimate_memory(d, w).weights_bytes == pytest.approx(layers_bytes * 11 / 32 + LLAMA8B_EMB * 2)
    assert estimate_memory(d, w).kv_bytes == 1 * 4096 * (2 * 11 * 8 * 128 * 2)


def test_usable_memory_is_the_runtimes_total_times_utilisation(build_deployment):
    # nvidia-smi shows 81,559 MiB; the runtime sees 434 MiB less (the driver's share):
    # vLLM's total_gpu_memory 79.22 GiB = 81,121 MiB on an H100 (vllm PR #12126).
    d, w, _ = build_deployment(
        "llama-3.1-8b",
        "h100-sxm",
        users=1,
        context=1024,
        output=128,
        overrides={"factors": {"memory_utilization": 0.9, "runtime_overhead_bytes": "2GiB", "activation_peak_scale": 0}},
    )
    mem = estimate_memory(d, w)
    assert mem.device_bytes == (81_559 - 434) * 2**20
    assert mem.usable_bytes == pytest.approx((81_559 - 434) * 2**20 * 0.9)
    # 2 GiB of runtime, and the current vLLM line's CUDA graphs counted before the KV
    # cache: 51 sizes × 32 layers × (394,800 + 194,100) B = 961,084,800 B
    # (tests/physics/test_engine_memory.py derives the terms).
    assert mem.overhead_bytes == 2 * 2**30 + 961_084_800


def test_activation_peak_of_the_profiled_pass(build_deployment):
    # vLLM V1 profiles 8,192 tokens on an H100 (its large-GPU default): the MLP's fused
    # gate/up output (2 × 14,336) and activated half (14,336), and three 4,096-wide hidden
    # buffers, 2 bytes each: 8,192 × 2 × (3 × 14,336 + 3 × 4,096) = 905,969,664 B; then the
    # sampler's fp32 logits and probabilities for 1,024 rows × 128,256 entries × 8 B
    # = 1,050,673,152 B.
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, context=1024, output=128)
    assert activation_peak_bytes(d, w.context_tokens) == 905_969_664 + 1_050_673_152
    # On a 24 GB card the defaults are 2,048 tokens and 256 rows.
    d, w, _ = build_deployment("llama-3.1-8b", "rtx-4090", users=1, context=1024, output=128)
    assert activation_peak_bytes(d, w.context_tokens) == 2048 * 2 * (3 * 14_336 + 3 * 4096) + 256 * 128_256 * 8


def test_activation_peak_grows_with_max_model_len_as_a_logged_profile_does(build_deployment):
    # vllm issue #10517 (V0, chunked prefill off, so the profile runs max_model_len tokens):
    # peak torch memory 17.06 GiB at max_model_len 20,000 and 17.98 GiB at 29,000 on an
    # RTX 3090 — 0.92 GiB for 9,000 more tokens, 109,760 B a token.
    def peak(length):
        d, w, _ = build_deployment(
            "llama-3.1-8b",
            "rtx-3090",
            users=1,
            context=length,
            output=128,
            engine={"name": "vllm", "enable_chunked_prefill": False, "max_model_len": length},
        )
        return activation_peak_bytes(d, length)

    logged = (17.98 - 17.06) * 2**30 / 9000
    assert (peak(29_000) - peak(20_000)) / 9000 == pytest.approx(logged, rel=0.02)


def test_the_estimate_carries_the_profiled_token_count_the_report_shows(build_deployment):
    # With chunked prefill the pass is max_num_batched_tokens (8,192 on an H100); with it
    # off, the whole max_model_len when that is longer (32,768 here); llama.cpp has none.
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, context=1024, output=128)
    assert estimate_memory(d, w).activation_tokens == 8192
    engine = {"name": "vllm", "enable_chunked_prefill": False, "max_model_len": 32_768}
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, context=32_768, output=128, engine=engine)
    assert estimate_memory(d, w).activation_tokens == 32_768
    d, w, _ = build_deployment("llama-3.1-8b", "rtx-4090", users=1, context=1024, output=128, engine="llama.cpp")
    assert estimate_memory(d, w).activation_tokens == 0


def test_mixed_precision_checkpoint_keeps_its_16bit_groups(catalog):
    # gpt-oss-120b ships MXFP4 experts with attention, router, embeddings and LM head in
    # BF16: only the routed experts are 4.25-bit.
    m = catalog.model("gpt-oss-120b")
    p = catalog.precision("mxfp4")
    groups = m.param_groups()
    expected = groups["experts"] * p.bytes_per_value + (m.total_params - groups["experts"]) * 2
    assert weights_bytes(m, p) == pytest.approx(expected)


def test_llama_cpp_weighs_gpt_oss_as_its_gguf_stores_it_other_engines_as_the_safetensors(build_deployment):
    # llama-bench prints "gpt-oss 20B MXFP4 MoE | 11.27 GiB | 20.91 B" for llama.cpp's own
    # GGUF (ggml-org/llama.cpp PR #16991); the safetensors checkpoint keeps all but the
    # experts in BF16. Experts: 24 layers x 32 x 3 matrices of 2880 x 2880 (+ biases), at
    # 4.25 bits; the rest at Q8_0's 34 bytes a block of 32 (GGUF) or at 2 bytes (BF16).
    gguf, _, _ = build_deployment("gpt-oss-20b", "rtx-4090", weights="mxfp4", kv="fp16", engine="llama.cpp", context=4096, output=256)
    hf, _, _ = build_deployment("gpt-oss-20b", "h100-sxm", weights="mxfp4", kv="fp16", engine="vllm", context=4096, output=256)
    experts = gguf.model.param_groups()["experts"]
    assert experts == pytest.approx(24 * 32 * 3 * 2880 * 2880, rel=1e-3)
    rest = gguf.model.total_params - experts
    assert weights_bytes(gguf.model, gguf.weights) == pytest.approx(experts * 4.25 / 8 + rest * 34 / 32)
    assert weights_bytes(gguf.model, gguf.weights) / 2**30 == pytest.approx(11.27, rel=0.01)  # the measured file
    assert weights_bytes(hf.model, hf.weights) == pytest.approx(experts * 4.25 / 8 + rest * 2)
    # a checkpoint the spec names is weighed as stored, whichever engine reads it
    named = {"model": {"checkpoint": "openai/gpt-oss-20b"}}
    as_named, _, _ = build_deployment(
        "gpt-oss-20b", "rtx-4090", weights="mxfp4", kv="fp16", engine="llama.cpp", context=4096, output=256, overrides=named
    )
    assert weights_bytes(as_named.model, as_named.weights) == pytest.approx(experts * 4.25 / 8 + rest * 2)


def test_llama_cpp_weighs_gpt_oss_120b_as_its_loader_prints_it(build_deployment):
    # llama.cpp's loader on ggml-org/gpt-oss-120b-GGUF (issue #15253): "type q8_0: 146
    # tensors / type mxfp4: 108 tensors ... file size = 59.02 GiB". Experts: 36 layers x
    # 128 x 3 matrices of 2880 x 2880 at 4.25 bits; the rest at Q8_0's 34 bytes a block of
    # 32 — within 0.5 % of the file (the router and norms are f32 there, a few MB); the
    # safetensors layout (the rest in BF16) would be 60.7 GiB, 3 % heavy.
    d, _, _ = build_deployment("gpt-oss-120b", "rtx-pro-6000", weights="mxfp4", kv="fp16", engine="llama.cpp", context=4096, output=256)
    experts = d.model.param_groups()["experts"]
    assert experts == pytest.approx(36 * 128 * 3 * 2880 * 2880, rel=1e-3)
    rest = d.model.total_params - experts
    assert weights_bytes(d.model, d.weights) == pytest.approx(experts * 4.25 / 8 + rest * 34 / 32)
    assert weights_bytes(d.model, d.weights) / 2**30 == pytest.approx(59.02, rel=0.005)


def test_max_batch_and_context_fill_the_room_left(build_deployment):
    over = {
        "model": {"total_params": 8e9},
        "factors": {"memory_utilization": 1.0, "runtime_overhead_bytes": 0, "reserved_bytes": 0, "activation_peak_scale": 0},
    }
    eager = {"name": "vllm", "enforce_eager": True}  # no CUDA graphs: the room is memory less weights
    d, w, _ = build_deployment(
        "llama-3.1-8b", "rtx-4090", users=16, context=8192, output=256, weights="fp16", kv="fp16", overrides=over, engine=eager
    )
    room = 24_564 * 2**20 - 16e9
    per_seq = 131_072 * 8192
    assert estimate_memory(d, w).max_batch == int(room // per_seq) == 9
    assert max_context_tokens(d, w) == int(room // (131_072 * 16)) == 4652
