"""Pareto frontiers: cost against TPOT, against TTFT, and against users served.

Epsilon-constraint on the CP-SAT model (DESIGN): minimise cost (ties: the metric,
then the plan's rank) subject to metric ≤ ε, then move ε just below the metric
found, warm-starting each solve with the last solution as a hint. Each point is
non-dominated by construction; the frontier ends when no plan is left.

The axis being traded is lifted from the spec's targets (the TPOT frontier ignores
max_tpot); every other target holds.

Two cuts keep a frontier to plans someone would buy: the latency frontiers stop at
`pareto.max_cost_ratio` × their cheapest plan (default 10), and every frontier keeps
to `search.max_gpus` (default 512). Each frontier says where it was cut, and which
of its points is the knee (`knee`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from solver.optimise.candidate import Candidate
from solver.optimise.candidates import candidates
from solver.optimise.enumerate import meets
from solver.optimise.model import build_model, new_solver, prune, status_name
from solver.optimise.problem import Problem
from solver.optimise.rate_checks import RATE_TOLERANCE, per_replica_rate, simulation_misses
from solver.optimise.scenario import plan_label, scenario_of
from solver.optimise.targets import CAPPED
from solver.physics.deployment import Workload
from solver.spec.solve_spec import DEFAULT_MAX_GPUS

MAX_POINTS = 200
KNEE_MIN_DEPTH = 0.05
"""How far below the chord (normalised units) a point must lie to be called the knee."""


@dataclass(frozen=True)
class ParetoPoint:
    axis: str
    candidate: Candidate
    cost_usd_per_hour: float
    value: float
    """TPOT or TTFT in seconds, users served, or requests per second served."""
    binds: str
    """What limits this point: why its metric is not better at this cost."""
    simulated: tuple[str, ...] | None = None
    """Rate axis, a point at the spec's rate: the targets its simulation misses over
    SEEDS seeds (() passes); None: priced from the screen alone, not simulated."""

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
    knee: int | None = None
    """Index in `points` of the knee (see `knee_index`), None when the frontier has none."""
    max_cost_ratio: float | None = None
    max_cost_usd_per_hour: float | None = None
    """The cost cap this frontier stopped at: max_cost_ratio × its cheapest paid plan."""
    beyond: ParetoPoint | None = None
    """The next frontier point, the first the cost cap left out (None: nothing was cut)."""
    max_gpus: int | None = None
    max_gpus_default: bool = False
    gpu_capped: bool = False
    """A plan better on the axis exists beyond max_gpus (the frontier would go on)."""
    out_of_time: bool = False
    """The command's CP-SAT time ran out before the frontier ended (optimise/clock.py)."""
    batching: str = ""
    """The batching every point's TPOT and TTFT assume (the problem's workload)."""

    @property
    def knee_point(self) -> ParetoPoint | None:
        return None if self.knee is None else self.points[self.knee]


def knee_index(points: list[tuple[float, float]]) -> int | None:
    """The knee of a frontier of (cost, badness) pairs, both to be minimised, in order.

    Definition (the Kneedle idea, Satopää et al., ICDCS workshops 2011): map both axes
    to logarithms, normalise each to [0, 1] over the frontier, and take the point
    farthest below the chord joining the two ends. Logs, because a step from $2 to $4
    is worth what one from $200 to $400 is, and 40 → 20 ms what 4 → 2 ms is; normalising
    makes the answer free of units. The chord runs from (0, 1) to (1, 0), so the
    distance below it is (1 − x − y)/√2: the knee is the point of least x + y, where
    the latency bought stops repaying the money. A frontier that is straight in log-log
    space (every point within KNEE_MIN_DEPTH of the chord) or bends the other way has
    no knee; nor has one of fewer than three points. An axis with a zero (free owned
    GPUs) is normalised linearly. The knee is of the frontier shown, after its cuts."""
    if len(points) < 3:
        return None

    def norm(vals: list[float]) -> list[float] | None:
        vs = [math.log(v) for v in vals] if all(v > 0 for v in vals) else list(vals)
        lo, hi = min(vs), max(vs)
        return None if hi - lo <= 0 else [(v - lo) / (hi - lo) for v in vs]

    xs, ys = norm([p[0] for p in points]), norm([p[1] for p in points])
    if xs is None or ys is None:
        return None
    depth = [(1 - x - y) / math.sqrt(2) for x, y in zip(xs, ys)]
    best = max(range(len(points)), key=lambda i: (depth[i], -i))
    return best if depth[best] >= KNEE_MIN_DEPTH else None


