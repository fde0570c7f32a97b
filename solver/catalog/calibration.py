"""A user's calibration (`plan-opt calibrate`'s output file, passed as --calibration):
the factors fitted per device and the residual bands, read into the catalog's declared
fields `calibration` and `calibration_bands`.

The file is read at the edge like a spec: its shape is checked (a `calibration` list
of entries, each with its gpu and factors), every factor within the range
`catalog/factors.py` states, and every residual a finite share from 0 to 100 (10,000 %:
a band so wide it says the fit failed, yet one that keeps the pessimistic factors
finite). A bad entry is refused naming the file, the line, the field and the range."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from solver.catalog.factors import FactorOverrides, Factors
from solver.catalog.load import Catalog
from solver.catalog.types import Bound
from solver.errors import InputError

RESIDUAL = Bound(0, 100)
"""A relative residual (|estimate − measured| / measured): 0 to 100."""
POINTS = Bound(0, 1e9, integer=True)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Residuals(_Strict):
    """How far the fitted figures still lie from the measurements, over `points` of them."""

    median_ape: Annotated[float, RESIDUAL] | None = None
    max_ape: Annotated[float, RESIDUAL] | None = None
    points: Annotated[int, POINTS] | None = None


class Bands(_Strict):
    tpot: Residuals | None = None
    ttft: Residuals | None = None


class CalibrationEntry(_Strict):
    gpu: str = Field(min_length=1)
    engine: str = "vllm"
    factors: FactorOverrides
    tpot_points: Annotated[int, POINTS] | None = None
    ttft_points: Annotated[int, POINTS] | None = None
    tpot_fit: Literal["defaults", "scale", "line"] | None = None
    """Which TPOT fit `plan-opt calibrate` kept (absent in files older than 2026-12-03)."""
    ttft_fit: Literal["defaults", "utilisation"] | None = None
    residuals: Bands = Bands()
    source: str | None = None
    as_of: dt.date | str | None = None


class CalibrationFile(_Strict):
    compute_basis: Literal["matmul_rate"] | None = None
    """What a fitted compute_efficiency is a share of: "matmul_rate", the device's dense
    peak × its measured matmul share (what `plan-opt calibrate` fits since 2026-12-01);
    absent in older files, whose utilisation is over the datasheet peak."""
    calibration: list[CalibrationEntry]


def read_calibration(path: str | Path) -> tuple[CalibrationFile, dict]:
    """The file, its shape and every number checked; and its map from field path to
    YAML line."""
    from solver.catalog.yaml_lines import load_yaml_file

    data, lines = load_yaml_file(path)
    if not isinstance(data, dict) or "calibration" not in data:
        raise InputError("calibration", None, "expected a file written by `plan-opt calibrate` (a 'calibration' list)", source=str(path))
    try:
        return CalibrationFile.model_validate(data), lines
    except ValidationError as exc:
        raise InputError.from_validation(
            exc, lines, source=str(path), schema=CalibrationFile, fields_hint="a file `plan-opt calibrate` writes holds only its fields"
        ) from None


def load_bands(path: str | Path) -> dict[str, dict[str, float]]:
    """Device name → the worst relative residual of each fitted metric ("tpot",
    "ttft"): the half-width of the band plan-opt shows around its figures."""
    return {e.gpu: _band(e) for e in read_calibration(path)[0].calibration}


def load_calibration(path: str | Path) -> dict[str, FactorOverrides]:
    """Device name → fitted factors, for --calibration."""
    return {e.gpu: e.factors for e in read_calibration(path)[0].calibration}


def _band(e: CalibrationEntry) -> dict[str, float]:
    metrics = {"tpot": e.residuals.tpot, "ttft": e.residuals.ttft}
    return {k: r.max_ape for k, r in metrics.items() if r is not None and r.max_ape is not None}


def with_calibration(catalog: Catalog, path: str | Path | None) -> Catalog:
    """The catalog with fitted factors applied to their devices (a shallow copy)."""
    if not path:
        return catalog
    cal, lines = read_calibration(path)
    out = copy.copy(catalog)
    out.calibration, out.calibration_bands = {}, {}
    for i, e in enumerate(cal.calibration):
        try:
            name = catalog.device(e.gpu).name
        except InputError as exc:
            raise exc.relabel(f"calibration[{i}].gpu").located(lines, str(path)) from None
        if e.factors.compute_efficiency is not None and cal.compute_basis is None and catalog.device(name).matmul_share:
            raise InputError(
                f"calibration[{i}].factors.compute_efficiency",
                e.factors.compute_efficiency,
                f"fitted over {name}'s datasheet peak by a plan-opt that predates its measured matmul share "
                "(catalogs/devices.yaml matmul_share; a file without compute_basis: matmul_rate); "
                "re-run `plan-opt calibrate` on the measurements",
            ).located(lines, str(path))
        out.calibration[name] = e.factors
        out.calibration_bands[name] = _band(e)
    return out


def pessimistic(factors: Factors, band: dict[str, float]) -> Factors:
    """The factors at the band's slow edge: decode and prefill slower by the worst
    residual calibration left (bandwidth and compute efficiency divided, per-step
    overhead multiplied)."""
    tpot, ttft = band.get("tpot", 0.0), band.get("ttft", 0.0)
    return dataclasses.replace(
        factors,
        bandwidth_efficiency=factors.bandwidth_efficiency / (1 + tpot),
        step_overhead_s=factors.step_overhead_s * (1 + tpot),
        compute_efficiency=factors.compute_efficiency / (1 + ttft),
    )
