"""A solved fleet: its assignments, what each replica carries and at what latency,
the router weights of a service split over shapes, and what holds the answer."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from solver.catalog import Device
from solver.optimise.capacity import latencies_at
from solver.optimise.fleet_classes import ServiceClass
from solver.optimise.fleet_options import RATE_SCALE, Option
from solver.optimise.targets import CAPPED
from solver.optimise.traffic_candidates import rate_latencies_at
from solver.spec.fleet_spec import FleetSpec


@dataclass(frozen=True)
class Assignment:
    service: str
    workload: str
    option: Option
    replicas: int
    carried: int = 0
    """What its replicas carry in all (users, or thousandths of a request per second)."""
    owned_gpus: int = 0
    """Of its GPUs, those owned: whole replicas (the model's owned replicas of it)."""
    tpot_s: float = 0.0
    ttft_s: float = 0.0
    """TPOT and TTFT at the load each replica carries (optimise/capacity.py), not at its cap."""

    @property
    def load(self) -> int:
        """Users per replica at most (a rate service: thousandths of a request per second)."""
        return -(-self.carried // self.replicas) if self.replicas else 0


@dataclass(frozen=True)
class Route:
    """One shape's part of a service that runs on several: what a router sends it."""

    service: str
    plan: str
    replicas: int
    users: int
    """Concurrent users this shape holds (all its replicas)."""
    users_share: float
    """Share of the service's concurrent users: the weight for a router that balances connections."""
    request_share: float
    """Share of the service's requests: the weight for a router that deals requests out."""


@dataclass
class FleetResult:
    status: str
    objective: str
    assignments: list[Assignment] = field(default_factory=list)
    served: dict[str, int] = field(default_factory=dict)
    demand: dict[str, int] = field(default_factory=dict)
    rate_services: set[str] = field(default_factory=set)
    batching: dict[str, str] = field(default_factory=dict)
    """Per service: the batching its TPOT and TTFT assume (its workload's)."""
    """Services given in requests per second: their served, demand and caps are in
    thousandths of a request per second (fleet_classes.RATE_SCALE)."""
    gpus: dict[str, int] = field(default_factory=dict)
    rented: dict[str, int] = field(default_factory=dict)
    owned_used: dict[str, int] = field(default_factory=dict)
    cost_usd_per_hour: float = 0.0
    purchase_usd: float = 0.0
    tco_usd_per_hour: float = 0.0
    """Owned GPUs at their power and hosting, rented ones at their price."""
    pricing: str = ""
    """The basis rented GPUs are priced on."""
    offers: dict[str, str] = field(default_factory=dict)
    """Per rented device: the offer it is priced at."""
    binds: list[str] = field(default_factory=list)
    unservable: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0
    options_before: int = 0
    """Options of all classes, and those left after dominance pruning (fleet_prune.py)."""
    options_after: int = 0
    solver_status: str = ""
    """CP-SAT's status on the primary objective (the cost; under max_served the share)."""
    gap: float | None = None
    """Where that objective is not proven optimal: (value − best bound) / value, relative."""
    bound: float | None = None
    """Its best bound then: a $/hour cost no fleet beats, or the most weighted share any can serve."""
    bound_of: str = ""
    routes: dict[str, list[Route]] = field(default_factory=dict)
    """Per service served by more than one shape: the weights its router needs."""

    @property
    def feasible(self) -> bool:
        return self.status in ("optimal", "feasible")


def _carried(res: FleetResult, a: Assignment) -> int:
    """What an assignment's replicas carry: the service's whole served demand, or its
    share where the service runs on several shapes (`routes`)."""
    for x in res.routes.get(a.service, []):
        if x.plan == a.option.label:
            return x.users
    return res.served.get(a.service, 0)


def at_load(classes: list[ServiceClass], res: FleetResult, a: Assignment) -> Assignment:
    """The assignment with its TPOT and TTFT at the load each replica carries — the
    figures `plan-opt evaluate` gives for that replica at that load."""
    sc = next(c for c in classes if c.name == a.service)
    carried = max(0, _carried(res, a))
    tpot, ttft = _latencies(sc, a, carried)
    return dataclasses.replace(a, carried=carried, tpot_s=tpot, ttft_s=ttft)


def routes(classes: list[ServiceClass], res: FleetResult) -> dict[str, list[Route]]:
    """Weights for each service whose users are split across shapes.

    Users go to each shape in proportion to its capacity (replicas × users per
    replica), so every replica runs at the same fraction of its cap and none is
    pushed past it; largest remainders make them whole, and rounding up never
    passes a cap, since served ≤ capacity. A request router needs other weights:
    by Little's law (L = λW) a shape holding u users, each request on it lasting
    W = TTFT + output_tokens × TPOT, takes requests at
    λ = u / W, so the request shares are u/W normalised — a faster shape takes a
    larger share of requests than of users. W is taken at the load each replica then
    carries (optimise/capacity.py), as the report prints it."""
    out: dict[str, list[Route]] = {}
    by_service: dict[str, list[Assignment]] = {}
    for a in res.assignments:
        by_service.setdefault(a.service, []).append(a)
    output_tokens = {sc.name: sc.problem.workload.output_tokens for sc in classes}
    rate_services = {sc.name: sc.rate for sc in classes}
    for name, parts in by_service.items():
        served = res.served.get(name, 0)
        if len(parts) < 2 or served == 0:
            continue
        capacity = [a.replicas * a.option.cap for a in parts]
        raw = [served * c / sum(capacity) for c in capacity]
        users = [math.floor(x) for x in raw]
        for i in sorted(range(len(raw)), key=lambda i: raw[i] - users[i], reverse=True)[: served - sum(users)]:
            users[i] += 1
        if rate_services.get(name):  # a rate service: the requests split as the capacity does
            rate = [float(u) for u in users]
        else:
            sc = next(c for c in classes if c.name == name)
            rate = []
            for u, a in zip(users, parts):
                tpot, ttft = _latencies(sc, a, u)
                rate.append(u / (ttft + output_tokens[name] * tpot) if u else 0.0)
        out[name] = [Route(name, a.option.label, a.replicas, u, u / served, lam / sum(rate)) for a, u, lam in zip(parts, users, rate)]
    return out


def _latencies(sc: ServiceClass, a: Assignment, carried: int) -> tuple[float, float]:
    """(TPOT, TTFT) of a replica of `a` when its replicas carry `carried` in all (users,
    or a rate service's thousandths of a request per second): optimise/capacity.py's, or a
    rate service's optimise/traffic_candidates.py's."""
    p = sc.problem
    shape = p.shapes[a.option.shape_index]
    if carried <= 0:
        return a.option.tpot_s, a.option.ttft_s
    if sc.rate:
        return rate_latencies_at(p, shape, p.workload, p.targets, carried / RATE_SCALE / a.replicas)
    return latencies_at(p.physics(shape, p.workload), -(-carried // a.replicas))


def binds(
    fs: FleetSpec,
    classes: list[ServiceClass],
    res: FleetResult,
    devices: dict[str, Device],
    owned: dict[str, int],
    quota: dict[str, int],
    budget_hour: float | None,
) -> list[str]:
    """What holds the answer where it is: budgets and quotas at their limit, owned
    GPUs all in use, demand left unserved, and what caps each class's replicas."""
    out = []
    if budget_hour is not None and res.cost_usd_per_hour >= budget_hour - 0.01 * max(1.0, budget_hour) / 100:
        out.append(f"budget: ${res.cost_usd_per_hour:,.2f}/h of ${budget_hour:,.2f}/h spent")
    elif budget_hour is not None and any(res.served[k] < res.demand[k] for k in res.demand):
        out.append(f"budget: ${res.cost_usd_per_hour:,.2f}/h of ${budget_hour:,.2f}/h; the rest buys no whole replica more")
    if fs.budget.max_purchase_usd is not None and res.purchase_usd >= fs.budget.max_purchase_usd * 0.99:
        out.append(f"purchase budget: ${res.purchase_usd:,.0f} of ${fs.budget.max_purchase_usd:,.0f}")
    for d, q in quota.items():
        if res.rented.get(d, 0) >= q:
            out.append(f"quota: all {q} rentable {d} in use")
    for d, n in owned.items():
        if n and res.owned_used.get(d, 0) >= n:
            out.append(f"inventory: all {n} owned {d} in use")
    if fs.search.max_gpus is not None and sum(res.gpus.values()) >= fs.search.max_gpus:
        out.append(f"max_gpus: {sum(res.gpus.values())} of {fs.search.max_gpus}")
    by_name = {sc.name: sc for sc in classes}
    for a in res.assignments:
        sc = by_name[a.service]
        if sc.rate:
            out.append(
                f"{a.service}: {a.option.label} sustains {sc.amount(a.option.cap)} per replica within the targets (screened; stopped by {CAPPED.get(a.option.capped_by, a.option.capped_by)})"
            )
        else:
            out.append(
                f"{a.service}: {a.option.label} holds up to {a.option.cap} users per replica (capped by {CAPPED[a.option.capped_by]}); "
                f"carries {a.load} each: TPOT {a.tpot_s * 1e3:.1f} ms, TTFT {a.ttft_s * 1e3:.0f} ms"
            )
    return out
