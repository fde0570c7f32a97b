"""The spec of `plan-opt solve`: what to serve, how fast, on what, within what
budget. Pydantic at the edge; `plan-opt schema` prints its JSON Schema.

    model: llama-3.1-70b
    workload: {users: 64, context_tokens: 8192, prompt_tokens: 2048, kv_fill: 1.0}
    sla: {max_ttft: 1s, max_tpot: 50ms}
    search: {gpus: [all], max_gpus: 64, tp: [1, 2, 4, 8], pp: [1], weights: [bf16, fp8], kv_cache: [bf16, fp8]}
    objective: min_cost
    budget: {max_usd_per_hour: 200}
    pricing: {providers: [gpu_cloud], tier: on_demand, statistic: median_low}
    inventory: {a100-80gb: 8}
    overrides: {gpus: {h100-sxm: {price_usd_per_gpu_hour: 2.5}}, factors: {...}, model: {...}}
    solver: {time_limit_s: 10}
    pareto: {max_cost_ratio: 10}
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, field_validator

from solver.catalog.ranges import GPU_HOUR_USD, GPU_PURCHASE_USD, HOSTING_USD, LIFE_YEARS, PUE, USD_PER_KWH, UTILISATION
from solver.catalog.types import USER_INPUT, Bound
from solver.catalog.yaml_lines import load_yaml_file
from solver.errors import InputError
from solver.spec.fields import (
    DEGREE,
    GPU_COUNT,
    MAX_GPUS,
    MAX_PARALLEL,
    OWNED_COUNT,
    EngineField,
    EngineIn,
    FactorsIn,
    FormatName,
    GpuCount,
    GpuOverrides,
    ModelOverrides,
    Name,
    OwnedCount,
    PrecisionOverrides,
    SlaIn,
    SpecModel,
    SpeculativeIn,
    WorkloadIn,
    traffic_mismatch,
)
from solver.spec.quantities import Flag

DEFAULT_MAX_GPUS = 512
"""The GPU cap when a spec sets none: 64 eight-GPU servers, 32 times the largest plan
of the bundled specs (16 GPUs), so it stops runaway plans (a Pareto frontier that
buys hundreds of replicas at batch 1 for a few ms) without touching sensible ones."""

DEFAULT_MAX_COST_RATIO = 10.0
"""Where a Pareto frontier stops by default: at 10 × its cheapest plan, an order of
magnitude of spend for latency; past it, points buy fractions of a millisecond at
hundreds of GPUs. Lift with pareto.max_cost_ratio."""

Objective = Literal["min_cost", "min_gpus", "min_purchase", "min_tpot", "min_tco"]
OBJECTIVES: dict[str, str] = {
    "min_cost": "cheapest $/hour (GPUs you own are free)",
    "min_tco": "cheapest total cost of ownership per hour (owned GPUs at their power and hosting, others rented or bought, whichever costs less)",
    "min_gpus": "fewest GPUs",
    "min_purchase": "cheapest to buy (GPUs you own are free)",
    "min_tpot": "fastest time per output token within the budget",
}


BUDGET_USD_PER_HOUR = Bound(0.01, 1e9, shown="$0.01 to $1e9 per hour")
BUDGET_PURCHASE_USD = Bound(1, 1e12, shown="$1 to $1e12")
COST_RATIO = Bound(1, 1e6)
TIME_LIMIT = Bound(0.1, 3600, shown="0.1 to 3,600 s")


class SearchIn(SpecModel):
    gpus: list[Name] = Field(
        default=["all"],
        min_length=1,
        description='Device names or aliases, architecture families (e.g. "hopper"), or "all".',
    )
    max_gpus: GpuCount | None = Field(
        default=None,
        description=f"Most GPUs in the plan, all replicas, {GPU_COUNT}. Unset: {DEFAULT_MAX_GPUS} for solve and pareto (solve applies it "
        f"only where the cheapest plan exceeds it; a fleet has no default cap); set a larger number (up to {MAX_GPUS}) to lift it.",
    )
    tp: list[int] = Field(default=[1, 2, 4, 8], min_length=1, description=f"Tensor-parallel degrees to consider, each 1 to {MAX_PARALLEL:,}.")
    pp: list[int] = Field(default=[1], min_length=1, description=f"Pipeline-parallel degrees to consider, each 1 to {MAX_PARALLEL:,}.")
    weights: list[FormatName] = Field(default=["bf16", "fp8", "int4-awq"], min_length=1, description="Weight formats to consider.")
    kv_cache: list[FormatName] = Field(default=["bf16", "fp8"], min_length=1, description="KV-cache formats to consider.")
    min_weights_quality: FormatName | None = Field(
        default=None, description="A weight format: only formats at least as good (catalogs/precisions.yaml quality_rank) are searched."
    )
    parallelism: list[Literal["tp", "dp_ep", "tp_ep"]] = Field(
        default=["tp"],
        min_length=1,
        description="How a replica's GPUs share a mixture-of-experts model: tp (every layer split), dp_ep (data-parallel "
        "attention, expert-parallel experts over the tp GPUs), tp_ep (tensor-parallel attention, the experts whole, "
        "split over the tp GPUs), or several; dense models are always tp.",
    )
    serving: list[Literal["aggregated", "disaggregated"]] = Field(
        default=["aggregated"],
        min_length=1,
        description="aggregated (every replica prefills and decodes), disaggregated (a prefill pool and a decode pool, "
        "each its own GPU type, split and replica count, the KV cache sent between them over the network), or both, "
        "the cheaper winning; a users workload only.",
    )
    speculative: list[Flag] = Field(
        default=[True, False],
        min_length=1,
        description="With a `speculative` section: plans with it (true), without it (false), or both, the better winning (default both).",
    )
    allow_cross_vendor_kv: Flag = Field(
        default=False,
        description="Disaggregated serving: let the prefill and decode pools run on GPUs of different vendors (e.g. NVIDIA "
        "prefill, AMD decode), the KV cache crossing between them. Off by default: no engine documents or tests a KV "
        "hand-off between a CUDA and a ROCm build (vLLM's NIXL handshake refuses peers of another attention backend), so "
        "both pools are held to one vendor.",
    )

    @field_validator("tp", "pp", mode="before")
    @classmethod
    def _degrees(cls, v: object) -> object:
        if not isinstance(v, list):
            return v  # pydantic refuses it: a list is needed
        out, bad = [], []
        for x in v:
            try:
                out.append(DEGREE(x))
            except ValueError:
                bad.append(x)
        if bad:
            raise ValueError(f"degrees must be between 1 and {MAX_PARALLEL}, got {bad}")
        return sorted(set(out))


class BudgetIn(SpecModel):
    max_usd_per_hour: Annotated[float, BUDGET_USD_PER_HOUR] | None = Field(default=None, description=f"Cap on rented $/hour, {BUDGET_USD_PER_HOUR}.")
    max_purchase_usd: Annotated[float, BUDGET_PURCHASE_USD] | None = Field(
        default=None, description=f"Cap on the price of GPUs to buy, {BUDGET_PURCHASE_USD}."
    )


class GpuOverrideIn(GpuOverrides):
    price_usd_per_gpu_hour: Annotated[float, GPU_HOUR_USD] | None = Field(default=None, description=f"Rent, {GPU_HOUR_USD}.")
    purchase_usd: Annotated[float, GPU_PURCHASE_USD] | None = Field(default=None, description=f"Price to buy one, {GPU_PURCHASE_USD}.")
    factors: FactorsIn = FactorsIn()


class SpecOverridesIn(SpecModel):
    gpus: dict[str, GpuOverrideIn] = Field(default={}, description="Per device: any catalog figure.")
    factors: FactorsIn = Field(default=FactorsIn(), description="For every device (a device's own override wins).")
    model: ModelOverrides = ModelOverrides()
    precision: PrecisionOverrides = Field(
        default=PrecisionOverrides(), description="Kernel shares of every weight format searched (the catalog's are fitted)."
    )


class PricingIn(SpecModel):
    """Which offers of the price book (catalogs/prices.yaml) price the rented GPUs."""

    providers: list[Name] | None = Field(
        default=None,
        min_length=1,
        description="Provider names (aws, lambda, ...), kinds (hyperscaler, gpu_cloud, marketplace, managed) or all; "
        "default: the book's basis (gpu_cloud).",
    )
    tier: Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "flex_start"] | None = Field(
        default=None, description="Price tier; default on_demand."
    )
    secondary: Flag | None = Field(
        default=None, description="Also price from offers known only from third parties (source_kind secondary); default false."
    )
    statistic: Literal["median_low", "cheapest"] | None = Field(
        default=None, description="Of the providers' offers for a GPU: the lower median (default) or the cheapest."
    )


class OwnershipIn(SpecModel):
    """What owning a GPU costs beside its purchase; defaults in catalogs/ownership.yaml."""

    life_years: Annotated[float, LIFE_YEARS] | None = Field(
        default=None, description=f"Years the purchase is spread over (straight line), {LIFE_YEARS}."
    )
    utilisation: Annotated[float, UTILISATION] | None = Field(default=None, description=f"Share of board power drawn on average, {UTILISATION}.")
    pue: Annotated[float, PUE] | None = Field(default=None, description=f"Data-centre power usage effectiveness, {PUE}.")
    usd_per_kwh: Annotated[float, USD_PER_KWH] | None = Field(default=None, description=f"Electricity price, {USD_PER_KWH}.")
    hosting_usd_per_kw_month: Annotated[float, HOSTING_USD] | None = Field(
        default=None, description=f"Colocation price per kW of IT load, {HOSTING_USD}."
    )


class ParetoIn(SpecModel):
    max_cost_ratio: Annotated[float, COST_RATIO] | None = Field(
        default=DEFAULT_MAX_COST_RATIO,
        description=f"Latency frontiers stop at this multiple ({COST_RATIO}) of their cheapest plan's cost (a free cheapest plan: "
        f"of the cheapest one that costs anything); default {DEFAULT_MAX_COST_RATIO:g}, null for no cap.",
    )


class SolverIn(SpecModel):
    time_limit_s: Annotated[float, TIME_LIMIT] = Field(default=10.0, description=f"CP-SAT's limit per solve, {TIME_LIMIT}.")


MAX_SIMULATED_REQUESTS = 200_000  # about 8 s of simulation on these machines: every command answers in bounded time
SIMULATED_REQUESTS = Bound(100, MAX_SIMULATED_REQUESTS, integer=True)
SEED = Bound(0, 2**32 - 1, integer=True)


class SimulationIn(SpecModel):
    """How a plan under requests_per_s is checked: the requests are drawn (seeded) and
    served by the plan's replicas in the simulator (solver/traffic)."""

    requests: Annotated[int, SIMULATED_REQUESTS] = Field(
        default=5_000, description=f"Requests simulated to check a plan, {SIMULATED_REQUESTS}; P99 needs thousands."
    )
    seed: Annotated[int, SEED] = Field(default=0, description="Seed of the draws (arrivals and lengths): the same seed, the same requests.")
    routing: Literal["round_robin", "jsq"] = Field(
        default="round_robin", description="How requests reach replicas: in turn, or to the one with the fewest requests (join the shortest queue)."
    )


