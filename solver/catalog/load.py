"""The catalog: devices, platforms, models and precisions, read from `catalogs/*.yaml`.

Every entry carries `source` and `as_of`, so a figure in a report can always be
traced to where it came from. Internal units are SI: bytes, bytes/s, FLOP/s,
seconds, US dollars.

The entries are plain frozen dataclasses; pydantic validates the YAML into them
(constraints live in the annotations, cross-field rules in `__post_init__`). The
files' parsed YAML is cached on disk keyed by their bytes and this package's code,
so a CLI run skips parsing YAML it has parsed before; it is validated every time.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from solver.catalog import cache
from solver.catalog.bands import BandsFile
from solver.catalog.devices import (
    Device,
    Platform,
)
from solver.catalog.engines import Engine
from solver.catalog.factors import FactorOverrides, Factors
from solver.catalog.files import (
    CATALOG_FILES,
    DevicesFile,
    EnginesFile,
    FittedFile,
    ModelsFile,
    PlatformsFile,
    PrecisionsFile,
    catalog_cache_key,
    with_fitted_efficiency,
    with_fitted_shares,
)
from solver.catalog.models import (
    Model,
)
from solver.catalog.precisions import Precision
from solver.catalog.prices import (
    Offer,
    Ownership,
    Price,
    PricesFile,
    Pricing,
    Statistic,
    Tier,
    offers_for,
    price_of,
    providers_of,
    resolve_pricing,
)
from solver.catalog.releases import Releases, ReleasesFile
from solver.errors import InputError

if TYPE_CHECKING:
    from pydantic import TypeAdapter


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum() or ch == ".")


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_E = TypeVar("_E", bound=_Named)
_T = TypeVar("_T")


@dataclass(frozen=True)
class _Index(Generic[_E]):
    """Name → entry with aliases, case and punctuation folded, and 'did you mean'."""

    kind: str
    field_name: str
    entries: dict[str, _E]
    keys: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, kind: str, field_name: str, items: list[_E]) -> _Index[_E]:
        entries: dict[str, _E] = {}
        keys: dict[str, str] = {}
        for item in items:
            if item.name in entries:
                raise ValueError(f"duplicate {kind} name '{item.name}'")
            entries[item.name] = item
            names = [item.name, *getattr(item, "aliases", [])]
            hf_id = getattr(item, "hf_id", None)
            if hf_id:
                names.append(hf_id)
            for n in names:
                k = _norm(n)
                if k in keys and keys[k] != item.name:
                    raise ValueError(f"{kind} alias '{n}' names both '{keys[k]}' and '{item.name}'")
                keys[k] = item.name
        return cls(kind, field_name, entries, keys)

    def get(self, name: str) -> _E:
        key = self.keys.get(_norm(str(name)))
        if key is not None:
            return self.entries[key]
        close = difflib.get_close_matches(_norm(str(name)), list(self.keys), n=3, cutoff=0.5)
        suggestions = list(dict.fromkeys(self.keys[c] for c in close))  # closest first
        hint = f"did you mean {', '.join(repr(s) for s in suggestions)}? " if suggestions else ""
        raise InputError(
            self.field_name,
            name,
            f"unknown {self.kind}; {hint}`plan-opt list {self.kind}s` shows all {len(self.entries)}",
        )

    def __iter__(self) -> Iterator[_E]:
        return iter(self.entries.values())

    def __len__(self) -> int:
        return len(self.entries)


class Catalog:
    """Everything plan-opt knows about hardware and models, validated."""

    def __init__(
        self,
        devices: DevicesFile,
        platforms: PlatformsFile,
        models: ModelsFile,
        precisions: PrecisionsFile,
        engines: EnginesFile,
        fitted: FittedFile | None = None,
        prices: PricesFile | None = None,
        ownership: Ownership | None = None,
        releases: ReleasesFile | None = None,
        bands: BandsFile | None = None,
    ):
        df = devices.default_factors
        fitted = fitted or FittedFile("nothing", dt.date.min)
        priors = Factors(**{f.name: getattr(df, f.name) for f in dataclasses.fields(Factors)})
        self.default_factors = fitted.defaults.apply(priors)
        self.prices = prices or PricesFile(dt.date.min, Pricing(("gpu_cloud",)), {}, ())
        self.ownership = ownership or Ownership(5, 1.0, 1.0, 0.0, 0.0)
        self.calibration: dict[str, FactorOverrides] = {}
        """Device → factors a user's calibration fitted (--calibration; see catalog/calibration.py)."""
        self.calibration_bands: dict[str, dict[str, float]] = {}
        """Device → the worst residual per metric that calibration left (its band)."""
        self.bands = bands
        """The default prediction bands (bands.yaml, fitted by bench/fit_bands.py)."""
        self.default_pricing = self.prices.default
        for d in devices.devices:
            if d.price is not None:
                raise ValueError(f"device '{d.name}' has a price: prices live in prices.yaml")
        self.devices = _Index.build("device", "gpu", devices.devices)
        self._check_prices()
        self.devices = _Index.build(
            "device", "gpu", [dataclasses.replace(d, price=self.price(d.name, self.default_pricing)) for d in devices.devices]
        )
        self.platforms = _Index.build("platform", "platform", platforms.platforms)
        self.models = _Index.build("model", "model", models.models)
        self.fitted_on = fitted.fitted_on
        fitted_precisions = [with_fitted_shares(p, fitted) for p in precisions.precisions]
        sixteen = next((p.compute_share for p in fitted_precisions if p.name == "fp16"), 1.0)
        self.precisions = _Index.build(
            "precision", "precision", [dataclasses.replace(p, sixteen_bit_compute_share=sixteen) for p in fitted_precisions]
        )
        self.engines = _Index.build("engine", "engine", [with_fitted_efficiency(e, fitted) for e in engines.engines])
        self.speculative_methods = {m.name: m for m in engines.speculative}
        self.releases = Releases(releases, self.engines.entries, fitted.releases)
        """Each engine's release lines (catalogs/engine_releases.yaml, catalog/releases.py)."""
        for m in engines.speculative:
            stray = [n for h in m.heads for n in h.models if n not in self.models.entries]
            if stray:
                raise ValueError(f"engines.yaml speculative {m.name}: heads name unknown model {', '.join(stray)}")
        for groups in fitted.engines.values():
            for key in groups:
                if key.split(".")[-1] not in ("hbm", "gddr", "lpddr"):
                    raise ValueError(f"fitted.yaml: '{key}' is not a memory kind (hbm, gddr, lpddr) or vendor.kind")
        for name in [*fitted.engines, *fitted.precisions]:
            if name not in self.engines.entries and name not in self.precisions.entries:
                raise ValueError(f"fitted.yaml names unknown engine or precision '{name}'")
        self._cross_check()

    def _cross_check(self) -> None:
        for e in self.engines:
            for use, formats in (("weights", e.weight_formats + e.pads_moe_intermediate), ("kv", e.kv_formats)):
                for fmt in formats:
                    if fmt not in self.precisions.entries or use not in self.precisions.entries[fmt].use:
                        raise ValueError(f"engine '{e.name}' names '{fmt}', not a {use} format")
            self._check_moe_padding(e)
        for m in self.models:
            for c in m.published:
                if c.format not in self.precisions.entries or "weights" not in self.precisions.entries[c.format].use:
                    raise ValueError(f"model '{m.name}': published checkpoint {c.hf_id} names '{c.format}', not a weight format")
        for d in self.devices:
            for p in d.platforms:
                if p not in self.platforms.entries:
                    raise ValueError(f"device '{d.name}' names unknown platform '{p}'")
            for fmt in d.weight_formats + d.kv_formats:
                if fmt not in self.precisions.entries:
                    raise ValueError(f"device '{d.name}' names unknown precision '{fmt}'")
            for fmt in d.weight_formats:
                if "weights" not in self.precisions.entries[fmt].use:
                    raise ValueError(f"device '{d.name}': '{fmt}' is not a weight format")
            for fmt in d.kv_formats:
                if "kv" not in self.precisions.entries[fmt].use:
                    raise ValueError(f"device '{d.name}': '{fmt}' is not a KV-cache format")

    def _check_moe_padding(self, e: Engine) -> None:
        """An engine's expert padding rules name formats it pads and devices and families the catalog holds."""
        families = {d.family for d in self.devices}
        for r in e.moe_padding:
            for fmt in r.formats:
                if fmt not in e.pads_moe_intermediate:
                    raise ValueError(
                        f"engine '{e.name}': moe_padding names '{fmt}', not in its pads_moe_intermediate {list(e.pads_moe_intermediate)}"
                    )
            for name in r.devices:
                if name not in self.devices.entries:
                    raise ValueError(f"engine '{e.name}': moe_padding names unknown device '{name}'")
            for fam in r.families:
                if fam not in families:
                    raise ValueError(f"engine '{e.name}': moe_padding names unknown device family '{fam}' (families: {', '.join(sorted(families))})")

    def _check_prices(self) -> None:
        for o in self.prices.offers:
            if o.provider not in self.prices.providers:
                raise ValueError(f"prices.yaml: offer for '{o.gpu}' names unknown provider '{o.provider}'")
            if o.gpu not in self.devices.entries:
                raise ValueError(f"prices.yaml: offer of '{o.provider}' names unknown device '{o.gpu}'")
        self.pricing(self.default_pricing.providers, self.default_pricing.tier, self.default_pricing.statistic)

    def pricing(
        self,
        providers: Sequence[str] | None,
        tier: Tier | None = None,
        statistic: Statistic | None = None,
        where: str = "pricing.providers",
        secondary: bool | None = None,
    ) -> Pricing:
        return resolve_pricing(self.prices, providers, tier, statistic, where, secondary)

    def providers_of(self, pricing: Pricing) -> list[str]:
        return providers_of(self.prices, pricing)

    def offers_for(self, gpu: str, pricing: Pricing) -> list[Offer]:
        return offers_for(self.prices, gpu, pricing)

    def price(self, gpu: str, pricing: Pricing) -> Price | None:
        return price_of(self.prices, gpu, pricing)

    def device(self, name: str) -> Device:
        return self.devices.get(name)

    def model(self, name: str) -> Model:
        return self.models.get(name)

    def platform(self, name: str) -> Platform:
        return self.platforms.get(name)

    def precision(self, name: str, use: str = "weights") -> Precision:
        field = f"precision.{'kv_cache' if use == 'kv' else use}"
        try:
            p = self.precisions.get(name)
        except InputError as exc:
            raise exc.relabel(field) from None
        if use not in p.use:
            allowed = ", ".join(x.name for x in self.precisions if use in x.use)
            raise InputError(field, name, f"not a {use} format; allowed: {allowed}")
        return p

    def engine(self, name: str) -> Engine:
        return self.engines.get(name)

    def factors_for(self, device: Device) -> Factors:
        return device.factors.apply(self.default_factors)


