"""The price book (catalogs/prices.yaml): dated offers per provider, GPU and tier, the
basis a spec prices on, and what owning a GPU costs beside its purchase
(catalogs/ownership.yaml)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Literal

from annotated_types import Ge, Gt, Le, MinLen

from solver.catalog.types import (
    FORBID,
    Fraction,
    Positive,
    PositiveInt,
)

# --------------------------------------------------------------------------- devices


@dataclass(frozen=True)
class Price:
    """What a GPU-hour costs in a plan: the offer it was priced at, and on what basis."""

    __pydantic_config__ = FORBID
    usd_per_gpu_hour: Positive
    provider: str
    offer: str
    as_of: dt.date
    source: str
    tier: str = "on_demand"
    basis: str = ""
    """How the offer was chosen, e.g. "lower median of 7 gpu_cloud on_demand offers"."""


# --------------------------------------------------------------------------- the price book

Tier = Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "flex_start"]
ProviderKind = Literal["hyperscaler", "gpu_cloud", "marketplace", "managed"]
Statistic = Literal["median_low", "cheapest"]
TIERS: tuple[str, ...] = ("on_demand", "spot", "reserved_1y", "reserved_3y", "flex_start")


@dataclass(frozen=True)
class Provider:
    __pydantic_config__ = FORBID
    kind: ProviderKind
    display_name: str


@dataclass(frozen=True)
class Offer:
    """One provider's dated price for one GPU on one tier (catalogs/prices.yaml)."""

    __pydantic_config__ = FORBID
    provider: str
    gpu: str
    tier: Tier
    usd_per_gpu_hour: Positive
    as_of: dt.date
    source: str
    quote: str = ""
    source_kind: str = ""
    instance: str | None = None
    gpus_per_instance: PositiveInt | None = None
    instance_usd_per_hour: Positive | None = None
    region: str | None = None
    note: str = ""
    suspect: bool = False
    """Out of line with every other offer for the GPU: listed, never used."""


@dataclass(frozen=True)
class Pricing:
    """A basis for pricing every GPU the same way: which providers (names, kinds such as
    gpu_cloud, or all), which tier, and which of their offers."""

    __pydantic_config__ = FORBID
    providers: Annotated[tuple[str, ...], MinLen(1)]
    tier: Tier = "on_demand"
    statistic: Statistic = "median_low"

    def label(self) -> str:
        how = "lower median" if self.statistic == "median_low" else "cheapest"
        return f"{how} of the {self.tier} offers from {', '.join(self.providers)}"


@dataclass(frozen=True)
class Ownership:
    """What owning a GPU costs beside its purchase (catalogs/ownership.yaml; a spec's
    `ownership:` overrides any figure)."""

    __pydantic_config__ = FORBID
    life_years: Annotated[float, Gt(0), Le(30)]
    utilisation: Fraction
    pue: Annotated[float, Ge(1), Le(5)]
    usd_per_kwh: Annotated[float, Ge(0), Le(10)]
    hosting_usd_per_kw_month: Annotated[float, Ge(0), Le(100_000)]
    as_of: dt.date = dt.date.min
    life_source: str = ""
    utilisation_source: str = ""
    pue_source: str = ""
    usd_per_kwh_source: str = ""
    hosting_source: str = ""


@dataclass(frozen=True)
class PricesFile:
    __pydantic_config__ = FORBID
    as_of: dt.date
    default: Pricing
    providers: dict[str, Provider]
    offers: tuple[Offer, ...]
