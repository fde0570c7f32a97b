"""A decode-only stretch priced from the cost's own lines (bulk.py reads a cost's
`decode_lines`, as physics/iteration.IterationModel keeps them, in place of its
iteration_s): the same prices at the same contexts, so the same token times."""

from __future__ import annotations

import pytest

from solver.traffic.simulate import EngineLimits, Request, simulate

# tests/traffic/test_event_sequence.py's case: 1 ms per prompt token, 10 ms per pass that
# decodes, 0.1 ms per context token; A (prompt 20, 6 tokens) at 0, B (prompt 10, 3) at 0.050.
LIMITS = EngineLimits(max_num_seqs=4, max_num_batched_tokens=64, kv_capacity_tokens=1024)
TWO = [Request(0.0, 20, 6), Request(0.050, 10, 3)]


class Lined:
    """The same prices; a decode-only pass of one sequence also kept as a line in its
    context, each use recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int, float]] = []
        self.line_calls: list[int] = []
        self.decode_lines = {1: self._one}

    def _one(self, ctx: int) -> float:
        self.line_calls.append(ctx)
        return 0.010 + 1e-4 * ctx

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        self.calls.append((decode_seqs, decode_context_tokens, prefill_tokens, prefill_attention_tokens))
        return 0.001 * prefill_tokens + (0.010 if decode_seqs else 0.0) + 1e-4 * decode_context_tokens


def test_a_stretch_reads_the_line_the_cost_keeps():
    cost = Lined()
    r = simulate(TWO, cost, LIMITS)
    # the stretch of A alone (contexts 21, 22, 23) and B's last pass (12) read the line;
    # the prompt passes and the pass of both decoders ask iteration_s
    assert cost.line_calls == [21, 22, 23, 12]
    assert cost.calls == [(0, 0, 20, 210.0), (1, 24, 10, 55.0), (2, 36, 0, 0.0)]
    a, b = r.results
    # by hand, as test_event_sequence: A's tokens at 0.020 … 0.0926, B's at 0.079 … 0.1038
    assert (a.first_token_s, a.finish_s) == pytest.approx((0.020, 0.0926), rel=1e-12)
    assert (b.first_token_s, b.finish_s) == pytest.approx((0.079, 0.1038), rel=1e-12)