def catalog_dir() -> Path:
    """The shipped catalogs: `solver/catalogs/` in an installed wheel (setuptools maps
    the top-level `catalogs/` there), or `catalogs/` beside the package in a source
    checkout or editable install."""
    here = Path(__file__).resolve().parent.parent  # the solver package
    for candidate in (here / "catalogs", here.parent / "catalogs"):
        if (candidate / "devices.yaml").exists():
            return candidate
    raise InputError("catalog", str(here), "the catalogs are missing from this installation; reinstall plan-opt")


_adapters: dict[type, TypeAdapter[Any]] = {}


def _adapter(schema: type[_T]) -> TypeAdapter[_T]:
    """One pydantic validator per catalog file's shape, built once per process (its
    build, not the validation, is most of what loading a catalog costs)."""
    from pydantic import TypeAdapter

    if schema not in _adapters:
        _adapters[schema] = TypeAdapter(schema)
    return _adapters[schema]


def _validate_file(path: Path, text: str, schema: type[_T]) -> tuple[object, _T]:
    """The file's parsed YAML and its validated contents."""
    from pydantic import ValidationError

    from solver.catalog.yaml_lines import load_yaml_text

    data, lines = load_yaml_text(text, source=str(path))
    try:
        return data, _adapter(schema).validate_python(data)
    except ValidationError as exc:
        raise InputError.from_validation(
            exc, lines, source=str(path), schema=schema, fields_hint="check its spelling against the catalog file's other entries"
        ) from None