class Spec(SpecModel):
    """A serving target: plan-opt finds the cheapest hardware that meets it."""

    model: Name = Field(description="Catalog name, Hugging Face id, or path to a local config.json.")
    engine: EngineField = Field(
        default=EngineIn(), description="Serving engine: a name (vllm, sglang, trtllm, llama.cpp) or a mapping with its knobs."
    )
    workload: WorkloadIn
    speculative: SpeculativeIn | None = Field(
        default=None, description="Speculative decoding for every plan (a users workload): method, draft, tokens drafted, acceptance."
    )
    sla: SlaIn = SlaIn()
    search: SearchIn = SearchIn()
    objective: Objective = Field(default="min_cost", description="; ".join(f"{k}: {v}" for k, v in OBJECTIVES.items()))
    prefer: Literal["quality", "speed"] = Field(
        default="quality", description="At equal objective: the better weight format first (quality) or the lower latency (speed)."
    )
    budget: BudgetIn = BudgetIn()
    pricing: PricingIn = Field(default=PricingIn(), description="The basis rented GPUs are priced on (`plan-opt list prices`).")
    ownership: OwnershipIn = Field(default=OwnershipIn(), description="Power, hosting and life of owned and bought GPUs (total cost of ownership).")
    inventory: dict[str, OwnedCount] = Field(
        default={}, description=f"GPUs already owned, per device ({OWNED_COUNT}): free to use, limited in number."
    )
    overrides: SpecOverridesIn = SpecOverridesIn()
    solver: SolverIn = SolverIn()
    pareto: ParetoIn = Field(default=ParetoIn(), description="`plan-opt pareto` only: where the frontiers stop.")
    simulation: SimulationIn = Field(default=SimulationIn(), description="With workload.requests_per_s: how each plan is checked by simulation.")


