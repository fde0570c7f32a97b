"""Engine release lines (catalogs/engine_releases.yaml): a spec's `engine.version`
selects the line it falls in, and that line's defaults replace the catalog engine's
fields by name. Defaults change between releases (vLLM's V0 engine chunked prompts only
when asked and kept no prefix cache; V1 does both), so a run on an older release is
predicted with what that release did, not with today's defaults."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from solver.catalog.engines import Engine
from solver.catalog.factors import SmallOverhead
from solver.catalog.types import FORBID, NonNegInt
from solver.errors import InputError

if TYPE_CHECKING:
    from pydantic import TypeAdapter

Version = tuple[int, ...]


@dataclass(frozen=True)
class Sourced:
    """One default as a release's source gives it."""

    __pydantic_config__ = FORBID
    value: Any
    source: str


@dataclass(frozen=True)
class ReleaseLine:
    """Releases from `since` (inclusive) to `until` (exclusive; None: the current line)."""

    __pydantic_config__ = FORBID
    engine: str
    line: str
    since: str
    label: str
    as_of: dt.date
    until: str | None = None
    overrides: dict[str, Sourced] = field(default_factory=dict)
    """Engine fields (solver/catalog/engines.py) replaced by name."""
    recorded: dict[str, Sourced] = field(default_factory=dict)
    """Defaults read from the release's source that no Engine field models yet."""


@dataclass(frozen=True)
class ReleaseFit:
    """A release line's own fitted term (catalogs/fitted.yaml `releases`)."""

    __pydantic_config__ = FORBID
    step_overhead_s: SmallOverhead
    """Added to every forward pass beyond the engine's fitted fixed cost."""
    campaigns: NonNegInt
    """The fit half's campaigns on the lines that share the term."""


@dataclass(frozen=True)
class ReleasesFile:
    __pydantic_config__ = FORBID
    as_of: dt.date
    releases: list[ReleaseLine]


_SEMVER = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[.+\-]?(?:post|dev|rc|a|b)\w*.*|\+.*)?$", re.IGNORECASE)
_BUILD = re.compile(r"^(?:b|build\s*)?(\d+)$", re.IGNORECASE)


def parse_version(engine: str, text: str) -> Version | None:
    """A release as numbers to compare: "0.6.3", "v0.6.3", "0.6.3.post1", "0.21.0rc2"
    give (0, 6, 3[, n]); llama.cpp's builds "b4567", "build 4567" or "4567" give (4567,).
    None where the text is neither."""
    text = str(text).strip()
    if engine == "llama.cpp":
        m = _BUILD.match(text)
        return (int(m.group(1)),) if m else None
    m = _SEMVER.match(text)
    if not m:
        return None
    parts = [int(g) for g in m.groups() if g is not None]
    return tuple(parts + [0] * (3 - len(parts)))


def _line_version(line: ReleaseLine, text: str) -> Version:
    v = parse_version(line.engine, text)
    if v is None:
        raise ValueError(f"engine_releases.yaml: {line.engine} line {line.line}: '{text}' is not a version")
    return v


@functools.cache
def _engine_hints() -> dict[str, Any]:
    """Engine's field types with their bounds (NonNegInt's Ge(0), Fraction's Le(1)): an
    override is held to what engines.yaml's entry is, not to the bare type."""
    return typing.get_type_hints(Engine, include_extras=True)


def _type_name(hint: Any) -> str:
    """A field's type as a message names it: the type a bounded alias annotates."""
    base = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
    return getattr(base, "__name__", str(base))


@functools.cache
def _field_adapter(name: str) -> TypeAdapter[Any]:
    """The validator of Engine's field `name`, built once per process: the release lines
    override 10 fields 41 times, and a validator's build, not its use, is the cost."""
    from pydantic import TypeAdapter

    return TypeAdapter(_engine_hints()[name])


def check_overrides(engine: Engine, overrides: dict[str, Any], where: str) -> dict[str, Any]:
    """The overrides validated against Engine's fields and their types: any field by
    name (so a field added later needs no code here), a name that is not one refused."""
    from pydantic import ValidationError

    names = {f.name for f in dataclasses.fields(Engine)} - {"name", "release", "release_step_overhead_s"}  # the last is fitted
    hints = _engine_hints()
    checked: dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in names:
            raise ValueError(f"{where}: '{key}' is not an Engine field; fields: {', '.join(sorted(names))}")
        try:
            checked[key] = _field_adapter(key).validate_python(value)
        except ValidationError as exc:
            raise ValueError(f"{where}: {key} = {value!r} is not a valid {_type_name(hints[key])}: {exc.errors()[0]['msg']}") from None
    return checked


