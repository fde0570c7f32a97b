"""The plan `simulate` serves: given whole by the caller (a device, TP, formats and
replicas narrow the spec's search to one shape) or solve's plan; shared by the CLI's
flags and the API's query parameters, which name the same choices."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from solver.errors import InputError

if TYPE_CHECKING:
    from solver.optimise.problem import Problem, Shape

MAX_REPLICAS = 10_000

CHOICES = {"search.gpus": "gpu", "search.tp": "tp", "search.weights": "weights", "search.kv_cache": "kv_cache"}
"""The search lists a caller's choice narrows, by the choice's name (the CLI's flag is
`--` and the name with `-` for `_`, the API's query parameter the name)."""


def narrowed(spec_data: dict, chosen: Mapping[str, Any]) -> dict:
    """The spec's data with each search list a choice names reduced to that choice."""
    search = dict(spec_data.get("search") or {})
    for field, name in CHOICES.items():
        if chosen.get(name) is not None:
            search[field.removeprefix("search.")] = [chosen[name]]
    return {**spec_data, "search": search}


def named_by_choice(exc: InputError, chosen: Mapping[str, Any], *, flags: bool) -> InputError:
    """An error in a search list a choice narrowed names the choice (`--gpu`, `gpu`),
    not the spec's line) and the value given there (the list it narrowed the search to
    is the spec's, not the user's)."""
    for field, name in CHOICES.items():
        if exc.field.startswith(field) and chosen.get(name) is not None:
            label = "--" + name.replace("_", "-") if flags else name
            return InputError(label, chosen[name], exc.allowed)
    return exc


def plan_to_simulate(problem: Problem, replicas: int | None) -> tuple[Shape, int] | str:
    """The shape and replicas to simulate, or why there are none. Given whole (one shape
    left by the spec and the flags, and its replicas), it is not solved: solving would
    re-pick that shape and simulate it and its runners-up to size replicas that are
    given. It is refused only where the simulator cannot serve it (an engine's rule or
    the interconnect refuses its split, or not one sequence fits); its targets are the
    simulation's verdict. Else solve's plan, sized as solve sizes it."""
    if replicas is not None and len(problem.shapes) == 1:
        shape = problem.shapes[0]
        physics = problem.physics(shape, problem.workload)
        if physics.refusals or physics.decode is None:
            return f"the plan given cannot run: {_why_none(problem)}"
        if physics.max_batch_memory < 1:
            return f"the plan given cannot run: not one sequence fits in {shape.device.name} memory beside the weights ({shape.label})"
        return shape, replicas
    from solver.explain.solve import solve

    result = solve(problem, explain=False)
    if not result.feasible:
        return f"no plan meets the spec: {_why_none(problem)}"
    return result.solution.chosen.shape, replicas or result.solution.chosen.replicas


def _why_none(problem: Problem) -> str:
    """Why nothing can run, when the engines' rules refuse every shape asked (a TP that
    does not divide the heads, a format the GPU lacks); else where to look."""
    reasons: list[str] = []
    for shape in problem.shapes:
        refused = problem.physics(shape, problem.workload).refusals
        if not refused:
            return "run `plan-opt solve` on it for the reason"
        reasons += [why for _kind, why in refused if why not in reasons]
    reasons += [f"{gpu}: {why}" for gpu, why in problem.excluded.items()]
    return "; ".join(reasons[:3]) + (f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else "") if reasons else "no GPU is searched"
