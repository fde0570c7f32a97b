"""A sweep file (`plan-opt sweep grid.yaml`): one base spec and the scenarios to solve
it under — any spec fields as axes, their values combined (cartesian, the default, or
zipped), and/or a list of scenarios each setting fields of its own."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from solver.catalog.types import USER_INPUT
from solver.catalog.yaml_lines import load_yaml_file
from solver.errors import InputError
from solver.spec.fields import SpecModel
from solver.spec.paths import set_path
from solver.spec.quantities import Flag

MAX_SCENARIOS = 1_000_000
MAX_DEPTH = 8


class SweepIn(SpecModel):
    """A base spec and the scenarios to solve it under."""

    base: str | None = Field(default=None, description="A spec file, relative to the sweep file (or give spec:).")
    spec: dict[str, Any] | None = Field(default=None, description="The base spec inline (or give base:).")
    axes: dict[str, list[Any]] = Field(
        default={}, description="Dotted spec field → its values, e.g. {workload.users: [32, 64], sla.max_tpot: [30ms, 50ms]}."
    )
    combine: Literal["cartesian", "zip"] = Field(default="cartesian", description="Every combination of the axes' values, or the i-th of each.")
    scenarios: list[dict[str, Any]] = Field(default=[], description="Further scenarios, each a mapping of dotted field → value.")
    explain: Flag = Field(default=False, description="Solve each with its explanation (binding targets; slower) or the plan only.")

    @model_validator(mode="after")
    def _shape(self) -> SweepIn:
        if (self.base is None) == (self.spec is None):
            raise ValueError("give the base spec as base: (a file) or spec: (inline), one of them")
        if not self.axes and not self.scenarios:
            raise ValueError("give axes: or scenarios: (nothing to sweep)")
        for path, values in self.axes.items():
            _check_path(path)
            if not values:
                raise ValueError(f"axes.{path}: give at least one value")
        if self.combine == "zip" and len({len(v) for v in self.axes.values()}) > 1:
            raise ValueError("combine: zip needs axes of one length: " + ", ".join(f"{k} has {len(v)}" for k, v in self.axes.items()))
        for s in self.scenarios:
            for path in s:
                _check_path(path)
        if count(self) > MAX_SCENARIOS:
            raise ValueError(f"{count(self):,} scenarios: at most {MAX_SCENARIOS:,} in one sweep")
        return self


def _check_path(path: str) -> None:
    keys = path.split(".")
    if not path or any(not k for k in keys) or len(keys) > MAX_DEPTH:
        raise ValueError(f"{path!r}: a dotted spec field, e.g. sla.max_tpot (at most {MAX_DEPTH} names)")


def count(s: SweepIn) -> int:
    n = 0
    if s.axes:
        lengths = [len(v) for v in s.axes.values()]
        if s.combine == "zip":
            n = lengths[0]
        else:
            n = 1
            for k in lengths:
                n *= k
    return n + len(s.scenarios)


def scenarios(s: SweepIn) -> list[dict[str, Any]]:
    """Each scenario's settings, in a fixed order: the axes' combinations, then the list."""
    out: list[dict[str, Any]] = []
    if s.axes:
        keys = list(s.axes)
        rows = zip(*s.axes.values()) if s.combine == "zip" else itertools.product(*s.axes.values())
        out += [dict(zip(keys, values)) for values in rows]
    out += [dict(x) for x in s.scenarios]
    return out


def scenario_id(spec_data: dict[str, Any], explain: bool = False) -> str:
    """A short name that is the same for the same scenario: the whole spec it solves (the
    base with its settings) and whether rows are explained. Resuming matches on it, so a
    row of an edited base spec is solved again, never kept stale."""
    what = {"spec": spec_data, "explain": explain}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:12]


def with_settings(base: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """The base spec with each dotted field set (a copy; the base is not changed)."""
    out = json.loads(json.dumps(base, default=str))
    for path, value in settings.items():
        set_path(out, path, value)
    return out


def load_sweep(path: str | Path) -> tuple[SweepIn, dict[str, Any], Path]:
    """The sweep, its base spec as data, and the folder its relative paths start from."""
    data, lines = load_yaml_file(path)
    if not isinstance(data, dict):
        raise InputError("sweep", None, "expected a YAML mapping with base (or spec) and axes (or scenarios)", source=str(path), line=1)
    try:
        sweep = SweepIn.model_validate(data, context=USER_INPUT)
    except ValidationError as exc:
        raise InputError.from_validation(
            exc, lines, source=str(path), schema=SweepIn, fields_hint="`plan-opt sweep --help` shows a sweep file's fields"
        ) from None
    folder = Path(path).parent
    if sweep.spec is not None:
        return sweep, sweep.spec, folder
    assert sweep.base is not None  # the validator asks for one of the two
    base_path = folder / sweep.base
    base, _ = load_yaml_file(base_path)
    if not isinstance(base, dict):
        raise InputError("base", sweep.base, "is not a YAML mapping (a spec file)", source=str(path))
    return sweep, base, base_path.parent
