"""The solver's physics of a shape derives its prefill once: the TTFT on an idle replica
and the prompt's GPU time inside the decode coefficients (their TTFT under load) are one
estimate, where they used to be two identical ones."""

from __future__ import annotations

from solve_helpers import problem_of

import solver.optimise.problem as problem_module
import solver.physics.decode as decode_module
from solver.physics.prefill import estimate_prefill

SPEC = {
    "model": "llama-3.1-8b",
    "workload": {"users": 16, "context_tokens": 4096, "prompt_tokens": 1024},
    "sla": {"max_ttft": "1s", "max_tpot": "50ms"},
    "search": {"gpus": ["h100-sxm", "l40s"], "tp": [1, 2], "weights": ["bf16", "fp8"], "kv_cache": ["bf16"]},
}


def test_each_shape_is_prefilled_once(monkeypatch):
    problem = problem_of(SPEC)
    calls = []

    def counted(d, w):
        calls.append(d)
        return estimate_prefill(d, w)

    monkeypatch.setattr(problem_module, "estimate_prefill", counted)
    monkeypatch.setattr(decode_module, "estimate_prefill", counted)
    physics = [problem.physics(s, problem.workload) for s in problem.shapes]
    estimated = [ph for ph in physics if ph.decode is not None]
    assert estimated  # 2 GPUs × TP 1, 2 × 2 weight formats: the 8B model runs on some
    assert len(calls) == len(estimated)
    for ph in estimated:  # the idle TTFT and the queue's prompt time are the one estimate's
        assert ph.decode.prefill_gpu_s + ph.decode.request_overhead_s == ph.ttft_s
