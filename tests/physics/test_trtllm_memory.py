"""TensorRT-LLM's memory beside weights and KV, term by term, derived by hand from its
source: the engine's activations over its max_num_tokens, and per max_batch_size slot
and vocabulary entry the runtime buffers' fp32 logits (4 B, runtimeBuffers.cpp
setMaxBufferSizes) and the decoder's top-P sort workspace (sorted log-probs 4 B and ids
4 B, getTopPWorkspaceSizes, and cub's SortPairs alternate keys and values, 4 + 4 B)."""

from __future__ import annotations

import pytest

from solver.catalog import default_catalog
from solver.physics.engine_memory import engine_memory
from solver.physics.evaluate import evaluate
from solver.physics.weights import per_gpu_weights_bytes
from solver.report.evaluation_text import render_text

LLAMA31_8B_VOCAB = 128_256  # config.json vocab_size
LLAMA31_8B_HIDDEN, LLAMA31_8B_INTER = 4_096, 14_336
FP8_KV_BYTES_PER_TOKEN = 32 * 8 * 128 * 2 * 1  # layers × KV heads × head dim × (K, V) × 1 B
GIB = 2**30


def _rtx5090(build_deployment, version: str = "0.19.0"):
    """The fit half's TensorRT-LLM 0.19 run (issue 4275): Llama-3.1-8B FP8 weights and KV on
    one RTX 5090, trtllm-build --max_batch_size 2048 --max_num_tokens 1024 --max_seq_len 2048."""
    engine = {"name": "trtllm", "version": version, "max_num_seqs": 2048, "max_num_batched_tokens": 1024, "max_model_len": 2048}
    return build_deployment("llama-3.1-8b", "rtx-5090", users=1, context=2048, prompt=512, output=1, weights="fp8", kv="fp8", engine=engine)


def test_cpp_flow_lines_keep_20_bytes_per_slot_and_logit():
    cat = default_catalog()
    trtllm, at = cat.engine("trtllm"), cat.releases.engine_at
    # 4 B fp32 logits + 4 B sorted log-probs + 4 B sorted ids + 8 B cub's alternate pair
    assert at(trtllm, "0.8.0").sampler_bytes_per_logit == 4 + 4 + 4 + 8
    assert at(trtllm, "0.19.0").sampler_bytes_per_logit == 20
    assert at(trtllm, "1.0.0").sampler_bytes_per_logit == 8  # the PyTorch flow: unchanged, not pinned


def test_rtx5090_terms_by_hand(build_deployment):
    d, w, _ = _rtx5090(build_deployment)
    kept = engine_memory(d, w.context_tokens)
    scale = d.factors.activation_peak_scale
    # logits + top-P workspace: 2,048 slots × 128,256 × 20 B = 5,253,365,760 B (4.89 GiB)
    assert kept.sampler_bytes == pytest.approx(5_253_365_760)  # allocated: no profiled peak to scale
    assert 2048 * LLAMA31_8B_VOCAB * 20 == 5_253_365_760
    # the engine's activations over its 1,024 tokens: 2 B × (3 × 14,336 + 3 × 4,096) a token
    # = 110,592 B; × 1,024 = 113,246,208 B
    assert kept.forward_tokens == 1024
    assert kept.forward_bytes == pytest.approx(scale * 1024 * 2 * (3 * LLAMA31_8B_INTER + 3 * LLAMA31_8B_HIDDEN))
    assert kept.cuda_graph_bytes == 0.0


def test_rtx5090_kv_capacity_by_hand(build_deployment):
    d, w, t = _rtx5090(build_deployment)
    f = d.factors
    # free after the engine loads = visible − weights − runtime − activations − logits/sampling;
    # KV = 0.9 of it, in whole blocks of 32 tokens of 65,536 B (FP8 KV)
    free = d.device.memory_bytes - f.reserved_bytes - per_gpu_weights_bytes(d) - f.runtime_overhead_bytes
    free -= f.activation_peak_scale * 113_246_208 + 5_253_365_760
    tokens = int(0.9 * free / FP8_KV_BYTES_PER_TOKEN / 32) * 32
    got = evaluate(d, w, t, with_remedies=False).memory.kv_capacity_tokens
    assert got == tokens
    # the run logged 8,219 blocks × 32 = 263,008 tokens (17.83 GiB free × 0.9 = 16.05 GiB)
    assert got == pytest.approx(263_008, rel=0.02)


def test_before_the_fix_the_kv_was_over_by_more_than_10_percent(build_deployment):
    # with 8 B a slot and logit (the PyTorch line's figure) the same build keeps 2,048 ×
    # 128,256 × 12 B = 3.15e9 B less: about 43,000 more FP8 tokens than the run had
    d, w, t = _rtx5090(build_deployment, version="1.0.0")
    assert evaluate(d, w, t, with_remedies=False).memory.kv_capacity_tokens > 1.10 * 263_008


def test_evaluate_names_trtllms_logits_and_sampling_row(build_deployment):
    d, w, t = _rtx5090(build_deployment)
    text = render_text(evaluate(d, w, t))
    assert "logits + sampling" in text
    assert "2,048 slots (max_batch_size) × 128,256 logits × 20 B" in text


def test_the_slot_buffers_do_not_take_the_profiled_peaks_scale(build_deployment):
    # activation_peak_scale scales what a profiling pass measured; TensorRT's per-slot
    # logits and top-P buffers are allocated in full whatever it is (2,048 × 128,256 × 20 B)
    import dataclasses

    d, w, _ = _rtx5090(build_deployment)
    half = dataclasses.replace(d, factors=dataclasses.replace(d.factors, activation_peak_scale=0.5))
    kept = engine_memory(half, w.context_tokens)
    assert kept.sampler_bytes == pytest.approx(5_253_365_760)
    assert kept.forward_bytes == pytest.approx(0.5 * 1024 * 2 * (3 * LLAMA31_8B_INTER + 3 * LLAMA31_8B_HIDDEN))


def test_the_pytorch_lines_sampler_bytes_are_a_profiled_peak_not_slot_buffers(build_deployment):
    # TensorRT-LLM 1.0+ sizes KV after a profiled forward (the PyTorch flow, 8 B a logit):
    # its row is the sampler's peak over max_num_seqs, as vLLM's; only the TensorRT
    # engine flow (0.5-0.21) allocates logits and top-P buffers per max_batch_size slot
    d, w, t = _rtx5090(build_deployment, version="1.0.0")
    text = render_text(evaluate(d, w, t))
    assert "logits + sampling" not in text
    assert "sampler peak" in text
    assert "128,256 logits × 8 B" in text
