"""Candidate plans of disaggregated serving: a decode pool (a shape, its batch and
replica count) paired with a prefill pool (a shape of the same weight and KV formats,
on any device of the same vendor unless the spec allows crossing, kv_vendors.py, and
the fewest replicas whose prompt queue meets the TTFT target).

The pairs enter the same CP-SAT model as the aggregated plans (one boolean per
candidate, exactly one chosen), so one solve compares both ways of serving and every
constraint, budget and explanation reads them alike. Only the fewest prefill replicas
are paired: more cost more and change nothing else a constraint reads but the TTFT,
which the fewest already meet.

Pruning, exact (a dropped pair is never better than a kept one on any coefficient the
model or its tie-break reads): a prefill shape another of the same formats beats on
every figure the pairing reads is dropped before pairing (the better one meets the TTFT
with no more replicas, each no dearer); and for each decode option, a prefill pool whose
lower bounds (the fewest replicas the queue's saturation allows, the TTFT with no wait)
are already matched by a pool paired with it is not sized at all. GPUs the user owns
are free up to their count, so pools of owned devices are never pruned. Under a TTFT
target the decode pools are offered at smaller batches too (their first step is in the
TTFT), each pair kept only when no pair of a larger batch matches it on every figure,
and the descent stops when a lower bound on every smaller batch's pairs is matched.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from solver.optimise.candidate import Candidate, PrefillPool, offered_batches
from solver.optimise.capacity import tpot_batch_cap
from solver.optimise.kv_vendors import pairable_options
from solver.optimise.problem import Problem, Shape
from solver.optimise.targets import TIME_TOLERANCE
from solver.physics.costs import plan_tco
from solver.physics.deployment import Targets, Workload
from solver.physics.disaggregation import (
    KvTransfer,
    PrefillPoolLoad,
    kv_share_on_gpu,
    link_load_ok,
    size_prefill_pool,
)


def serves_disaggregated(problem: Problem, w: Workload) -> bool:
    """Whether the spec asks for disaggregated plans and this workload can have them
    (a users workload, an engine with a prefill/decode split)."""
    if "disaggregated" not in problem.spec.search.serving or w.traffic is not None or not problem.shapes:
        return False
    e = problem.shapes[0].deployment.engine
    return e is None or e.disaggregation


@dataclass(frozen=True)
class _Option:
    """A shape that can prefill, with what its pool costs per replica."""

    shape: Shape
    workload: Workload
    """The prefill-only workload (batching isolated) its physics is derived at, once paired (`_size`)."""
    service_s: float
    servers: int
    per_replica: tuple[float, float, float, float]
    """(cents per hour, GPUs, purchase dollars, TCO cents per hour) of one replica."""

    @property
    def owned(self) -> bool:
        return self.shape.owned > 0


def _per_replica(shape: Shape) -> tuple[float, float, float, float]:
    """(cents per hour, GPUs, purchase dollars, TCO cents per hour) of one replica, rented."""
    d = shape.deployment
    n = shape.gpus_per_replica
    rent = d.device.price.usd_per_gpu_hour if d.device.price else None
    return (100 * n * (rent or 0.0), float(n), n * (d.device.purchase_usd or 0.0), 100 * plan_tco(n, 0, shape.costs, rent)[0])


def _prefill_options(problem: Problem, w: Workload, shapes: list[Shape]) -> dict[tuple[str, str], list[_Option]]:
    """Per (weights, KV) format, the shapes that can prefill a prompt (its KV fits; no
    draft: a prefill replica does not decode), dominated ones dropped. Each is read from
    the parts of its physics a prompt's service needs (refusals, memory, the prefill
    estimate: `Problem.unbatched`), not its decode steps: a moved target's re-solve pairs
    a handful of the hundreds (`_size` derives those), and a shape refused or out of
    memory has no prefill estimated at all."""
    # Dominance is judged among the options a decode pool may pair with alike: per vendor
    # unless the KV may cross vendors (an option beaten only by another vendor's stays).
    across = problem.spec.search.allow_cross_vendor_kv
    by_format: dict[tuple[str, str, str], list[tuple[_Option, tuple[float, ...]]]] = {}
    for shape in shapes:
        d = shape.deployment
        if d.speculation is not None or d.platform.scale_out is None:
            continue
        if problem.memory_cap(shape, w) < 1:
            continue  # a rule refuses it (the interconnect's included), or no prompt's KV fits
        refused, _, prefill = problem.unbatched(shape, w)
        assert not refused and prefill is not None  # memory_cap is 0 for both
        if isinstance(prefill, ValueError):
            raise prefill  # as `Problem.physics` raises it for a shape no rule refuses
        link = d.platform.scale_out
        per = _per_replica(shape)
        servers = d.tp if d.dp_ep else 1  # DecodeCoefficients.prefill_servers
        opt = _Option(shape, w, prefill.gpu_time_s, servers, per)
        key: tuple[float, ...] = (
            prefill.gpu_time_s,
            prefill.gpu_time_s / max(1, servers),
            kv_share_on_gpu(d) / link.bandwidth_bytes_per_s,
            1.0 / link.bandwidth_bytes_per_s,
            link.latency_s,
            *per,
        )
        by_format.setdefault((d.weights.name, d.kv.name, "" if across else d.device.vendor), []).append((opt, key))
    out: dict[tuple[str, str], list[_Option]] = {}
    for (weights, kv, _), rows in by_format.items():
        free = [r for r in rows if not r[0].owned]
        keys = np.asarray([k for _, k in free], dtype=float).reshape(len(free), -1) if free else np.zeros((0, 0))
        # beaten[i, j]: option i is no worse than j on every figure and better on one (all pairs at once)
        beaten = np.all(keys[:, None, :] <= keys[None, :, :], axis=2) & np.any(keys[:, None, :] < keys[None, :, :], axis=2)
        dominated = beaten.any(axis=0).tolist()
        kept = [opt for (opt, _), out in zip(free, dominated) if not out]
        out.setdefault((weights, kv), []).extend(kept + [o for o, _ in rows if o.owned])
    for options in out.values():
        options.sort(key=lambda o: (o.owned, o.shape.index))  # rented in shape order, then owned
    return out


def prefill_options(problem: Problem, w: Workload, shapes: list[Shape]) -> dict[tuple[str, str], list[_Option]]:
    """`_prefill_options` of the decode-only workload, memoised per workload and shapes
    (first by the list itself, held beside the answer: a re-solve asks once per option)."""
    # the vendor rule is in the key: a copy of the problem that allows the KV to cross
    # (explain/vendor_pairs) shares this memo, and its options are pruned across vendors
    across = problem.spec.search.allow_cross_vendor_kv
    figures = (across, w.resident_tokens, w.prompt_tokens, w.output_tokens, w.shared_prefix_tokens, w.prefix_hit_rate)
    held = problem._pools.get(("options of", id(shapes), *figures))
    if held is not None and held[0] is shapes:
        return held[1]
    key = ("options", *figures, *(s.index for s in shapes))
    got = problem._pools.get(key)
    if got is None:
        got = problem._pools[key] = _prefill_options(problem, dataclasses.replace(w, batching="isolated"), shapes)
    problem._pools[("options of", id(shapes), *figures)] = (shapes, got)
    return got


DIAGNOSIS_BATCHES = 16
"""Decode batches per shape offered to the diagnosis, spread over the distinct ones:
each pairs with every prefill shape, so every batch would make the pairs millions."""


def disaggregated_candidates(
    problem: Problem,
    w: Workload,
    t: Targets,
    shapes: list[Shape],
    relaxed: frozenset[str] = frozenset(),
    *,
    variants: bool = False,
    ignore_caps: bool = False,
    decoding: list[Shape] | None = None,
) -> list[Candidate]:
    """Every decode-pool option (a shape at its largest batch; every batch with `variants`,
    or under a TTFT target the smaller ones while they may pay, _smaller_batches_may_pay)
    with the fewest replicas of each undominated prefill shape of its formats.
    `ignore_caps` (the diagnosis): batches past the TPOT cap, and prefill pools sized
    without the TTFT target, so that either target can be switched off by assumption.
    `decoding` (of `shapes`; all when None): the decode shapes paired, each with the
    prefill options of all `shapes` (its pairs are the same whichever others are paired)."""
    decode_w = dataclasses.replace(w, batching="isolated")  # a decode-only replica mixes no prompts into its steps
    prefill = prefill_options(problem, w, shapes)
    max_ttft_s = None if ignore_caps else t.max_ttft_s
    dims = _dims(problem)
    out: list[Candidate] = []
    for shape in shapes if decoding is None else decoding:
        d = shape.deployment
        options = pairable_options(problem.spec.search.allow_cross_vendor_kv, shape, prefill.get((d.weights.name, d.kv.name), []))
        if d.speculation is not None or not options:
            continue
        ph = problem.physics(shape, decode_w)
        dec = ph.decode
        if not ph.valid or dec is None:
            continue
        b_mem = ph.max_batch_memory
        b_tpot = tpot_batch_cap(problem, ph, decode_w, t, ignore_caps)
        if min(b_mem, b_tpot) < 1 and not ignore_caps:
            continue  # not one sequence fits, or meets the TPOT: no pairing makes it a plan
        # A decode pool's first step is in every TTFT: under a TTFT target more decode
        # replicas (a smaller batch, a shorter step) can be what lets a prefill pool meet
        # it, so every batch is offered then, not the largest alone.
        batches = offered_batches(min(b_mem, b_tpot), w.users, variants or max_ttft_s is not None)
        if ignore_caps and len(batches) > DIAGNOSIS_BATCHES:
            batches = [batches[round(i * (len(batches) - 1) / (DIAGNOSIS_BATCHES - 1))] for i in range(DIAGNOSIS_BATCHES)]
        pair_key = (shape.index, w.prompt_tokens, dims, *(o.shape.index for o in options))
        pairing = problem._pools.get(pair_key)
        if pairing is None:
            transfers = [problem.kv_transfer(o.shape, shape, w.prompt_tokens) for o in options]
            pairing = problem._pools[pair_key] = _Pairing.of(options, transfers, dims)
        seen: set[int] = set()
        ordered = sorted(batches, reverse=True)
        fastest_s = ph.tpot_at(math.ceil(w.users / math.ceil(w.users / ordered[-1])))  # memoised: each re-solve asks again
        per_decode = [_per_replica(shape)[k] for k in dims]
        offered: list[list[float]] = []  # the pairs offered at larger batches, on dims
        for b in ordered:
            replicas = math.ceil(w.users / b)
            if replicas in seen:
                continue
            seen.add(replicas)
            batch = math.ceil(w.users / replicas)
            tpot = ph.tpot_at(batch)
            if (
                not variants
                and offered
                and not _smaller_batches_may_pay(w, max_ttft_s, pairing, shape, replicas, per_decode, tpot, fastest_s, offered)
            ):
                break
            key = (pair_key, replicas, tpot, max_ttft_s, w.users, w.output_tokens)
            pools = problem._pools.get(key)
            if pools is None:
                pools = problem._pools[key] = _pools(problem, w, max_ttft_s, pairing, shape, replicas, tpot)
            row = {o.shape.index: r for o, r in zip(pairing.options, pairing.rows)}
            for pool in pools:
                vec = [replicas * x + pool.replicas * y for x, y in zip(per_decode, row[pool.shape.index])]
                if not variants and _dominated(vec, offered):
                    continue  # a pair at a larger batch is no dearer on any figure a plan is chosen by
                offered.append(vec)
                out.append(Candidate(shape, ph, batch, replicas, w.users, b_tpot, tpot, relaxed, 10**9, t, prefill=pool))
    return out


def _dominated(vec: list[float], offered: list[list[float]]) -> bool:
    """Whether a vector offered is no greater than `vec` on every figure (plain loops:
    the pairing asks this tens of thousands of times a solve)."""
    for prev in offered:
        for k, x in zip(prev, vec):
            if k > x:
                break
        else:
            return True
    return False


def _smaller_batches_may_pay(
    w: Workload,
    max_ttft_s: float | None,
    pairing: _Pairing,
    d_shape: Shape,
    replicas: int,
    per_decode: list[float],
    tpot_s: float,
    fastest_s: float,
    offered: list[list[float]],
) -> bool:
    """Whether a decode pool of `replicas` or more replicas, with steps of `tpot_s` down
    to `fastest_s`, could make a pair that no pair offered at a larger batch matches on
    every figure of `dims`. A shorter step shortens the TTFT (its first step) but also
    each user's loop (output × step), so a replica's users return sooner: the fewest
    prefill replicas any such pool can need is sized with the shortest first step and the
    longest loop, a lower bound (so is `replicas` on the decode side). When every prefill
    shape's bound is matched, smaller batches add decode replicas for nothing."""
    overhead = d_shape.deployment.factors.request_overhead_s
    for i, (o, transfer) in enumerate(zip(pairing.options, pairing.transfers)):
        if transfer is None:
            continue
        delay = pairing.transfer_s[i] + w.output_tokens * tpot_s + overhead
        row = pairing.rows[i]
        # first the saturation's bound (no queue sizing), which settles most options
        most = min(w.users, math.floor(1 + delay / max(pairing.capacity_s[i], 1e-300) + 1e-12))
        if _dominated([replicas * x + math.ceil(w.users / max(1, most)) * y for x, y in zip(per_decode, row)], offered):
            continue
        best = size_prefill_pool(w.users, o.service_s, o.servers, delay, transfer.time_s + fastest_s + overhead, max_ttft_s, TIME_TOLERANCE)
        if best is not None and not _dominated([replicas * x + best[0] * y for x, y in zip(per_decode, row)], offered):
            return True
    return False


