"""A replayed day's requests drawn in bulk (traffic/draws.py) are the very numbers of
the plain statement, one random.Random call at a time, written out below as
replay.day_requests stood before (main at 0c39bf6): every arrival time, prompt and
output, compared with == over seeds, slot rates (an empty slot, a slot of one or two
arrivals, a busy one) and the length distributions the bulk path takes (lognormal and
fixed, in every pairing, one object for both), and the ones it leaves to the loop."""

from __future__ import annotations

import random

import pytest

from solver.physics.deployment import LengthDistribution
from solver.traffic.draws import Uniforms, normals
from solver.traffic.replay import day_requests
from solver.traffic.requests import drawer
from solver.traffic.simulate import Request

CHAT_PROMPT = LengthDistribution("lognormal", 1000, 1, 32000, 6000)
CHAT_OUTPUT = LengthDistribution("lognormal", 300, 1, 4000, 1200)
TIGHT = LengthDistribution("lognormal", 200, 150, 260, 900)  # clipped often, at both ends
FIXED = LengthDistribution("fixed", 128.4, 1, 4000)
EXPONENTIAL = LengthDistribution("exponential", 400, 1, 8000)
UNIFORM = LengthDistribution("uniform", 500, 10, 990)


def _reference(slot_s, rates_per_s, prompt, output, seed) -> list[Request]:
    gaps, lengths = random.Random(f"{seed}:arrivals"), random.Random(f"{seed}:lengths")
    draw_prompt, draw_output = drawer(prompt), drawer(output)
    out = []
    for k, rate in enumerate(rates_per_s):
        if rate <= 0:
            continue
        end = (k + 1) * slot_s
        t = k * slot_s + gaps.expovariate(rate)
        while t < end:
            out.append(Request(t, draw_prompt(lengths), draw_output(lengths)))
            t += gaps.expovariate(rate)
    return out


def test_uniforms_are_randoms_sequence():
    u, r = Uniforms("7:lengths"), random.Random("7:lengths")
    got = []
    for n in (1, 5, 5000, 3, 9000):  # blocks that cross numpy's refills
        got += u.ahead(n).tolist()
        u.take(n)
    assert got == [r.random() for _ in range(len(got))]


def test_normals_are_normalvariates():
    r = random.Random("3:lengths")
    assert normals(Uniforms("3:lengths"), 20_000).tolist() == [r.normalvariate(0.0, 1.0) for _ in range(20_000)]


@pytest.mark.parametrize(
    "prompt, output",
    [
        (CHAT_PROMPT, CHAT_OUTPUT),
        (CHAT_PROMPT, CHAT_PROMPT),  # one object for both: the pairs still alternate
        (TIGHT, FIXED),
        (FIXED, TIGHT),
        (FIXED, FIXED),
        (EXPONENTIAL, CHAT_OUTPUT),  # left to the loop
        (CHAT_PROMPT, UNIFORM),
    ],
)
@pytest.mark.parametrize("seed", [0, 11])
def test_a_day_drawn_in_bulk_is_the_loops_day(prompt, output, seed):
    rates = [0.0, 0.003, 4.0, 0.0, 25.0, 0.5]  # 60-s slots: none, about one, a few hundred, 1,500
    got = day_requests(60.0, rates, prompt, output, seed)
    want = _reference(60.0, rates, prompt, output, seed)
    assert len(got) > 1500
    assert got == want


def test_a_day_drawn_in_small_blocks_is_the_loops_day(monkeypatch):
    """Blocks of 50 uniforms: a slot's arrivals and the normals cross many blocks."""
    import solver.traffic.draws as draws

    monkeypatch.setattr(draws, "BLOCK", 50)
    rates = [3.0, 0.0, 20.0]
    assert day_requests(60.0, rates, CHAT_PROMPT, TIGHT, 5) == _reference(60.0, rates, CHAT_PROMPT, TIGHT, 5)
