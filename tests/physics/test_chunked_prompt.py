"""TTFT under continuous batching: a prompt's chunks, charged as they share the steps'
token budget. One more prompt token never costs a whole chunk's step, load never makes a
prompt faster than on an idle replica, and under data-parallel attention a prompt's dense
matmuls and attention stay on its own rank however many users there are."""

from __future__ import annotations

import pytest

from solver.catalog import default_catalog
from solver.physics.decode import DecodeCoefficients, decode_coefficients
from solver.spec.evaluate_input import parse_input
from solver.spec.resolve import resolve

LLAMA_TP2 = {"model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm", "tp": 2}}


def _coefficients(shape: dict, prompt: int, output: int = 1000) -> DecodeCoefficients:
    data = {**shape, "workload": {"users": 1, "context_tokens": 20_000, "prompt_tokens": prompt, "output_tokens": output, "batching": "continuous"}}
    d, w, _ = resolve(parse_input(data), default_catalog())
    return decode_coefficients(d, w.resident_tokens, w)


@pytest.mark.parametrize(
    ("users", "prompt"),
    [
        (3, 8189),  # 8,192-token budget less 3 decoders: a chunk of 8,189, so 8,190 is one token past it
        (64, 8128),  # a chunk of 8,128
        (64, 2 * 8128),  # two whole chunks, then one token of a third
    ],
)
def test_one_more_prompt_token_past_a_chunk_costs_about_one_tokens_share(users, prompt):
    # Llama-3.1-8B on 2 × H100 (issue 41: 8,189 → 8,190 tokens moved TTFT under load from
    # 207 to 392 ms). A chunk of C = 8192 − users tokens takes one step, T ≤ the TTFT at a
    # prompt of C (that TTFT includes the step). The extra token is 1/C of a chunk's step
    # beside the others' chunks; the queue ahead of it (closed loop, `queued_prompt_s`)
    # grows by at most `users` times what each prompt grows (R ≤ N·S − Z once saturated,
    # slope N): ΔTTFT ≤ users × T / C. A whole extra step would be ≈ T.
    chunk = 8192 - users
    at = _coefficients(LLAMA_TP2, prompt).ttft_under_load_s(users)
    past = _coefficients(LLAMA_TP2, prompt + 1).ttft_under_load_s(users)
    one_chunk = _coefficients(LLAMA_TP2, chunk).ttft_under_load_s(users)
    assert 0 <= past - at <= users * one_chunk / chunk
    assert past - at < 0.01 * one_chunk  # nowhere near a step
