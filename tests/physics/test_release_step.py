"""A release line's own fitted step cost (catalogs/fitted.yaml `releases`, Engine.
release_step_overhead_s): a run on that line is predicted with every forward pass that
much longer than the same run on the current line, and nothing else moves."""

from __future__ import annotations

import pytest

from solver.catalog import default_catalog
from solver.physics.evaluate import evaluate
from solver.physics.resolve import resolve
from solver.spec.evaluate_input import EvaluateInput

CAT = default_catalog()


def _evaluate(version: str | None, factors: dict | None = None):
    engine = {"name": "vllm"} | ({"version": version} if version else {})
    data = {
        "model": "llama-3.1-8b",
        "hardware": {"gpu": "h100-sxm"},
        "engine": engine,
        "workload": {"users": 1, "prompt_tokens": 512, "output_tokens": 128, "batching": "isolated"},
    }
    if factors:
        data["overrides"] = {"factors": factors}
    return evaluate(*resolve(EvaluateInput.model_validate(data), CAT), with_remedies=False)


def test_a_v0_release_s_step_costs_its_fitted_step_cost_more():
    # vLLM 0.6.3 (the V0 line 0.5.4-0.6.4) against the current line, one user, isolated:
    # the same weights and KV reads, so the same kernels; the V0 lines' fitted step cost δ
    # is added to every forward pass, a decode step's and the prompt's pass alike.
    delta = CAT.releases.line_for(CAT.engine("vllm"), "0.6.3").overrides["release_step_overhead_s"]
    assert 0 < delta < 2e-3
    old, now = _evaluate("0.6.3"), _evaluate(None)
    assert old.decode.tpot_s - now.decode.tpot_s == pytest.approx(delta, rel=1e-9, abs=1e-12)
    assert old.prefill.ttft_s - now.prefill.ttft_s == pytest.approx(delta, rel=1e-9, abs=1e-12)
    assert old.decode.weights_time_s == now.decode.weights_time_s


def test_a_spec_s_step_cost_wins_over_the_release_s():
    # overrides.factors are the user's: the step cost they set is the step cost
    mine = {"step_overhead_s": 1e-3}
    assert _evaluate("0.6.3", mine).decode.tpot_s == pytest.approx(_evaluate(None, mine).decode.tpot_s, rel=1e-12)


def test_v1_lines_have_no_step_cost_of_their_own():
    vllm = CAT.engine("vllm")
    for version in ("0.8.5", "0.15.0", "0.19.0", "0.21.0"):
        assert CAT.releases.engine_at(vllm, version).release_step_overhead_s == 0.0
