"""physics/kept.Kept: one figure per (objects by identity, values); a freed object's id
taken by another object is never read as the first's; past LIMIT entries all go."""

from __future__ import annotations

import solver.physics.kept as kept
from solver.physics.kept import Kept


class Split:
    """An immutable stand-in for a deployment (equal by value, told apart by identity)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Split)

    __hash__ = object.__hash__


def test_computed_once_per_object_and_value():
    k: Kept[int] = Kept()
    a, b = Split(), Split()
    calls: list[str] = []

    def make(name: str, n: int) -> int:
        calls.append(name)
        return n

    assert k.get((a,), lambda: make("a", 1)) == 1
    assert k.get((a,), lambda: make("a again", 9)) == 1  # kept
    assert k.get((b,), lambda: make("b", 2)) == 2  # equal by value, another object: its own
    assert k.get((a,), lambda: make("a at 7", 3), 7) == 3  # another value: its own
    assert calls == ["a", "b", "a at 7"]


def test_an_id_taken_by_another_object_is_not_read_as_its():
    k: Kept[int] = Kept()
    a, b = Split(), Split()
    k.get((a,), lambda: 1)
    k.entries[(id(b),)] = k.entries[(id(a),)]  # as if b had taken a freed object's id
    assert k.get((b,), lambda: 2) == 2


def test_past_the_limit_all_entries_go(monkeypatch):
    monkeypatch.setattr(kept, "LIMIT", 2)
    k: Kept[int] = Kept()
    held = [Split() for _ in range(4)]
    for i, s in enumerate(held[:3]):
        k.get((s,), lambda i=i: i)
    assert len(k.entries) == 3  # the check runs before an entry is added: LIMIT + 1 at most
    k.get((held[3],), lambda: 3)
    assert list(k.entries) == [(id(held[3]),)]
