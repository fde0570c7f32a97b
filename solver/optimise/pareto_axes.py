"""Which Pareto frontiers a request asks for (`--axes`, the API's `axes`): read against
the spec's workload form and its percentile targets, before any work."""

from __future__ import annotations

from typing import TYPE_CHECKING

from solver.errors import InputError

if TYPE_CHECKING:
    from solver.spec.solve_spec import Spec

AXES = ("tpot", "ttft", "users", "rate")

DEFAULT_AXES = "all"


def chosen_axes(text: str, spec: Spec) -> list[str]:
    """The frontiers asked for: users only for a users workload, rate only for a rate;
    pNN_ttft / pNN_tpot name the latency axes at the spec's percentile."""
    rate = spec.workload.requests_per_s is not None
    if text.strip() == DEFAULT_AXES:
        return ["tpot", "ttft", "rate" if rate else "users"]
    sla = spec.sla
    percentiles = {"ttft": sla.ttft.percentile if sla.ttft else None, "tpot": sla.tpot.percentile if sla.tpot else None}
    axes = []
    for name in (a.strip() for a in text.split(",")):
        if not name:
            continue
        axis = name
        if "_" in name and name.split("_", 1)[1] in percentiles and name.startswith("p"):
            axis = name.split("_", 1)[1]
            asked, spec_p = name.split("_", 1)[0][1:], percentiles[axis]
            if spec_p is None or asked != f"{spec_p:g}":
                at = f"P{spec_p:g}" if spec_p is not None else "no percentile (set sla." + axis + ": {pNN: ...})"
                raise InputError("--axes", text, f"{name}: the spec's {axis.upper()} target is at {at}; the frontier is at the target's percentile")
        if axis not in AXES:
            raise InputError("--axes", text, f"choose from {', '.join(AXES)} (or pNN_ttft, pNN_tpot at the spec's percentiles)")
        if axis == "users" and rate:
            raise InputError("--axes", text, "the users frontier is for a users workload; under requests_per_s choose from tpot, ttft, rate")
        if axis == "rate" and not rate:
            raise InputError("--axes", text, "the rate frontier is for a workload in requests_per_s; for users choose from tpot, ttft, users")
        if axis not in axes:
            axes.append(axis)
    if not axes:
        raise InputError("--axes", text, f"choose from {', '.join(AXES)}")
    return axes