def _parts_from(data: object) -> dict[str, Any] | None:
    """The files' validated contents from their cached parsed YAML, through the same
    validation as the YAML; None when the entry is not a valid catalog."""
    if not isinstance(data, dict) or set(data) != set(CATALOG_FILES):
        return None
    try:
        return {key: _adapter(schema).validate_python(data[key]) for key, (_, schema) in CATALOG_FILES.items()}
    except Exception:  # wrong shape, wrong values (ValidationError), a check that fails: not ours
        return None


def load_catalog(directory: Path | None = None, *, use_cache: bool = True) -> Catalog:
    """Validate the catalog files into a `Catalog`.

    The cache (catalog/cache.py) holds the files' parsed YAML, keyed by their bytes and
    this package's code; a hit skips the YAML parsing, never the validation: the data
    goes through the same schemas and the same `Catalog` checks as the YAML would, and
    an entry that fails them is rebuilt from the files. An entry is written only when
    reading it back gives exactly the entries the YAML gave."""
    directory = Path(directory) if directory else catalog_dir()
    raw: dict[str, bytes] = {}
    for key, (fname, _) in CATALOG_FILES.items():
        try:
            raw[key] = (directory / fname).read_bytes()
        except OSError:
            raise InputError("catalog", str(directory / fname), "no such catalog file") from None
    cache_key = catalog_cache_key(raw)
    if use_cache:
        cached = _parts_from(cache.load("catalog", cache_key))
        if cached is not None:
            try:
                return Catalog(**cached)
            except Exception:  # the entry passed the schemas but not the catalog's own checks
                pass
    data: dict[str, object] = {}
    parts: dict[str, Any] = {}
    for key, (fname, schema) in CATALOG_FILES.items():
        try:
            text = raw[key].decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("catalog", str(directory / fname), "not UTF-8 text") from None
        data[key], parts[key] = _validate_file(directory / fname, text, schema)
    try:
        catalog = Catalog(**parts)
    except ValueError as exc:
        raise InputError("catalog", str(directory), str(exc)) from None
    if use_cache:
        body = cache.encode(data)
        if body is not None and _parts_from(cache.decode(body)) == parts:
            cache.store("catalog", cache_key, body)
    return catalog


_cached: Catalog | None = None


def default_catalog() -> Catalog:
    global _cached
    if _cached is None:
        _cached = load_catalog()
    return _cached
