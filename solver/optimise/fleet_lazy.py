"""A fleet class's options with each shape's capacity derived only where it can matter.

Dominance pruning (fleet_prune.py) drops four options in five before the model is
built; deriving their capacity (prefill, decode coefficients, the TPOT and TTFT caps'
bisections) was most of a hundred-workload fleet's time. A shape's memory cap bounds
its capacity from above (capacity.py: users = min(memory, TPOT cap, TTFT cap)) for a
fraction of the cost, so a shape whose bound another option already derived dominates
can be left out: its exact figures are dominated too (a smaller cap only makes k =
⌈cap/cap'⌉ smaller).

Why the fleet's answer is unchanged. A shape is left out only when a derived option a
of its pool dominates its bound (its figures with the memory cap for its capacity) and
differs from it. Its exact figures (a cap no larger) are then dominated by a too, and
differ from a's: equal figures would put a's cap below the bound's, so k ≥ 2 replicas
of a, more GPUs than the shape's. So a beats it outright, never by the index that
breaks a tie. Following dominators upward (a strict order, fleet_prune.py) from a shape
left out, or from an option that only such a shape beat within its device, reaches one
that options_of and prune both keep and that beats it outright; nothing left out is
one prune keeps. So prune over these options equals prune over options_of's — the
model is built on the same options, in the same order — and
tests/optimise/test_fleet_lazy.py holds the two equal on fleets drawn by hypothesis.

The model also has one GPU count per device that any class could use (before
pruning): a device whose every shape was left out gets its first shape that serves
derived (a witness), so the devices, and their order, are those options_of gives."""

from __future__ import annotations

from solver.optimise.candidates import candidates
from solver.optimise.disaggregated import serves_disaggregated
from solver.optimise.fleet_options import Option, option_of, undominated_in_device
from solver.optimise.fleet_prune import Limits, dominates, figures, pool
from solver.optimise.problem import Problem, Shape

Figures = tuple[int, int, int, int, int]


def exact_option(problem: Problem, shape: Shape) -> Option | None:
    """The shape's option as options_of derives it (None: it serves no one)."""
    got = [o for o in map(option_of, candidates(problem, shapes=[shape])) if o is not None]
    assert len(got) <= 1, "one aggregated candidate per shape"
    return got[0] if got else None


def lazy_options(problem: Problem, limits: Limits, demand: int) -> list[Option] | None:
    """The class's options, less those dominance pruning would drop whatever their exact
    capacity; None where this does not apply (a rate service, whose caps a simulation
    may lower later, fleet_traffic.py; disaggregated serving): derive them all."""
    w = problem.workload
    serving = problem.spec.search.serving
    if w.traffic is not None or "aggregated" not in serving or serves_disaggregated(problem, w):
        return None
    bounds: list[tuple[Figures, int, Shape]] = []
    for shape in problem.shapes:
        upper = problem.memory_cap(shape, w)  # 0 where any rule (the interconnect's too) refuses it
        if upper < 1:
            continue
        d = shape.deployment
        bound = Option(shape.index, "", shape.device.name, shape.gpus_per_replica, upper, "", 0.0, 0.0, d.weights.quality_rank + d.kv.quality_rank)
        bounds.append((figures(bound, shape.device, limits, demand), shape.index, shape))
    bounds.sort(key=lambda x: x[:2])  # the likely dominators first: cheaper, then fewer GPUs, then larger
    # Per pool, derived figures none other derived dominates: each derived option has one
    # of these dominating it (or equal), which then dominates whatever it dominates.
    frontier: dict[str, list[Figures]] = {}
    derived: list[Option] = []
    left_out: dict[str, list[Shape]] = {}
    for bound_figures, _, shape in bounds:
        front = frontier.setdefault(pool(shape.device, limits), [])
        if any(a != bound_figures and dominates(a, bound_figures) for a in front):
            left_out.setdefault(shape.device.name, []).append(shape)
            continue
        o = exact_option(problem, shape)
        if o is None:
            continue
        derived.append(o)
        f = figures(o, shape.device, limits, demand)
        if not any(dominates(a, f) for a in front):
            front[:] = [a for a in front if not dominates(f, a)] + [f]
    serving_devices = {o.device for o in derived}
    for device, shapes in left_out.items():
        if device in serving_devices:
            continue
        for shape in sorted(shapes, key=lambda s: s.index):  # the witness: its first shape that serves
            o = exact_option(problem, shape)
            if o is not None:
                derived.append(o)
                break
    return undominated_in_device(derived)
