"""Candidate plans for one workload and set of targets: every runnable shape at the
batches it is offered (aggregated), the disaggregated pairs (`disaggregated`), or under
traffic the shapes sized by the screen (`traffic_candidates`); each a `Candidate`
(optimise/candidate.py), kept only where its GPUs can be had on the spec's terms.
"""

from __future__ import annotations

import math

from solver.optimise.candidate import Candidate, offered_batches
from solver.optimise.capacity import replica_capacity
from solver.optimise.disaggregated import disaggregated_candidates, serves_disaggregated
from solver.optimise.problem import Problem, Shape
from solver.physics.deployment import Targets, Workload


def candidates(
    problem: Problem,
    workload: Workload | None = None,
    targets: Targets | None = None,
    *,
    batch_variants: bool = False,
    ignore_tpot_cap: bool = False,
    relaxed: frozenset[str] = frozenset(),
    shapes: list[Shape] | None = None,
    aggregated: list[Shape] | None = None,
    within: tuple[int | None, int | None, int | None] | None = None,
    decoding: list[Shape] | None = None,
) -> list[Candidate]:
    """One candidate per runnable shape at its largest batch (fewest replicas, the
    cheapest way to serve the users), or several batches when `batch_variants` (a
    smaller batch buys a lower TPOT with more replicas). Shapes that break a limit
    stay in as candidates: the CP-SAT constraints rule them out, and say which.
    `aggregated` (of `shapes`; all of them when None): the shapes whose aggregated plans
    are built (each shape's are its own), while disaggregated plans pair over `shapes`.
    `within` (GPUs, cents per hour, purchase dollars; None: no limit): aggregated plans
    over one of them are not built (never admissible; a re-filter's own).
    `decoding` (of `shapes`; all of them when None): the decode pools' shapes whose
    disaggregated plans are built, each paired over every prefill option of `shapes`
    (a decode shape's pairs do not depend on the other decode shapes)."""
    w = workload or problem.workload
    t = targets or problem.targets
    if w.traffic is not None:
        # Here, not at the top: a users solve loads no traffic module (tests/cli/test_imports_per_command.py).
        from solver.optimise.traffic_candidates import traffic_candidates

        return acquirable(
            problem, traffic_candidates(problem, w, t, shapes if shapes is not None else problem.shapes, relaxed, variants=batch_variants)
        )

    # Without traffic the candidates depend on these alone (the physics is memoised by
    # the problem, the options' order by `shapes`): built once, handed out as a new list.
    def indices(shs: list[Shape] | None) -> tuple[int, ...] | None:
        return None if shs is None else tuple(sh.index for sh in shs)

    key = (w, t, batch_variants, ignore_tpot_cap, relaxed, indices(shapes), indices(aggregated), within, indices(decoding))
    got = problem._candidates.get(key)
    if got is None:
        got = problem._candidates[key] = _built(problem, w, t, batch_variants, ignore_tpot_cap, relaxed, shapes, aggregated, within, decoding)
    return list(got)


def _over(shape: Shape, replicas: int, within: tuple[int | None, int | None, int | None]) -> bool:
    """Whether `replicas` of `shape` alone exceed the GPU cap or, rented, a budget, each
    rounded as `Candidate` rounds it (owned GPUs are free: a shape that has some is read
    against the cap alone)."""
    max_gpus, max_cents, max_dollars = within
    gpus = replicas * shape.gpus_per_replica
    if max_gpus is not None and gpus > max_gpus:
        return True
    if shape.owned:
        return False
    price, purchase = shape.device.price, shape.device.purchase_usd
    if max_cents is not None and price and math.ceil(round(gpus * price.usd_per_gpu_hour * 100, 6)) > max_cents:
        return True
    if max_dollars is None or not purchase:
        return False
    return math.ceil(round(gpus * purchase, 6)) > max_dollars


def _built(
    problem: Problem,
    w: Workload,
    t: Targets,
    batch_variants: bool,
    ignore_tpot_cap: bool,
    relaxed: frozenset[str],
    shapes: list[Shape] | None,
    aggregated: list[Shape] | None,
    within: tuple[int | None, int | None, int | None] | None,
    decoding: list[Shape] | None = None,
) -> list[Candidate]:
    """`candidates` without traffic, built anew."""
    searched = shapes if shapes is not None else problem.shapes
    out: list[Candidate] = []
    if serves_disaggregated(problem, w):
        out += disaggregated_candidates(problem, w, t, searched, relaxed, variants=batch_variants, ignore_caps=ignore_tpot_cap, decoding=decoding)
    if "aggregated" not in problem.spec.search.serving:
        return acquirable(problem, out)
    for shape in searched if aggregated is None else aggregated:
        ph = problem.physics(shape, w)
        dec = ph.decode
        if not ph.valid or dec is None:
            continue
        cap = replica_capacity(problem, ph, w, t, ignore_latency=ignore_tpot_cap)
        seen: set[int] = set()
        for b in offered_batches(cap.users, w.users, batch_variants):
            replicas = math.ceil(w.users / b)
            if replicas in seen:
                continue
            seen.add(replicas)
            if within is not None and _over(shape, replicas, within):
                continue
            batch = math.ceil(w.users / replicas)
            out.append(Candidate(shape, ph, batch, replicas, w.users, cap.max_tpot, ph.tpot_at(batch), relaxed, cap.max_ttft, t))
    return acquirable(problem, out)


def acquirable(problem: Problem, cands: list[Candidate]) -> list[Candidate]:
    """The candidates whose GPUs beyond those owned can be had on the spec's terms: a
    device with no rental price is never rented for free (min_cost, a $/hour budget),
    one with no purchase price never bought (min_purchase, a purchase budget), one with
    neither never acquired (min_tco). An owned device without a price serves in whole
    owned replicas only."""
    spec = problem.spec
    by_price = spec.objective == "min_cost" or spec.budget.max_usd_per_hour is not None
    by_purchase = spec.objective == "min_purchase" or spec.budget.max_purchase_usd is not None

    def ok(c: Candidate) -> bool:
        for shape, _, extra in c.by_device:
            dev = shape.device
            if not extra:
                continue
            if (by_price and dev.price is None) or (by_purchase and dev.purchase_usd is None):
                return False
            if spec.objective == "min_tco" and dev.price is None and dev.purchase_usd is None:
                return False
        return True

    return [c for c in cands if ok(c)]
