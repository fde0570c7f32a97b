"""The memory figures that read the deployment alone (weights per GPU with a draft's,
the checkpoint's bytes, the bytes the runtime sees, KV bytes per token per GPU) are
derived once per deployment (memory._context_free), and the engine's terms once per
deployment and profiled tokens (engine_memory._KEPT): the explanation re-derives every
option's memory at each context it moves. Kept figures must be the figures: the same
estimate as a fresh derivation, whatever was asked before, and never another
deployment's, nor another context's where the context moves the engine's terms."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import build

import solver.physics.engine_memory as engine_memory_module
import solver.physics.memory as memory
from solver.catalog import default_catalog
from solver.physics.engine_memory import engine_memory
from solver.physics.memory import estimate_memory
from solver.physics.resolve import resolve
from solver.spec.evaluate_input import parse_input

SHAPES = [
    # (model, gpu, tp, pp, weights, kv): dense and MoE, one GPU and several, pipeline stages
    ("llama-3.1-8b", "h100-sxm", 2, 1, "bf16", "bf16"),
    ("llama-3.1-70b", "a100-80gb", 4, 2, "fp8", "fp8"),
    ("llama-3.1-70b", "l40s", 8, 1, "int4-awq", "bf16"),
    ("qwen3-30b-a3b", "h100-sxm", 1, 1, "bf16", "fp8"),
    ("mixtral-8x7b", "mi300x", 2, 1, "bf16", "bf16"),
    ("deepseek-r1", "h200", 8, 1, "fp8", "fp8"),
]
CONTEXTS = [(8192, 2000, 1000), (4096, 1000, 500), (16384, 2000, 1000), (2048, 1500, 400)]
"""(context, prompt, output): the moves of the price of each target."""


def _clear() -> None:
    memory._CONTEXT_FREE.clear()
    engine_memory_module._KEPT.clear()


def _moved(w, context: int, prompt: int, output: int):
    return dataclasses.replace(w, context_tokens=context, prompt_tokens=prompt, output_tokens=output)


def _speculative():
    """Llama 3.1 8B with an EAGLE draft, TP 2: a draft's weights in the per-GPU figure."""
    data = {
        "model": "llama-3.1-8b",
        "hardware": {"gpu": "h100-sxm", "tp": 2},
        "precision": {"weights": "bf16", "kv_cache": "bf16"},
        "workload": {"users": 8, "context_tokens": 8192, "prompt_tokens": 2000, "output_tokens": 1000, "batching": "isolated"},
        "speculative": {"method": "eagle"},
    }
    d, w, _ = resolve(parse_input(data), default_catalog())
    assert d.speculation is not None and d.speculation.draft_weight_bytes > 0
    return d, w


def _unchunked(d):
    """The engine without chunked prefill and with no max_model_len: its profiling pass is
    the whole context (vLLM V0), so the engine's terms move with the context."""
    return d.replace(engine=dataclasses.replace(d.engine, enable_chunked_prefill=False, unchunked_budget_holds_model_len=True, max_model_len=None))


def _deployments():
    out = []
    for model, gpu, tp, pp, weights, kv in SHAPES:
        d, w, _ = build(model, gpu, users=8, tp=tp, pp=pp, weights=weights, kv=kv, context=8192, prompt=2000, output=1000)
        out.append((d, w))
    out.append(_speculative())
    d, w = out[0]
    out.append((_unchunked(d), w))
    return out


@pytest.mark.parametrize("index", range(len(SHAPES) + 2))
def test_memory_at_moved_contexts_equals_a_fresh_derivation(index):
    d, w = _deployments()[index]
    kept = [estimate_memory(d, _moved(w, *c)) for c in CONTEXTS]  # one deployment, its figures kept across the moves
    for c, got in zip(CONTEXTS, kept):
        _clear()  # derived afresh: the same estimate, field by field, bit for bit
        fresh = estimate_memory(d, _moved(w, *c))
        assert got == fresh
        assert got.max_batch == fresh.max_batch and got.kv_budget_bytes == fresh.kv_budget_bytes


def test_the_context_free_figures_are_derived_once_per_deployment(monkeypatch):
    d, w, _ = build("llama-3.1-70b", "a100-80gb", users=8, tp=4, pp=2, weights="fp8", kv="fp8", context=8192, prompt=2000)
    estimate_memory(d, w)
    calls = []
    real = memory.per_gpu_weights_bytes
    monkeypatch.setattr(memory, "per_gpu_weights_bytes", lambda dep: calls.append(dep) or real(dep))
    estimate_memory(d, _moved(w, 4096, 1000, 500))
    assert calls == []  # the moved context reads the kept weights per GPU
    other = d.replace(tp=8)  # another split of the same model: its own figures
    estimate_memory(other, w)
    assert calls == [other]


def test_deployments_never_share_their_figures():
    # Llama 3.1 70B in BF16 on H100 at TP 4 and TP 8, one stage: the weights per GPU halve,
    # and so does each sequence's KV (8 KV heads split over 4, then 8 ranks).
    d4, w, _ = build("llama-3.1-70b", "h100-sxm", users=8, tp=4, context=8192, prompt=2000)
    d8, _, _ = build("llama-3.1-70b", "h100-sxm", users=8, tp=8, context=8192, prompt=2000)
    m4, m8 = estimate_memory(d4, w), estimate_memory(d8, w)
    assert m8.weights_bytes == pytest.approx(m4.weights_bytes / 2)
    assert m8.kv_bytes_per_token == pytest.approx(m4.kv_bytes_per_token / 2)
    # an entry whose id is taken by another deployment (ids are reused once an object is
    # freed) is never read as this one's: the memo holds the deployment and checks it
    _clear()
    estimate_memory(d4, w)
    memory._CONTEXT_FREE.entries[(id(d8),)] = memory._CONTEXT_FREE.entries[(id(d4),)]
    for key in list(engine_memory_module._KEPT.entries):
        engine_memory_module._KEPT.entries[(id(d8), key[1])] = engine_memory_module._KEPT.entries[key]
    assert estimate_memory(d8, w) == m8


def test_the_engines_terms_follow_the_profiled_tokens_of_each_context():
    # Without chunked prefill and with no max_model_len, vLLM V0 profiles one pass over the
    # whole context, max(context, max_num_batched_tokens) tokens: the forward peak moves with
    # the context, the sampler, runtime and graphs do not.
    d, _, _ = build("llama-3.1-8b", "h100-sxm", users=8, tp=2, context=8192, prompt=2000)
    d = _unchunked(d)
    budget = d.engine.max_num_batched_tokens
    long, longer = max(budget, 8192), max(budget, 16384) + 1
    assert long != longer
    a, b = engine_memory(d, long), engine_memory(d, longer)
    assert (a.forward_tokens, b.forward_tokens) == (long, longer)
    assert b.forward_bytes / a.forward_bytes == pytest.approx(longer / long)  # one pass, bytes per token alike
    assert (a.sampler_bytes, a.runtime_bytes, a.cuda_graph_bytes) == (b.sampler_bytes, b.runtime_bytes, b.cuda_graph_bytes)
    assert engine_memory(d, long) is a  # kept: the same terms
    _clear()
    assert engine_memory(d, long) == a and engine_memory(d, longer) == b
