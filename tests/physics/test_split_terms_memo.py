"""The decode coefficients that read the split alone (weights per rank, the matmul rate,
the step's fixed cost and communication, the KV share per rank) are derived once per
deployment and reused at every context the explanation moves (decode._split_terms); a
prefill estimate keeps its GPU time once read; the prompt queue's recursion runs over
float counts (the same products as int ones). Kept figures must be the figures: the
same coefficients as a fresh derivation, whatever was asked before, and never another
deployment's or another estimate's."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import build

import solver.physics.decode as decode
from solver.physics.decode import decode_coefficients
from solver.physics.prefill import PrefillEstimate, estimate_prefill
from tests.physics.test_decode_memo import SHAPES  # dense and MoE, one GPU and several, both batchings

CONTEXTS = [(8192, 2000, 1000), (4096, 1000, 500), (16384, 2000, 1000), (2048, 1500, 400)]
"""(context, prompt, output): the moves of the price of each target (shorter contexts shorten the prompt)."""


def _build(shape: tuple, context: int = 8192, prompt: int = 2000, output: int = 1000):
    model, gpu, tp, pp, weights, kv, batching = shape
    return build(
        model, gpu, tp=tp, pp=pp, weights=weights, kv=kv, context=context, prompt=prompt, output=output, workload_extra={"batching": batching}
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_coefficients_at_moved_contexts_equal_a_fresh_derivation(shape):
    d, w, _ = _build(shape)
    kept = []
    for context, prompt, output in CONTEXTS:  # one deployment, its terms kept across the moves
        moved = dataclasses.replace(w, context_tokens=context, prompt_tokens=prompt, output_tokens=output)
        kept.append(decode_coefficients(d, moved.resident_tokens, moved))
    for (context, prompt, output), got in zip(CONTEXTS, kept):
        decode._SPLIT_TERMS.clear()  # derived afresh: the same coefficients, field by field
        moved = dataclasses.replace(w, context_tokens=context, prompt_tokens=prompt, output_tokens=output)
        assert got == decode_coefficients(d, moved.resident_tokens, moved)
        assert got.context_tokens == context and got.tpot_s(8) == decode_coefficients(d, moved.resident_tokens, moved).tpot_s(8)


def test_the_split_terms_are_derived_once_per_deployment(monkeypatch):
    d, w, _ = _build(SHAPES[1])
    decode_coefficients(d, w.resident_tokens, w)
    calls = []
    real = decode.split_weight_bytes
    monkeypatch.setattr(decode, "split_weight_bytes", lambda dep: calls.append(dep) or real(dep))
    shorter = dataclasses.replace(w, context_tokens=4096, prompt_tokens=1000, output_tokens=500)
    decode_coefficients(d, shorter.resident_tokens, shorter)
    assert calls == []  # the moved context reads the kept weights per rank
    other = dataclasses.replace(d, tp=2)  # another split of the same model: its own terms
    decode_coefficients(other, w.resident_tokens, w)
    assert calls == [other]


def test_deployments_never_share_their_terms():
    # Llama 3.1 70B at TP 4 and TP 8 on one GPU: the weights and the KV per rank halve.
    d4, w, _ = build("llama-3.1-70b", "h100-sxm", tp=4, context=8192, prompt=2000)
    d8, _, _ = build("llama-3.1-70b", "h100-sxm", tp=8, context=8192, prompt=2000)
    c4, c8 = decode_coefficients(d4, w.resident_tokens, w), decode_coefficients(d8, w.resident_tokens, w)
    assert c8.dense_weight_bytes == pytest.approx(c4.dense_weight_bytes / 2)
    assert c8.kv_bytes_per_sequence == pytest.approx(c4.kv_bytes_per_sequence / 2)
    # an entry whose id is taken by another deployment (ids are reused once an object is
    # freed) is never read as this one's: the memo holds the deployment and checks it
    decode._SPLIT_TERMS.clear()
    decode_coefficients(d4, w.resident_tokens, w)
    decode._SPLIT_TERMS.entries[(id(d8),)] = decode._SPLIT_TERMS.entries[(id(d4),)]
    assert decode_coefficients(d8, w.resident_tokens, w) == c8


def test_a_prefill_estimate_keeps_its_gpu_time_and_a_copy_does_not(monkeypatch):
    d, w, _ = _build(SHAPES[0])
    p = estimate_prefill(d, w)
    # the GPU time is its parts' sum (prefill.py: matmuls, attention, all-reduces, launches, experts' setup, draft)
    parts = p.gemm_time_s + p.attention_time_s + p.comm_time_s + p.step_overhead_s + p.expert_overhead_s + p.draft_time_s
    assert p.gpu_time_s == parts
    assert p.ttft_s == parts + p.request_overhead_s
    calls = []
    real = PrefillEstimate.gemm_time_s
    monkeypatch.setattr(PrefillEstimate, "gemm_time_s", property(lambda self: calls.append(self) or real.fget(self)))
    assert p.gpu_time_s == parts and calls == []  # kept: nothing summed again
    heavier = dataclasses.replace(p, linear_flops=p.linear_flops * 100)  # compute-bound now: more time
    assert heavier.gpu_time_s > parts and len(calls) == 1
    assert p.gpu_time_s == parts


def test_a_workloads_resident_tokens_are_kept_and_a_copy_has_its_own():
    from solver.physics.deployment import Workload

    w = Workload(users=8, context_tokens=4096, prompt_tokens=1536, output_tokens=2560, kv_fill=0.3)
    assert w.resident_tokens == 1229  # ⌈0.3 × 4096⌉ = ⌈1228.8⌉
    assert vars(w)["resident_tokens"] == 1229  # kept on the (frozen) workload once read
    shorter = dataclasses.replace(w, context_tokens=2048)  # the price of a target's moved context
    assert shorter.resident_tokens == 615  # ⌈614.4⌉, not the original's kept figure
    assert w == dataclasses.replace(w) and hash(w) == hash(dataclasses.replace(w))  # equality and hashing read the fields alone
    assert Workload(users=1, context_tokens=100, prompt_tokens=50, output_tokens=50, kv_fill=0.001).resident_tokens == 1  # at least one
