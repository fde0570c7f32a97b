"""The spec of `plan-opt schedule`: a solve spec (model, workload lengths, SLA, search,
pricing) whose demand is a profile over time instead of one rate.

    traffic_profile:
      slot: 1h                                # each slot's length
      requests_per_s: [3, 2.5, 2, ...]        # one rate per slot; or csv: day.csv;
                                              # or trace: day.csv (Azure LLM trace layout)
      growth: {per_month: 0.10, months: 6}    # the plan covers the grown day
    tiers: [reserved_1y, on_demand, spot]     # which price tiers may serve
    spot: {interruptions_per_gpu_hour: 3.42e-5}
    readiness: {provisioning_s: 15min, storage_bytes_per_s: 1GB/s}
    min_replicas: 1
    availability: {survive: 1, unit: nodes}

Pydantic at the edge: every bad value is refused naming its field, the value and what
is allowed. The workload gives the lengths only; its rate is the profile's.

A trace (`traffic_profile: {slot: 1h, trace: day.csv}`, the Azure LLM inference trace
layout, spec/trace_file.py) is binned into the profile: slot k's rate is the requests
arriving in [k·slot, (k+1)·slot) over the slot's length, as many slots as reach its last
arrival. Where the workload gives no lengths (no prompt_tokens, output_tokens nor
lengths_file) the trace's own (ContextTokens, GeneratedTokens) pairs are its lengths,
drawn together as from a lengths_file; lengths the workload gives win.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, field_validator

from solver.catalog.autoscaling import INTERRUPTIONS_PER_GPU_HOUR, PROVISIONING_S, STORAGE_BYTES_PER_S
from solver.catalog.types import USER_INPUT, Bound
from solver.catalog.yaml_lines import load_yaml_file
from solver.errors import InputError
from solver.spec.profile_file import read_profile
from solver.spec.quantities import RATE, Rate, SpecModel
from solver.spec.solve_spec import Spec, parse_spec
from solver.spec.trace_file import Row, read_trace_rows

SLOT_S = Bound(60, 7 * 86_400, quantity="seconds", shown="1 min to 7 days")
MAX_SLOTS = 2_016
"""A week of 5-minute slots: the model has a few variables per slot and shape."""
GROWTH_PER_MONTH = Bound(-0.5, 10, shown="-0.5 to 10 (a share: 0.10 is +10 % a month)")
MONTHS = Bound(0, 120, integer=True)
MIN_REPLICAS = Bound(0, 10_000, integer=True)
SURVIVE = Bound(0, 100, integer=True)
TIER_NAMES = ("reserved_1y", "reserved_3y", "on_demand", "spot")
SCHEDULE_KEYS = ("traffic_profile", "tiers", "spot", "readiness", "min_replicas", "availability")
SCHEDULE_FIELDS = (
    "a `plan-opt schedule` spec is a solve spec (`plan-opt schema` prints its fields) plus "
    + ", ".join(SCHEDULE_KEYS)
    + " (README: plan-opt schedule)"
)


class GrowthIn(SpecModel):
    per_month: Annotated[float, GROWTH_PER_MONTH] = Field(description=f"Growth of every slot's rate a month, {GROWTH_PER_MONTH}.")
    months: Annotated[int, MONTHS] = Field(description=f"The horizon in months, {MONTHS}: the plan covers the day at its end.")


class TrafficProfileIn(SpecModel):
    """Requests per second per time slot, inline or from a CSV (slot_start,requests_per_s)."""

    slot: Annotated[float, SLOT_S] = Field(description=f"Each slot's length, {SLOT_S}, e.g. 1h or 15min.")
    requests_per_s: list[Rate] | None = Field(
        default=None, min_length=1, max_length=MAX_SLOTS, description=f"One rate per slot, each {RATE}; or give csv."
    )
    csv: str | None = Field(
        default=None, description="A CSV file, header slot_start,requests_per_s (start as HH:MM or hours); or give requests_per_s."
    )
    trace: str | None = Field(
        default=None,
        description="A request trace (TIMESTAMP,ContextTokens,GeneratedTokens: the Azure LLM inference traces' layout) binned into slots; "
        "or give requests_per_s or csv.",
    )
    growth: GrowthIn | None = Field(default=None, description="Growth over a horizon; the plan covers the grown rates.")

    @field_validator("csv", "trace")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("must be a file path")
        return v


class SpotIn(SpecModel):
    interruptions_per_gpu_hour: Annotated[float, INTERRUPTIONS_PER_GPU_HOUR] | None = Field(
        default=None, description=f"Spot interruptions per GPU-hour, {INTERRUPTIONS_PER_GPU_HOUR}; default catalogs/autoscaling.yaml."
    )


class ReadinessIn(SpecModel):
    provisioning_s: Annotated[float, PROVISIONING_S] | None = Field(
        default=None, description=f"A new replica's machine until its engine starts, {PROVISIONING_S}; default catalogs/autoscaling.yaml."
    )
    storage_bytes_per_s: Annotated[float, STORAGE_BYTES_PER_S] | None = Field(
        default=None, description=f"The bandwidth its weights load at, {STORAGE_BYTES_PER_S}; default catalogs/autoscaling.yaml."
    )


class AvailabilityIn(SpecModel):
    survive: Annotated[int, SURVIVE] = Field(description=f"Failures every slot must survive at its rate, {SURVIVE}.")
    unit: Literal["nodes", "replicas"] = Field(default="nodes", description="What fails: whole nodes (the replicas a node holds) or replicas.")


class ScheduleIn(SpecModel):
    traffic_profile: TrafficProfileIn = Field(description="Demand over time.")
    tiers: list[Literal["reserved_1y", "reserved_3y", "on_demand", "spot"]] = Field(
        default=["reserved_1y", "on_demand", "spot"], min_length=1, description="Price tiers that may serve (catalogs/prices.yaml)."
    )
    spot: SpotIn = SpotIn()
    readiness: ReadinessIn = ReadinessIn()
    min_replicas: Annotated[int, MIN_REPLICAS] = Field(default=0, description=f"Fewest replicas in every slot, {MIN_REPLICAS}.")
    availability: AvailabilityIn = AvailabilityIn(survive=0)

    @field_validator("tiers")
    @classmethod
    def _one_reserved(cls, v: list[str]) -> list[str]:
        if "reserved_1y" in v and "reserved_3y" in v:
            raise ValueError("give one reserved tier, reserved_1y or reserved_3y")
        return list(dict.fromkeys(v))


@dataclass(frozen=True)
class Profile:
    """The demand the plan covers: one rate per slot, grown to the horizon's end."""

    slot_s: float
    rates_per_s: tuple[float, ...]
    """Each slot's rate after growth."""
    given_per_s: tuple[float, ...]
    """As the spec gives them, before growth."""
    growth_factor: float = 1.0
    months: int = 0
    trace: tuple[Row, ...] | None = None
    """A trace's rows (arrival_s, prompt, output) where the profile was binned from one."""
    trace_name: str | None = None
    """As the spec names it (relative to the spec's folder)."""

    @property
    def peak_per_s(self) -> float:
        return max(self.rates_per_s)


