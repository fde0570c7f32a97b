"""Pareto frontiers: cost against TPOT, against TTFT, and against users served.

Epsilon-constraint on the CP-SAT model (DESIGN): minimise cost (ties: the metric,
then the plan's rank) subject to metric ≤ ε, then move ε just below the metric
found, warm-starting each solve with the last solution as a hint. Each point is
non-dominated by construction; the frontier ends when no plan is left.

The axis being traded is lifted from the spec's targets (the TPOT frontier ignores
max_tpot); every other target holds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from solver.candidates import Candidate, candidates
from solver.cpsat import _build, _solver, _status_name, prune
from solver.shapes import Problem
from solver.solve import plan_label, scenario_of

AXES = ("tpot", "ttft", "users")
MAX_POINTS = 200


@dataclass(frozen=True)
class ParetoPoint:
    axis: str
    candidate: Candidate
    cost_usd_per_hour: float
    value: float
    """TPOT or TTFT in seconds, or users served."""
    binds: str
    """What limits this point: why its metric is not better at this cost."""

    @property
    def label(self) -> str:
        return plan_label(self.candidate)


@dataclass
class Frontier:
    axis: str
    points: list[ParetoPoint] = field(default_factory=list)
    others: list[tuple[float, float, str]] = field(default_factory=list)
    """(cost, value, label) of the best plan of every other shape: the dominated options."""
    solve_s: float = 0.0


def _why(c: Candidate, axis: str, workload) -> str:
    """What limits this point's metric at its cost, in a few words."""
    d = c.shape.deployment
    if axis == "ttft":
        from solver.physics.prefill import estimate_prefill

        pre = estimate_prefill(d, workload)
        comm = pre.comm_time_s / pre.ttft_s if pre.ttft_s else 0.0
        return f"prefill {pre.bound}-bound on TP {d.tp}" + (f", {comm:.0%} all-reduce" if comm >= 0.1 else "")
    if axis == "users":
        cap = min(c.max_batch_memory, c.max_batch_tpot)
        return f"{c.replicas} replica(s) of ≤ {cap} users: batch capped by {c.caps}"
    dec = c.physics.decode
    mem, comp, comm = dec.memory_time_s(c.batch), dec.compute_time_s(c.batch), dec.comm_time_s(c.batch)
    text = f"decode {'bandwidth' if mem >= comp else 'compute'}-bound at batch {c.batch}"
    if comm / c.tpot_s >= 0.1:
        text += f", {comm / c.tpot_s:.0%} all-reduce"
    return text


def _latency_frontier(problem: Problem, axis: str) -> Frontier:
    s = scenario_of(problem)
    lifted = dataclasses.replace(s.targets, **{f"max_{axis}_s": None})
    cands = candidates(problem, s.workload, lifted, batch_variants=axis == "tpot")
    limits = dataclasses.replace(s.with_value(f"max_{axis}", None).limits(), **{f"max_{axis}_us": 10**12})
    cands = prune(cands, limits, "min_cost")
    cands = [c for c in cands if c.memory_excess <= 0 and c.interconnect_excess == 0]
    front = Frontier(axis)
    if not cands:
        return front
    metric = [c.tpot_us if axis == "tpot" else c.ttft_us for c in cands]
    # One rank encodes (cost, metric, tie-break): minimising it is lexicographic.
    order = sorted(range(len(cands)), key=lambda i: (cands[i].cost_cents, metric[i], cands[i].gpus, cands[i].shape.index, -cands[i].batch))
    rank = [0] * len(cands)
    for r, i in enumerate(order):
        rank[i] = r
    limits = dataclasses.replace(limits, **{f"max_{axis}_us": None})
    b = _build(cands, limits)
    m = b.model.new_int_var(0, max(metric), f"{axis}_us")
    b.model.add(m == sum(mi * xi for mi, xi in zip(metric, b.x)))
    b.model.minimize(sum(r * xi for r, xi in zip(rank, b.x)))
    prev = None
    total = 0.0
    while len(front.points) < MAX_POINTS:
        if prev is not None:
            b.model.clear_hints()
            b.model.add_hint(b.x[prev], 1)
        sv = _solver(problem.spec.solver.time_limit_s)
        status = _status_name(sv.solve(b.model))
        total += sv.wall_time
        if status not in ("optimal", "feasible"):
            break
        i = next(k for k, xi in enumerate(b.x) if sv.boolean_value(xi))
        c = cands[i]
        value = c.tpot_s if axis == "tpot" else c.ttft_s
        front.points.append(ParetoPoint(axis, c, c.cost_usd_per_hour, value, _why(c, axis, s.workload)))
        prev = i
        # ε moves just below the metric found (each bound tighter than the last).
        if metric[i] - 1 < 0:
            break
        b.model.add(m <= metric[i] - 1)
    front.solve_s = total
    on_front = {id(p.candidate) for p in front.points}
    best_per_shape: dict[int, Candidate] = {}
    for c in cands:
        cur = best_per_shape.get(c.shape.index)
        if id(c) not in on_front and (cur is None or c.cost_cents < cur.cost_cents):
            best_per_shape[c.shape.index] = c
    front.others = [
        (c.cost_usd_per_hour, c.tpot_s if axis == "tpot" else c.ttft_s, plan_label(c)) for c in best_per_shape.values()
    ]
    return front