def _dims(problem: Problem) -> tuple[int, ...]:
    """The figures of a pool a plan's choice can turn on: its cost (the objective or the
    budget), GPUs (a cap, the tie-break), purchase and TCO where the spec prices them."""
    objective = problem.objective
    out = [0, 1]
    if objective == "min_purchase" or problem.max_purchase_usd is not None:
        out.append(2)
    if objective == "min_tco":
        out.append(3)
    return tuple(out)


@dataclass(frozen=True)
class _Pairing:
    """One decode shape's prefill options, the figures every batch's bounds read (plain
    lists: a pairing holds a handful of options, where numpy's per-call cost outweighs
    its arithmetic; the same IEEE operations either way)."""

    options: list[_Option]
    transfers: list[KvTransfer | None]
    transfer_s: list[float]
    capacity_s: list[float]
    free: list[bool]
    """Options whose pools may be pruned (a network to send over, no owned GPUs)."""
    key: tuple[int, ...]
    rows: list[list[float]]
    """Options × dims: each figure `dims` names, for one replica."""
    free_indices: list[int]

    @classmethod
    def of(cls, options: list[_Option], transfers: list[KvTransfer | None], dims: tuple[int, ...]) -> _Pairing:
        rows = [[o.per_replica[k] for k in dims] for o in options]
        free = [t is not None and not o.owned for o, t in zip(options, transfers)]
        return cls(
            options,
            transfers,
            [t.time_s if t else 0.0 for t in transfers],
            [o.service_s / max(1, o.servers) for o in options],
            free,
            tuple(o.shape.index for o in options),
            rows,
            [i for i, f in enumerate(free) if f],
        )


