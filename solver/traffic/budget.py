"""The work a simulation may do, checked inside its loop.

Two bounds: a count of scheduler events (iterations or bulk decode stretches, and
arrivals) per simulation, MAX_EVENTS, so every command keeps the time its documented
ranges promise whatever the rate, the replicas and the lengths; and a deadline the
caller may set (the HTTP server sets its work limit, and on SIGTERM stops every run),
so work past its time can be stopped where it is rather than waited for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from solver.errors import InputError

MAX_EVENTS = 4_000_000
"""Scheduler events one simulation may take. Measured (2 shared cores, 2026-12-05):
80,000 to 150,000 events a second (a JSQ event costs most: three iteration costs and
the heaps), so at most about 30 to 50 s; since the hot loop's rework (issue 44) about
160,000 (JSQ on 50 replicas) to 430,000 (one replica, bench_simulate.py) with a cheap
cost model, the physics' own iteration cost then the larger part; the largest documented simulate input,
200,000 requests on 10,000 JSQ replicas at the bundled 20 requests/s, takes 684,000
events a seed, and 200,000 requests on one overloaded replica 259,000."""
CHECK_EVERY = 4096
"""Events between two looks at the clock (a look costs about a microsecond)."""

_deadline: ContextVar[float | None] = ContextVar("plan_opt_deadline", default=None)
_stopping = threading.Event()


class Cancelled(Exception):
    """Work stopped from outside: past the caller's deadline, or the process is stopping."""

    def __init__(self, reason: str, shutting_down: bool) -> None:
        super().__init__(reason)
        self.reason, self.shutting_down = reason, shutting_down


class TooMuchWork(InputError):
    """A simulation past MAX_EVENTS: bad input (exit 2, a 422), naming what to reduce."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Work checked inside this block stops (Cancelled) once `seconds` have passed."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def stop_all() -> None:
    """Every check from now on raises Cancelled: the process is shutting down."""
    _stopping.set()


def check_deadline() -> None:
    """Raise Cancelled if the work should stop now."""
    if _stopping.is_set():
        raise Cancelled("the server is shutting down", True)
    due = _deadline.get()
    if due is not None and time.monotonic() > due:
        raise Cancelled("past its time limit", False)


class Work:
    """One simulation's event count, checked against MAX_EVENTS and the deadline."""

    __slots__ = ("events", "limit", "next_check", "what")

    def __init__(self, what: str, limit: int | None = None) -> None:
        self.events = 0
        self.limit = MAX_EVENTS if limit is None else limit
        self.next_check = 0
        self.what = what

    def check(self) -> None:
        """Called when events reach next_check."""
        if self.events > self.limit:
            raise TooMuchWork(
                "simulation",
                self.what,
                f"needs more than {self.limit:,} scheduler events (iterations and arrivals, about 30 s of simulation); "
                "simulate fewer requests (--requests, simulation.requests), fewer replicas (--replicas) "
                "or a lower rate (workload.requests_per_s)",
            )
        check_deadline()
        self.next_check = min(self.events + CHECK_EVERY, self.limit + 1)
