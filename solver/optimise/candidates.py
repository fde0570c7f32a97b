"""Candidate plans: a shape with its batch per replica and replica count for one
workload and set of targets, and the integer coefficients CP-SAT reads.

Resolutions (DESIGN: round in the safe direction): times in microseconds, money in
cents per hour and whole dollars to buy, requirements rounded up and limits down. A
time against its target follows one rule, `targets.meets_time` (at most the target,
within float noise: TIME_TOLERANCE), and its coefficient is put on that side of the
rounded limit (`targets.time_us`), so a plan exactly at its target is kept and one
over it refused, whatever the microsecond grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from solver.optimise.capacity import Capacity, latencies_at, replica_capacity
from solver.optimise.lazy import cached_property
from solver.optimise.problem import Problem, Shape, ShapePhysics
from solver.optimise.targets import ceil_us, time_us
from solver.physics.costs import owned_in_use, plan_tco
from solver.physics.decode import DecodeCoefficients
from solver.physics.deployment import Targets, Workload
from solver.physics.disaggregation import KvTransfer, PrefillPoolLoad

if TYPE_CHECKING:
    from solver.traffic.screen import TrafficSizing

__all__ = ["Candidate", "PrefillPool", "candidates", "ceil_us"]  # ceil_us: the rounding enumerate.py shares


ACQUIRE_BY_OBJECTIVE = {"min_tco": "cheaper", "min_purchase": "buy"}
"""How an objective acquires GPUs beyond those owned (physics/costs.plan_tco's `acquire`); others rent."""


@dataclass(frozen=True)
class PrefillPool:
    """Disaggregated serving: the replicas that only prefill, and what the plan's TTFT
    is made of (physics/disaggregation.py). The candidate's own shape is then the decode pool."""

    shape: Shape
    physics: ShapePhysics
    replicas: int
    load: PrefillPoolLoad
    transfer: KvTransfer

    @property
    def gpus(self) -> int:
        return self.replicas * self.shape.gpus_per_replica

    @property
    def ttft_s(self) -> float:
        return self.load.ttft_s


@dataclass(frozen=True)
class Candidate:
    shape: Shape
    physics: ShapePhysics
    batch: int
    """Sequences per replica (users spread evenly over the replicas)."""
    replicas: int
    users: int
    max_batch_tpot: int
    """Most sequences per replica the TPOT target allows (memory cap when no target)."""
    tpot_s: float
    relaxed: frozenset[str] = frozenset()
    """Targets this candidate was computed without (diagnosis only): users, context_tokens."""
    max_batch_ttft: int = 10**9
    """Most users per replica the TTFT target allows (their prompts queue behind each other)."""
    targets: Targets = Targets()
    """The latency targets it was built for: its TPOT and TTFT coefficients are rounded
    against them (`targets.time_us`)."""
    ttft_at_load_s: float | None = None
    """Under traffic: the TTFT at its percentile, as the screen puts it at this load."""
    traffic: TrafficSizing | None = None
    """Under traffic: how the replicas were sized (the screen's figures)."""
    prefill: PrefillPool | None = None
    """Disaggregated serving: the prefill pool (this candidate's shape and replicas are the decode pool)."""

    @property
    def serving(self) -> str:
        return "aggregated" if self.prefill is None else "disaggregated"

    @cached_property
    def pools(self) -> tuple[tuple[Shape, int], ...]:
        """(shape, GPUs) of each pool, the decode pool (or the only one) first."""
        own = ((self.shape, self.replicas * self.shape.gpus_per_replica),)
        return own if self.prefill is None else (*own, (self.prefill.shape, self.prefill.gpus))

    @cached_property
    def _by_device(self) -> tuple[tuple[Shape, int, int], ...]:
        """(a shape of the device, GPUs of it, GPUs of it rented), per device: two pools
        of one device share its owned GPUs."""
        if self.prefill is None:  # one pool (the many candidates of a search): no sharing to work out
            shape, n = self.shape, self.replicas * self.shape.gpus_per_replica
            return ((shape, n, n - owned_in_use(shape.owned, [(shape.gpus_per_replica, self.replicas)]) if shape.owned else n),)
        gpus: dict[str, list] = {}
        for shape, n in self.pools:
            row = gpus.setdefault(shape.device.name, [shape, 0, []])
            row[1] += n
            row[2].append((shape.gpus_per_replica, n // shape.gpus_per_replica))
        # whole replicas of owned GPUs only: a TP group is never part owned, part rented
        return tuple((shape, n, n - owned_in_use(shape.owned, pools)) for shape, n, pools in gpus.values())

    @property
    def decode(self) -> DecodeCoefficients:
        """The shape's decode physics: every candidate has them (`candidates` makes none
        of a shape without)."""
        dec = self.physics.decode
        if dec is None:
            raise ValueError(f"{self.shape.label} cannot run: it has no decode physics")
        return dec

    @cached_property
    def gpus(self) -> int:
        return self.replicas * self.shape.gpus_per_replica + (self.prefill.gpus if self.prefill else 0)

    @cached_property
    def rented(self) -> int:
        """GPUs beyond those owned."""
        return sum(r for _, _, r in self._by_device)

    @cached_property
    def cost_usd_per_hour(self) -> float:
        total = 0.0
        for shape, _, rented in self._by_device:
            price = shape.device.price
            total += rented * price.usd_per_gpu_hour if price and rented else 0.0
        return total

    @cached_property
    def purchase_usd(self) -> float:
        total = 0.0
        for shape, _, rented in self._by_device:
            p = shape.device.purchase_usd
            total += rented * p if p and rented else 0.0
        return total

    def acquisition(self, acquire: str = "cheaper") -> tuple[float, int, int]:
        """(TCO per hour, GPUs bought, GPUs rented) beyond those owned, device by device
        (a disaggregated plan's pools may be two): `acquire` as physics/costs.plan_tco."""
        total, bought, rented = 0.0, 0, 0
        for shape, n, extra in self._by_device:
            price = shape.device.price
            cost, how = plan_tco(n, n - extra, shape.costs, price.usd_per_gpu_hour if price else None, acquire)
            total += cost
            bought += extra if how == "bought" else 0
            rented += extra if how == "rented" else 0
        return total, bought, rented

    def acquired_as(self, objective: str) -> tuple[float, int, int]:
        """The plan's (TCO per hour, GPUs bought, GPUs rented) as its objective acquires
        GPUs beyond those owned: min_tco the cheaper of renting and buying, min_purchase
        buying, every other objective renting. Every report's TCO column reads this."""
        return self.acquisition(ACQUIRE_BY_OBJECTIVE.get(objective, "rent"))

    @cached_property
    def _tco(self) -> tuple[float, str]:
        total, bought, rented = self.acquisition()
        return total, " and ".join(w for w, n in (("bought", bought), ("rented", rented)) if n)

    @property
    def tco_usd_per_hour(self) -> float:
        """Owned GPUs at their power and hosting, the rest rented or bought (the cheaper)."""
        return self._tco[0]

    @property
    def acquired_by(self) -> str:
        """rented, bought, or "" (only owned GPUs)."""
        return self._tco[1]

    @cached_property
    def ttft_s(self) -> float:
        if self.prefill is not None:
            return self.prefill.ttft_s
        if self.ttft_at_load_s is not None:
            return self.ttft_at_load_s
        if self.physics.decode is None:
            return self.physics.ttft_s
        return latencies_at(self.physics, self.batch)[1]  # the one rule (optimise/capacity.py)

    @property
    def max_batch_memory(self) -> int:
        return self.physics.max_batch_memory

    @property
    def capacity(self) -> Capacity:
        """Users one replica of this shape holds under each target and under all at once
        (optimise/capacity.py: the one rule every command reads)."""
        return Capacity(self.max_batch_memory, self.max_batch_tpot, self.max_batch_ttft)

    @property
    def caps(self) -> str:
        """The limit that sets the batch per replica (under traffic: the rate per replica)."""
        if self.traffic is not None:
            return self.traffic.binding_target
        return self.capacity.binding

    # Integer coefficients for CP-SAT.
    @cached_property
    def memory_excess(self) -> int:
        return self.batch - self.max_batch_memory

    @cached_property
    def tpot_us(self) -> int:
        return time_us(self.tpot_s, self.targets.max_tpot_s)

    @cached_property
    def ttft_us(self) -> int:
        return time_us(self.ttft_s, self.targets.max_ttft_s)

    @cached_property
    def interconnect_excess(self) -> int:
        ok = self.physics.interconnect_ok and (self.prefill is None or self.prefill.physics.interconnect_ok)
        return 0 if ok else 1

    @cached_property
    def cost_cents(self) -> int:
        return math.ceil(round(self.cost_usd_per_hour * 100, 6))

    @cached_property
    def tco_cents(self) -> int:
        return 10**12 if math.isinf(self.tco_usd_per_hour) else math.ceil(round(self.tco_usd_per_hour * 100, 6))

    @cached_property
    def purchase_dollars(self) -> int:
        return math.ceil(round(self.purchase_usd, 6))


def tpot_batch_cap(problem: Problem, ph: ShapePhysics, w: Workload, t: Targets, ignore: bool) -> int:
    """Most sequences per replica the TPOT target allows, searched up to the memory cap
    (that cap itself without a target, or when the caller ignores it)."""
    return replica_capacity(problem, ph, w, Targets(max_tpot_s=t.max_tpot_s), ignore_latency=ignore).max_tpot


MAX_BATCH_VARIANTS = 256


def offered_batches(cap: int, users: int, variants: bool) -> list[int]:
    """Batch sizes to offer for one shape: the largest (fewest replicas) alone, or —
    when a smaller batch may pay (lower TPOT) — every distinct batch
    ⌈users / replicas⌉ up to the cap (about 2√users of them; beyond
    MAX_BATCH_VARIANTS a geometric 5 % ladder, an approximation for huge fleets)."""
    if cap < 1:
        return [1]
    top = min(cap, users)
    if not variants:
        return [top]
    out: set[int] = set()
    r = 1
    while r <= users:
        b = -(-users // r)
        if b <= top:
            out.add(b)
        # jump to the next replica count that changes the batch
        r = max(r + 1, -(-users // (b - 1)) if b > 1 else users + 1)
        if len(out) > MAX_BATCH_VARIANTS:
            break
    if len(out) > MAX_BATCH_VARIANTS:
        out, rung = {top, 1}, float(top)
        while rung > 1:
            rung /= 1.05
            out.add(max(1, int(rung)))
    out.add(top)
    return sorted(out, reverse=True)


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
    from solver.optimise.disaggregated import disaggregated_candidates, serves_disaggregated

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
        for shape, _, extra in c._by_device:
            dev = shape.device
            if not extra:
                continue
            if (by_price and dev.price is None) or (by_purchase and dev.purchase_usd is None):
                return False
            if spec.objective == "min_tco" and dev.price is None and dev.purchase_usd is None:
                return False
        return True

    return [c for c in cands if ok(c)]
