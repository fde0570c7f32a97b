"""A shape's prefill estimate is kept by the workload figures it reads (the prompt and
its cached prefix, `Problem.unbatched`), so the price of a moved context or output
length (explain/sensitivity.py) reuses it instead of re-deriving it (issue 44). The
rule is checked against a fresh estimate: reused and fresh are equal field by field,
and a moved prompt or prefix is estimated anew."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from solver.catalog import default_catalog
from solver.optimise import problem as problem_module
from solver.optimise.shapes import build_problem
from solver.physics.prefill import PrefillEstimate, estimate_prefill
from solver.spec.solve_spec import load_spec

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _problem():  # type: ignore[no-untyped-def]
    spec, _ = load_spec(str(SPECS / "long-prompts-disaggregated.yaml"))
    return build_problem(spec, default_catalog(), SPECS)


def test_a_moved_context_reuses_each_prompts_estimate_equal_to_a_fresh_one(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    p = _problem()
    w = p.workload
    shapes = [sh for sh in p.shapes if isinstance(p.unbatched(sh, w)[2], PrefillEstimate)]
    assert len(shapes) > 100  # llama-3.1-70b at 8k fits on most of the 320 shapes
    first = {sh.index: p.unbatched(sh, w)[2] for sh in shapes}
    # a longer context held and a shorter output: the prompt (8192) and its prefix (none) unchanged
    moved = dataclasses.replace(w, context_tokens=w.context_tokens * 3 // 2, output_tokens=w.output_tokens // 2)
    assert (moved.prompt_tokens, moved.shared_prefix_tokens) == (w.prompt_tokens, w.shared_prefix_tokens)
    assert moved.resident_tokens != w.resident_tokens
    calls: list[int] = []
    real = problem_module.estimate_prefill
    monkeypatch.setattr(problem_module, "estimate_prefill", lambda d, wl: calls.append(1) or real(d, wl))
    for sh in shapes:
        got = p.unbatched(sh, moved)[2]
        if isinstance(got, PrefillEstimate):
            assert got is first[sh.index]  # main: a new estimate per shape and context
            assert got == estimate_prefill(sh.deployment, moved)  # the rule: what it reads did not move
    assert calls == []


def test_a_moved_prompt_or_prefix_is_estimated_anew() -> None:
    p = _problem()
    w = p.workload
    sh = next(sh for sh in p.shapes if isinstance(p.unbatched(sh, w)[2], PrefillEstimate))
    base = p.unbatched(sh, w)[2]
    shorter = dataclasses.replace(w, prompt_tokens=w.prompt_tokens // 2)
    got = p.unbatched(sh, shorter)[2]
    assert isinstance(base, PrefillEstimate) and isinstance(got, PrefillEstimate)
    # half the prompt: half the linear FLOPs (2 × params per token, linear in the tokens)
    assert got.linear_flops == base.linear_flops / 2
    assert got == estimate_prefill(sh.deployment, shorter)
