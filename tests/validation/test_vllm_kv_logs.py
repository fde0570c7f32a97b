"""vLLM's KV-cache arithmetic against its own logs (tests/validation/points.yaml,
each with its source): from the memory figures a log prints, plan-opt's rule gives
the KV memory it prints, and from that memory the block or token count it prints —
exactly, within the log's own rounding (GiB to two decimals)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from solver.physics.memory import MemoryEstimate, kv_budget_bytes, kv_capacity_blocks

GiB = 2**30
POINTS = {p["id"]: p for p in yaml.safe_load((Path(__file__).parent / "points.yaml").read_text())["points"]}


def kv_per_token(layers: int, kv_heads: int, head_dim: int, tp: int = 1, bytes_per_value: int = 2) -> int:
    """2 (K and V) × layers × KV heads per rank × head dim × bytes: the seed's formula."""
    return 2 * layers * (kv_heads // tp) * head_dim * bytes_per_value


# Per-token KV bytes, by hand from each model's config.json:
CASES = {
    # Llama-3.2-11B-Vision: 40 text layers (32 self-attention + 8 cross-attention), 8 KV heads × 128
    "vllm-pr12126-llama32-11b-vision-h100-kv": kv_per_token(40, 8, 128),
    # Llama-3.1-8B: 32 layers, 8 KV heads × 128 = 131,072 B
    "vllm-i10517-llama31-8b-rtx3090-20k-kv": kv_per_token(32, 8, 128),
    "vllm-i10517-llama31-8b-rtx3090-29k-kv": kv_per_token(32, 8, 128),
    # Mistral-Small-3.2-24B: 40 layers, 8 KV heads × 128
    "vllm-llmd-mistral-small-32-24b-h100-kv": kv_per_token(40, 8, 128),
    # Qwen2-7B: 28 layers, 4 KV heads × 128 = 57,344 B (TP 2: 2 heads per rank)
    "vllm-dennislee-qwen2-7b-a100-gmu025-kv": kv_per_token(28, 4, 128),
    "vllm-dennislee-qwen2-7b-a100-gmu05-kv": kv_per_token(28, 4, 128),
    "vllm-dennislee-qwen2-7b-a100-tp2-gmu05-kv": kv_per_token(28, 4, 128, tp=2),
    # Phi-4: 40 layers, 10 KV heads × 128 = 204,800 B
    "vllm-phi4-gptq-gmu015-kv": kv_per_token(40, 10, 128),
}


def _decimals(x: float) -> int:
    s = repr(x)
    return len(s.split(".")[1]) if "." in s else 0


@pytest.mark.parametrize("point_id", sorted(CASES))
def test_block_count_follows_from_the_logged_kv_memory(point_id):
    p = POINTS[point_id]
    log, cond = p["log"], p["conditions"]
    block = cond.get("block_size", 16)
    kv_gib = log["kv_cache_gib"]
    half = 0.5 * 10 ** -_decimals(kv_gib)  # the log rounds; its true value lies within
    lo = kv_capacity_blocks((kv_gib - half) * GiB, CASES[point_id], block)
    hi = kv_capacity_blocks((kv_gib + half) * GiB, CASES[point_id], block)
    measured = p["measured"]
    blocks = measured["value"] if measured["unit"] == "blocks" else measured["value"] // block
    if measured["unit"] == "tokens":
        assert measured["value"] % block == 0  # vLLM's token count is whole blocks
    assert lo <= blocks <= hi, (lo, blocks, hi)
    assert hi - lo <= max(12, 0.002 * blocks)  # the bracket is tight: this is no tolerance


@pytest.mark.parametrize(
    "point_id", [k for k in sorted(CASES) if {"total_gpu_memory_gib", "weights_gib", "activation_peak_gib"} <= set(POINTS[k]["log"])]
)
def test_kv_memory_follows_from_the_logged_profile(point_id):
    # vLLM: KV = total × gpu_memory_utilization − weights − non-torch − activation peak.
    p = POINTS[point_id]
    log = p["log"]
    util = p["conditions"]["gpu_memory_utilization"]
    kv = kv_budget_bytes(
        "fraction_of_total",
        log["total_gpu_memory_gib"] * GiB,
        util,
        log["weights_gib"] * GiB,
        (log.get("non_torch_gib", 0) + log["activation_peak_gib"]) * GiB,
    )
    # Five printed figures, each rounded to 0.005 (0.05 for one-decimal ones): their sum's rounding.
    assert kv / GiB == pytest.approx(log["kv_cache_gib"], abs=0.06)


def test_maximum_concurrency_is_tokens_over_context():
    # vllm PR #17122 (2025-04-24), Llama-3.1-8B on an L40S: "GPU KV cache size:
    # 158,656 tokens" and "Maximum concurrency for 32,768 tokens per request: 4.84x".
    per_token = kv_per_token(32, 8, 128)
    budget = 158_656 * per_token + per_token  # a little over 9,916 whole blocks
    mem = MemoryEstimate(
        weights_bytes=0,
        kv_bytes=0,
        overhead_bytes=0,
        device_bytes=budget,
        utilization=1.0,
        model_weights_bytes=0,
        model_kv_bytes=0,
        kv_bytes_per_sequence=per_token,
        batch=1,
        kv_bytes_per_token=per_token,
        block_size_tokens=16,
        context_tokens=32_768,
        kv_bytes_per_context_sequence=32_768 * per_token,
    )
    assert mem.kv_capacity_tokens == 158_656
    assert f"{mem.max_concurrency:.2f}x" == "4.84x"
