"""What a schedule over time assumes about replicas that come and go
(catalogs/autoscaling.yaml): spot's interruption rate, a new replica's provisioning
time and the storage bandwidth its weights load at; each sourced and dated, each
overridable in a schedule spec."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated

from pydantic import TypeAdapter, ValidationError

from solver.catalog.load import catalog_dir
from solver.catalog.types import FORBID, Bound
from solver.catalog.yaml_lines import load_yaml_file
from solver.errors import InputError

INTERRUPTIONS_PER_GPU_HOUR = Bound(0, 1, shown="0 to 1 per GPU-hour")
PROVISIONING_S = Bound(0, 86_400, quantity="seconds", shown="0 s to 1 day")
STORAGE_BYTES_PER_S = Bound(1e6, 1e13, quantity="bytes_per_s", shown="1 MB/s to 10 TB/s")


@dataclass(frozen=True)
class Autoscaling:
    __pydantic_config__ = FORBID
    as_of: dt.date
    spot_interruptions_per_gpu_hour: Annotated[float, INTERRUPTIONS_PER_GPU_HOUR]
    spot_source: str
    provisioning_s: Annotated[float, PROVISIONING_S]
    provisioning_source: str
    storage_bytes_per_s: Annotated[float, STORAGE_BYTES_PER_S]
    storage_source: str


def load_autoscaling() -> Autoscaling:
    """The catalog's figures; a malformed file is refused naming it."""
    path = catalog_dir() / "autoscaling.yaml"
    data, _ = load_yaml_file(path)
    try:
        return TypeAdapter(Autoscaling).validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(".".join(str(x) for x in first["loc"]), first.get("input"), first["msg"], source=str(path)) from None
