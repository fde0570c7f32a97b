"""Issue 42: DeepSeek's MLA down-projections and its MoE router are replicated on every
TP rank (vLLM's DeepSeekV2FusedQkvAProjLinear with disable_tp and GateLinear, SGLang's
fused_qkv_a_proj_with_mqa ReplicatedLinear, TensorRT-LLM's MLA fused A projection built
without a TP mapping), so each rank holds and reads them whole. Every figure below is
derived by hand from DeepSeek-R1's config.json (hidden_size 7168, 61 layers of which
first_k_dense_replace 3 dense, q_lora_rank 1536, kv_lora_rank 512, qk_rope_head_dim 64,
256 routed experts of moe_intermediate_size 2048, vocab 129280) and FP8's one byte a
value (embeddings and LM head kept in 16-bit)."""

from __future__ import annotations

import pytest

from solver.physics.decode import decode_coefficients
from solver.physics.prefill import estimate_prefill
from solver.physics.weights import per_gpu_weights_bytes, replicated_weights_bytes

HIDDEN, LAYERS, MOE_LAYERS, VOCAB = 7168, 61, 58, 129280
# per layer: q_a_proj 7168 × 1536 and kv_a_proj_with_mqa 7168 × (512 + 64); per MoE layer the gate 7168 × 256
REPLICATED = LAYERS * HIDDEN * (1536 + 512 + 64) + MOE_LAYERS * HIDDEN * 256
assert REPLICATED == 923_467_776 + 106_430_464 == 1_029_898_240  # ≈ 1.03 GB at FP8, every rank

TOTAL_PARAMS = 671_026_419_200  # catalogs/models.yaml, the main model
EMB_BYTES = 2 * VOCAB * HIDDEN * 2  # embedding and LM head, 16-bit: 3,706,716,160 B
LAYER_BYTES = TOTAL_PARAMS - 2 * VOCAB * HIDDEN  # everything else, 1 B a value: 669,173,061,120 B
ROUTED = MOE_LAYERS * 256 * 3 * HIDDEN * 2048  # routed experts' gate, up and down: 653,908,770,816 B
# a step reads all but the routed experts and the input embedding (one row a token)
DENSE_READ = LAYER_BYTES - ROUTED + VOCAB * HIDDEN * 2
assert DENSE_READ == 17_117_648_384


def _r1(build_deployment, tp, **kw):
    return build_deployment("deepseek-r1", "h200", tp=tp, users=1, prompt=1, output=1, weights="fp8", kv="fp8", **kw)


@pytest.mark.parametrize("tp", [1, 8])
def test_deepseek_r1_replicated_bytes_are_the_down_projections_and_router(build_deployment, tp):
    d, _, _ = _r1(build_deployment, tp)
    assert d.model.replicated_params == REPLICATED
    assert replicated_weights_bytes(d) == REPLICATED  # 1 B a value at FP8, whatever the TP


def test_weights_per_gpu_keep_the_replicated_tensors_whole(build_deployment):
    d1, _, _ = _r1(build_deployment, 1)
    assert per_gpu_weights_bytes(d1) == LAYER_BYTES + EMB_BYTES == 672_879_777_280
    d8, _, _ = _r1(build_deployment, 8)
    # (669,173,061,120 − 1,029,898,240) / 8 + 1,029,898,240 + 3,706,716,160 / 8
    assert per_gpu_weights_bytes(d8) == (LAYER_BYTES - REPLICATED) / 8 + REPLICATED + EMB_BYTES / 8 == 85_011_133_120
    # 7/8 of the replicated bytes more than an even split: 0.90 GB less KV room a GPU
    assert per_gpu_weights_bytes(d8) - (LAYER_BYTES + EMB_BYTES) / 8 == pytest.approx(REPLICATED * 7 / 8)


def test_decode_step_reads_the_replicated_tensors_whole_on_each_rank(build_deployment):
    d1, _, _ = _r1(build_deployment, 1)
    assert decode_coefficients(d1, 1).dense_weight_bytes == DENSE_READ
    d8, _, _ = _r1(build_deployment, 8)
    # (17,117,648,384 − 1,029,898,240) / 8 + 1,029,898,240 = 3,040,867,008 B, not 2,139,706,048
    assert decode_coefficients(d8, 1).dense_weight_bytes == (DENSE_READ - REPLICATED) / 8 + REPLICATED == 3_040_867_008


def test_prefill_reads_the_replicated_tensors_whole_on_each_rank(build_deployment):
    # one new token reaches 8 of the 256 experts in each MoE layer (3 × 7168 × 2048 B each)
    d8, w, _ = _r1(build_deployment, 8)
    expert = 3 * HIDDEN * 2048
    touched = DENSE_READ + MOE_LAYERS * 8 * expert
    assert estimate_prefill(d8, w).weight_bytes_read == pytest.approx((touched - REPLICATED) / 8 + REPLICATED)


def test_dp_attention_already_holds_the_dense_layers_whole():
    # under data-parallel attention every GPU holds all but the routed experts: unchanged
    from solver.catalog import default_catalog
    from solver.physics.resolve import resolve
    from solver.spec.evaluate_input import parse_input

    data = {
        "model": "deepseek-r1",
        "hardware": {"gpu": "h200", "tp": 8, "parallelism": "dp_ep"},
        "precision": {"weights": "fp8", "kv_cache": "fp8"},
        "workload": {"users": 1, "prompt_tokens": 1, "output_tokens": 1},
    }
    d, _, _ = resolve(parse_input(data), default_catalog())
    assert d.dp_ep
    assert per_gpu_weights_bytes(d) == LAYER_BYTES + EMB_BYTES - ROUTED + ROUTED / 8
    assert decode_coefficients(d, 1).dense_weight_bytes == DENSE_READ


def test_a_model_without_mla_replicates_nothing(build_deployment):
    # Llama-3.1-8B (GQA, dense) and Qwen3-30B-A3B (GQA, MoE): split evenly, as before
    d, _, _ = build_deployment("llama-3.1-8b", "h100-sxm", tp=2, users=1, prompt=1, output=1)
    assert d.model.replicated_params == 0 and replicated_weights_bytes(d) == 0
    # 8,030,261,248 params × 2 B over 2 GPUs
    assert per_gpu_weights_bytes(d) == 8_030_261_248 * 2 / 2
    d, _, _ = build_deployment("qwen3-30b-a3b", "h100-sxm", tp=2, users=1, prompt=1, output=1)
    assert d.model.replicated_params == 0
