"""A decode step's fixed cost follows the model's depth, not the step: under CUDA graphs
and an overlapped scheduler (vLLM V1's engine-core process, SGLang's overlap scheduler,
TensorRT-LLM's) what a pass costs beyond its reads and math is its kernels' launches and
tails, a few per layer, and little per step. Checked on the catalog's fitted factors
(catalogs/fitted.yaml) for the serving engines on NVIDIA HBM against two published vLLM
batch-1 steps on H100 SXM, both of the fit half of tests/validation/points.yaml."""

from __future__ import annotations

from solver.catalog import default_catalog
from solver.physics.kernels import fixed_step_s
from solver.physics.resolve import resolve
from solver.spec.evaluate_input import EvaluateInput

CAT = default_catalog()

# By hand, from the two runs (H100 SXM: 3.35 TB/s of HBM3, NVIDIA's datasheet). A decode
# step reads every weight but the input embedding table (a gather of one row a token):
#   Qwen3-8B, TP 1, 36 layers: 8.19 B parameters less 151,936 × 4,096 of embedding =
#   7.567 B = 15.14 GB of BF16, 4.518 ms at peak; measured 8.0 ms (vLLM 0.21+, gist 62258,
#   cap 1 without drafting);
#   Qwen2.5-72B, TP 2, 80 layers: 72.7 B less 152,064 × 8,192 = 71.45 B, 71.45 GB a GPU,
#   21.33 ms at peak; measured 30.9 ms (vLLM 0.17-0.20, tenstorrent/tt-inference-server
#   issue 143, 128 in / 128 out), less its 160 all-reduces of one token's 16 KiB (2-6 µs
#   each: c = 0.3-1.0 ms).
# With t = read at peak / e + L × a (nothing per step): 8.0 = 4.518 / e + 36 a and
# 30.9 − c = 21.33 / e + 80 a; the first × 80/36 taken from the second:
#   c = 0.3 ms: 11.29 / e = 12.82 → e = 0.880, a = (8.0 − 5.13) / 36 = 80 µs a layer;
#   c = 1.0 ms: 11.29 / e = 12.12 → e = 0.931, a = (8.0 − 4.85) / 36 = 87 µs a layer.
# The fit's held values until 2026-12-05, 2 ms a step and 20 µs a layer, give the pair
# e = 4.518 / (8.0 − 2.72) = 0.856 from the 8B, and then the 72B's step at
# 21.33 / 0.856 + 3.6 + c = 28.8-29.5 ms: 5-7 % fast, with a cost per layer a quarter of
# the pair's.
PUBLISHED_PER_LAYER_S = 80e-6
"""The smaller of the pair's two solutions."""


def _fixed_s(model: str, gpu: str = "h100-sxm", engine: str = "vllm") -> float:
    data = {
        "model": model,
        "hardware": {"gpu": gpu, "tp": 2},
        "engine": {"name": engine},
        "workload": {"users": 1, "prompt_tokens": 128, "output_tokens": 128, "batching": "isolated"},
    }
    d, _, _ = resolve(EvaluateInput.model_validate(data), CAT)
    return fixed_step_s(d)


def test_a_deeper_model_s_pass_costs_at_least_half_the_published_cost_per_layer_more():
    # both dense and at TP 2: the per-step, per-TP-rank and per-MoE-layer terms cancel
    slope_s = (_fixed_s("qwen2.5-72b") - _fixed_s("qwen3-8b")) / (80 - 36)
    assert 0.5 * PUBLISHED_PER_LAYER_S <= slope_s <= 1.5 * PUBLISHED_PER_LAYER_S


def test_most_of_a_shallow_model_s_fixed_cost_is_its_layers():
    # the pair gives nothing a step: of a 36-layer model's fixed cost at TP 2 on any
    # serving engine, the part that is not per layer (per step and per TP rank) is the
    # smaller share
    for engine in ("vllm", "sglang", "trtllm"):
        total = _fixed_s("qwen3-8b", engine=engine)
        per_layer = (_fixed_s("qwen2.5-72b", engine=engine) - total) / (80 - 36)
        assert total - 36 * per_layer < 36 * per_layer, engine
