"""A day's requests drawn in bulk: the same numbers, to the bit, as drawing each request
from Python's random.Random one method call at a time (replay.day_requests' statement).

Why: drawing a replayed day (731,000 requests of the 70B chat) one call at a time took
2 s of CPU, a sixth of the replay. How it stays the same:

- random.Random's uniform is MT19937's 53-bit double; numpy's legacy RandomState is the
  same generator with the same double, so numpy, put in the Random's state, draws the
  very sequence of random() in blocks (tests/traffic/test_draws.py checks it).
- The transcendental steps (log, exp) go through the math module, as random's own
  methods take them (numpy's log and exp may differ from the C library's in the last
  bit); the arithmetic between them is IEEE's, the same in numpy as in Python, taken in
  the same order.
- random.normalvariate (Kinderman and Monahan) takes pairs of uniforms until one is
  accepted, so the normals of a stream are its accepted pairs, in order: lognormal and
  fixed lengths, which take whole pairs or nothing, keep every request's pairs in step.
  Other length distributions (exponential, uniform, empirical) are drawn by the caller
  one request at a time.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from itertools import accumulate

import numpy as np

from solver.physics.deployment import LengthDistribution
from solver.spec.traffic_fields import lognormal_sigma

BULK_DISTS = ("lognormal", "fixed")
"""Length distributions drawn here (each takes whole pairs of uniforms or none)."""
_NV_MAGICCONST = 4 * math.exp(-0.5) / math.sqrt(2.0)  # random.py's constant, computed as it is there
BLOCK = 1 << 20
"""Uniforms drawn at most at once (8 MB): a day of millions of requests in blocks."""
_ACCEPTED = 0.73  # a pair's chance of acceptance in normalvariate (about 0.731 measured): it only sizes a block


class Uniforms:
    """random.Random(seed).random()'s sequence, in blocks."""

    def __init__(self, seed: str) -> None:
        keys = random.Random(seed).getstate()[1]
        self._mt = np.random.RandomState()
        self._mt.set_state(("MT19937", np.array(keys[:624], dtype=np.uint32), keys[624], 0, 0.0))
        self._buffer = np.empty(0)
        self._at = 0

    def ahead(self, n: int) -> np.ndarray:
        """The next n uniforms, not yet taken."""
        have = len(self._buffer) - self._at
        if have < n:
            self._buffer = np.concatenate((self._buffer[self._at :], self._mt.random_sample(max(n - have, 4096))))
            self._at = 0
        return self._buffer[self._at : self._at + n]

    def take(self, n: int) -> None:
        self._at += n


def arrivals(u: Uniforms, start_s: float, end_s: float, rate_per_s: float) -> list[float]:
    """Poisson arrivals in [start_s, end_s): t = start + gap, then t += gap while t < end,
    each gap random.expovariate's -log(1 − random()) / rate; the gap that passes the end
    is taken from the stream too."""
    out: list[float] = []
    t = start_s
    expected = (end_s - start_s) * rate_per_s
    while True:
        n = min(BLOCK, int(expected + 6 * math.sqrt(expected) + 64))
        block = u.ahead(n)
        logs = np.fromiter(map(math.log, (1.0 - block).tolist()), dtype=float, count=n)
        times = list(accumulate((-logs / rate_per_s).tolist(), initial=t))[1:]
        past = bisect_left(times, end_s)  # the arrivals before the end (times never decrease)
        if past < n:
            u.take(past + 1)
            return out + times[:past]
        u.take(n)
        out += times
        t = times[-1]


def normals(u: Uniforms, count: int) -> np.ndarray:
    """`count` standard normals as random.normalvariate draws them: of consecutive pairs
    (u1, 1 − u2), z = NV_MAGICCONST·(u1 − 0.5)/u2 where z²/4 ≤ −log u2."""
    got: list[np.ndarray] = []
    need = count
    while need > 0:
        pairs = min(BLOCK // 2, int(need / _ACCEPTED) + 64)
        block = u.ahead(2 * pairs)
        u1, u2 = block[0::2], 1.0 - block[1::2]
        z = _NV_MAGICCONST * (u1 - 0.5) / u2
        neg_log = -np.fromiter(map(math.log, u2.tolist()), dtype=float, count=pairs)
        accepted = np.flatnonzero(z * z / 4.0 <= neg_log)
        if len(accepted) >= need:
            accepted = accepted[:need]
            pairs = int(accepted[-1]) + 1
        got.append(z[accepted])
        need -= len(accepted)
        u.take(2 * pairs)
    return np.concatenate(got) if got else np.empty(0)


def lengths(dist: LengthDistribution, z: np.ndarray) -> list[int]:
    """requests.drawer's lognormal length of each normal z: round(exp(μ + z·σ)) clipped
    to [low, high] (round half to even, as Python's round)."""
    assert dist.p99_tokens is not None  # LengthsIn requires it of a lognormal
    sigma = lognormal_sigma(dist.mean_tokens, dist.p99_tokens)
    mu = math.log(dist.mean_tokens) - sigma**2 / 2
    x = np.fromiter(map(math.exp, (mu + z * sigma).tolist()), dtype=float, count=len(z))
    return np.clip(np.rint(x), dist.low_tokens, dist.high_tokens).astype(np.int64).tolist()


def paired_lengths(prompt: LengthDistribution, output: LengthDistribution, count: int, u: Uniforms) -> tuple[list[int], list[int]]:
    """Each of `count` requests' prompt then output length, in the stream's order (both
    distributions in BULK_DISTS)."""
    lognormal = [d for d in (prompt, output) if d.dist == "lognormal"]
    z = normals(u, count * len(lognormal))
    drawn: list[list[int]] = []
    for i, d in enumerate((prompt, output)):
        if d.dist == "fixed":
            drawn.append([min(d.high_tokens, max(d.low_tokens, round(d.mean_tokens)))] * count)
        else:  # both lognormal: the prompt's normal, then the output's, request by request
            drawn.append(lengths(d, z[i::2] if len(lognormal) == 2 else z))
    return drawn[0], drawn[1]
