"""Join the shortest queue without scanning every replica per request.

The rule (simulate.py) is: at an arrival instant t, every replica runs the iterations
that start before t, and the request goes to the replica with the fewest requests
waiting or running at t, ties to the lowest index. Scanning all n replicas per request
made JSQ O(n) a request (10,000 replicas × 200,000 requests did not finish in a minute).

Two heaps give the same decisions with work per event, not per replica:

- `by_wake`: every replica whose load can change as time passes without a request
  reaching it — a busy one, and one whose last iteration ends after the last arrival
  (the requests it finishes then count until it ends) — keyed by the earliest time its
  load can change (`quiet_until`: the end of a decode-only stretch, else its clock).
  Only replicas past that time are advanced at an arrival. A replica's iterations do
  not depend on when it is advanced (a decode-only stretch stops at arrivals routed
  to it, and the others do not reach it), so its load at every arrival, and the
  choice, are the scan's; only a stretch's seconds, summed in longer pieces, may
  differ in the last bits.
- `by_load`: (load, index) for every replica, stale entries skipped when they reach the
  top, so the top valid entry is the fewest in the system, lowest index on a tie.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Protocol


class Engine(Protocol):
    """What the router reads of a replica (simulate.Replica)."""

    clock: float
    last_finished: int

    def advance(self, until: float) -> None: ...

    def in_system_at(self, t: float) -> int: ...

    def busy(self) -> bool: ...

    def quiet_until(self) -> float: ...


class ShortestQueue:
    """The replica JSQ picks at each arrival, and its bookkeeping after one."""

    def __init__(self, engines: Sequence[Engine]) -> None:
        self.engines = engines
        n = len(engines)
        self.load = [0] * n
        self.by_load = [(0, i) for i in range(n)]  # sorted, hence a heap
        self.by_wake: list[tuple[float, int]] = []
        self.watched: list[float | None] = [None] * n  # the key of a replica's live by_wake entry

    def route(self, t: float) -> int:
        """Advance the replicas whose load may have changed by t; the index JSQ picks."""
        by_wake, watched, engines = self.by_wake, self.watched, self.engines
        touched = []
        while by_wake and by_wake[0][0] <= t:
            key, i = heapq.heappop(by_wake)
            if watched[i] != key:
                continue  # superseded
            watched[i] = None
            engines[i].advance(t)
            touched.append(i)
        for i in touched:
            self.update(i, t)
        by_load, load = self.by_load, self.load
        while by_load[0][0] != load[by_load[0][1]]:
            heapq.heappop(by_load)
        return by_load[0][1]

    def update(self, i: int, t: float) -> None:
        """Replica i's load at t, after it was advanced or sent a request."""
        e = self.engines[i]
        n = e.in_system_at(t)
        if n != self.load[i]:
            self.load[i] = n
            heapq.heappush(self.by_load, (n, i))
            if len(self.by_load) > 4 * len(self.load) + 64:
                self.by_load = [(x, j) for j, x in enumerate(self.load)]
                heapq.heapify(self.by_load)
        if e.busy() or (e.last_finished and e.clock > t):
            wake = e.quiet_until()
            if self.watched[i] == wake:
                return
            self.watched[i] = wake
            heapq.heappush(self.by_wake, (wake, i))
            if len(self.by_wake) > 4 * len(self.load) + 64:
                self.by_wake = [(k, j) for j, k in enumerate(self.watched) if k is not None]
                heapq.heapify(self.by_wake)
