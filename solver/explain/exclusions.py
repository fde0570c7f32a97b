"""Shapes the spec allows that the search cannot run, each with its reason: a TP group
larger than every platform's scale-up domain, a split the model's heads or layers
refuse, a format the device lacks, an engine rule. Without them a user who asked for
TP 16 sees it vanish without a word; with them the report and the JSON say why.

Reasons are grouped per device and per reason, naming the splits they hit, so that a
search over every GPU stays readable.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Protocol

from solver.optimise.problem import Problem, Shape
from solver.physics import validity


@dataclass(frozen=True)
class Exclusion:
    """Shapes of one device left out for one reason."""

    device: str
    shapes: str
    """The splits hit ("TP 16", "TP 2 × PP 2"), or "" when a format or workload reason
    hits every split searched on the device (the reason names what it is about)."""
    reason: str
    kind: str
    """split, format, workload, engine, or interconnect."""
    count: int
    """Shapes (split × weights × KV cache) it leaves out."""


class Reasoned(Protocol):
    """What `line` reads: an Exclusion, or its JSON record."""

    @property
    def shapes(self) -> str: ...

    @property
    def reason(self) -> str: ...


def _split_label(tp: int, pp: int) -> str:
    return f"TP {tp}" + (f" × PP {pp}" if pp > 1 else "")


def _interconnect_reason(shape: Shape, reason: str) -> str:
    """A shape no platform holds sits on the nearest one (shapes._platform_for), which
    its refusal names: say that the others hold it no better."""
    d = shape.deployment
    others = len(d.device.platforms) - 1
    return reason + (f" (the widest of {d.device.name}'s platforms)" if others else "")


def exclusions(problem: Problem) -> list[Exclusion]:
    """Every reason a shape the spec allows is out of the search, at the spec's workload,
    per device in catalog order, then by the first split each reason hits."""
    hits: dict[tuple[str, str, str], list[tuple[int, int]]] = defaultdict(list)
    splits: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for sk in problem.skipped:
        hits[(sk.device, sk.kind, sk.reason)] += [(sk.tp, sk.pp)] * sk.shapes
        splits[sk.device].add((sk.tp, sk.pp))
    for shape in problem.shapes:
        d = shape.deployment
        splits[d.device.name].add((d.tp, d.pp))
        refusals = problem.physics(shape, problem.workload).refusals
        for kind, reason in refusals:
            if kind != validity.INTERCONNECT:
                hits[(d.device.name, kind, reason)].append((d.tp, d.pp))
        linked = [reason for kind, reason in refusals if kind == validity.INTERCONNECT]
        if linked:  # the first (the scale-up domain, before the nodes) is enough
            hits[(d.device.name, validity.INTERCONNECT, _interconnect_reason(shape, linked[0]))].append((d.tp, d.pp))
    order = {d.name: i for i, d in enumerate(problem.devices)}
    out = []
    for (device, kind, reason), hit in hits.items():
        distinct = sorted(set(hit))
        every = set(distinct) == splits[device] and kind in ("format", "workload")
        label = "" if every else ", ".join(_split_label(tp, pp) for tp, pp in distinct)
        out.append(Exclusion(device, label, reason, kind, len(hit)))
    return sorted(out, key=lambda e: (order.get(e.device, len(order)), min(hits[(e.device, e.kind, e.reason)]), e.reason))


def by_device(items: list[Exclusion]) -> dict[str, list[Exclusion]]:
    grouped: dict[str, list[Exclusion]] = {}
    for e in items:
        grouped.setdefault(e.device, []).append(e)
    return grouped


def line(e: Reasoned) -> str:
    """One reason as the report prints it (an Exclusion or its JSON record)."""
    return f"{e.shapes} — {e.reason}" if e.shapes else e.reason