SPEC_FIELDS = "`plan-opt schema` prints every field of a spec (solve, pareto, simulate, deploy)"


def parse_spec(data: object, lines: dict | None = None, source: str | None = None, fields_hint: str = SPEC_FIELDS) -> Spec:
    """The validated spec; `fields_hint` names where the calling command's fields are listed
    (a schedule spec is a solve spec plus its own fields)."""
    if not isinstance(data, dict):
        raise InputError("spec", None, "expected a YAML mapping with model and workload", source=source, line=1 if source else None)
    if "traffic_profile" in data:
        raise InputError(
            "traffic_profile", None, "a profile over time is planned by `plan-opt schedule`; this command takes one rate (workload.requests_per_s)"
        ).located(lines, source)
    try:
        spec = Spec.model_validate(data, context=USER_INPUT)
    except ValidationError as exc:
        raise InputError.from_validation(exc, lines, source=source, schema=Spec, fields_hint=fields_hint) from None
    bad = traffic_mismatch(spec.workload, spec.sla)
    if bad:
        raise InputError(bad[0], None, bad[1]).located(lines, source)
    if spec.speculative is not None and spec.workload.requests_per_s is not None:
        raise InputError(
            "speculative",
            spec.speculative.method,
            "is planned for a users workload; under requests_per_s the simulator does not draft tokens yet (give users)",
        ).located(lines, source)
    if "disaggregated" in spec.search.serving:
        if spec.workload.requests_per_s is not None:
            raise InputError(
                "search.serving",
                "disaggregated",
                "is planned for a users workload; under requests_per_s the simulator does not run two pools yet (give users)",
            ).located(lines, source)
        if spec.speculative is not None and False not in spec.search.speculative and spec.search.serving == ["disaggregated"]:
            raise InputError(
                "search.serving",
                "disaggregated",
                "plans no speculative decoding (its decode pool does not draft): allow search.speculative: [false] or aggregated serving",
            ).located(lines, source)
    return spec


def load_spec(path: str | Path) -> tuple[Spec, dict]:
    """The spec and the map from field path to YAML line (for later messages)."""
    data, lines = load_yaml_file(path)
    return parse_spec(data, lines, str(path)), lines


def spec_json_schema() -> dict:
    return Spec.model_json_schema()
