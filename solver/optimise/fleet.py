"""`plan-opt fleet`: several workloads served by one fleet of (possibly) several GPU
types, within budgets, quotas and what is already owned.

Each workload — or each request-size class of a workload's mix (Mélange, arXiv
2404.14527: short and long prompts are cheapest on different GPUs) — gets replicas
of its own. Per (class, shape) the foundation's physics gives the users one replica
holds at the class's targets (the same caps as `solve`); CP-SAT then chooses integer
replica counts:

    served_k ≤ Σ_s r_ks · cap_ks            (memory and TPOT, through the caps)
    gpus_t   = Σ_{k, s on t} r_ks · gpus_s   rented_t ≥ gpus_t − Σ o_ks · gpus_s, rented_t ≤ quota_t
    o_ks ≤ r_ks, Σ_{k, s on t} o_ks · gpus_s ≤ owned_t   (owned GPUs in whole replicas)
    cost     = Σ_t rented_t · price_t ≤ budget; purchase likewise
    min_cost: served_k = demand_k, minimise cost (then GPUs)
    max_served: maximise Σ_k priority_k · served_k / demand of k's service, then least cost
    single_shape: r_ks ≤ top_ks · use_ks, Σ_s use_ks ≤ 1   (one shape per service)
    last tie-break: fewest shapes per service (Σ use_ks)

A service left free to mix shapes may come out on two (a TP 1 replica beside a TP 2
one is often cheapest); it then needs a weighted router, and `routes` gives the weights.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from solver.catalog import Device
from solver.optimise.clock import SolverClock
from solver.optimise.fleet_classes import ServiceClass
from solver.optimise.fleet_decompose import add_service_bounds
from solver.optimise.fleet_hint import greedy
from solver.optimise.fleet_prune import fleet_limits, prune
from solver.optimise.fleet_result import Assignment, FleetResult, Route, at_load, binds, routes
from solver.physics.costs import gpu_hour_costs
from solver.spec.fleet_spec import FleetSpec

if TYPE_CHECKING:
    from solver.optimise.cpsat import cp_model

__all__ = ["Assignment", "FleetResult", "Route", "routes", "solve_fleet", "sweep"]


SHARE_SCALE = 1_000_000
"""max_served counts each service's served share in millionths."""


def _shares(m: cp_model.CpModel, classes: list[ServiceClass], served: dict[int, cp_model.IntVar]) -> list[tuple[ServiceClass, cp_model.IntVar]]:
    """Per class, its part of its service's served share: share · D ≤ served · SHARE_SCALE,
    D the demand of the whole service (all its classes), so a service's classes sum to
    its share."""
    demand: dict[str, int] = {}
    for sc in classes:
        demand[sc.workload] = demand.get(sc.workload, 0) + sc.demand
    out = []
    for k, sc in enumerate(classes):
        share = m.new_int_var(0, SHARE_SCALE, f"share_{k}")
        m.add(share * max(1, demand[sc.workload]) <= served[k] * SHARE_SCALE)
        out.append((sc, share))
    return out


GAP_LIMIT = 0.001
"""Where the fleet is too large for one weighted objective (a hundred services), CP-SAT
stops its search for the least cost within 0.1 % of its proven bound (the answer says
so, with the gap). On bench/bench_fleet.py's hundred it stopped 0.04 % short of its
proof until the services' least costs alone, summed, bounded the cost itself
(fleet_decompose.py): it now proves the cost optimal, in 0.31 of CP-SAT's deterministic
seconds instead of 0.75."""

MIN_TIE_BREAK_WORK = 0.2
MAX_TIE_BREAK_WORK = 1.0
"""The tie-breaks' deterministic work (CP-SAT's units, about a second each on these
machines): what the cost's proof took, within these."""

MAX_OBJECTIVE = 2**62
"""CP-SAT's objective coefficients and values are 64-bit integers; a weighted objective
is kept below this."""


def _rehint(m: cp_model.CpModel, sv: cp_model.CpSolver, variables: list[cp_model.IntVar]) -> None:
    """Start the next stage from the plan the last one found."""
    m.clear_hints()
    for v in variables:
        m.add_hint(v, sv.value(v))


def _proven(result: FleetResult, status: str, value: float, bound: float, of: str, scale: float = 1.0) -> None:
    """The primary objective's proof: none needed at OPTIMAL; else its best bound and
    the relative gap |value − bound| / max(|value|, |bound|)."""
    result.solver_status = status.upper()
    if status == "optimal" and value == bound:  # OPTIMAL within a gap limit is not a proof
        return
    result.bound = bound / scale
    result.bound_of = of
    result.gap = abs(value - bound) / max(abs(value), abs(bound), 1e-9)


