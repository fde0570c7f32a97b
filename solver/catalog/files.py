"""The catalog files' shapes: one pydantic-validated dataclass per `catalogs/*.yaml`,
and how the fitted factors (`fitted.yaml`) fold into the entries they tune."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from solver.catalog import cache
from solver.catalog.bands import BandsFile
from solver.catalog.devices import Device, Platform
from solver.catalog.engines import Engine, SpeculativeMethod
from solver.catalog.factors import DefaultFactors, FactorOverrides
from solver.catalog.models import Model
from solver.catalog.precisions import Precision
from solver.catalog.prices import Ownership, PricesFile
from solver.catalog.ranges import KERNEL_SHARE
from solver.catalog.releases import ReleaseFit, ReleasesFile
from solver.catalog.types import FORBID


@dataclass(frozen=True)
class DevicesFile:
    __pydantic_config__ = FORBID
    default_factors: DefaultFactors
    devices: list[Device]


@dataclass(frozen=True)
class PlatformsFile:
    __pydantic_config__ = FORBID
    platforms: list[Platform]


@dataclass(frozen=True)
class ModelsFile:
    __pydantic_config__ = FORBID
    models: list[Model]


@dataclass(frozen=True)
class PrecisionsFile:
    __pydantic_config__ = FORBID
    precisions: list[Precision]


@dataclass(frozen=True)
class EnginesFile:
    __pydantic_config__ = FORBID
    engines: list[Engine]
    speculative: list[SpeculativeMethod] = field(default_factory=list)


@dataclass(frozen=True)
class FittedShares:
    __pydantic_config__ = FORBID
    bandwidth_share: Annotated[float, KERNEL_SHARE] | None = None
    compute_share: Annotated[float, KERNEL_SHARE] | None = None
    expert_compute_share: Annotated[float, KERNEL_SHARE] | None = None


@dataclass(frozen=True)
class FittedFile:
    """Factors fitted on the validation set's fit points by bench/fit_defaults.py."""

    __pydantic_config__ = FORBID
    fitted_on: str
    as_of: dt.date
    engines: dict[str, dict[str, FactorOverrides]] = field(default_factory=dict)
    """engine → memory kind ("hbm"), or vendor and memory kind ("amd.hbm") → factors."""
    defaults: FactorOverrides = FactorOverrides()
    """Memory factors fitted on the fit split's logs (runtime overhead, TP overhead)."""
    precisions: dict[str, FittedShares] = field(default_factory=dict)
    releases: dict[str, dict[str, ReleaseFit]] = field(default_factory=dict)
    """engine → release line (catalogs/engine_releases.yaml) → what its fit half's
    campaigns set apart from the engine's pooled factors."""


def with_fitted_shares(p: Precision, fitted: FittedFile) -> Precision:
    got = fitted.precisions.get(p.name)
    if not got:
        return p
    changes = {k: v for k, v in dataclasses.asdict(got).items() if v is not None}
    return dataclasses.replace(p, **changes)


def with_fitted_efficiency(e: Engine, fitted: FittedFile) -> Engine:
    got = fitted.engines.get(e.name)
    return dataclasses.replace(e, efficiency={**e.efficiency, **got}) if got else e


CATALOG_FILES: dict[str, tuple[str, type]] = {
    "devices": ("devices.yaml", DevicesFile),
    "platforms": ("platforms.yaml", PlatformsFile),
    "models": ("models.yaml", ModelsFile),
    "precisions": ("precisions.yaml", PrecisionsFile),
    "engines": ("engines.yaml", EnginesFile),
    "fitted": ("fitted.yaml", FittedFile),
    "prices": ("prices.yaml", PricesFile),
    "ownership": ("ownership.yaml", Ownership),
    "releases": ("engine_releases.yaml", ReleasesFile),
    "bands": ("bands.yaml", BandsFile),
}


CACHE_SCHEMA = 1
"""Raise when what a catalog entry holds changes in a way its inputs' digests miss."""


def yaml_package_bytes() -> bytes:
    """PyYAML's package file, which holds its `__version__`, read without importing it:
    the import is about 9 ms of a process that then reads no YAML (a catalog served from
    the cache, `plan-opt list`)."""
    import importlib.util

    found = importlib.util.find_spec("yaml")
    return Path(found.origin).read_bytes() if found is not None and found.origin else b""


def catalog_cache_key(raw: dict[str, bytes]) -> str:
    """The catalog entry's key: the name and bytes of every catalog file (so an edited
    file is never served from an older entry), the code that reads them (this package
    and the units it parses), the YAML parser's version (its package file), plan-opt's
    version and the entry's schema."""
    import solver
    from solver import units

    here = Path(__file__).resolve().parent  # solver/catalog, with load.py and cache.py
    code = [f.read_bytes() for f in [*sorted(here.glob("*.py")), Path(units.__file__)]]
    versions = f"plan-opt {solver.__version__}; schema {CACHE_SCHEMA}".encode()
    return cache.digest(versions, yaml_package_bytes(), *code, *(p for key, b in raw.items() for p in (CATALOG_FILES[key][0].encode(), b)))
