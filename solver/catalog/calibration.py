"""A user's calibration (`plan-opt calibrate`'s output file, passed as --calibration):
the factors fitted per device and the residual bands, read into the catalog's declared
fields `calibration` and `calibration_bands`."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

from solver.catalog.factors import FactorOverrides, Factors
from solver.catalog.load import Catalog
from solver.errors import InputError


def load_bands(path: str | Path) -> dict[str, dict[str, float]]:
    """Device name → the worst relative residual of each fitted metric ("tpot",
    "ttft"): the half-width of the band plan-opt shows around its figures."""
    from solver.catalog.yaml_lines import load_yaml_file

    data, _ = load_yaml_file(path)
    out = {}
    for e in (data or {}).get("calibration", []) if isinstance(data, dict) else []:
        res = e.get("residuals") or {}
        out[e.get("gpu")] = {k: float(v["max_ape"]) for k, v in res.items() if isinstance(v, dict) and "max_ape" in v}
    return out


def load_calibration(path: str | Path) -> dict[str, FactorOverrides]:
    """Device name → fitted factors, for --calibration."""
    from solver.catalog.yaml_lines import load_yaml_file

    data, _ = load_yaml_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("calibration"), list):
        raise InputError("calibration", str(path), "expected a file written by `plan-opt calibrate` (a 'calibration' list)")
    from pydantic import TypeAdapter, ValidationError

    adapter = TypeAdapter(FactorOverrides)
    out = {}
    for i, e in enumerate(data["calibration"]):
        try:
            out[e["gpu"]] = adapter.validate_python(e["factors"])
        except (KeyError, TypeError) as exc:
            raise InputError(f"calibration[{i}]", None, f"malformed entry ({exc})", source=str(path)) from None
        except ValidationError as exc:
            raise InputError.from_validation(exc, source=str(path)) from None
    return out


def with_calibration(catalog: Catalog, path: str | Path | None) -> Catalog:
    """The catalog with fitted factors applied to their devices (a shallow copy)."""
    if not path:
        return catalog
    fitted = load_calibration(path)
    out = copy.copy(catalog)
    out.calibration = {catalog.device(name).name: fo for name, fo in fitted.items()}
    out.calibration_bands = {catalog.device(name).name: b for name, b in load_bands(path).items()}
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
