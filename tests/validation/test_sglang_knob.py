"""A run's recorded SGLang mem_fraction_static reaches the prediction as the spec's
engine.gpu_memory_utilization (its --mem-fraction-static), as bench_traffic_validation
passes it; a run that records none, or only words, gets the release's own rule."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import validation_points as vp  # noqa: E402


def _point(**cond) -> dict:
    return {
        "metric": "kv_cache_tokens",
        "engine": "sglang",
        "model": "qwen2.5-32b",
        "tp": 4,
        "measured": {"value": 1, "unit": "tokens"},
        "conditions": cond,
    }


def test_a_recorded_mem_fraction_static_is_the_knob():
    # vllm issue #21348's SGLang run: --mem-fraction-static 0.93
    assert vp._engine(_point(mem_fraction_static=0.93, engine_version="SGLang (2025-07)"))["gpu_memory_utilization"] == 0.93


def test_words_or_nothing_leave_the_rule():
    assert "gpu_memory_utilization" not in vp._engine(_point(mem_fraction_static="default (not passed; auto-chosen by server_args)"))
    assert "gpu_memory_utilization" not in vp._engine(_point())


def test_the_spec_s_own_name_wins_and_vllm_has_no_such_name():
    assert vp._engine(_point(mem_fraction_static=0.8, gpu_memory_utilization=0.7))["gpu_memory_utilization"] == 0.7
    vllm = {**_point(mem_fraction_static=0.8), "engine": "vllm"}
    assert "gpu_memory_utilization" not in vp._engine(vllm)
