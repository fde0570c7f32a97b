"""vLLM V0 without chunked prefill (its default before v0.8): when max_num_batched_tokens
is not given, vllm/config.py SchedulerConfig sets it to max(max_model_len, 2048), and the
engine refuses to start with less (PR #1198). Llama-3.1-8B at max_model_len 8,192 on
vLLM 0.4.1 therefore batches up to 8,192 prompt tokens a step, and a 3,000-token prompt is
one pass; at 2,048 (the V1 default with chunking) the simulator would reject that prompt."""

from __future__ import annotations

from solver.physics.iteration import iteration_model
from solver.traffic.screen import engine_limits
from solver.traffic.simulate import simulate
from solver.traffic.types import Request


def _v041(build_deployment, max_model_len=8192, prompt=3000):
    engine = {"name": "vllm", "version": "0.4.1", "max_model_len": max_model_len}
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=prompt, output=100, engine=engine)
    return d, w


def test_vllm_v0_without_chunking_takes_max_model_len_tokens_a_step(build_deployment):
    d, w = _v041(build_deployment)
    assert not d.engine.enable_chunked_prefill
    assert engine_limits(d, w).max_num_batched_tokens == 8192  # max(8192, 2048)
    d, w = _v041(build_deployment, max_model_len=1024, prompt=500)
    assert engine_limits(d, w).max_num_batched_tokens == 2048  # max(1024, 2048)


def test_the_current_vllm_keeps_its_chunked_budget(build_deployment):
    d, w, _ = build_deployment("llama-3.1-8b", "l40s", users=1, prompt=3000, output=100, engine={"name": "vllm", "max_model_len": 8192})
    assert d.engine.enable_chunked_prefill
    assert engine_limits(d, w).max_num_batched_tokens == 2048


def test_a_prompt_over_2048_tokens_is_served_whole_not_rejected(build_deployment):
    d, w = _v041(build_deployment)
    r = simulate([Request(0.0, 3000, 100)], iteration_model(d, w), engine_limits(d, w))
    assert not r.rejected and len(r.results) == 1
