"""A command's CP-SAT time, bounded in all: one solve may take the spec's
solver.time_limit_s, and every solve of one command together (the plan, the
re-solves that explain it, a Pareto frontier's steps, a fleet's budget sweep)
WORK_FACTOR times that, counted in wall time from the first solve (from the start of
`solve`, which starts it: its screens, simulations and explanations count too, and
what the time cut short is reported)."""

from __future__ import annotations

import time

WORK_FACTOR = 3.0
"""All of a command's solves together take at most this many time limits."""
MIN_SOLVE_S = 0.05
"""A solve asked for after the clock has run out still gets this long (its answer
is then 'unknown' unless it is quick; callers say so)."""


class SolverClock:
    def __init__(self, time_limit_s: float) -> None:
        self.time_limit_s = time_limit_s
        self._deadline: float | None = None

    def start(self) -> None:
        """Start the clock now (a no-op once started): `solve` starts it on entry, so its
        screening, simulations and explanations count, not its CP-SAT solves alone."""
        if self._deadline is None:
            self._deadline = time.monotonic() + WORK_FACTOR * self.time_limit_s

    def limit_s(self) -> float:
        """The time the next solve may take; the first call starts the clock."""
        self.start()
        assert self._deadline is not None
        return max(MIN_SOLVE_S, min(self.time_limit_s, self._deadline - time.monotonic()))

    @property
    def run_out(self) -> bool:
        """Whether the command's time is spent (later solves get MIN_SOLVE_S)."""
        return self._deadline is not None and time.monotonic() >= self._deadline
