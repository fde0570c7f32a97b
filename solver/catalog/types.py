"""Shared annotated types of the catalog entries (SI units inside)."""

from __future__ import annotations

from typing import Annotated, Literal

from annotated_types import Ge, Gt, Le

ComputeDtype = Literal["fp16", "bf16", "fp8", "int8", "fp4"]
AttentionKind = Literal["mha", "gqa", "mqa", "mla"]
LinkKind = Literal["nvlink", "nvswitch", "pcie", "infinity-fabric", "ici", "roce", "infiniband", "ethernet", "neuronlink"]

Positive = Annotated[float, Gt(0)]
PositiveInt = Annotated[int, Gt(0)]
Count = Annotated[int, Ge(1)]
NonNegInt = Annotated[int, Ge(0)]
Fraction = Annotated[float, Gt(0), Le(1)]
Name = str  # checked in check_name: lowercase letters, digits, '.', '_' and '-'

FORBID = {"extra": "forbid"}  # read by pydantic: unknown keys are errors, not ignored


def check_name(kind: str, name: str) -> None:
    ok = name and name[0].isalnum() and all(c.islower() or c.isdigit() or c in "._-" for c in name)
    if not ok:
        raise ValueError(f"{kind} name '{name}' must be lowercase letters, digits, '.', '_' or '-'")