def _gpu_cap(problem: Problem) -> tuple[int, bool]:
    """search.max_gpus, or its default; and whether it is the default."""
    return (problem.max_gpus, False) if problem.max_gpus is not None else (DEFAULT_MAX_GPUS, True)


def _why(c: Candidate, axis: str, workload: Workload, per_replica: float | None = None) -> str:
    """What limits this point's metric at its cost, in a few words."""
    d = c.shape.deployment
    if axis == "ttft":
        from solver.physics.prefill import estimate_prefill

        pre = estimate_prefill(d, workload)
        comm = pre.comm_time_s / pre.ttft_s if pre.ttft_s else 0.0
        return f"prefill {pre.bound}-bound on TP {d.tp}" + (f", {comm:.0%} all-reduce" if comm >= 0.1 else "")
    if axis == "users":
        return f"{c.replicas} replica(s) of ≤ {c.capacity.users} users: batch capped by {CAPPED[c.caps]}"
    if axis == "rate":
        assert c.traffic is not None  # the rate frontier is built of traffic candidates
        sus = c.traffic.sustainable
        each = sus.rate_per_s if per_replica is None else per_replica
        return f"{c.replicas} replica(s) of ≤ {each:,.3g} requests/s: each bound by {c.traffic.binding_target}"
    dec = c.decode
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
    gpu_cap, gpu_default = _gpu_cap(problem)
    limits = dataclasses.replace(limits, max_gpus=gpu_cap)
    # Over the GPU cap, out of memory or over the interconnect, a candidate is never on
    # the frontier; dropping such plans first keeps pruning small (and is exact: what
    # dominates a feasible plan is feasible too). gpu_capped below still sees them all.
    every = cands
    cands = [c for c in cands if c.gpus <= gpu_cap and c.memory_excess <= 0 and c.interconnect_excess == 0]
    cands = prune(cands, limits, "min_cost")
    cands = [c for c in cands if c.memory_excess <= 0 and c.interconnect_excess == 0]
    ratio = problem.spec.pareto.max_cost_ratio
    front = Frontier(axis, max_cost_ratio=ratio, max_gpus=gpu_cap, max_gpus_default=gpu_default)
    if not cands:
        return front
    metric = [c.tpot_us if axis == "tpot" else c.ttft_us for c in cands]
    # One rank encodes (cost, metric, tie-break): minimising it is lexicographic.
    order = sorted(range(len(cands)), key=lambda i: (cands[i].cost_cents, metric[i], cands[i].gpus, cands[i].shape.index, -cands[i].batch))
    rank = [0] * len(cands)
    for r, i in enumerate(order):
        rank[i] = r
    limits = dataclasses.replace(limits, **{f"max_{axis}_us": None})
    b = build_model(cands, limits)
    m = b.model.new_int_var(0, max(metric), f"{axis}_us")
    b.model.add(m == sum(mi * xi for mi, xi in zip(metric, b.x)))
    b.model.minimize(sum(r * xi for r, xi in zip(rank, b.x)))
    prev = None
    total = 0.0
    while len(front.points) < MAX_POINTS:
        if prev is not None:
            b.model.clear_hints()
            b.model.add_hint(b.x[prev], 1)
        if problem.clock.run_out:
            front.out_of_time = True
            break
        sv = new_solver(problem.clock)
        status = status_name(sv.solve(b.model))
        total += sv.wall_time
        if status not in ("optimal", "feasible"):
            break
        i = next(k for k, xi in enumerate(b.x) if sv.boolean_value(xi))
        c = cands[i]
        value = c.tpot_s if axis == "tpot" else c.ttft_s
        point = ParetoPoint(axis, c, c.cost_usd_per_hour, value, _why(c, axis, s.workload))
        if front.max_cost_usd_per_hour is not None and c.cost_usd_per_hour > front.max_cost_usd_per_hour + 1e-9:
            front.beyond = point  # costs rise along the frontier: every later point is dearer still
            break
        front.points.append(point)
        if ratio is not None and front.max_cost_usd_per_hour is None and c.cost_usd_per_hour > 0:
            front.max_cost_usd_per_hour = ratio * c.cost_usd_per_hour
        prev = i
        # ε moves just below the metric found (each bound tighter than the last).
        if metric[i] - 1 < 0:
            break
        b.model.add(m <= metric[i] - 1)
    front.solve_s = total
    if front.beyond is None and front.points:
        # Ended for want of a plan: would one beyond max_gpus have gone on?
        last = front.points[-1].candidate
        last_metric = last.tpot_us if axis == "tpot" else last.ttft_us
        no_cap = dataclasses.replace(limits, max_gpus=None)
        front.gpu_capped = any(
            c.gpus > gpu_cap
            and (c.tpot_us if axis == "tpot" else c.ttft_us) < last_metric
            and meets(c, no_cap)
            and (front.max_cost_usd_per_hour is None or c.cost_usd_per_hour <= front.max_cost_usd_per_hour + 1e-9)
            for c in every
        )
    front.knee = knee_index([(p.cost_usd_per_hour, p.value) for p in front.points])
    on_front = {id(p.candidate) for p in front.points}
    best_per_shape: dict[int, Candidate] = {}
    for c in cands:
        cur = best_per_shape.get(c.shape.index)
        if id(c) not in on_front and (cur is None or c.cost_cents < cur.cost_cents):
            best_per_shape[c.shape.index] = c
    front.others = [(c.cost_usd_per_hour, c.tpot_s if axis == "tpot" else c.ttft_s, plan_label(c)) for c in best_per_shape.values()]
    return front


