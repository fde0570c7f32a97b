"""The cyclic garbage collector in a short command's process: off while the command's
modules load, their objects then frozen out of its passes (`gc.freeze`), and its young
passes rarer while the command works.

Why: what an import makes (modules, classes, pydantic's validators, the catalog) lives
to the end of the process, yet each of the collector's passes scanned it again: about
100 passes while `solve` loaded its modules and 270 while it solved were 0.08 s of the
1 s of `plan-opt solve specs/long-prompts-disaggregated.yaml` (CPU), for 3 MB of cycles
collected. Cycles made after the imports are still collected (the collector is on, its
first generation at YOUNG_THRESHOLD objects instead of 700). On the way out the
collector is as it was: a caller that runs the command in its own process (the tests,
tests/golden/record.py) gets its frozen objects back (`gc.unfreeze`), unless it had
frozen some itself, and then nothing is frozen here.

When the command was the process's own (`plan-opt ...`, `python -m solver.cli`), the
whole heap is frozen as it returns (`process_ends`): the interpreter's collections at
exit scanned it all again, 0.07 s of a 0.9 s solve, to free memory the process hands
back whole. Only garbage in reference cycles is left to the exit (objects no cycle holds
are freed as before), and no command leaves a file open to a cycle: standard output and
error are flushed by the interpreter, every file a command writes is closed by it
(cli/outputs.py).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 7000
"""The collector's first generation while a command works (CPython's default is 700):
a pass each 7000 allocations net, so that a solve's few hundred thousand short-lived
objects are scanned a few dozen times, not a few hundred."""


@contextmanager
def collected_after_imports() -> Iterator[Callable[[], None]]:
    """The collector off until the command calls the function it yields (its imports
    done), then the heap so far frozen and the collector on at YOUNG_THRESHOLD."""
    enabled, threshold = gc.isenabled(), gc.get_threshold()
    freezes = gc.get_freeze_count() == 0
    gc.disable()

    def imported() -> None:
        if freezes:
            gc.freeze()
        gc.set_threshold(YOUNG_THRESHOLD, *threshold[1:])
        if enabled:
            gc.enable()

    try:
        yield imported
    finally:
        gc.disable()
        if freezes:
            gc.unfreeze()
        gc.set_threshold(*threshold)
        if enabled:
            gc.enable()


def process_ends() -> None:
    """The heap frozen out of the interpreter's collections at exit (the module's docstring)."""
    gc.freeze()
