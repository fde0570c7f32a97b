"""Quality at equal cost: the precisions' quality order (catalogs/precisions.yaml
quality_rank), the tie-break toward it, a floor, and the price of a better format."""

from __future__ import annotations

import pytest

from solver.catalog import default_catalog
from solver.errors import InputError
from solver.explain.solve import solve
from solver.report.solve_json import to_output
from solver.report.solve_text import render
from tests.solve_helpers import problem_of

# Four owned A100 80GB at $0/hour, Llama-3.1-70B, TPOT ≤ 50 ms: 16-bit weights take
# 141 GB, 35 GB per GPU at TP 4 — they fit, and a step reads 35 GB at 2.04 TB/s × 0.55
# ≈ 31 ms (+ all-reduces), under the target. Every format costs $0: quality decides.
OWNED = {
    "model": "llama-3.1-70b",
    "workload": {"users": 4, "context_tokens": 4096, "output_tokens": 256},
    "sla": {"max_tpot": "50ms"},
    "search": {"gpus": ["a100-80gb"], "max_gpus": 4},
    "inventory": {"a100-80gb": 4},
}


def test_the_quality_order_follows_the_cited_figures():
    # llama.cpp's table (ppl over F16 @ Llama-3-8B): Q8_0 +0.0026 < Q6_K +0.0217 < Q5_K_M
    # +0.0569 < Q4_K_M +0.1754 < Q4_0 +0.4685; lmquant: AWQ +0.40 < GPTQ +0.42; MXFP4 last.
    rank = {p.name: p.quality_rank for p in default_catalog().precisions}
    assert rank["bf16"] == rank["fp16"] > rank["q8_0"] > rank["q6_k"] > rank["q5_k_m"] > rank["q4_k_m"] > rank["q4_0"]
    assert rank["fp8"] > rank["int8"] > rank["int4-awq"] > rank["int4-gptq"] > rank["mxfp4"]


def test_at_equal_cost_the_better_format_wins():
    r = solve(problem_of(OWNED))
    out = to_output(r)
    assert out.plan.cost_usd_per_hour == 0
    assert (out.plan.weights, out.plan.kv_cache) == ("bf16", "bf16")
    assert out.better_weights == []
    assert "- weights: bf16, the best format the search allows" in render(r)


def test_prefer_speed_takes_the_faster_format_and_says_quality_was_free():
    formats = ["bf16", "fp8", "int4-awq"]
    speed = {"prefer": "speed"}
    r = solve(problem_of({**OWNED, **speed, "search": {**OWNED["search"], "weights": formats}}))
    out = to_output(r)
    # the fastest of the formats, each solved alone (fewer bytes per step is not enough:
    # a format's kernels reach their own share of the bandwidth)
    alone = {w: to_output(solve(problem_of({**OWNED, **speed, "search": {**OWNED["search"], "weights": [w]}}))).plan.tpot_s for w in formats}
    assert out.plan.weights == min(alone, key=lambda w: alone[w]) and out.plan.tpot_s == min(alone.values())
    bf16 = next(q for q in out.better_weights if q.weights == "bf16")
    assert bf16.delta == 0
    assert "bf16 costs nothing more" in render(r)


def test_a_floor_keeps_lower_formats_out_of_the_search():
    out = to_output(solve(problem_of({**OWNED, "prefer": "speed", "search": {**OWNED["search"], "min_weights_quality": "fp8"}})))
    assert out.plan.weights in ("bf16", "fp8")
    with pytest.raises(InputError) as e:
        problem_of({**OWNED, "search": {**OWNED["search"], "weights": ["int4-awq"], "min_weights_quality": "fp8"}})
    assert e.value.field == "search.min_weights_quality"


def test_the_report_prices_a_better_format():
    # Llama-3.1-70B for one user on rented H100 SXM ($3.99): int4-AWQ (about 40 GB) fits
    # one GPU; fp8 (70.6 GB of weights + 16-bit embeddings, over the 76.56 GB the engine
    # may use) needs two: one more GPU-hour. bf16 (141.1 GB) does not fit two either: per
    # GPU 70.55 GB of weights + CUDA graphs 51 sizes × 80 layers × (394,800 + 194,100 / 2) B
    # = 2.01 GB (counted by the current vLLM line) + NVLink SHARP buffers 1.98 GB + the
    # sampler's 1,024 × 128,256 × 8 B = 1.05 GB = 75.59 GB, and the forward's 1.11 GB
    # peak takes it past 76.56 GB; TP 4 it is (TP 3 does not divide 64 heads): three
    # more GPU-hours.
    spec = {
        "model": "llama-3.1-70b",
        "workload": {"users": 1, "context_tokens": 4096, "output_tokens": 256},
        "sla": {"max_tpot": "60ms"},
        "search": {"gpus": ["h100-sxm"], "weights": ["bf16", "fp8", "int4-awq"], "kv_cache": ["bf16"]},
    }
    out = to_output(solve(problem_of(spec)))
    assert out.plan.weights == "int4-awq" and out.plan.gpus == 1
    assert [(q.weights, q.delta) for q in out.better_weights] == [("bf16", pytest.approx(3 * 3.99)), ("fp8", pytest.approx(3.99))]
