"""Figures kept by the identity of the immutable objects they are read from (a
deployment, a model and a format): a solve, and each target its explanation moves, asks
for the same split's figures tens of thousands of times. One rule for every such memo:
an entry keeps its objects alive, so an id is never reused while it stands, and a hit
must be the very objects (not another that took a freed id); past LIMIT entries they all
go, so a long process holds a bounded number."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")

LIMIT = 4096


class Kept(Generic[T]):
    """`get(owners, compute, *values)`: compute() once per (owners by identity, values)."""

    def __init__(self) -> None:
        self.entries: dict[tuple, tuple[tuple[object, ...], T]] = {}

    def get(self, owners: tuple[object, ...], compute: Callable[[], T], *values: Hashable) -> T:
        key = (*map(id, owners), *values)
        hit = self.entries.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], owners, strict=True)):
            return hit[1]
        got = compute()
        if len(self.entries) > LIMIT:
            self.entries.clear()
        self.entries[key] = (owners, got)
        return got

    def clear(self) -> None:
        self.entries.clear()
