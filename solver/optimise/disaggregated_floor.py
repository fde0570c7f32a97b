"""A lower bound on the prefill pool of any admissible disaggregated plan with a given
decode shape, so that a re-solve (explain/refilter.py) need not pair a decode shape
whose plans all cost more than one already found.

The bound, per prefill option of the decode shape's formats (`prefill_options`): a pool
of it has at least ⌈users / N*⌉ replicas, N* = ⌊1 + Z / c⌋ the queue's saturation point
(physics/disaggregation.size_prefill_pool never puts more users on a replica), and N*
grows with Z, the time a user spends away from the prompt queue: the KV transfer, the
output tokens at the decode TPOT and the decode shape's front end. An admissible plan
meets both targets, so its TPOT is at most the TPOT target and its transfer at most the
TTFT target less one prompt's service (the TTFT holds wait + service + transfer + first
step + front end): Z at those maxima bounds every plan's N* from above, and so its
replicas from below. Without either target Z has no bound and neither has the pool: 0.
"""

from __future__ import annotations

import dataclasses
import math

from solver.optimise.capacity import tpot_batch_cap
from solver.optimise.disaggregated import prefill_options
from solver.optimise.kv_vendors import pairable_options
from solver.optimise.problem import Problem, Shape
from solver.physics.deployment import Targets, Workload
from solver.physics.disaggregation import size_prefill_pool
from solver.units import TIME_TOLERANCE

_MARGIN = 1 + 1e-9
"""Every maximum widened by this much: a bound a rounding ulp too low is still a bound."""


def prefill_floor(problem: Problem, w: Workload, t: Targets, decode: Shape, shapes: list[Shape], figure: int) -> float | None:
    """The least `figure` (an index of a prefill option's per-replica figures: 0 cents per
    hour, 1 GPUs, 2 purchase dollars) of a prefill pool that any admissible plan with a
    decode pool of `decode` pairs with, over the prefill options of `shapes`; None when no
    option can meet the TTFT target at all (the shape has no admissible pair)."""
    options = prefill_options(problem, w, shapes).get((decode.deployment.weights.name, decode.deployment.kv.name), [])
    options = pairable_options(problem.spec.search.allow_cross_vendor_kv, decode, options)  # those disaggregated_candidates pairs
    if t.max_ttft_s is None or t.max_tpot_s is None:
        return 0.0 if options else None
    ttft_s = t.max_ttft_s * _MARGIN
    tpot_s = t.max_tpot_s * (1 + TIME_TOLERANCE) * _MARGIN
    overhead_s = decode.deployment.factors.request_overhead_s
    least: float | None = None
    for o in options:
        # transfer + front end ≤ TTFT − service, so Z = transfer + output × TPOT + front end
        # is at most this; and what follows the wait is at least the front end
        delay_s = (ttft_s * (1 + TIME_TOLERANCE) - o.service_s + w.output_tokens * tpot_s) * _MARGIN
        if delay_s < 0:
            continue  # one prompt's service alone misses the TTFT target: never sized
        sized = size_prefill_pool(w.users, o.service_s, o.servers, delay_s, overhead_s / _MARGIN, ttft_s, TIME_TOLERANCE)
        if sized is None:
            continue
        value = sized[0] * o.per_replica[figure]
        least = value if least is None else min(least, value)
    return least


def fewest_decode_replicas(problem: Problem, w: Workload, t: Targets, decode: Shape) -> int | None:
    """The fewest replicas of any decode pool of `decode` that `disaggregated_candidates`
    builds (its batches are at most the memory's and the TPOT target's caps on the
    decode-only physics); None when it builds none."""
    decode_w = dataclasses.replace(w, batching="isolated")
    ph = problem.physics(decode, decode_w)
    if not ph.valid or ph.decode is None:
        return None
    cap = min(ph.max_batch_memory, tpot_batch_cap(problem, ph, decode_w, t, False))
    return None if cap < 1 else math.ceil(w.users / min(cap, w.users))