@dataclass(frozen=True)
class ScheduleSpec:
    spec: Spec
    """The solve spec, its workload at the profile's peak rate."""
    schedule: ScheduleIn
    profile: Profile


def _path(name: str, base_dir: Path | None) -> Path:
    return Path(name) if base_dir is None or Path(name).is_absolute() else base_dir / name


def binned(rows: tuple[Row, ...], slot_s: float, source: str) -> tuple[float, ...]:
    """Each slot's rate: the rows arriving in it over its length; a slot without one is
    refused (no rate to plan), as is a trace longer than MAX_SLOTS slots."""
    n = int(rows[-1][0] // slot_s) + 1
    if n > MAX_SLOTS:
        raise InputError("traffic_profile.slot", slot_s, f"{source} spans {n:,} slots of it; at most {MAX_SLOTS:,}: give a longer slot")
    counts = [0] * n
    for t, _, _ in rows:
        counts[int(t // slot_s)] += 1
    empty = [k for k, c in enumerate(counts) if c == 0]
    if empty:
        raise InputError(
            "traffic_profile.slot", slot_s, f"slot {empty[0]} of {source} (from {empty[0] * slot_s:g} s) holds no request; give a longer slot"
        )
    return tuple(c / slot_s for c in counts)


def profile_of(p: TrafficProfileIn, base_dir: Path | None) -> Profile:
    if sum(x is not None for x in (p.requests_per_s, p.csv, p.trace)) != 1:
        raise InputError(
            "traffic_profile", None, "give requests_per_s (a list, one rate per slot), csv (a file of rates) or trace (a request trace), one of them"
        )
    if p.trace is not None:
        if p.growth is not None:
            raise InputError(
                "traffic_profile.growth", p.growth.model_dump(), "a trace is the day as it happened: growth applies to requests_per_s or csv"
            )
        path = _path(p.trace, base_dir)
        rows = read_trace_rows(path, "traffic_profile.trace")
        rates = binned(rows, p.slot, p.trace)
        return Profile(p.slot, rates, rates, trace=rows, trace_name=p.trace)
    if p.requests_per_s is not None:
        given = tuple(p.requests_per_s)
    else:
        assert p.csv is not None
        path = _path(p.csv, base_dir)
        given = read_profile(path, p.slot, MAX_SLOTS)
    factor, months = 1.0, 0
    if p.growth is not None:
        factor, months = (1 + p.growth.per_month) ** p.growth.months, p.growth.months
    rates = tuple(r * factor for r in given)
    if not all(math.isfinite(r) and RATE.lo <= r <= RATE.hi for r in rates):
        raise InputError("traffic_profile.growth", p.growth.model_dump() if p.growth else None, f"grows a rate past {RATE}")
    return Profile(p.slot, rates, given, factor, months)


def parse_schedule(data: object, lines: dict | None = None, source: str | None = None, base_dir: Path | None = None) -> ScheduleSpec:
    """The solve spec and the schedule's own fields, each validated where it is written."""
    if not isinstance(data, dict):
        raise InputError("spec", None, "expected a YAML mapping with model, workload and traffic_profile", source=source, line=1 if source else None)
    _refuse_unknown_top_level(data, lines, source)
    own = {k: data[k] for k in SCHEDULE_KEYS if k in data}
    if "traffic_profile" not in own:
        raise InputError("traffic_profile", None, "required: a schedule's demand over time (slot and requests_per_s or csv)", source=source)
    try:
        schedule = ScheduleIn.model_validate(own, context=USER_INPUT)
    except ValidationError as exc:
        raise InputError.from_validation(exc, lines, source=source, schema=ScheduleIn, fields_hint=SCHEDULE_FIELDS) from None
    try:
        profile = profile_of(schedule.traffic_profile, base_dir)
    except InputError as exc:
        raise exc.located(lines, source) from None
    rest = {k: v for k, v in data.items() if k not in SCHEDULE_KEYS}
    workload = rest.get("workload")
    if isinstance(workload, dict):
        for key in ("requests_per_s", "users"):
            if key in workload:
                raise InputError(
                    f"workload.{key}", workload[key], "a schedule's rate comes from traffic_profile; leave it out of the workload"
                ).located(lines, source)
        rest["workload"] = {**workload, "requests_per_s": profile.peak_per_s}
        if profile.trace_name is not None and not any(k in workload for k in ("prompt_tokens", "output_tokens", "lengths_file")):
            rest["workload"]["lengths_file"] = profile.trace_name  # the trace's own lengths (spec/lengths_file.py reads its layout)
    return ScheduleSpec(parse_spec(rest, lines, source, fields_hint=SCHEDULE_FIELDS), schedule, profile)


def _refuse_unknown_top_level(data: dict, lines: dict | None, source: str | None) -> None:
    """A top-level key neither a solve spec nor a schedule has, matched against both: split
    between the two validators, `min_replica` would be guessed against the solve fields only."""
    import difflib

    allowed = set(SCHEDULE_KEYS) | {n for name, f in Spec.model_fields.items() for n in (name, f.alias) if n}
    for key in data:
        if key not in allowed:
            near = difflib.get_close_matches(str(key), sorted(allowed), n=1, cutoff=0.6)
            guess = f"did you mean {near[0]}? " if near else ""
            raise InputError(str(key), None, f"unknown field ({guess}{SCHEDULE_FIELDS})").located(lines, source)


def load_schedule(path: str | Path) -> tuple[ScheduleSpec, dict]:
    data, lines = load_yaml_file(path)
    return parse_schedule(data, lines, str(path), Path(path).parent), lines
