"""The answers of POST /pareto, /fleet and /simulate as typed models, so the OpenAPI
document names every field their commands' JSON has (report/pareto_report.py,
fleet_report.py, simulate_report.py); extra fields are forbidden, so a field the report
gains without its model here fails the golden check in tests/api/test_answers.py."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")  # the schema names every field the JSON has


# --- POST /pareto ---------------------------------------------------------------------


class ParetoPointOut(_Strict):
    tco_usd_per_hour: float | None = Field(description="Owned GPUs at power and hosting, the rest rented; null: not to be had.")
    usd_per_million_output_tokens: float
    priced_at: str | None = Field(description="The offer the rented GPUs are priced at; null when none is rented.")
    cost_usd_per_hour: float
    value: float = Field(description="The point's figure on the frontier's axis, in `unit`.")
    unit: str = Field(description="s for a latency axis; users or requests/s for a served one.")
    plan: str
    gpu: str
    tp: int
    pp: int
    replicas: int
    gpus: int
    weights: str
    kv_cache: str
    batch_per_replica: int
    tpot_s: float | None
    ttft_s: float | None
    binds: str = Field(description="What limits the plan at this point.")
    knee: bool
    basis: str | None = Field(default=None, description="Rate axis only: simulated, refused by simulation, or screened.")
    simulation_misses: list[str] | None = Field(default=None, description="Rate axis only: the targets the simulation missed.")


class ParetoCutOut(_Strict):
    max_cost_ratio: float | None = Field(description="The cost cap as a multiple of the cheapest plan (latency axes).")
    max_cost_usd_per_hour: float | None
    next_point: ParetoPointOut | None = Field(description="The first point the cost cap left out.")
    max_gpus: int
    max_gpus_is_default: bool
    cut_by_max_gpus: bool
    cut_by_time: bool


class FrontierOut(_Strict):
    points: list[ParetoPointOut]
    knee: int | None = Field(description="Index of the knee in points, or null.")
    knee_rule: str
    batching: str
    cut: ParetoCutOut


class ParetoOut(RootModel[dict[Literal["tpot", "ttft", "users", "rate"], FrontierOut]]):
    """`plan-opt pareto --format json`: one frontier per axis asked for."""


# --- POST /fleet ----------------------------------------------------------------------


class FleetAssignmentOut(_Strict):
    service: str
    workload: str
    plan: str
    gpu: str
    replicas: int
    gpus: int
    users_per_replica: int | None = Field(default=None, description="A service of users: those each replica carries.")
    capacity_users_per_replica: int | None = None
    requests_per_s_per_replica: float | None = Field(default=None, description="A service at a request rate: each replica's share.")
    capacity_requests_per_s_per_replica: float | None = None
    batch_capped_by: str
    tpot_s: float | None
    ttft_s: float | None


class RouteShareOut(_Strict):
    plan: str
    replicas: int
    users: int
    users_share: float
    request_share: float


class RoutingOut(_Strict):
    weighted_routing_needed: bool
    shapes: list[RouteShareOut]


class OptimalityOut(_Strict):
    solver_status: str
    objective: str
    best_bound: float
    gap: float


class FleetOut(_Strict):
    """`plan-opt fleet --format json`: one fleet for every service."""

    status: str = Field(description="optimal, feasible (time limit hit), infeasible or unknown.")
    objective: str
    cost_usd_per_hour: float
    tco_usd_per_hour: float
    pricing: str
    offers: dict[str, str] = Field(description="GPU -> the offer it is priced at.")
    purchase_usd: float
    gpus: dict[str, int]
    rented: dict[str, int]
    owned_used: dict[str, int]
    served: dict[str, float] = Field(description="Service -> users, or requests/s (see units).")
    demand: dict[str, float]
    units: dict[str, Literal["users", "requests_per_s"]]
    batching: dict[str, str]
    assignments: list[FleetAssignmentOut]
    routing: dict[str, RoutingOut] = Field(description="Services spread over several shapes: the router's weights.")
    binds: list[str]
    unservable: dict[str, str]
    optimality: OptimalityOut | None = Field(default=None, description="Present when CP-SAT did not prove the optimum in its time.")


# --- POST /simulate -------------------------------------------------------------------


class SimTargetOut(_Strict):
    target: str = Field(description="max_ttft, max_tpot or max_e2e.")
    percentile: float
    limit_s: float
    simulated_s: float | None
    met: bool
    per_seed_s: list[float | None]
    bound_s: float | None
    margin_s: float | None


class SimReplicaOut(_Strict):
    busy_s: float
    iterations: int
    preemptions: int
    max_queue: int
    mean_queue: float


class PercentilesOut(_Strict):
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None


class SimulateOut(_Strict):
    """`plan-opt simulate --format json`: the plan under the spec's request rate."""

    plan: str
    requests: int
    seed: int
    seeds: list[int]
    routing: str
    batching: str
    requests_per_s: float
    ok: bool
    failing: list[str]
    targets: list[SimTargetOut]
    goodput: float
    percentiles: dict[Literal["ttft_s", "tpot_s", "e2e_s"], PercentilesOut]
    duration_s: float
    utilisation: float
    throughput_tokens_per_s: float
    mean_in_system: float
    replicas: list[SimReplicaOut]
    rejected: int