def _pools(
    problem: Problem, w: Workload, max_ttft_s: float | None, pairing: _Pairing, d_shape: Shape, d_replicas: int, tpot_s: float
) -> list[PrefillPool]:
    """The prefill pools worth pairing with one decode option: each option's fewest
    replicas, less those another pool matches on every figure of the pairing's `dims`
    (_Option.per_replica). Every pool meets the TTFT target; of pools equal on all of
    them, the one whose bound sorts first is kept (TTFT is not compared)."""
    overhead = d_shape.deployment.factors.request_overhead_s
    options, transfers = pairing.options, pairing.transfers
    users, loop_s = w.users, w.output_tokens * tpot_s
    delay = [t + loop_s + overhead for t in pairing.transfer_s]
    out: list[PrefillPool] = []
    shared = d_shape.owned > 0 or any(o.owned and o.shape.device.name == d_shape.device.name for o in options)
    for i, (o, transfer) in enumerate(zip(options, transfers)):
        if transfer is not None and (shared or not pairing.free[i]):  # owned GPUs are free up to their count: never pruned
            pool = _size(problem, w, max_ttft_s, o, transfer, d_shape, d_replicas, tpot_s, delay[i], overhead)
            if pool is not None:
                out.append(pool)
    if shared:
        return out
    rows = pairing.rows
    bounds: dict[int, list[float]] = {}
    for i in pairing.free_indices:
        # the fewest replicas the queue's saturation allows, N / ⌊1 + Z / S⌋: a lower bound on any TTFT target's
        most = min(max(math.floor(1 + delay[i] / max(pairing.capacity_s[i], 1e-300) + 1e-12), 1), users)
        fewest = math.ceil(users / most)
        bounds[i] = [fewest * y for y in rows[i]]
    kept: list[list[float]] = []
    for i in sorted(pairing.free_indices, key=bounds.__getitem__):
        b = bounds[i]
        if _dominated(b, kept):
            continue  # a pool already paired is at least as good as this one could be
        o, transfer = options[i], transfers[i]
        assert transfer is not None
        pool = _size(problem, w, max_ttft_s, o, transfer, d_shape, d_replicas, tpot_s, delay[i], overhead)
        if pool is None:
            continue
        vec = [pool.replicas * x for x in rows[i]]
        if _dominated(vec, kept):
            continue
        kept.append(vec)
        out.append(pool)
    return out


def _size(
    problem: Problem,
    w: Workload,
    max_ttft_s: float | None,
    o: _Option,
    transfer: KvTransfer,
    d_shape: Shape,
    d_replicas: int,
    tpot_s: float,
    delay_s: float,
    overhead_s: float,
) -> PrefillPool | None:
    sized = size_prefill_pool(w.users, o.service_s, o.servers, delay_s, transfer.time_s + tpot_s + overhead_s, max_ttft_s, TIME_TOLERANCE)
    if sized is None:
        return None
    x, per, wait = sized
    load = PrefillPoolLoad(per, o.service_s, o.service_s / max(1, o.servers), delay_s, wait, transfer.time_s, tpot_s, overhead_s)
    if not link_load_ok(w.users, load, transfer, x * o.shape.gpus_per_replica, d_replicas * d_shape.gpus_per_replica):
        return None
    return PrefillPool(o.shape, problem.physics(o.shape, o.workload), x, load, transfer)
