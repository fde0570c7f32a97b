"""The input of `plan-opt fleet`: several workloads (each with its own model, traffic
and SLA, and optionally a request mix), one search, budget, inventory and quota."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import Field, ValidationError, model_validator

from solver.catalog.types import USER_INPUT, Bound
from solver.catalog.yaml_lines import load_yaml_file
from solver.errors import InputError
from solver.spec.fields import (
    OWNED_COUNT,
    SHARE,
    TOKENS,
    EngineField,
    EngineIn,
    ModelOverrides,
    Name,
    OwnedCount,
    Share,
    SlaIn,
    SpecModel,
    Tokens,
    WorkloadIn,
    check_traffic,
)
from solver.spec.quantities import Flag
from solver.spec.solve_spec import BudgetIn, PricingIn, SearchIn, SolverIn, SpecOverridesIn

PRIORITY = Bound(0.001, 1000)


class MixClassIn(SpecModel):
    share: Share = Field(description=f"Share of the workload's users in this class, {SHARE}.")
    context_tokens: Tokens | None = Field(default=None, description=f"Tokens per sequence at its longest, {TOKENS}.")
    prompt_tokens: Tokens | None = Field(default=None, description=f"Prompt tokens per sequence, {TOKENS}.")
    output_tokens: Tokens | None = Field(default=None, description=f"Output tokens per sequence, {TOKENS}.")


class FleetWorkloadIn(SpecModel):
    name: str = Field(min_length=1, description="A label for the reports.")
    model: Name = Field(description="Catalog name, Hugging Face id, or path to a local config.json.")
    workload: WorkloadIn
    sla: SlaIn = SlaIn()
    priority: Annotated[float, PRIORITY] = Field(
        default=1.0, description=f"Weight of the service's served share (served / its demand), for max_served, {PRIORITY}."
    )
    mix: list[MixClassIn] = Field(default=[], description="Request-size classes; shares sum to 1.")
    single_shape: Flag | None = Field(
        default=None,
        description="Serve this workload (each class of its mix) on replicas of one shape only, so no weighted router "
        "is needed; unset: the fleet's single_shape.",
    )
    overrides: ModelOverrides = ModelOverrides()

    @model_validator(mode="after")
    def _shares(self) -> Self:
        if self.workload.requests_per_s is not None and self.mix:
            raise ValueError("a mix splits users into classes; under requests_per_s give each class as its own workload, with its own rate")
        check_traffic(self.workload, self.sla)
        if self.mix and abs(sum(c.share for c in self.mix) - 1) > 1e-6:
            raise ValueError(f"mix shares sum to {sum(c.share for c in self.mix):g}, not 1")
        return self


class FleetSpec(SpecModel):
    """Several workloads, one fleet."""

    workloads: list[FleetWorkloadIn] = Field(min_length=1)
    engine: EngineField = Field(default=EngineIn(), description="Serving engine: a name, or a mapping with its knobs.")
    search: SearchIn = SearchIn()
    objective: Literal["min_cost", "max_served"] = Field(
        default="min_cost",
        description="min_cost: serve all demand at least cost; max_served: the largest priority-weighted served share (served / demand) within the budget.",
    )
    budget: BudgetIn = BudgetIn()
    pricing: PricingIn = Field(default=PricingIn(), description="The basis rented GPUs are priced on (`plan-opt list prices`).")
    inventory: dict[str, OwnedCount] = Field(default={}, description=f"GPUs owned per device ({OWNED_COUNT}): free, limited.")
    quota: dict[str, OwnedCount] = Field(default={}, description=f"Most GPUs of a device that can be rented (a cloud quota), {OWNED_COUNT}.")
    single_shape: Flag = Field(
        default=False,
        description="Every workload on one shape per service (a workload's own single_shape wins). Off: a service may "
        "mix shapes, and then needs weighted routing (the report gives the weights).",
    )
    overrides: SpecOverridesIn = SpecOverridesIn()
    solver: SolverIn = SolverIn()

    @model_validator(mode="after")
    def _names(self) -> Self:
        if "disaggregated" in self.search.serving:
            raise ValueError("search.serving: a fleet is planned with aggregated replicas only (plan a disaggregated service with `plan-opt solve`)")
        names = [w.name for w in self.workloads]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"workload names must be unique: {', '.join(dup)}")
        return self


def load_fleet_spec(path: str | Path) -> tuple[FleetSpec, dict[tuple, int]]:
    """The fleet file, validated, and the line of each of its keys."""
    data, lines = load_yaml_file(path)
    if not isinstance(data, dict):
        raise InputError("fleet", None, "expected a YAML mapping with workloads", source=str(path), line=1)
    try:
        return FleetSpec.model_validate(data, context=USER_INPUT), lines
    except ValidationError as exc:
        raise InputError.from_validation(
            exc, lines, source=str(path), schema=FleetSpec, fields_hint="`plan-opt fleet --help` shows a fleet file's fields"
        ) from None
