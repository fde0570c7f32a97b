"""A fleet class's options with each shape's capacity derived only where it can matter.

Dominance pruning (fleet_prune.py) drops four options in five before the model is
built; deriving their capacity (prefill, decode coefficients, the TPOT and TTFT caps'
bisections) was most of a hundred-workload fleet's time. A shape's memory cap bounds
its capacity from above (capacity.py: users = min(memory, TPOT cap, TTFT cap)) for a
fraction of the cost, so a shape whose bound another option already derived dominates
can be left out: its exact figures are dominated too (a smaller cap only makes k =
⌈cap/cap'⌉ smaller).

Why the fleet's answer is unchanged. Let F be every option options_of derives, K the
shapes left out here and L = F − K. A shape is left out only when a derived option a
of its pool dominates its bound b with figures(a) ≠ b; then figures(a) ≠ its own
figures as well (equal figures would need k = 1, so a cap of a at least the bound), so
a beats it outright — not on a tie of figures, where the index decides. Following
dominators upward (a finite strict order, fleet_prune.py), each option of K is beaten
outright by one that options_of keeps, and so is each option that only a member of K
beat within its device; no option that prune keeps on F is beaten by anything in L.
So prune(undominated_in_device(L)) = prune(options_of) — the options the model is
built on, in the same order — and tests/optimise/test_fleet_lazy.py holds the two
equal on varied fleets.

The model also has one GPU count per device that any class could use (before
pruning): a device whose every shape was left out gets its first shape that serves
derived (a witness), so the devices, and their order, are those options_of gives."""

from __future__ import annotations

from solver.optimise.candidates import candidates
from solver.optimise.disaggregated import serves_disaggregated
from solver.optimise.fleet_classes import Option, option_of, undominated_in_device
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
