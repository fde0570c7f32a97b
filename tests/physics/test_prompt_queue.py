"""The prompt queue's Erlang recursion (physics/prompt_queue.py) runs its counts as
floats for speed: the same bits as the plain recursion over int counts, overflow kept."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from solver.physics import prompt_queue


def _erlang_j_by_int_counts(n: int, a: float) -> float:
    """The recursion of prompt_queue.queued_prompt_s's docstring, J_0 = 0, J_k = k·(1 + J_(k−1))/a,
    with k an int, inf once past 1e300."""
    j = 0.0
    for k in range(1, n + 1):
        j = k * (1.0 + j) / a
        if j > 1e300:
            return math.inf
    return j


@settings(max_examples=300, deadline=None)
@given(n=st.integers(min_value=1, max_value=prompt_queue.LONG_QUEUE), a=st.floats(min_value=1e-3, max_value=1e5))
def test_the_queue_recursion_over_float_counts_gives_the_same_bits(n, a):
    assert prompt_queue._erlang_j(n, a) == _erlang_j_by_int_counts(n, a)


def test_the_queue_recursion_keeps_its_overflow():
    # 1000 users at a = Z/S = 2: J grows by k/2 a step, past 1e300 well before k = 1000
    assert prompt_queue._erlang_j(1000, 2.0) == math.inf == _erlang_j_by_int_counts(1000, 2.0)
    assert prompt_queue._erlang_j(4096, 5000.0) == _erlang_j_by_int_counts(4096, 5000.0) < 1e300
