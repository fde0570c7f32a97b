"""The catalog as data, one shape for `plan-opt list --format json` and the API's catalog
reads (GET /devices, /models, /prices): each entry's figures in SI units with its source
and date, and the price book on a pricing basis."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from solver.catalog import Catalog, Price, Pricing


class PriceOut(BaseModel):
    usd_per_gpu_hour: float
    provider: str
    offer: str
    tier: str
    as_of: dt.date
    basis: str = Field(description="How the offer was chosen among the providers' offers.")
    source: str


class DeviceOut(BaseModel):
    name: str
    display_name: str
    vendor: str
    family: str
    memory_bytes: int = Field(description="Bytes (GB = 1e9; GiB = 2^30).")
    memory_bandwidth_bytes_per_s: float
    memory_kind: str
    dense_flops_per_s: dict[str, float] = Field(description="Dense tensor throughput per compute precision (no 2:4 sparsity).")
    weight_formats: list[str]
    kv_formats: list[str]
    platforms: list[str]
    tdp_w: float | None
    price: PriceOut | None = Field(description="On the catalog's default pricing basis.")
    purchase_usd: float | None
    source: str
    as_of: dt.date


class CheckpointOut(BaseModel):
    hf_id: str
    format: str
    variant: str
    container: str


class ModelOut(BaseModel):
    name: str
    display_name: str
    hf_id: str | None
    total_params: int
    active_params: int
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    attention: str
    max_context_tokens: int
    num_experts: int
    experts_per_token: int
    published: list[CheckpointOut]
    source: str
    as_of: dt.date


class OfferOut(BaseModel):
    provider: str
    gpu: str
    tier: str
    usd_per_gpu_hour: float
    as_of: dt.date
    instance: str | None
    region: str | None
    source: str
    suspect: bool = Field(description="Out of line with every other offer for the GPU: listed, never used.")


class PriceBookOut(BaseModel):
    as_of: dt.date
    basis: str
    prices: dict[str, PriceOut | None] = Field(description="Each GPU's price on the basis (null: no offer on it).")
    offers: list[OfferOut] = Field(description="The offers on the basis's tier from its providers.")


def _price(p: Price | None) -> PriceOut | None:
    if p is None:
        return None
    return PriceOut(
        usd_per_gpu_hour=p.usd_per_gpu_hour,
        provider=p.provider,
        offer=p.offer,
        tier=p.tier,
        as_of=p.as_of,
        basis=p.basis,
        source=p.source,
    )


def devices_out(cat: Catalog) -> list[DeviceOut]:
    return [
        DeviceOut(
            name=d.name,
            display_name=d.display_name,
            vendor=d.vendor,
            family=d.family,
            memory_bytes=d.memory_bytes,
            memory_bandwidth_bytes_per_s=d.memory_bandwidth_bytes_per_s,
            memory_kind=d.memory_kind,
            dense_flops_per_s={str(k): v for k, v in d.dense_flops_per_s.items()},
            weight_formats=list(d.weight_formats),
            kv_formats=list(d.kv_formats),
            platforms=list(d.platforms),
            tdp_w=d.tdp_w,
            price=_price(d.price),
            purchase_usd=d.purchase_usd,
            source=d.source,
            as_of=d.as_of,
        )
        for d in cat.devices
    ]


def models_out(cat: Catalog) -> list[ModelOut]:
    return [
        ModelOut(
            name=m.name,
            display_name=m.display_name,
            hf_id=m.hf_id,
            total_params=m.total_params,
            active_params=m.active_params,
            num_layers=m.num_layers,
            hidden_size=m.hidden_size,
            num_attention_heads=m.num_attention_heads,
            num_kv_heads=m.num_kv_heads,
            head_dim=m.head_dim,
            attention=m.attention,
            max_context_tokens=m.max_context_tokens,
            num_experts=m.num_experts,
            experts_per_token=m.experts_per_token,
            published=[CheckpointOut(hf_id=c.hf_id, format=c.format, variant=c.variant, container=c.container) for c in m.published],
            source=m.source,
            as_of=m.as_of,
        )
        for m in cat.models
    ]


def price_book_out(cat: Catalog, pricing: Pricing, gpus: list[str]) -> PriceBookOut:
    """What `plan-opt list prices` prints, as data: each GPU's price on the basis and the offers behind it."""
    allowed = set(cat.providers_of(pricing))
    offers = sorted(cat.prices.offers, key=lambda o: (o.gpu, o.tier, o.usd_per_gpu_hour))
    return PriceBookOut(
        as_of=cat.prices.as_of,
        basis=pricing.label(),
        prices={g: _price(cat.price(g, pricing)) for g in gpus},
        offers=[
            OfferOut(
                provider=o.provider,
                gpu=o.gpu,
                tier=o.tier,
                usd_per_gpu_hour=o.usd_per_gpu_hour,
                as_of=o.as_of,
                instance=o.instance,
                region=o.region,
                source=o.source,
                suspect=o.suspect,
            )
            for o in offers
            if o.gpu in gpus and o.provider in allowed and o.tier == pricing.tier
        ],
    )
