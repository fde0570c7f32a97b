"""The prompt queue of closed-loop users: each user's prompt waits in one FCFS queue at
its replica, the rest of its request a delay (the machine-repairman model, solved
exactly). Decode's TTFT under load (decode.DecodeCoefficients), the disaggregated
prefill pool (disaggregation.py) and calibration's inverse (optimise/calibrate.py) read
it here."""

from __future__ import annotations

import math


def queued_prompt_s(service_s: float, users: int, delay_s: float) -> float:
    """Time at the prompt queue of `users` closed-loop users: the prompts are one FCFS
    queue (S each) and the rest of a request a delay Z — the machine-repairman model
    (M/M/1//N), solved exactly: with ρ = S/Z, P0 = 1 / Σₖ₌₀ᴺ N!/(N − k)!·ρᵏ, throughput
    X = (1 − P0)/S, and R = N/X − Z (Little's law round the loop). S for one user,
    N·S − Z once the prompts saturate the replica. Exponential service makes it a little
    pessimistic for prompts of one length (M/D/1 waits half as long as M/M/1).

    P0 is Erlang's loss formula B(N, a) at a = Z/S, taken by its recursion on
    Jₖ = 1/Bₖ − 1 (J₀ = 0, Jₖ = k·(1 + Jₖ₋₁)/a; 1 − P0 = J/(1 + J), without
    cancelling): additions, multiplications and divisions only, so every machine gets
    the same bits (numpy's vectorised log and exp round differently on AVX2 and AVX-512)."""
    n = max(1, users)
    if service_s <= 0 or n == 1:
        return max(0.0, service_s)
    if delay_s <= service_s * 1e-12:  # ρ past what a float holds: the saturated limit, N·S − Z
        return n * service_s - max(0.0, delay_s)
    a = delay_s / service_s
    j = _erlang_j(n, a)
    if j > 1e300:  # 1/(1 + J) is below what a float adds to 1: every server busy
        return n * service_s - delay_s
    if j <= 0.0:  # Z/S past what a float holds: no user ever waits behind another
        return service_s
    return n * service_s * (1.0 + j) / j - delay_s


LONG_QUEUE = 4096
_COUNTS = tuple(float(k) for k in range(LONG_QUEUE + 1))
"""0.0 … LONG_QUEUE as floats: the recursion's k (a solve runs it some 400,000 times; an
int k is converted to a float at every multiplication, 40 % of the loop's time)."""


def _erlang_j(n: int, a: float) -> float:
    """J_N of queued_prompt_s (inf once past 1e300). Up to LONG_QUEUE users by the
    recursion; beyond, as J_N = Σₘ Πₖ₌ₘᴺ k/a by numpy's cumprod and cumsum: running
    products and sums taken in order, each step exactly rounded, so the same on every
    machine (unlike np.sum's pairwise blocks or its vectorised exp and log): a million
    users in a few ms, not the recursion's 75 ms."""
    if n <= LONG_QUEUE:
        j = 0.0
        for k in _COUNTS[1 : n + 1]:  # k as a float: the same product as int k's (exact below 2**53), without converting it each time
            j = k * (1.0 + j) / a
            if j > 1e300:
                return math.inf
        return j
    import numpy as np  # here, not at the top: evaluate's start does without its import (80 ms)

    with np.errstate(over="ignore"):
        terms = np.cumprod(np.arange(n, 0, -1, dtype=float) / a)  # Πₖ₌ₘᴺ k/a for m = N … 1
    if not np.isfinite(terms[-1]) or terms.max() > 1e300:
        return math.inf
    return float(np.cumsum(terms)[-1])


def prompt_service_from_queued_s(queued_s: float, users: int, delay_s: float) -> float:
    """The inverse: the service S whose queue time is `queued_s` (S ≤ R; bisection)."""
    if queued_s <= 0:
        return 0.0
    lo, hi = 0.0, queued_s
    for _ in range(100):
        mid = (lo + hi) / 2
        if queued_prompt_s(mid, users, delay_s) < queued_s:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
