"""Strict JSON for every `--format json` (RFC 8259): no `NaN`, no `Infinity`, which
strict parsers (JavaScript's JSON.parse, Go's encoding/json, jq, serde) refuse.

The encoding of an unbounded figure is null: a limit not set, a bound that does not
bind, a cost that cannot be had (a TCO of GPUs that can be neither rented nor bought)
are all written null, never a number standing for infinity; the fields that can be
null say what null means (specs/result.schema.json for solve). A NaN is never a figure:
one reaching a report is a bug, and `dumps` raises rather than print it."""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict


def finite(data: Any, where: str = "$") -> Any:
    """`data` with every ±infinite float made None (unbounded), through dicts, lists and
    tuples; a NaN raises ValueError naming where it sits."""
    if isinstance(data, float):
        if math.isnan(data):
            raise ValueError(f"NaN in the report at {where}")
        return None if math.isinf(data) else data
    if isinstance(data, dict):
        return {k: finite(v, f"{where}.{k}") for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [finite(v, f"{where}[{i}]") for i, v in enumerate(data)]
    return data


def dumps(data: Any) -> str:
    """The one way a report's data becomes JSON text: unbounded figures null, indented
    by two, and checked strict (allow_nan=False) as it is written."""
    return json.dumps(finite(data), indent=2, allow_nan=False)


class SolveModel(BaseModel):
    """The base of every pydantic report model: unknown keys refused, an infinite figure
    written null (a NaN is refused before, by `finite`)."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="null")
