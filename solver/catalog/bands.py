"""How sure a prediction is: per metric, the P10 and P90 of measured / predicted over
the validation set's FIT split (catalogs/bands.yaml, written by bench/fit_bands.py).

A band multiplies a prediction: [figure × lo, figure × hi] should hold 80 % of real
runs. It is kept per engine and memory kind ("vllm.hbm") where the fit half holds
enough points of that group, else the metric's pooled band; the band shown names
which, and over how many points it was fitted."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Annotated

from annotated_types import Ge, Gt, Le

from solver.catalog.factors import Factors
from solver.catalog.types import FORBID

METRICS = ("tpot1", "tpot", "ttft", "throughput", "kv")
"""batch-1 TPOT, batched TPOT, TTFT of one prompt, throughput, KV capacity."""

Ratio = Annotated[float, Gt(0), Le(100)]


@dataclass(frozen=True)
class BandEntry:
    """measured / predicted at the lower and upper quantile, over `points` fit points."""

    __pydantic_config__ = FORBID
    lo: Ratio
    hi: Ratio
    points: Annotated[int, Ge(1)]

    def __post_init__(self) -> None:
        if self.lo > self.hi:
            raise ValueError(f"band lo {self.lo} is above hi {self.hi}")


@dataclass(frozen=True)
class MetricBands:
    __pydantic_config__ = FORBID
    pooled: BandEntry
    groups: dict[str, BandEntry] = field(default_factory=dict)
    """engine.memory_kind ("vllm.hbm") → its own band, where it has min_points."""


@dataclass(frozen=True)
class BandsFile:
    """catalogs/bands.yaml."""

    __pydantic_config__ = FORBID
    made_by: str
    as_of: dt.date
    quantiles: tuple[float, float] = (0.1, 0.9)
    min_points: int = 0
    """Fit points a group needs for a band of its own (0: pooled bands only)."""
    widened: dict[str, float] = field(default_factory=dict)
    """Per metric, how much the log half-widths were widened to hold out of sample."""
    metrics: dict[str, MetricBands] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.metrics) - set(METRICS))
        if unknown:
            raise ValueError(f"bands.yaml: unknown metric {unknown[0]!r}; allowed: {', '.join(METRICS)}")


@dataclass(frozen=True)
class Band:
    """A prediction's band: multiply the figure by lo and hi; `group` says whose band
    ("vllm.hbm" or "pooled") and `points` how many fit points it rests on."""

    lo: float
    hi: float
    points: int
    group: str

    def of(self, value: float) -> tuple[float, float]:
        return (value * self.lo, value * self.hi)


def band_for(bands: BandsFile | None, metric: str, engine: str, memory_kind: str) -> Band | None:
    """The group's band where it has one, else the metric's pooled band; None when the
    file has none for the metric."""
    if bands is None or metric not in bands.metrics:
        return None
    mb = bands.metrics[metric]
    key = f"{engine}.{memory_kind}"
    e, group = (mb.groups[key], key) if key in mb.groups else (mb.pooled, "pooled")
    return Band(e.lo, e.hi, e.points, group)


def quantile(values: list[float], q: float) -> float:
    """The q-quantile by linear interpolation between order statistics (Hyndman and
    Fan's type 7, numpy's default): sorted x₀…x₍ₙ₋₁₎, position h = (n − 1)·q, value
    x⌊h⌋ + (h − ⌊h⌋)(x⌊h⌋₊₁ − x⌊h⌋)."""
    if not values:
        raise ValueError("a quantile of no values")
    xs = sorted(values)
    h = (len(xs) - 1) * q
    i = math.floor(h)
    if i + 1 >= len(xs):
        return xs[-1]
    return xs[i] + (h - i) * (xs[i + 1] - xs[i])


def slow_edge(band: Band | None) -> float:
    """How much slower than predicted a time metric is at the band's slow edge: its
    upper quantile, never below 1 (a pessimistic plan is never held to a faster figure)."""
    return max(1.0, band.hi) if band else 1.0


@dataclass(frozen=True)
class Bands:
    """The bands of one deployment's figures (its engine and memory kind)."""

    tpot1: Band | None = None
    tpot: Band | None = None
    ttft: Band | None = None
    throughput: Band | None = None
    kv: Band | None = None

    def tpot_at(self, batch: float) -> Band | None:
        """A step's band: batch-1 TPOT's for one sequence, batched TPOT's for more."""
        return self.tpot1 if batch <= 1 else self.tpot


def bands_for(bands: BandsFile | None, engine: str, memory_kind: str) -> Bands | None:
    if bands is None or not bands.metrics:
        return None
    return Bands(**{m: band_for(bands, m, engine, memory_kind) for m in METRICS})


def slowed(factors: Factors, tpot_edge: float, ttft_edge: float) -> Factors:
    """The factors at the bands' slow edge, every time a step or a prompt takes grown
    by at least its edge: a decode step's reads and fixed costs by tpot_edge, a
    prompt's fixed costs by ttft_edge, the matmul rate (both run on it) by the larger.
    A device's links are facts, not factors: at TP > 1 the all-reduces stay as they are."""
    both = max(tpot_edge, ttft_edge)
    return dataclasses.replace(
        factors,
        bandwidth_efficiency=factors.bandwidth_efficiency / tpot_edge,
        compute_efficiency=factors.compute_efficiency / both,
        step_overhead_s=factors.step_overhead_s * tpot_edge,
        layer_overhead_s=factors.layer_overhead_s * tpot_edge,
        sequence_overhead_s=factors.sequence_overhead_s * tpot_edge,
        expert_layer_overhead_s=factors.expert_layer_overhead_s * tpot_edge,
        tp_rank_overhead_s=factors.tp_rank_overhead_s * tpot_edge,
        prefill_expert_overhead_s=factors.prefill_expert_overhead_s * ttft_edge,
        request_overhead_s=factors.request_overhead_s * ttft_edge,
    )
