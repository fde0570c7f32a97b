"""Shared annotated types of the catalog entries (SI units inside), and `Bound`: the
range a number a user gives must lie in, stated once and checked at the edge."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le
from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from solver.units import parse_quantity

ComputeDtype = Literal["fp16", "bf16", "fp8", "int8", "fp4"]
AttentionKind = Literal["mha", "gqa", "mqa", "mla"]
LinkKind = Literal["nvlink", "nvswitch", "pcie", "infinity-fabric", "ici", "roce", "infiniband", "ethernet", "neuronlink"]

MAX_FIGURE = 1e18
"""No catalog figure lies beyond this (the largest, a device's FLOP/s, is under 1e16):
a bound for the figures without a range of their own, so that every one, from a file
or a cache entry, stays finite through the physics."""
Positive = Annotated[float, Gt(0), Le(MAX_FIGURE)]
PositiveInt = Annotated[int, Gt(0), Le(MAX_FIGURE)]
Count = Annotated[int, Ge(1), Le(MAX_FIGURE)]
NonNegInt = Annotated[int, Ge(0), Le(MAX_FIGURE)]
Fraction = Annotated[float, Gt(0), Le(1)]
Name = str  # checked in check_name: lowercase letters, digits, '.', '_' and '-'

FORBID = {"extra": "forbid"}  # read by pydantic: unknown keys are errors, not ignored


def check_name(kind: str, name: str) -> None:
    ok = name and name[0].isalnum() and all(c.islower() or c.isdigit() or c in "._-" for c in name)
    if not ok:
        raise ValueError(f"{kind} name '{name}' must be lowercase letters, digits, '.', '_' or '-'")


def _shown(x: float) -> str:
    """A bound as a message shows it: 10,000,000, 0.01, 1e15."""
    if x == int(x) and abs(x) < 1e8:
        return f"{int(x):,}"
    return f"{x:g}".replace("e+", "e").replace("e0", "e").replace("e-0", "e-")


USER_INPUT_KEY = "user_input"
USER_INPUT = {USER_INPUT_KEY: True}
"""The validation context of what a user wrote (a spec file, flags, a request body):
there a plain number above a bound's `plain_max` is refused. Data the program dumped and
validates again (a spec narrowed by flags, a fleet's services) holds seconds as floats."""


def _plain(value: object) -> bool:
    """Whether a value is a number with no unit written (50, 0.05, "50")."""
    if isinstance(value, int | float):
        return True
    try:
        float(str(value).strip())
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Bound:
    """The closed range [lo, hi] a number must lie in, for pydantic (`Annotated[float,
    Bound(0.01, 1)]`). The bounds lie beyond anything a real deployment reaches, so they
    refuse only slips and nonsense, and they keep the physics and the solver's integer
    coefficients finite and in range. Refused, with the range in the message: a value
    outside it, NaN and infinities, true/false (YAML booleans are not numbers), text
    that is not a number, and, where `integer`, a fraction. With `quantity` (a unit kind
    of `solver.units`: seconds, bytes, bytes_per_s, flop_per_s) text such as "50ms" is
    read in that unit. The JSON Schema carries the range as minimum and maximum."""

    lo: float
    hi: float
    integer: bool = False
    quantity: str | None = None
    shown: str = ""
    """The range in words where plain numbers read badly ("1 µs to 1 h")."""
    plain_max: float | None = None
    """Where a user wrote it (validation context USER_INPUT), a number without its unit
    (read in the quantity's base unit) is refused above this: `max_tpot: 50` meant 50 ms far more often than 50 s, so the user writes
    which ("50ms", "50s") rather than get a silent reading."""

    def __str__(self) -> str:
        return self.shown or f"{_shown(self.lo)} to {_shown(self.hi)}"

    @property
    def allowed(self) -> str:
        """What the refusal says: 'must be a whole number from 1 to 1,024'."""
        what = "a whole number" if self.integer else "a time" if self.quantity == "seconds" else "a number"
        return f"must be {what} from {self}"

    def __call__(self, value: object, plain_checked: bool = False) -> Any:
        x: int | float
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(self.allowed)
        if isinstance(value, str):
            try:
                x = parse_quantity(value, self.quantity) if self.quantity else float(value.strip())
            except ValueError as exc:
                raise ValueError(f"{self.allowed} ({exc})" if self.quantity else self.allowed) from None
        else:
            x = value
        if isinstance(x, float) and not math.isfinite(x):
            raise ValueError(self.allowed)
        if not self.lo <= x <= self.hi:
            raise ValueError(self.allowed)
        if plain_checked and self.plain_max is not None and x > self.plain_max and _plain(value):
            unit = {"seconds": "s", "bytes": "B", "bytes_per_s": "B/s", "flop_per_s": "FLOP/s"}.get(self.quantity or "", "")
            raise ValueError(
                f"a number without a unit is read in {self.quantity} ({x:g} {unit}), and above {self.plain_max:g} it is most "
                f'likely another unit: write it, e.g. "{x:g}ms" or "{x:g}s"'
            )
        if self.integer:
            if x != int(x):
                raise ValueError(self.allowed)
            return int(x)
        return float(x)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        def check(value: object, info: core_schema.ValidationInfo) -> Any:
            return self(value, plain_checked=bool(info.context and info.context.get(USER_INPUT_KEY)))

        return core_schema.with_info_before_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        out = handler(schema)
        lo, hi = (int(self.lo), int(self.hi)) if self.integer else (self.lo, self.hi)
        out.update(minimum=lo, maximum=hi)
        return out
