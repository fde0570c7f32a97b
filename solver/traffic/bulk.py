"""Decode-only stretches of a replica (replica.py), taken at once.

While no prompt is being prefilled and no waiting request can be admitted, the batch
stays the same until the next arrival routed here, the next completion, or the next
iteration that needs a KV block beyond the free ones. A fixed batch's iteration cost is
affine in its context (the physics guarantees it), so k such iterations take
k × (first + last) / 2, and the blocks they allocate are counted from each decoder's
position in its block (by_offset), in O(block) integer work, not O(k × batch).
"""

from __future__ import annotations

import math
from heapq import heappop
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.traffic.replica import Replica

_INF = math.inf


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _bad_cost(seconds: float) -> None:
    raise ValueError(f"an iteration cost must be finite and not negative, got {seconds!r}")


def due_blocks(by_offset: list[int], step: int, steps: int) -> int:
    """Blocks the decoders need over the `steps` (< block) decode steps from `step`: at
    step step + i those with base ≡ −(step + i) (mod block) start a new block, so the
    offsets counted run down from (−step) mod block, wrapping once at most."""
    block = len(by_offset)
    top = (-step) % block  # by_offset[top], by_offset[top − 1], … for steps entries
    if steps <= top + 1:
        return sum(by_offset[top - steps + 1 : top + 1])
    return sum(by_offset[: top + 1]) + sum(by_offset[block - (steps - top - 1) :])


def stretch(rep: Replica) -> int:
    """The decode-only iterations from now before the batch can change (a completion,
    a block that is not free, a prompt admitted after a multi-step window), if no
    request arrives here; 0 when the next iteration is not one of them."""
    if rep.prefilling or not rep.decoders or rep.step_by_step or rep.incoming:
        return 0
    block, step, free, n = rep.block, rep.step, rep.free, rep.decoders
    by_offset = rep.by_offset
    first_need = by_offset[(-step) % block]
    if first_need > free:
        return 0
    window = 0  # > 0: a waiting prompt is admitted after this many steps in flight
    waiting = rep.waiting
    if waiting and len(rep.running) < rep.max_seqs:
        target = waiting[0].target
        if rep.separate:
            ready = _ceil_div(min(target, rep.budget), block) <= free
        elif rep.chunked:
            left = rep.budget - n
            ready = left > 0 and _ceil_div(min(target, left), block) <= free - first_need
        else:
            ready = _ceil_div(target, block) <= free
        if ready:
            if rep.window_left == 0:
                return 0
            window = rep.window_left
    # The batch cannot change before its next completion...
    heap = rep.heap
    while heap[0][1] != heap[0][2].heap_id:
        heappop(heap)
    k = heap[0][0] - step
    if window and window < k:
        k = window
    # ...nor past the blocks: over k steps the decoders need (k // block) × n blocks plus
    # those due in the first k mod block steps of the next cycle.
    full, rest = divmod(free, n)
    if full * block >= k:
        return k  # the blocks last the whole stretch
    j, due = 0, 0
    while j < block - 1:
        due += by_offset[(-(step + j)) % block]
        if due > rest:
            break
        j += 1
    return min(k, full * block + j)


def decode_in_bulk(rep: Replica, k: int, until: float) -> None:
    """Take the stretch's k decode-only iterations at once (fewer if the next arrival,
    `until`, comes first)."""
    cost, step, n = rep.cost, rep.step, rep.decoders
    ctx0 = rep.sum_base + n * (step + 1)
    # The cost's decode-only iteration of n as a line in the context, where it keeps one
    # (IterationModel.decode_lines: what iteration_s(n, ctx, 0, 0.0) returns, the same
    # float, without its dispatch); else (its first stretch of n, or another cost) asked.
    lines = rep.lines
    line = lines.get(n) if lines is not None else None
    c0 = cost(n, ctx0, 0, 0.0) if line is None else line(ctx0)
    if not 0.0 <= c0 < _INF:
        _bad_cost(c0)
    if k >= 2 and until < _INF:
        # ...nor past the next arrival: iteration m starts at m·c0 + d·m(m − 1)/2.
        c1 = cost(n, ctx0 + n, 0, 0.0) if line is None else line(ctx0 + n)
        if not 0.0 <= c1 < _INF:
            _bad_cost(c1)
        slope, span_s, m = c1 - c0, until - rep.clock, k - 1
        if not m * c0 + slope * m * (m - 1) / 2 < span_s:  # the last starts after it (iterations_before's first test)
            k = iterations_before(span_s, c0, slope, k)
    if k == 1:
        c_last = c0
    else:
        c_last = cost(n, ctx0 + (k - 1) * n, 0, 0.0) if line is None else line(ctx0 + (k - 1) * n)
        if not 0.0 <= c_last < _INF:
            _bad_cost(c_last)
    dt = k * (c0 + c_last) / 2
    block = rep.block
    rest = k % block
    rep.free -= (k // block) * n + (due_blocks(rep.by_offset, step, rest) if rest else 0)
    steps = rep.steps
    rep.window_left = ((rep.window_left or steps) - k) % steps
    rep.step = step = step + k
    stats = rep.stats
    stats.tokens_out += k * n
    stats.iterations += k
    stats.busy_s += dt
    rep.clock += dt
    heap = rep.heap
    rep.last_finished = rep.finish_decoders(rep.clock) if heap and heap[0][0] <= step else 0


def iterations_before(span_s: float, c0: float, slope: float, k: int) -> int:
    """How many of k iterations (costs c0, c0 + slope, …) start before span_s; at least 1.
    Iteration m starts at m·c0 + slope·m(m − 1)/2 (written out at each use: a hot path)."""
    m = k - 1
    if m * c0 + slope * m * (m - 1) / 2 < span_s:
        return k
    if slope > 0:
        b = c0 - slope / 2
        guess = (-b + math.sqrt(b * b + 2 * slope * span_s)) / slope
    else:
        guess = span_s / c0 if c0 > 0 else float(k)
    m = int(guess)
    m = 0 if m < 0 else k - 1 if m > k - 1 else m
    while m > 0 and m * c0 + slope * m * (m - 1) / 2 >= span_s:
        m -= 1
    while m + 1 < k and (m + 1) * c0 + slope * (m + 1) * m / 2 < span_s:
        m += 1
    return m + 1
