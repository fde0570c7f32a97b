"""A candidate plan: a shape with its batch per replica and replica count for one
workload and set of targets (and, disaggregated, its prefill pool), what it costs, and
the integer coefficients CP-SAT reads; and the batches a shape is offered at.

The plans themselves are built above it: `candidates` (aggregated, and the orchestrator),
`disaggregated` (decode pool and prefill pool paired) and `traffic_candidates` (sized by
the traffic screen) all make `Candidate`s of this one kind.

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

from solver.optimise.capacity import Capacity, latencies_at
from solver.optimise.lazy import cached_property
from solver.optimise.problem import Shape, ShapePhysics
from solver.optimise.targets import time_us
from solver.physics.costs import owned_in_use, plan_tco
from solver.physics.decode import DecodeCoefficients
from solver.physics.deployment import Targets
from solver.physics.disaggregation import KvTransfer, PrefillPoolLoad

if TYPE_CHECKING:
    from solver.traffic.screen import TrafficSizing

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
    def by_device(self) -> tuple[tuple[Shape, int, int], ...]:
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
        return sum(r for _, _, r in self.by_device)

    @cached_property
    def cost_usd_per_hour(self) -> float:
        total = 0.0
        for shape, _, rented in self.by_device:
            price = shape.device.price
            total += rented * price.usd_per_gpu_hour if price and rented else 0.0
        return total

    @cached_property
    def purchase_usd(self) -> float:
        total = 0.0
        for shape, _, rented in self.by_device:
            p = shape.device.purchase_usd
            total += rented * p if p and rented else 0.0
        return total

    def acquisition(self, acquire: str = "cheaper") -> tuple[float, int, int]:
        """(TCO per hour, GPUs bought, GPUs rented) beyond those owned, device by device
        (a disaggregated plan's pools may be two): `acquire` as physics/costs.plan_tco."""
        total, bought, rented = 0.0, 0, 0
        for shape, n, extra in self.by_device:
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