def _users_frontier(problem: Problem) -> Frontier:
    """Cost against users served at the spec's latency targets: the least cost for
    the spec's users, then, step by step, the most users a cheaper fleet serves."""
    from ortools.sat.python import cp_model

    s = scenario_of(problem)
    users = s.workload.users
    base = [c for c in candidates(problem, s.workload, s.targets) if c.memory_excess <= 0 and c.interconnect_excess == 0]
    limits = s.limits()
    base = [c for c in base if (limits.max_tpot_us is None or c.tpot_us <= limits.max_tpot_us)
            and (limits.max_ttft_us is None or c.ttft_us <= limits.max_ttft_us)]
    front = Frontier("users")
    if not base:
        return front
    m = cp_model.CpModel()
    x = [m.new_bool_var(f"x{i}") for i in range(len(base))]
    m.add_exactly_one(x)
    caps = [max(1, min(c.max_batch_memory, c.max_batch_tpot)) for c in base]
    r = []
    rented = []
    for i, c in enumerate(base):
        top = -(-users // caps[i])
        ri = m.new_int_var(0, top, f"r{i}")
        m.add(ri <= top * x[i])
        m.add(ri >= x[i])
        r.append(ri)
        gpr = c.shape.gpus_per_replica
        rent = m.new_int_var(0, top * gpr, f"rent{i}")
        m.add(rent >= ri * gpr - c.shape.owned * x[i])
        rented.append(rent)
    price = [round((c.shape.device.price.usd_per_gpu_hour if c.shape.device.price else 0) * 100) for c in base]
    cost = m.new_int_var(0, sum(p * (-(-users // cap)) * c.shape.gpus_per_replica for p, cap, c in zip(price, caps, base)), "cost")
    m.add(cost == sum(p * rent for p, rent in zip(price, rented)))
    served = m.new_int_var(0, max(cap * (-(-users // cap)) for cap in caps), "served")
    m.add(served <= sum(cap * ri for cap, ri in zip(caps, r)))
    m.add(served <= users)
    # First point: the spec's users at least cost; then cheaper and cheaper fleets.
    m.add(served >= 1)
    first = m.new_bool_var("first")
    m.add(served >= users).only_enforce_if(first)
    m.add_assumptions([first])
    big = users + 1
    m.minimize(cost * big - served)
    total = 0.0
    while len(front.points) < MAX_POINTS:
        sv = _solver(problem.spec.solver.time_limit_s)
        status = _status_name(sv.solve(m))
        total += sv.wall_time
        if status not in ("optimal", "feasible"):
            break
        i = next(k for k, xi in enumerate(x) if sv.boolean_value(xi))
        reps = sv.value(r[i])
        c = base[i]
        batch = -(-sv.value(served) // reps)
        chosen = dataclasses.replace(c, replicas=reps, batch=batch, users=sv.value(served), tpot_s=c.physics.decode.tpot_s(batch))
        front.points.append(ParetoPoint("users", chosen, sv.value(cost) / 100, float(sv.value(served)), _why(chosen, "users", s.workload)))
        c_now = sv.value(cost)
        if c_now == 0:
            break
        m.clear_hints()
        for k, xi in enumerate(x):
            m.add_hint(xi, k == i)
        m.clear_assumptions()
        m.add(cost <= c_now - 1)
        m.maximize(served * (10**9) - cost)
    front.solve_s = total
    return front


def frontiers(problem: Problem, axes=AXES) -> dict[str, Frontier]:
    out = {}
    for axis in axes:
        out[axis] = _users_frontier(problem) if axis == "users" else _latency_frontier(problem, axis)
    return out
