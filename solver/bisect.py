"""The one search the physics needs: the largest integer for which a monotone test
still holds (a batch that meets a target, a context that fits)."""

from __future__ import annotations

from collections.abc import Callable


def largest_true(ok: Callable[[int], bool], upper: int) -> int:
    """Largest n in 1..upper with ok(n), given ok is true up to some point and false
    after it; 0 when ok(1) is false."""
    if upper < 1 or not ok(1):
        return 0
    if ok(upper):
        return upper
    lo, hi = 1, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
