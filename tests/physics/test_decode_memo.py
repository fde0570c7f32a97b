"""DecodeCoefficients keeps each step it computes by (batch, prompt tokens): a TTFT under
load reads one chunk's step three times and the solver's TPOT and TTFT bisections probe
the same batches. Kept figures must be the figures: whatever was asked before, in
whatever order, and never shared with coefficients changed by dataclasses.replace."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import build
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.physics.decode import DecodeCoefficients, decode_coefficients
from solver.physics.prefill import estimate_prefill

SHAPES = [
    # (model, gpu, tp, pp, weights, kv, batching): dense and MoE, one GPU and several, both batchings
    ("llama-3.1-8b", "h100-sxm", 2, 1, "bf16", "bf16", "continuous"),
    ("llama-3.1-70b", "a100-80gb", 4, 2, "fp8", "fp8", "continuous"),
    ("llama-3.1-70b", "l40s", 8, 1, "int4-awq", "bf16", "isolated"),
    ("qwen3-30b-a3b", "h100-sxm", 1, 1, "bf16", "fp8", "continuous"),
    ("mixtral-8x7b", "mi300x", 2, 1, "bf16", "bf16", "continuous"),
    ("deepseek-r1", "h200", 8, 1, "fp8", "fp8", "continuous"),
]


def _coefficients(shape: tuple, prompt: int = 2000, output: int = 1000, context: int = 8192) -> DecodeCoefficients:
    model, gpu, tp, pp, weights, kv, batching = shape
    d, w, _ = build(
        model, gpu, tp=tp, pp=pp, weights=weights, kv=kv, context=context, prompt=prompt, output=output, workload_extra={"batching": batching}
    )
    return decode_coefficients(d, w.resident_tokens, w)


def _fresh(c: DecodeCoefficients) -> DecodeCoefficients:
    return dataclasses.replace(c)  # the same fields, nothing kept


def test_a_ttft_under_load_computes_each_distinct_step_once(monkeypatch):
    # Llama 3.1 8B, TP 2, continuous batching, a 2,000-token prompt, 1,000 output tokens,
    # batch 4: each decoder brings 2,000 / 1,000 = 2 prompt tokens a step, 8 in all, below
    # a chunk of min(8,192 − 4, 2,000) = 2,000, so the mean step mixes the step without a
    # chunk (4, 0) and the step with one (4, 2,000); the prompt's capacity share and its
    # own service are both the step (4, 2,000) too. Two distinct steps: two matmul passes.
    c = _coefficients(SHAPES[0])
    assert c.chunk_mix(4) == (pytest.approx(8 / 2000), 2000)
    calls = []
    real = DecodeCoefficients.gemm_time_s

    def counted(self, batch, prefill_tokens=None):
        calls.append((batch, prefill_tokens))
        return real(self, batch, prefill_tokens)

    monkeypatch.setattr(DecodeCoefficients, "gemm_time_s", counted)
    first = c.ttft_under_load_s(4)
    assert sorted(calls) == [(4, 0.0), (4, 2000)]
    assert c.ttft_under_load_s(4) == first and c.tpot_s(4) > 0
    assert len(calls) == 2  # asked again: nothing recomputed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.sampled_from(SHAPES),
    batches=st.lists(st.integers(min_value=1, max_value=600), min_size=1, max_size=12),
    prompt=st.integers(min_value=1, max_value=12_000),
)
def test_kept_steps_never_change_a_figure(shape, batches, prompt):
    c = _coefficients(shape, prompt=prompt, context=prompt + 4000)
    for b in batches:  # warm, in the order drawn
        c.tpot_s(b), c.ttft_under_load_s(b) if c.prompt_tokens else None
    for b in reversed(batches):
        assert c.tpot_s(b) == _fresh(c).tpot_s(b)
        assert c.decode_only_s(b) == _fresh(c).decode_only_s(b)
        if c.prompt_tokens:
            assert c.ttft_under_load_s(b) == _fresh(c).ttft_under_load_s(b)


def test_replaced_coefficients_keep_nothing_of_the_original():
    # explain/runners_up.py prices communication by a copy without it: with the original's
    # steps kept and shared, the copy would show the original's TPOT. TP 2 all-reduces
    # every step, so the copy without communication is strictly faster.
    c = _coefficients(SHAPES[0])
    with_comm = c.tpot_s(16)
    silent = dataclasses.replace(c, comm_fixed_s=0.0, comm_per_sequence_s=0.0, comm_pieces=())
    assert silent.tpot_s(16) < with_comm
    assert c.tpot_s(16) == with_comm


def test_the_solvers_prefill_gives_the_same_coefficients():
    # decode_coefficients reads the prefill the solver already has instead of estimating it again
    for shape in SHAPES:
        model, gpu, tp, pp, weights, kv, batching = shape
        d, w, _ = build(model, gpu, tp=tp, pp=pp, weights=weights, kv=kv, context=8192, prompt=2000, workload_extra={"batching": batching})
        assert decode_coefficients(d, w.resident_tokens, w, estimate_prefill(d, w)) == decode_coefficients(d, w.resident_tokens, w)


def test_a_deployments_step_communication_is_derived_once_across_workloads(monkeypatch):
    # The explanation moves the context and the prompt (five workloads on FULL): the
    # all-reduces of a step depend on the split alone, so a deployment's are derived once.
    import solver.physics.decode as decode
    import solver.physics.interconnect as interconnect

    d, w, _ = build("llama-3.1-70b", "h100-sxm", tp=4, context=8192, prompt=2000, workload_extra={"batching": "continuous"})
    shorter = dataclasses.replace(w, context_tokens=4096, prompt_tokens=1024)
    first = decode_coefficients(d, w.resident_tokens, w)
    calls = []
    real = interconnect.comm_segments
    monkeypatch.setattr(interconnect, "comm_segments", lambda dep: calls.append(dep) or real(dep))
    again = decode_coefficients(d, shorter.resident_tokens, shorter)
    assert calls == []
    assert (again.comm_fixed_s, again.comm_per_sequence_s, again.comm_pieces) == (first.comm_fixed_s, first.comm_per_sequence_s, first.comm_pieces)
    interconnect._COMM.clear()  # derived afresh: the same figures
    decode._SPLIT_TERMS.clear()  # (decode keeps them with the split's other terms too)
    fresh = decode_coefficients(d, shorter.resident_tokens, shorter)
    assert len(calls) == 1
    assert fresh == again
