"""Prefix caching: a prompt prefix every request shares is prefilled once and held once
per replica (vLLM's automatic prefix caching, SGLang's radix cache); later prompts
compute only their own tokens, which still attend to the cached keys."""

from __future__ import annotations

import dataclasses

import pytest

from solver.physics.decode import estimate_decode
from solver.physics.deployment import cached_prompt_tokens, shared_kv_tokens
from solver.physics.iteration import iteration_model
from solver.physics.kernels import attention_flops
from solver.physics.memory import estimate_memory
from solver.physics.prefill import estimate_prefill
from solver.traffic.requests import uncached
from solver.traffic.simulate import EngineLimits, Request, simulate

N = 8_030_261_248  # Llama-3.1-8B parameters
PAIR = 4 * 32 * 128 * 32  # score and value FLOPs per (query, key) pair: 32 heads × 128, 32 layers
KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # 131,072 B: K and V, 32 layers, 8 KV heads × 128, 16-bit


def _pair(build_deployment, shared=3072, hit=1.0, engine=None, users=1):
    # batching: isolated, the decode step alone: the engine's continuous default would mix
    # in the prompts' chunks, which the prefix cache shortens
    iso = {"batching": "isolated"}
    extra = {"shared_prefix_tokens": shared, "prefix_hit_rate": hit, **iso}
    kw = {"engine": engine} if engine else {}
    with_cache = build_deployment("llama-3.1-8b", "h100-sxm", users=users, prompt=4096, output=256, workload_extra=extra, **kw)
    without = build_deployment("llama-3.1-8b", "h100-sxm", users=users, prompt=4096, output=256, workload_extra=iso, **kw)
    return with_cache, without


def test_the_cached_prefix_is_not_computed_but_still_attended_to(build_deployment):
    # 3,072 of a 4,096-token prompt cached: the matmuls run over 1,024 tokens,
    # 2 × N × 1,024 FLOPs; attention over the pairs of those 1,024 queries with every key
    # before them: 4096·4097/2 − 3072·3073/2 = 3,670,528 pairs.
    (d, w, _), _ = _pair(build_deployment)
    assert cached_prompt_tokens(d, w) == 3072
    pre = estimate_prefill(d, w)
    assert pre.linear_flops == 2 * N * 1024
    assert pre.attention_flops == PAIR * (4096 * 4097 // 2 - 3072 * 3073 // 2)
    assert attention_flops(d, 4096, 3072) == pre.attention_flops


def test_a_hit_rate_caches_its_share_of_the_prefix(build_deployment):
    (d, w, _), _ = _pair(build_deployment, hit=0.5)
    assert cached_prompt_tokens(d, w) == 1536
    assert estimate_prefill(d, w).linear_flops == 2 * N * (4096 - 1536)


def test_the_prefix_kv_is_held_once_per_replica(build_deployment):
    # 16 users at 4,352 tokens: 16 × (4,352 − 3,072) own tokens + 3,072 once, × 131,072 B.
    (d, w, _), (d0, w0, _) = _pair(build_deployment, users=16)
    mem, mem0 = estimate_memory(d, w), estimate_memory(d0, w0)
    assert shared_kv_tokens(d, w) == 3072
    assert mem.kv_bytes == KV_PER_TOKEN * (16 * (4352 - 3072) + 3072)
    assert mem0.kv_bytes == KV_PER_TOKEN * 16 * 4352
    assert mem.max_batch == min(mem.max_num_seqs or 10**9, int((mem.kv_budget_bytes - KV_PER_TOKEN * 3072) // (KV_PER_TOKEN * 1280)))
    assert mem.max_batch > mem0.max_batch


def test_decode_still_reads_every_sequences_whole_context(build_deployment):
    # Paged attention reads the shared blocks once per sequence: the step is unchanged.
    (d, w, _), (d0, w0, _) = _pair(build_deployment, users=16)
    assert estimate_decode(d, w).tpot_s == estimate_decode(d0, w0).tpot_s


def test_an_engine_without_a_shared_prefix_cache_gains_nothing(build_deployment):
    (d, w, _), (d0, w0, _) = _pair(build_deployment, engine={"name": "llama.cpp"})
    assert cached_prompt_tokens(d, w) == 0 and shared_kv_tokens(d, w) == 0
    assert estimate_prefill(d, w).ttft_s == estimate_prefill(d0, w0).ttft_s


def test_one_request_in_the_simulator_sees_the_cached_prefill(build_deployment):
    # The simulator serves the prompt without its cached tokens; the iteration adds back
    # their attention (1,024 queries × 3,072 cached keys) and their KV reads, so one
    # request alone takes exactly estimate_prefill's TTFT.
    (d, w, _), _ = _pair(build_deployment)
    w = dataclasses.replace(w, batching="continuous")
    it = iteration_model(d, w)
    assert it.cached_tokens == 3072
    limits = EngineLimits(max_num_seqs=256, max_num_batched_tokens=8192, kv_capacity_tokens=100_000)
    (r,) = simulate(uncached([Request(0.0, 4096, 256)], it.cached_tokens), it, limits, front_end_s=it.request_overhead_s).results
    assert r.ttft_s == pytest.approx(estimate_prefill(d, w).ttft_s, rel=1e-9)


def test_the_prefix_must_leave_the_prompt_tokens_of_its_own(build_deployment):
    from solver.errors import InputError

    with pytest.raises(InputError, match="shared_prefix_tokens"):
        build_deployment("llama-3.1-8b", "h100-sxm", prompt=4096, output=256, workload_extra={"shared_prefix_tokens": 4096})


def test_the_shared_corpus_spec_is_far_cheaper_with_its_prefix_cached():
    # specs/rag-shared-corpus.yaml: 24 analysts, 100k-token prompts of which 96k are one
    # shared corpus. Cached (91,200 tokens a prompt at a 0.95 hit rate), each prompt
    # computes 8,800 tokens; uncached, every one is 100k and the analysts' prompts queue.
    from pathlib import Path

    import yaml

    from solver.explain.solve import solve
    from tests.solve_helpers import problem_of

    spec = yaml.safe_load((Path(__file__).resolve().parents[2] / "specs" / "rag-shared-corpus.yaml").read_text())
    cached = solve(problem_of(spec), explain=False)
    del spec["workload"]["shared_prefix_tokens"], spec["workload"]["prefix_hit_rate"]
    whole = solve(problem_of(spec), explain=False)
    assert cached.feasible and whole.feasible
    c, u = cached.solution.candidate, whole.solution.candidate
    assert c.cost_usd_per_hour < u.cost_usd_per_hour / 5
    assert estimate_prefill(c.shape.deployment, cached.problem.workload).cached_tokens == 91_200
