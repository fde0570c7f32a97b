"""Simulations keep their bound: JSQ's choices (kept in heaps) as the rule says, a work
budget past which a simulation is refused by name, and a deadline that stops one."""

from __future__ import annotations

import random

import pytest

import solver.traffic.budget as budget
from solver.traffic.budget import Cancelled, TooMuchWork, deadline
from solver.traffic.simulate import EngineLimits, Request, simulate


class OneSecond:
    """Every iteration takes 1 s, whatever it runs."""

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        return 1.0


def test_jsq_choices_by_hand():
    # 1-token prompts, 2 output tokens: a request is prefilled (its first token) in one
    # iteration and decoded in the next, so it leaves 2 s after its iteration starts.
    #   t=0.0: loads 0,0,0 -> replica 0 (runs 0-1, 1-2)
    #   t=0.5: loads 1,0,0 -> replica 1 (0.5-1.5, 1.5-2.5)
    #   t=1.0: loads 1,1,0 -> replica 2 (1-2, 2-3)
    #   t=1.5: replica 0's last iteration (1-2) ends after 1.5, so its request still
    #          counts: loads 1,1,1 -> the lowest index, replica 0 (waits for 2.0)
    #   t=2.0: replica 0: the one waiting (no iteration starts before 2.0); replica 1:
    #          its request ends at 2.5, counted; replica 2: decoding: 1,1,1 -> replica 0
    #   t=2.6: replica 0 prefills both in 2-3 (2 in it); replica 1 empty since 2.5;
    #          replica 2 ends at 3 (1): loads 2,0,1 -> replica 1
    arrivals = [0.0, 0.5, 1.0, 1.5, 2.0, 2.6]
    reqs = [Request(t, 1, 2) for t in arrivals]
    r = simulate(reqs, OneSecond(), EngineLimits(8, 64, 1024), 3, "jsq")
    assert [x.replica for x in r.results] == [0, 1, 2, 0, 0, 1]
    assert [x.finish_s for x in r.results] == [2.0, 2.5, 3.0, 4.0, 4.0, 4.6]


def test_jsq_matches_a_scan_of_every_replica():
    """The heaps choose as the rule read off every replica at every arrival (advancing a
    replica is free of side effects on its iterations, so the scan may advance all)."""
    from tests.traffic.jsq_scan import scanned_choices

    rng = random.Random(7)
    t, reqs = 0.0, []
    for _ in range(400):
        t += rng.expovariate(40.0)
        reqs.append(Request(t, rng.randint(1, 2000), rng.randint(1, 300)))

    class Affine:
        def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
            return 0.01 + 2e-6 * decode_context_tokens + 3e-7 * prefill_tokens

    limits = EngineLimits(16, 2048, 20_000)
    got = [x.replica for x in simulate(reqs, Affine(), limits, 7, "jsq").results]
    assert got == scanned_choices(reqs, Affine(), limits, 7)


def test_a_simulation_past_the_work_budget_is_refused_by_name(monkeypatch):
    monkeypatch.setattr(budget, "MAX_EVENTS", 1_000)
    reqs = [Request(i * 0.01, 100, 50) for i in range(2_000)]  # 2,000 arrivals alone pass 1,000 events
    with pytest.raises(TooMuchWork) as e:
        simulate(reqs, OneSecond(), EngineLimits(8, 512, 100_000), 2, "jsq")
    assert e.value.field == "simulation"
    assert "--requests" in e.value.allowed and "--replicas" in e.value.allowed and "1,000" in e.value.allowed


def test_a_simulation_stops_at_its_deadline():
    reqs = [Request(i * 0.01, 100, 50) for i in range(100)]
    with deadline(-1.0), pytest.raises(Cancelled) as e:
        simulate(reqs, OneSecond(), EngineLimits(8, 512, 100_000), 2, "jsq")
    assert not e.value.shutting_down
    assert len(simulate(reqs, OneSecond(), EngineLimits(8, 512, 100_000), 2, "jsq").results) == 100  # no deadline outside the block
