"""The price book (catalogs/prices.yaml): dated offers per provider, GPU and tier, the
basis a spec prices on, and what owning a GPU costs beside its purchase
(catalogs/ownership.yaml)."""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from annotated_types import MinLen

from solver.catalog.ranges import GPU_HOUR_USD, HOSTING_USD, INSTANCE_HOUR_USD, LIFE_YEARS, PUE, USD_PER_KWH, UTILISATION
from solver.catalog.types import (
    FORBID,
    PositiveInt,
)
from solver.errors import InputError

# --------------------------------------------------------------------------- devices


@dataclass(frozen=True)
class Price:
    """What a GPU-hour costs in a plan: the offer it was priced at, and on what basis."""

    __pydantic_config__ = FORBID
    usd_per_gpu_hour: Annotated[float, GPU_HOUR_USD]
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
    usd_per_gpu_hour: Annotated[float, GPU_HOUR_USD]
    as_of: dt.date
    source: str
    quote: str = ""
    source_kind: str = ""
    instance: str | None = None
    gpus_per_instance: PositiveInt | None = None
    instance_usd_per_hour: Annotated[float, INSTANCE_HOUR_USD] | None = None
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
    secondary: bool = False
    """Also offers known only from third parties (source_kind secondary)."""

    def label(self) -> str:
        how = "lower median" if self.statistic == "median_low" else "cheapest"
        also = ", secondary sources included" if self.secondary else ""
        return f"{how} of the {self.tier} offers from {', '.join(self.providers)}{also}"


@dataclass(frozen=True)
class Ownership:
    """What owning a GPU costs beside its purchase (catalogs/ownership.yaml; a spec's
    `ownership:` overrides any figure)."""

    __pydantic_config__ = FORBID
    life_years: Annotated[float, LIFE_YEARS]
    utilisation: Annotated[float, UTILISATION]
    pue: Annotated[float, PUE]
    usd_per_kwh: Annotated[float, USD_PER_KWH]
    hosting_usd_per_kw_month: Annotated[float, HOSTING_USD]
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


def resolve_pricing(
    book: PricesFile,
    providers: Sequence[str] | None,
    tier: Tier | None,
    statistic: Statistic | None,
    where: str = "pricing.providers",
    secondary: bool | None = None,
) -> Pricing:
    """A pricing basis from a spec's tokens: provider names, kinds, or all; the book's
    default for whatever is not given."""
    base = book.default
    kinds: list[str] = sorted({p.kind for p in book.providers.values()})
    names = []
    for i, token in enumerate(providers or base.providers):
        t = str(token).strip().lower()
        if t != "all" and t not in kinds and t not in book.providers:
            close = difflib.get_close_matches(t, list(book.providers) + kinds, n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
            raise InputError(
                f"{where}[{i}]",
                token,
                f"unknown provider; {hint}allowed: a provider ({', '.join(book.providers)}), a kind ({', '.join(kinds)}), "
                "or all (`plan-opt list prices` shows the book)",
            )
        names.append(t)
    return Pricing(tuple(dict.fromkeys(names)), tier or base.tier, statistic or base.statistic, base.secondary if secondary is None else secondary)


def providers_of(book: PricesFile, pricing: Pricing) -> list[str]:
    out: list[str] = []
    for t in pricing.providers:
        out += [n for n, p in book.providers.items() if t in ("all", n, p.kind)]
    return list(dict.fromkeys(out))


def is_secondary(o: Offer) -> bool:
    return o.source_kind.lower().startswith("secondary")


def offers_for(book: PricesFile, gpu: str, pricing: Pricing) -> list[Offer]:
    """Each provider's offer for the GPU on the tier: its newest, and of those its
    cheapest (a provider lists one price per instance and region); cheapest first. Offers
    known only from third parties (source_kind secondary) count only when the basis
    allows them: a plan is priced at what a provider's own page (or a dated
    transcription of it) says."""
    allowed = set(providers_of(book, pricing))
    best: dict[str, Offer] = {}
    for o in book.offers:
        if o.gpu != gpu or o.tier != pricing.tier or o.provider not in allowed or o.suspect:
            continue
        if is_secondary(o) and not pricing.secondary:
            continue
        b = best.get(o.provider)
        if b is None or (o.as_of, -o.usd_per_gpu_hour) > (b.as_of, -b.usd_per_gpu_hour):
            best[o.provider] = o
    return sorted(best.values(), key=lambda o: (o.usd_per_gpu_hour, o.provider))


def price_of(book: PricesFile, gpu: str, pricing: Pricing) -> Price | None:
    """The GPU's price on this basis, naming the offer it comes from; None when no
    provider of the basis offers it on the tier."""
    offers = offers_for(book, gpu, pricing)
    if not offers:
        return None
    o = offers[0] if pricing.statistic == "cheapest" else offers[(len(offers) - 1) // 2]
    seen = ", ".join(f"{x.provider} ${x.usd_per_gpu_hour:.2f}" for x in offers)
    second = "; this offer is known only from a secondary source, not the provider's page" if is_secondary(o) else ""
    return Price(
        o.usd_per_gpu_hour,
        book.providers[o.provider].display_name,
        o.instance or o.gpu,
        o.as_of,
        o.source,
        o.tier,
        f"{pricing.label()}: {len(offers)} offer{'s' if len(offers) != 1 else ''} ({seen}){second}",
    )
