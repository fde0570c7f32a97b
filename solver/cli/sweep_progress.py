"""A sweep's progress on standard error: on a terminal a bar with the count, the rate and
the time left (rich's progress display); in a log a line at each tenth with the same."""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    """Count finished scenarios; `close` ends the display (also on an interrupt)."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.done, self.quiet = total, 0, quiet
        self.started = time.monotonic()
        self._bar: Any = None
        if quiet or total == 0 or not sys.stderr.isatty():
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        self._bar = Bar(
            TextColumn("plan-opt sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("scenarios"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._bar.start()
        self._task = self._bar.add_task("sweep", total=total)

    def step(self) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        elif not self.quiet and (self.done == self.total or self.done % max(1, self.total // 10) == 0):
            sys.stderr.write(self.line() + "\n")
            sys.stderr.flush()

    def line(self) -> str:
        """`640/1,000 scenarios, 52.1/s, about 7 s left` (the rate so far)."""
        elapsed = max(1e-9, time.monotonic() - self.started)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        return f"plan-opt sweep: {self.done:,}/{self.total:,} scenarios, {rate:,.1f}/s, about {left:,.0f} s left"

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
