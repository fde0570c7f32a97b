"""The simulator's events on a case small enough to follow by hand: every iteration it
prices (with its arguments), every token time, the queue and the count of events the
work budget sees, pinned so that speed work on the hot loop cannot move them; and what
the speed work added (the collector paused while it runs, the block count of a bulk
stretch) against their definitions."""

from __future__ import annotations

import gc
import threading

import pytest

import solver.traffic.budget as budget
from solver.traffic.budget import TooMuchWork
from solver.traffic.bulk import due_blocks
from solver.traffic.simulate import EngineLimits, Request, simulate


class Recorded:
    """1 ms per prompt token, 10 ms per pass that decodes, 0.1 ms per context token read;
    records every call and whether the collector was on."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int, float]] = []
        self.collector_on: set[bool] = set()

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        self.calls.append((decode_seqs, decode_context_tokens, prefill_tokens, prefill_attention_tokens))
        self.collector_on.add(gc.isenabled())
        return 0.001 * prefill_tokens + (0.010 if decode_seqs else 0.0) + 1e-4 * decode_context_tokens


# 64 blocks of 16 tokens, budget 64. A: prompt 20 at t = 0, 6 tokens. B: prompt 10 at t = 0.050, 3 tokens.
LIMITS = EngineLimits(max_num_seqs=4, max_num_batched_tokens=64, kv_capacity_tokens=1024)
TWO = [Request(0.0, 20, 6), Request(0.050, 10, 3)]
# By hand (the rules in simulate.py):
# 1. [0, 0.020): A's whole prompt, 20 tokens (attention 20·21/2 = 210): 20 ms; A's 1st token.
# 2. decode-only stretch: A finishes at step 5, so 5 iterations unless B's arrival comes
#    first. A's context at decode step i is 20 + i: costs 10 + 2.1, 10 + 2.2, 10 + 2.3 ms…
#    they start at 0.020, 0.0321, 0.0443, 0.0566: 3 start before 0.050. Priced: the
#    first (21), the second (22: the slope that finds the cut) and the last (23); the 3
#    take 3 × (12.1 + 12.3) / 2 = 36.6 ms, to 0.0566 (A's 2nd-4th tokens).
# 3. [0.0566, 0.079): A decodes (context 24) with B's 10-token prompt (attention 55):
#    10 + 2.4 + 10 ms = 22.4 ms; A's 5th token, B's 1st at 0.079.
# 4. [0.079, 0.0926): both decode, contexts 25 + 11 = 36: 13.6 ms; A's 6th and last token.
# 5. [0.0926, 0.1038): B decodes, context 12: 11.2 ms; B's 3rd and last token.
CALLS = [(0, 0, 20, 210.0), (1, 21, 0, 0.0), (1, 22, 0, 0.0), (1, 23, 0, 0.0), (1, 24, 10, 55.0), (2, 36, 0, 0.0), (1, 12, 0, 0.0)]


@pytest.mark.parametrize("step_by_step", [False, True])
def test_two_requests_event_by_event(step_by_step: bool) -> None:
    cost = Recorded()
    r = simulate(TWO, cost, LIMITS, _step_by_step=step_by_step)
    # one iteration at a time prices each of step 2's three iterations, the bulk prices
    # the first, the second (the slope) and the last: the same calls here
    assert cost.calls == CALLS
    a, b = r.results
    assert (a.first_token_s, a.finish_s) == pytest.approx((0.020, 0.0926), rel=1e-12)
    assert (b.first_token_s, b.finish_s) == pytest.approx((0.079, 0.1038), rel=1e-12)
    (st,) = r.replicas
    assert (st.iterations, st.tokens_out, st.preemptions, st.max_queue) == (1 + 3 + 1 + 1 + 1, 6 + 3, 0, 1)
    assert st.busy_s == pytest.approx(0.1038, rel=1e-12)  # never idle after the first arrival
    # A waits at 0 and is admitted at 0; B waits from 0.050 to 0.0566
    assert [q for _, q in st.queue_timeline] == [1, 0, 1, 0]
    assert [t for t, _ in st.queue_timeline] == pytest.approx([0.0, 0.0, 0.050, 0.0566], rel=1e-12)
    assert st.mean_queue == pytest.approx(0.0066 / 0.1038, rel=1e-9)


def test_the_work_budget_counts_these_events(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2 arrivals; at B's arrival the replica runs step 1 and step 2 (one bulk stretch);
    # then steps 3, 4 and 5: 7 events in all, so a budget of 7 passes and 6 is refused.
    monkeypatch.setattr(budget, "MAX_EVENTS", 7)
    assert len(simulate(TWO, Recorded(), LIMITS).results) == 2
    monkeypatch.setattr(budget, "MAX_EVENTS", 6)
    with pytest.raises(TooMuchWork):
        simulate(TWO, Recorded(), LIMITS)


def test_the_collector_is_paused_while_it_runs_and_restored_after() -> None:
    assert gc.isenabled()
    cost = Recorded()
    simulate(TWO, cost, LIMITS)
    assert cost.collector_on == {False} and gc.isenabled()
    gc.disable()
    try:
        simulate(TWO, cost, LIMITS)
        assert not gc.isenabled()  # off before: left off
    finally:
        gc.enable()
    with pytest.raises(ValueError):  # an error inside restores it too
        simulate(TWO, type("Bad", (), {"iteration_s": lambda self, *a: -1.0})(), LIMITS)
    assert gc.isenabled()


def test_simulations_in_threads_leave_the_collector_on() -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for _ in range(20):
                simulate(TWO, Recorded(), LIMITS)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and gc.isenabled()


@pytest.mark.parametrize("block", [1, 2, 16])
def test_due_blocks_is_the_sum_its_definition_states(block: int) -> None:
    # at decode step step + i the decoders with base ≡ −(step + i) (mod block) start a new block
    by_offset = [(7 * j + 3) % 5 for j in range(block)]
    for step in range(3 * block):
        for steps in range(block):
            assert due_blocks(by_offset, step, steps) == sum(by_offset[(-(step + i)) % block] for i in range(steps))