@dataclass(frozen=True)
class Line:
    """A release line, checked: its bounds as numbers and its overrides as Engine values."""

    spec: ReleaseLine
    start: Version
    end: Version | None
    overrides: dict[str, Any]

    def covers(self, v: Version) -> bool:
        return self.start <= v and (self.end is None or v < self.end)

    @property
    def span(self) -> str:
        return f"{self.spec.since} to before {self.spec.until}" if self.spec.until else f"{self.spec.since} and later"


class Releases:
    """Every engine's release lines, in order, checked against the engines they name."""

    def __init__(self, file: ReleasesFile | None, engines: dict[str, Engine], fitted: dict[str, dict[str, ReleaseFit]] | None = None):
        self.lines: dict[str, list[Line]] = {}
        fitted = fitted or {}
        for r in file.releases if file else []:
            if r.engine not in engines:
                raise ValueError(f"engine_releases.yaml names unknown engine '{r.engine}'")
            where = f"engine_releases.yaml: {r.engine} line {r.line}"
            clash = sorted(set(r.recorded) & {f.name for f in dataclasses.fields(Engine)})
            if clash:
                raise ValueError(f"{where}: {', '.join(clash)} is an Engine field now; list it under overrides")
            end = _line_version(r, r.until) if r.until else None
            overrides = check_overrides(engines[r.engine], {k: s.value for k, s in r.overrides.items()}, where)
            fit = fitted.get(r.engine, {}).get(r.line)
            if fit is not None:  # the line's fitted term (catalogs/fitted.yaml), not a sourced default
                overrides["release_step_overhead_s"] = fit.step_overhead_s
            line = Line(r, _line_version(r, r.since), end, overrides)
            if end is not None and end <= line.start:
                raise ValueError(f"{where}: until {r.until} is not after since {r.since}")
            self.lines.setdefault(r.engine, []).append(line)
        for engine, fits in fitted.items():
            known = {ln.spec.line for ln in self.lines.get(engine, [])}
            for name in fits:
                if name not in known:
                    raise ValueError(f"fitted.yaml releases: {engine} has no release line '{name}'; lines: {', '.join(sorted(known)) or 'none'}")
        for name, lines in self.lines.items():
            lines.sort(key=lambda ln: ln.start)
            for a, b in zip(lines, lines[1:], strict=False):
                if a.end is None or a.end > b.start:
                    raise ValueError(f"engine_releases.yaml: {name} lines {a.spec.line} and {b.spec.line} overlap")
            if lines[-1].end is not None:
                raise ValueError(f"engine_releases.yaml: {name}'s last line ({lines[-1].spec.line}) needs no until: it is the current line")

    def of(self, engine: str) -> list[Line]:
        return self.lines.get(engine, [])

    def line_for(self, engine: Engine, version: str) -> Line:
        """The line a version falls in; an InputError naming the lines known otherwise."""
        lines = self.of(engine.name)
        known = "; ".join(f"{ln.spec.line} ({ln.span})" for ln in lines) or "none listed"
        v = parse_version(engine.name, version)
        if v is None:
            form = 'a build such as "b4567"' if engine.name == "llama.cpp" else 'a release such as "0.6.3" or "v0.6.3"'
            raise InputError("engine.version", version, f"not a version of {engine.name}: give {form}; lines known: {known}")
        line = next((ln for ln in lines if ln.covers(v)), None)
        if line is None:
            raise InputError("engine.version", version, f"no {engine.name} release line holds it; lines known: {known}")
        return line

    def engine_at(self, engine: Engine, version: str | None) -> Engine:
        """The engine as the release sets its defaults: the line's overrides replace the
        catalog's fields, and `release` names the line. No version: the catalog's engine
        (the current release), unchanged."""
        if version is None:
            return engine
        line = self.line_for(engine, version)
        said = f"{engine.name} {line.spec.line}: {line.spec.label}; version {str(version).strip()}"
        return dataclasses.replace(engine, **line.overrides, release=said)
