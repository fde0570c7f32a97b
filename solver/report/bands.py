"""A figure's band as every report shows it: a calibration's residual band where
--calibration gave one (± its worst residual), else the default P10–P90 band of
catalogs/bands.yaml (measured / predicted over the validation set's fit split)."""

from __future__ import annotations

from solver.catalog.bands import Band
from solver.physics.deployment import Deployment
from solver.units import fmt_seconds

CALIBRATED = "calibration residuals"


def band_of(value: float, rel: float, band: Band | None) -> tuple[float, float] | None:
    """[low, high] around value: ± rel (a calibration's residual) when set, else the
    default band's P10 and P90 multiples; None without either."""
    if rel:
        return (value * (1 - rel), value * (1 + rel))
    return band.of(value) if band else None


def source_of(rel: float, band: Band | None) -> str | None:
    """Where a band comes from, in words."""
    if rel:
        return CALIBRATED
    if band is None:
        return None
    whose = "pooled" if band.group == "pooled" else band.group
    return f"P10–P90 of measured / predicted, {band.points} fit points ({whose}; catalogs/bands.yaml)"


def tpot_band(d: Deployment, tpot_s: float, batch: float) -> tuple[float, float] | None:
    return band_of(tpot_s, d.band[0], d.bands.tpot_at(batch) if d.bands else None)


def ttft_band(d: Deployment, ttft_s: float) -> tuple[float, float] | None:
    return band_of(ttft_s, d.band[1], d.bands.ttft if d.bands else None)


def tpot_source(d: Deployment, batch: float) -> str | None:
    return source_of(d.band[0], d.bands.tpot_at(batch) if d.bands else None)


def ttft_source(d: Deployment) -> str | None:
    return source_of(d.band[1], d.bands.ttft if d.bands else None)


def throughput_band(d: Deployment, tokens_per_s: float) -> tuple[float, float] | None:
    """Throughput's band from the default bands (a calibration fits times, not rates)."""
    return d.bands.throughput.of(tokens_per_s) if d.bands and d.bands.throughput else None


def kv_band(d: Deployment, kv_tokens: float) -> tuple[float, float] | None:
    return d.bands.kv.of(kv_tokens) if d.bands and d.bands.kv else None


def time_text(lohi: tuple[float, float] | None, source: str | None, what: str = "") -> str:
    """'; [what ]P10–P90 a – b' for a report's line, or nothing."""
    if lohi is None:
        return ""
    label = f"{what} " if what else ""
    if source == CALIBRATED:
        return f"; {label}band {fmt_seconds(lohi[0])} – {fmt_seconds(lohi[1])} ({CALIBRATED})"
    return f"; {label}P10–P90 {fmt_seconds(lohi[0])} – {fmt_seconds(lohi[1])}"