def _users_frontier(problem: Problem) -> Frontier:
    """Cost against users served at the spec's latency targets: the least cost for
    the spec's users, then, step by step, the most users a cheaper fleet serves."""
    from solver.optimise.cpsat import cp_model

    s = scenario_of(problem)
    users = s.workload.users
    base = [c for c in candidates(problem, s.workload, s.targets) if c.memory_excess <= 0 and c.interconnect_excess == 0]
    limits = s.limits()
    base = [
        c
        for c in base
        if (limits.max_tpot_us is None or c.tpot_us <= limits.max_tpot_us) and (limits.max_ttft_us is None or c.ttft_us <= limits.max_ttft_us)
    ]
    gpu_cap, gpu_default = _gpu_cap(problem)
    # No cost cap here: the dearest point is the spec's own demand, and the rest are cheaper.
    front = Frontier("users", max_gpus=gpu_cap, max_gpus_default=gpu_default)
    if not base:
        return front
    m = cp_model.CpModel()
    x = [m.new_bool_var(f"x{i}") for i in range(len(base))]
    m.add_exactly_one(x)
    caps = [max(1, c.capacity.users) for c in base]  # every target at once, as solve's and fleet's (optimise/capacity.py)
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
        m.add(rent >= ri * gpr - c.shape.owned_usable * x[i])
        rented.append(rent)
    price = [round((c.shape.device.price.usd_per_gpu_hour if c.shape.device.price else 0) * 100) for c in base]
    cost = m.new_int_var(0, sum(p * (-(-users // cap)) * c.shape.gpus_per_replica for p, cap, c in zip(price, caps, base)), "cost")
    m.add(cost == sum(p * rent for p, rent in zip(price, rented)))
    m.add(sum(c.shape.gpus_per_replica * ri for c, ri in zip(base, r)) <= gpu_cap).with_name("max_gpus")
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
        if problem.clock.run_out:
            front.out_of_time = True
            break
        sv = new_solver(problem.clock)
        status = status_name(sv.solve(m))
        total += sv.wall_time
        if status == "infeasible" and not front.points and not front.gpu_capped:
            # The spec's users need more than max_gpus: start from the most it allows.
            front.gpu_capped = True
            m.clear_assumptions()
            m.maximize(served * (10**9) - cost)
            continue
        if status not in ("optimal", "feasible"):
            break
        i = next(k for k, xi in enumerate(x) if sv.boolean_value(xi))
        reps = sv.value(r[i])
        c = base[i]
        batch = -(-sv.value(served) // reps)
        chosen = dataclasses.replace(c, replicas=reps, batch=batch, users=sv.value(served), tpot_s=c.decode.tpot_s(batch))
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
    front.knee = knee_index([(p.cost_usd_per_hour, 1 / p.value) for p in front.points])
    return front


def _rate_frontier(problem: Problem) -> Frontier:
    """Cost against requests per second served within the spec's percentile targets:
    the least cost for the spec's rate, then the most a cheaper fleet serves. A plan is
    replicas of one shape, each sustaining the screen's rate (`sustainable_rate`), so the
    frontier is the upper staircase of every shape's (replicas × price, replicas × rate)."""
    s = scenario_of(problem)
    w = s.workload
    assert w.traffic is not None  # the CLI offers this axis under requests_per_s only
    target = w.traffic.requests_per_s
    gpu_cap, gpu_default = _gpu_cap(problem)
    front = Frontier("rate", max_gpus=gpu_cap, max_gpus_default=gpu_default)
    options: list[tuple[float, float, Candidate, float]] = []
    for c in candidates(problem, w, s.targets):
        if c.traffic is None or c.memory_excess > 0 or c.interconnect_excess != 0:
            continue
        per = c.traffic.sustainable.rate_per_s
        if per <= 0:
            continue
        price = c.shape.device.price.usd_per_gpu_hour if c.shape.device.price else 0.0
        # bursty arrivals: r replicas each sustain more than one alone (per_replica_rate);
        # the candidate's replicas are then the fewest that carry the rate
        top = min(math.ceil(target / per - 1e-9) if w.traffic.arrival_cv == 1 else c.replicas, gpu_cap // c.shape.gpus_per_replica)
        # the frontier keeps its MAX_POINTS dearest steps: a shape's cheaper counts below
        # its MAX_POINTS largest never reach them (tens of thousands under a large max_gpus)
        for r in range(max(1, top - MAX_POINTS + 1), top + 1):
            plan = dataclasses.replace(c, replicas=r)
            cost = price * max(0, r * c.shape.gpus_per_replica - c.shape.owned_usable)
            each = per_replica_rate(problem, c, w, s.targets, r)
            options.append((cost, min(target, r * each), plan, each))
    best = -1.0
    for cost, served, plan, each in sorted(options, key=lambda o: (o[0], -o[1])):
        if served > best * (1 + 1e-9):
            front.points.append(ParetoPoint("rate", plan, cost, served, _why(plan, "rate", w, each)))
            best = served
    front.points = front.points[-MAX_POINTS:][::-1]  # the spec's rate first, then cheaper fleets
    front.points = [
        dataclasses.replace(p, simulated=simulation_misses(problem, p.candidate, w, s.targets)) if p.value >= target * (1 - RATE_TOLERANCE) else p
        for p in front.points
    ]
    front.knee = knee_index([(p.cost_usd_per_hour, 1 / p.value) for p in front.points])
    return front


def frontiers(problem: Problem, axes: Iterable[str] | None = None) -> dict[str, Frontier]:
    """The frontiers asked for; by default the latency ones and users (a users
    workload) or rate (a workload in requests per second)."""
    if axes is None:
        axes = ("tpot", "ttft", "rate" if problem.workload.traffic is not None else "users")
    out: dict[str, Frontier] = {}
    for axis in axes:
        if axis == "users":
            out[axis] = _users_frontier(problem)
        elif axis == "rate":
            out[axis] = _rate_frontier(problem)
        else:
            out[axis] = _latency_frontier(problem, axis)
        out[axis].batching = problem.workload.batching
    return out
