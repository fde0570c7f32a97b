"""A run's recorded engine knobs reach the prediction as the spec's engine fields
(bench/validation_points.py `_engine`), one name for one thing:

- SGLang's mem_fraction_static as engine.gpu_memory_utilization (its
  --mem-fraction-static), as bench_traffic_validation passes it; a run that records none,
  or only words, gets the release's own rule;
- TensorRT-LLM's build limits and KV fraction: max_batch_size as max_num_seqs,
  max_num_tokens as max_num_batched_tokens, free_gpu_memory_fraction (or its Triton /
  trtllm-serve names) as gpu_memory_utilization; an engine built before 0.11 without
  max_num_tokens takes max_batch_size × max_input_len."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import validation_points as vp  # noqa: E402

ENGINES = {"sglang": ("qwen2.5-32b", 4), "trtllm": ("llama-2-7b", 1)}
"""Each engine's test run: its model and TP (what _engine reads beside the conditions)."""


def _point(engine: str, **cond) -> dict:
    model, tp = ENGINES[engine]
    return {
        "metric": "kv_cache_tokens",
        "engine": engine,
        "model": model,
        "tp": tp,
        "measured": {"value": 1, "unit": "tokens"},
        "conditions": cond,
    }


def test_a_recorded_mem_fraction_static_is_the_knob():
    # vllm issue #21348's SGLang run: --mem-fraction-static 0.93
    assert vp._engine(_point("sglang", mem_fraction_static=0.93, engine_version="SGLang (2025-07)"))["gpu_memory_utilization"] == 0.93


def test_words_or_nothing_leave_the_rule():
    assert "gpu_memory_utilization" not in vp._engine(_point("sglang", mem_fraction_static="default (not passed; auto-chosen by server_args)"))
    assert "gpu_memory_utilization" not in vp._engine(
        _point(
            "sglang",
        )
    )


def test_the_spec_s_own_name_wins_and_vllm_has_no_such_name():
    assert vp._engine(_point("sglang", mem_fraction_static=0.8, gpu_memory_utilization=0.7))["gpu_memory_utilization"] == 0.7
    vllm = {**_point("sglang", mem_fraction_static=0.8), "engine": "vllm"}
    assert "gpu_memory_utilization" not in vp._engine(vllm)


def test_issue_224s_build_limits_are_the_knobs():
    # TensorRT-LLM issue 224: build.py --max_batch_size 25, no --max_input_len (default
    # 2,048), no --max_num_tokens: the engine's token range is 25 × 2,048 = 51,200; the
    # Triton backend's kv_cache_free_gpu_mem_fraction 0.95
    e = vp._engine(_point("trtllm", free_gpu_memory_fraction=0.95, max_batch_size=25, engine_version="TensorRT-LLM ~0.5 (2023-10)"))
    assert e["max_num_seqs"] == 25
    assert e["max_num_batched_tokens"] == 51_200
    assert e["gpu_memory_utilization"] == 0.95


def test_a_recorded_max_input_len_and_max_num_tokens():
    e = vp._engine(_point("trtllm", max_batch_size=4, max_input_len=1000, engine_version="TensorRT-LLM v0.8"))
    assert e["max_num_batched_tokens"] == 4_000
    e = vp._engine(_point("trtllm", max_batch_size=1, max_num_tokens=4096, max_input_len=4096, engine_version="TensorRT-LLM v0.8"))
    assert (e["max_num_seqs"], e["max_num_batched_tokens"]) == (1, 4096)


def test_from_0_11_the_release_default_token_budget_stands():
    # max_num_tokens 8,192 by default from v0.11: no product of the limits
    e = vp._engine(_point("trtllm", max_batch_size=64, engine_version="TensorRT-LLM 0.19.0"))
    assert e["max_num_seqs"] == 64
    assert "max_num_batched_tokens" not in e


def test_the_spec_s_own_names_win_and_other_engines_have_no_such_names():
    e = vp._engine(_point("trtllm", max_batch_size=25, max_num_seqs=8, kv_cache_free_gpu_mem_fraction=0.85, engine_version="TensorRT-LLM 0.19.0"))
    assert e["max_num_seqs"] == 8
    assert e["gpu_memory_utilization"] == 0.85
    vllm = {**_point("trtllm", max_batch_size=25, free_gpu_memory_fraction=0.95), "engine": "vllm"}
    assert "max_num_seqs" not in vp._engine(vllm) and "gpu_memory_utilization" not in vp._engine(vllm)
