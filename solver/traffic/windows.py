"""Routing among replicas that come and go: each replica takes requests only within its
window [ready_s, stop_s) (a replica scaled up is ready once started; one scaled down
stops taking requests and drains what it holds). simulate.py's one arrival loop asks
this which replica an arrival goes to when windows are given.

Within the replicas open at an arrival instant the rule is the simulator's own: round
robin over them (one turn counter, taken modulo the replicas open), or JSQ (routing.py's
heaps, rebuilt over the open replicas whenever the set changes, each replica's load
read at that instant). An arrival while none is open goes nowhere (the simulator
rejects it). The set changes at most twice per replica, so a rebuild's O(replicas)
is paid per change, not per request.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from solver.traffic.routing import Engine, ShortestQueue


def checked_windows(windows: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The windows, refused unless each is two numbers, ready finite, stop not before it
    can matter (stop may be inf: it never stops)."""
    out = []
    for i, w in enumerate(windows):
        ready_s, stop_s = w
        if not math.isfinite(ready_s) or math.isnan(stop_s):
            raise ValueError(f"window {i}: ready_s must be finite and stop_s a number, got {w!r}")
        out.append((float(ready_s), float(stop_s)))
    return out


class Windowed:
    """The replica an arrival at t goes to, among those whose window holds t."""

    def __init__(self, engines: Sequence[Engine], windows: Sequence[tuple[float, float]], jsq: bool) -> None:
        self.engines = engines
        self.windows = checked_windows(windows)
        self.jsq = jsq
        self.changes = sorted({t for w in self.windows for t in w if t < math.inf})
        self.next = 0  # index into changes: the first not yet applied
        self.open: list[int] = []
        self.local: dict[int, int] = {}  # a replica's index among the open ones (JSQ)
        self.router: ShortestQueue | None = None
        self.turn = 0
        self.started = False

    def _change(self, t: float) -> None:
        """Apply every change at or before t: the open set is the windows holding t."""
        changes = self.changes
        while self.next < len(changes) and changes[self.next] <= t:
            self.next += 1
        self.open = [i for i, (ready, stop) in enumerate(self.windows) if ready <= t < stop]
        if self.jsq:
            engines = [self.engines[i] for i in self.open]
            for e in engines:
                e.advance(t)
            self.local = {i: j for j, i in enumerate(self.open)}
            self.router = ShortestQueue(engines) if engines else None
            for j in range(len(engines)):
                self.router.update(j, t)  # type: ignore[union-attr]  # engines: a router

    def route(self, t: float) -> int | None:
        """The replica's index (in the simulator's list), or None when none is open."""
        if not self.started or (self.next < len(self.changes) and self.changes[self.next] <= t):
            self.started = True
            self._change(t)
        if not self.open:
            return None
        if self.router is not None:
            return self.open[self.router.route(t)]
        i = self.open[self.turn % len(self.open)]
        self.turn += 1
        return i

    def update(self, i: int, t: float) -> None:
        """After replica i was sent a request at t (JSQ keeps its load)."""
        if self.router is not None:
            self.router.update(self.local[i], t)