def solve_fleet(
    fs: FleetSpec, classes: list[ServiceClass], *, max_usd_per_hour: float | None = None, clock: SolverClock | None = None
) -> FleetResult:
    from solver.optimise.cpsat import cp_model
    from solver.optimise.model import new_solver, status_name

    clock = clock or SolverClock(fs.solver.time_limit_s)
    budget_hour = max_usd_per_hour if max_usd_per_hour is not None else fs.budget.max_usd_per_hour
    objective = fs.objective
    result = FleetResult("unknown", objective)
    notes: list[str] = []
    m = cp_model.CpModel()
    devices: dict[str, Device] = {}
    for sc in classes:
        for o in sc.options:
            devices.setdefault(o.device, sc.problem.shapes[o.shape_index].device)
    limits, owned, quota = fleet_limits(fs)
    options = [prune(sc.options, devices, limits, sc.demand) for sc in classes]  # fleet_prune.py: the optimum is unchanged
    result.options_before = sum(len(sc.options) for sc in classes)
    result.options_after = sum(len(x) for x in options)
    r: dict[tuple[int, int], cp_model.IntVar] = {}
    served: dict[int, cp_model.IntVar] = {}
    shapes_used: list[cp_model.IntVar] = []
    uses: dict[tuple[int, int], cp_model.IntVar] = {}
    quality_terms: list[tuple[int, cp_model.IntVar]] = []  # (lost quality of an option, its use literal)
    for k, sc in enumerate(classes):
        result.demand[sc.name] = sc.demand
        result.batching[sc.name] = sc.problem.workload.batching
        if sc.rate:
            result.rate_services.add(sc.name)
        if not sc.options:
            result.unservable[sc.name] = sc.why_none
        terms: list[cp_model.LinearExpr] = []
        for j, o in enumerate(options[k]):
            top = -(-sc.demand // o.cap)
            r[k, j] = m.new_int_var(0, top, f"r_{k}_{j}")
            terms.append(o.cap * r[k, j])
        if len(options[k]) > 1:
            # A use literal per option; replicas only where it is on. single_shape: at most one on.
            use = [m.new_bool_var(f"use_{k}_{j}") for j in range(len(options[k]))]
            uses.update(((k, j), u) for j, u in enumerate(use))
            for j, o in enumerate(options[k]):
                m.add(r[k, j] <= (-(-sc.demand // o.cap)) * use[j])
            shapes_used += use
            for j, o in enumerate(options[k]):
                quality_terms.append((200 - o.quality, use[j]))
            if sc.single_shape:
                m.add_at_most_one(use).with_name(f"single shape for {sc.name}")
        served[k] = m.new_int_var(0, sc.demand, f"served_{k}")
        m.add(served[k] <= sum(terms) if terms else served[k] == 0).with_name(f"capacity of {sc.name}")
        if objective == "min_cost":
            m.add(served[k] == sc.demand).with_name(f"demand of {sc.name}")
    gpus, rented, cost_terms, purchase_terms, uppers = {}, {}, [], [], {}
    owns: dict[tuple[int, int], cp_model.IntVar] = {}
    for dev_name, dev in devices.items():
        total = sum(o.gpus_per_replica * r[k, j] for k, sc in enumerate(classes) for j, o in enumerate(options[k]) if o.device == dev_name)
        upper = sum(o.gpus_per_replica * (-(-sc.demand // o.cap)) for k, sc in enumerate(classes) for o in options[k] if o.device == dev_name)
        uppers[dev_name] = upper
        gpus[dev_name] = m.new_int_var(0, upper, f"gpus_{dev_name}")
        m.add(gpus[dev_name] == total)
        rented[dev_name] = m.new_int_var(0, upper, f"rented_{dev_name}")
        # Owned GPUs count in whole replicas (a TP group is all owned or all rented, as
        # solve's: physics/costs.owned_in_use): owned replicas per option, within its
        # replicas, their GPUs within the inventory.
        have = owned.get(dev_name, 0)
        owned_terms = []
        for k, sc in enumerate(classes):
            for j, o in enumerate(options[k]):
                if o.device == dev_name and have >= o.gpus_per_replica:
                    own = owns[k, j] = m.new_int_var(0, min(have // o.gpus_per_replica, -(-sc.demand // o.cap)), f"own_{k}_{j}")
                    m.add(own <= r[k, j])
                    owned_terms.append(o.gpus_per_replica * own)
        if owned_terms:
            m.add(sum(owned_terms) <= have).with_name(f"inventory {dev_name}")
        m.add(rented[dev_name] >= gpus[dev_name] - (sum(owned_terms) if owned_terms else 0))
        if dev_name in quota:
            m.add(rented[dev_name] <= quota[dev_name]).with_name(f"quota {dev_name}")
        price = round(dev.price.usd_per_gpu_hour * 100) if dev.price else None
        if price is None:  # never rented for free: owned (in whole replicas) or not at all
            m.add(rented[dev_name] == 0).with_name(f"no price for {dev_name}")
        else:
            cost_terms.append(price * rented[dev_name])
        if dev.purchase_usd:
            purchase_terms.append(round(dev.purchase_usd) * rented[dev_name])
        elif fs.budget.max_purchase_usd is not None and dev_name not in owned:
            m.add(rented[dev_name] == 0)
    cost = sum(cost_terms) if cost_terms else 0
    if objective == "min_cost":  # each service's least cost alone: a row per service (fleet_decompose.py)
        add_service_bounds(m, classes, options, r, owns, devices, owned, quota, cost)
    if budget_hour is not None:
        m.add(cost <= math.floor(budget_hour * 100 + 1e-9)).with_name("budget per hour")
    if fs.budget.max_purchase_usd is not None and purchase_terms:
        m.add(sum(purchase_terms) <= math.floor(fs.budget.max_purchase_usd + 1e-9)).with_name("purchase budget")
    if fs.search.max_gpus is not None:
        m.add(sum(gpus.values()) <= fs.search.max_gpus).with_name("max_gpus")
    total_gpus = sum(gpus.values()) if gpus else 0
    gpu_bound = sum(uppers.values()) + 1
    budget_cents = math.floor(budget_hour * 100 + 1e-9) if budget_hour is not None else None
    plan = greedy(classes, options, devices, owned, quota, budget_cents, fs.search.max_gpus)
    hint_vars = [*r.values(), *owns.values(), *uses.values(), *served.values(), *gpus.values(), *rented.values()]
    for (k, j), var in r.items():
        m.add_hint(var, plan.replicas.get((k, j), 0))
    for (k, j), var in owns.items():
        m.add_hint(var, plan.owned.get((k, j), 0))
    for (k, j), var in uses.items():
        m.add_hint(var, 1 if plan.replicas.get((k, j), 0) else 0)
    for k, var in served.items():
        m.add_hint(var, plan.served.get(k, 0))
    for d in devices:
        n = sum(v * options[k][j].gpus_per_replica for (k, j), v in plan.replicas.items() if options[k][j].device == d)
        mine = sum(v * options[k][j].gpus_per_replica for (k, j), v in plan.owned.items() if options[k][j].device == d)
        m.add_hint(gpus[d], n)
        m.add_hint(rented[d], n - mine)

    def fleet_solver() -> cp_model.CpSolver:
        # Integer replica counts coupled by shared budgets: CP-SAT's full LP relaxation
        # (linearization level 2) proves these in a fraction of a second where the
        # default level runs out of time (measured on the 10-workload benchmark).
        sv = new_solver(clock)
        sv.parameters.linearization_level = 2
        return sv

    sv = fleet_solver()
    if objective == "max_served":
        # Lexicographic: the most priority-weighted served share first, then the least
        # cost for it. A share (served / the service's demand, in millionths, rounded
        # down) has no unit, so a user and a request per second never trade at an
        # exchange rate (1 req/s counted as 1,000 users before); and a larger budget only
        # widens the choice, so the weighted share it serves never falls.
        weighted = sum(round(sc.priority * 1000) * var for sc, var in _shares(m, classes, served))
        m.maximize(weighted)
        first = status_name(sv.solve(m))
        result.wall_s += sv.wall_time
        if first not in ("optimal", "feasible"):
            result.status = first
            return result
        _proven(result, first, sv.objective_value, sv.best_objective_bound, "priority-weighted served share", 1000 * SHARE_SCALE)
        m.add(weighted >= round(sv.objective_value))
        _rehint(m, sv, hint_vars)
        sv = fleet_solver()
    # Last tie-break: fewer shapes per service, so a split (and its weighted router) is
    # chosen only when it saves money or GPUs. In one weighted objective: a second,
    # lexicographic solve took CP-SAT twice as long on the 10-workload benchmark.
    shape_bound = len(shapes_used) + 1
    # At equal cost, the better weight and KV formats (catalogs/precisions.yaml
    # quality_rank), as solve's prefer: quality: the quality a used option gives up.
    lost = sum(q * u for q, u in quality_terms) if quality_terms else 0
    quality_bound = sum(q for q, _ in quality_terms) + 1
    tie_breaks = (lost * gpu_bound + total_gpus) * shape_bound + sum(shapes_used)
    tie_bound = (quality_bound * gpu_bound) * shape_bound
    cost_bound = sum(round(dev.price.usd_per_gpu_hour * 100) * uppers[n] for n, dev in devices.items() if dev.price) + 1
    primary = objective == "min_cost"  # the cost is the objective proven (max_served: its second stage)
    if cost_bound * tie_bound < MAX_OBJECTIVE:
        m.minimize(cost * tie_bound + tie_breaks)
        result.status = status_name(sv.solve(m))
        result.wall_s += sv.wall_time
        if primary and result.feasible:  # the cost's bound: the weighted bound over the tie-breaks' weight, rounded down
            _proven(result, result.status, sv.objective_value // tie_bound / 100, sv.best_objective_bound // tie_bound / 100, "cost_usd_per_hour")
    else:
        # One weighted objective would overflow CP-SAT's 64-bit integers (a huge
        # demand, or a hundred services): the cost first, then the tie-breaks at that
        # cost, started from the cost's plan (at worst it stays). The cost's search
        # stops within GAP_LIMIT of its bound, which the answer then states.
        m.minimize(cost)
        sv.parameters.relative_gap_limit = GAP_LIMIT
        result.status = status_name(sv.solve(m))
        result.wall_s += sv.wall_time
        if primary and result.feasible:
            _proven(result, result.status, sv.objective_value / 100, sv.best_objective_bound / 100, "cost_usd_per_hour")
        if result.feasible and tie_bound < MAX_OBJECTIVE:
            m.add(cost <= round(sv.objective_value))
            _rehint(m, sv, hint_vars)
            first_plan = sv
            sv = fleet_solver()
            # The tie-breaks at the least cost get as much deterministic work as the
            # cost took, within bounds (the same answer on any machine): on a hundred
            # services CP-SAT can spend its whole limit on them.
            sv.parameters.max_deterministic_time = min(MAX_TIE_BREAK_WORK, max(MIN_TIE_BREAK_WORK, first_plan.deterministic_time))
            m.minimize(tie_breaks)
            second = status_name(sv.solve(m))
            result.wall_s += sv.wall_time
            if second not in ("optimal", "feasible"):
                sv = first_plan  # the cost's plan, its tie-breaks unranked
            if second != "optimal":
                notes.append("tie-breaks at the least cost (formats, GPUs, shapes): the best found in the time limit, not proven")
    if not result.feasible:
        return result
    if result.gap is not None:
        result.status = "feasible"
    problem = classes[0].problem if classes else None
    ownership = problem.ownership if problem else None
    result.pricing = problem.pricing.label() if problem and problem.pricing else ""
    for k, sc in enumerate(classes):
        result.served[sc.name] = sv.value(served[k])
        for j, o in enumerate(options[k]):
            n = sv.value(r[k, j])
            if n:
                owned_gpus = int(sv.value(owns[k, j])) * o.gpus_per_replica if (k, j) in owns else 0
                result.assignments.append(Assignment(sc.name, sc.workload, o, n, owned_gpus=owned_gpus))
    for d, dev in devices.items():
        g = sv.value(gpus[d])
        if g:
            result.gpus[d] = g
            result.rented[d] = sv.value(rented[d])
            result.owned_used[d] = g - result.rented[d]
            p = dev.price
            hourly = p.usd_per_gpu_hour if p else 0.0
            result.cost_usd_per_hour += result.rented[d] * hourly
            result.purchase_usd += result.rented[d] * (dev.purchase_usd or 0.0)
            running = gpu_hour_costs(dev, ownership).running_usd if ownership else 0.0
            if result.rented[d] and p:
                result.offers[d] = f"{p.provider}, {p.offer}, ${p.usd_per_gpu_hour:,.2f}/GPU-hour ({p.as_of})"
            result.tco_usd_per_hour += result.owned_used[d] * running + result.rented[d] * hourly
    result.routes = routes(classes, result)
    result.assignments = [at_load(classes, result, a) for a in result.assignments]
    result.binds = binds(fs, classes, result, devices, owned, quota, budget_hour) + notes
    return result


def sweep(fs: FleetSpec, classes: list[ServiceClass], budgets: list[float]) -> list[tuple[float, FleetResult]]:
    """What each budget buys, screened only (rate services not simulated): the CLI
    sweeps with fleet_traffic.sweep_verified."""
    swept = fs.model_copy(update={"objective": "max_served"})
    clock = SolverClock(fs.solver.time_limit_s)  # the whole sweep shares one command's time
    return [(b, solve_fleet(swept, classes, max_usd_per_hour=b, clock=clock)) for b in budgets]
