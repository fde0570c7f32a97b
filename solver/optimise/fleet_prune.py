"""Dominance pruning of a fleet's options, per service, before the model is built.

An option o of a service is *dominated* by another option o' of the same service when
o' costs no more per replica, uses no more of every shared resource per replica, is
no worse on every tie-break, and holds at least as much:

    price(o')·g(o') ≤ price(o)·g(o)          rented cost per replica (cents per hour)
    purchase(o')·g(o') ≤ purchase(o)·g(o)    (only under a purchase budget)
    g(o') ≤ g(o)                            GPUs per replica (max_gpus, the GPU tie-break)
    quality(o') ≥ quality(o)                the format tie-break
    cap(o') ≥ cap(o)                        users (or thousandths of a req/s) per replica

and both sit on the same *pool* of GPUs. A device that is owned (inventory), under a
quota, or has no rental price has GPUs of its own that the model counts (an inventory
or quota constraint, or "never rented"): its options form a pool of their own. Every
other device — priced, unowned, unquota'd, and bought at a price where a purchase
budget holds — is limited only through the fleet-wide sums (cost, purchase, GPUs):
its options share one pool, the market. Options that tie on every figure are told
apart by their index (the lower kept), so dominance is a strict order and each pruned
option has an unpruned dominator (follow dominators upward: the order is finite).

Why removing a dominated option cannot change the optimum. Take any feasible fleet
that runs r > 0 replicas of o (own of them owned). Move them to o': r' = min(r(o') + r,
⌈demand/cap(o')⌉) replicas of o', own(o') + own owned (same device when o is owned:
g(o') ≤ g(o), so the owned GPUs do not grow; a market o owns none), use(o) = 0 and
use(o') = 1. Then
- capacity: without the clip it grows by r·(cap(o') − cap(o)) ≥ 0; with the clip o'
  alone holds ⌈demand/cap(o')⌉·cap(o') ≥ demand ≥ served. Served is unchanged, so
  min_cost's demand rows and max_served's shares (its first objective) are unchanged;
- GPUs of o's device fall by r·g(o), those of o''s rise by at most r·g(o'): on a
  market device no constraint reads a device's own count; on an owned, quota'd or
  unpriced device o and o' are the same device and the count falls (g(o') ≤ g(o)),
  and rented = GPUs − owned falls by (r − own)·(g(o) − g(o')) ≥ 0;
- the rented cost, the purchase and the total GPUs each change by at most
  r·(x(o') − x(o)) ≤ 0 for x their per-replica figure: the budget, the purchase
  budget and max_gpus still hold, and the cost falls or stays;
- single_shape: one use literal swapped for another (at most one still on); the
  shapes used stay or fall (o' may already be on), and the quality given up,
  Σ (200 − quality)·use, stays or falls.
So every fleet that uses o maps to one that does not, feasible and no worse on each
term of the objective (cost, quality, GPUs, shapes — each a sum the swap does not
raise), whichever order they are weighed in: the optimum over the pruned options is
the optimum over all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.catalog import Device
from solver.optimise.fleet_options import Option
from solver.spec.fleet_spec import FleetSpec

MARKET = ""
"""The pool of every device no constraint limits by itself."""


@dataclass(frozen=True)
class Limits:
    """What makes a device's GPUs a resource of their own."""

    owned: frozenset[str]
    quota: frozenset[str]
    purchase_budget: bool


def price_cents(dev: Device) -> int | None:
    """A device's rental price per GPU-hour in whole cents, as the fleet model counts it."""
    return round(dev.price.usd_per_gpu_hour * 100) if dev.price else None


def pool(dev: Device, limits: Limits) -> str:
    """MARKET, or the device's own name where a constraint counts its GPUs apart."""
    if dev.name in limits.owned or dev.name in limits.quota or dev.price is None:
        return dev.name
    if limits.purchase_budget and not dev.purchase_usd:
        return dev.name  # never bought under a purchase budget: "never rented" holds
    return MARKET


def figures(o: Option, dev: Device, limits: Limits, demand: int) -> tuple[int, int, int, int, int]:
    """The option's per-replica figures: (rented cost, purchase, GPUs, −quality, −cap),
    each smaller-is-better; a cap beyond the demand counts as the demand."""
    g = o.gpus_per_replica
    purchase = round(dev.purchase_usd or 0) * g if limits.purchase_budget else 0
    return ((price_cents(dev) or 0) * g, purchase, g, -o.quality, -min(o.cap, max(1, demand)))


def dominates(a: tuple[int, int, int, int, int], b: tuple[int, int, int, int, int]) -> bool:
    """Whether k replicas of a, k = ⌈cap(b)/cap(a)⌉, hold at least what one of b holds
    for no more cost, purchase and GPUs, in formats at least as good."""
    k = -(b[4] // -a[4])  # ⌈cap_b / cap_a⌉: both caps are stored negated
    return k * a[0] <= b[0] and k * a[1] <= b[1] and k * a[2] <= b[2] and a[3] <= b[3]


def prune(options: list[Option], devices: dict[str, Device], limits: Limits, demand: int) -> list[Option]:
    """The options no other of the same pool dominates (ties: the lower index kept), in
    their given order."""
    by_pool: dict[str, list[tuple[tuple[int, int, int, int, int], int]]] = {}
    for i, o in enumerate(options):
        dev = devices[o.device]
        by_pool.setdefault(pool(dev, limits), []).append((figures(o, dev, limits, demand), i))
    keep: set[int] = set()
    for entries in by_pool.values():
        # Sorted, a dominator comes first: k·x' ≤ x gives cost' ≤ cost, then (cost tied)
        # purchase' ≤ purchase, then g' ≤ g with k = 1 where the GPUs tie (g ≥ 1), and
        # with k = 1 the rest of the figures compare in order; equal figures: the lower
        # index first. Dominance is transitive (k's multiply), so a kept dominator of
        # any pruned dominator is enough to check.
        entries.sort()
        kept: list[tuple[int, int, int, int, int]] = []
        for f, i in entries:
            if not any(dominates(k, f) for k in kept):
                kept.append(f)
                keep.add(i)
    return [o for i, o in enumerate(options) if i in keep]


def resolve_counts(counts: dict[str, int]) -> dict[str, int]:
    """Owned or quota counts keyed by catalog name (the spec may use aliases)."""
    from solver.catalog import default_catalog

    return {default_catalog().device(name).name: n for name, n in counts.items()}


def fleet_limits(fs: FleetSpec) -> tuple[Limits, dict[str, int], dict[str, int]]:
    """The fleet's limits, its owned GPUs and its quotas by catalog name: what the model
    counts and what pruning reads, the same wherever they are read."""
    owned = resolve_counts(fs.inventory)
    quota = resolve_counts(fs.quota)
    return Limits(frozenset(d for d, n in owned.items() if n), frozenset(quota), fs.budget.max_purchase_usd is not None), owned, quota
