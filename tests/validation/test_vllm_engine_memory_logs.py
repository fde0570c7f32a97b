"""The engine-kept memory terms against vLLM's own logs on the fit half
(tests/validation/points.yaml): the CUDA-graph bytes per size and layer are the median
the v0.19 capture logs print, and the sampler's bytes per logit move between releases
as the v0.16 → v0.17 version sweep logs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from solver.physics.engine_memory import capture_sizes

GiB = 2**30
POINTS = [p for p in yaml.safe_load((Path(__file__).parent / "points.yaml").read_text())["points"] if p["split"] == "fit"]

# Layers, from each model's config.json (num_hidden_layers), of the fit half's v0.19
# H100 runs that print "Graph capturing finished ... took X GiB".
LAYERS = {
    "llama-3.1-8b": 32,
    "qwen2.5-7b": 28,
    "qwen3-8b": 36,
    "qwen3-30b-a3b": 48,
    "qwen2.5-72b": 80,
    "mixtral-8x7b": 32,
    "gpt-oss-20b": 24,
    "llama-3.3-70b": 80,
    "gemma-2-27b": 46,
    "gemma-2-9b": 42,
    "phi-4": 40,
}


def _graph_logs() -> list[tuple[str, int, float]]:
    out = []
    for p in POINTS:
        version = str((p.get("conditions") or {}).get("engine_version", ""))
        graph = (p.get("log") or {}).get("cuda_graph_gib")
        if p["metric"] == "kv_cache_tokens" and "0.19.0" in version and graph and p["model"] in LAYERS:
            out.append((p["model"], p["tp"], graph))
    return out


def test_graph_bytes_per_size_and_layer_are_the_fit_logs_least_squares(catalog):
    # bytes per size per layer = a + b / TP, least squares over the dense models' logs
    logs = [(tp, graph * GiB / (len(capture_sizes(512)) * LAYERS[m])) for m, tp, graph in _graph_logs() if not catalog.model(m).is_moe]
    assert len(logs) >= 15
    a, b = np.linalg.lstsq(np.array([[1.0, 1.0 / tp] for tp, _ in logs]), np.array([y for _, y in logs]), rcond=None)[0]
    e = catalog.engine("vllm")
    assert e.cuda_graph_bytes_per_layer_graph == pytest.approx(a, rel=0.001)
    assert e.cuda_graph_sharded_bytes_per_layer_graph == pytest.approx(b, rel=0.001)


def test_graph_bytes_track_each_dense_runs_log(catalog):
    # 51 sizes × layers × (a + b / TP) against each dense model's captured GiB, TP 1 to 4
    # and 28 to 80 layers: each within 17 % (Qwen2.5-72B at TP 2 the farthest, +16.1 %).
    e = catalog.engine("vllm")
    for model, tp, graph in _graph_logs():
        if catalog.model(model).is_moe:
            continue
        per = e.cuda_graph_bytes_per_layer_graph + e.cuda_graph_sharded_bytes_per_layer_graph / tp
        assert 51 * LAYERS[model] * per / GiB == pytest.approx(graph, rel=0.17), (model, tp)


def test_sampler_bytes_per_logit_drop_from_32_to_8_at_v017():
    # Qwen3-14B on an H100, everything but the release fixed: 1,024 rows (max_num_seqs)
    # × 151,936 logits × (32 − 8) B = 3,734,126,592 B = 3.48 GiB less activation peak.
    sweep = {p["id"]: p for p in POINTS if "qwen3-14b-h100-v0" in p["id"]}
    v16 = sweep["vllm-llmdplanner-qwen3-14b-h100-v0160-kv"]["log"]["activation_peak_gib"]
    v17 = sweep["vllm-llmdplanner-qwen3-14b-h100-v0170-kv"]["log"]["activation_peak_gib"]
    assert (v16 - v17) * GiB == pytest.approx(1024 * 151_936 * (32 - 8), rel=0.025)
