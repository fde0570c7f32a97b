"""The quantities every input field is made of: each a bounded type (`Bound`: finite,
in range, named in the refusal), names stripped as the catalog spells them, and
`SpecModel`, which refuses unknown keys.

Every number a user gives is checked here, once: finite, of the right sign, and
within a stated range (a `Bound`, whose refusal names the field, the value and the
range). The ranges lie beyond anything a real deployment reaches; they stop unit
slips and nonsense before they reach the physics and the solver's integer
coefficients. The factors' ranges are in `solver/catalog/factors.py`.

| type | range | fields |
|---|---|---|
| Users | 1 to 10,000,000 | workload.users |
| Tokens | 1 to 10,000,000 | context, prompt and output tokens; engine.max_model_len, max_num_batched_tokens |
| PrefixTokens | 0 to 10,000,000 | workload.shared_prefix_tokens |
| HitRate | 0 to 1 | workload.prefix_hit_rate |
| Degree | 1 to 1,024 | tp, pp, search.tp, search.pp |
| GpuCount | 1 to 100,000 | hardware.count, search.max_gpus |
| OwnedCount | 0 to 100,000 | inventory, quota |
| Sequences | 1 to 1,000,000 | engine.max_num_seqs |
| KvFill | 0.001 to 1 | workload.kv_fill |
| Latency | 1 µs to 1 h; a number without a unit is seconds, at most 1 | sla.max_ttft, sla.max_tpot, sla.ttft.pNN, sla.tpot.pNN |
| MemoryBytes | 1 MB to 1,000 TB | overrides' memory_bytes, weights_bytes |
| Bandwidth | 1 GB/s to 1,000 TB/s | memory_bandwidth_bytes_per_s |
| Flops | 1 GFLOP/s to 1 EFLOP/s | dense_flops_per_s |
| Params | 1e6 to 1e13 | total_params, active_params |
| KernelShare | 0.01 to 1.5 | a weight format's bandwidth_share, compute_share |
| Fraction | 0.01 to 1 | engine.gpu_memory_utilization, ownership.utilisation |
| Share | 0.001 to 1 | a mix class's share, sla.goodput |
| Rate | 0.000001 to 1,000,000 | workload.requests_per_s |
| Cv | 0.05 to 20 | workload.arrival.cv |

`Flag`, every switch (search.allow_cross_vendor_kv, search.speculative's items,
pricing.secondary, engine.enable_chunked_prefill and enforce_eager, a fleet's and a
workload's single_shape, a sweep's explain), takes a boolean only: `true` or `false`
as YAML or JSON writes it. The YAML reader is the 1.2 core schema
(`solver/catalog/yaml_lines.py`), so `yes`, `no`, `on` and `off` are text there, not
booleans; text ("yes", "true" in quotes) and numbers (1, 0) are refused naming the
field, never read as a switch (pydantic's own bool would take all of them).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict

from solver.catalog.ranges import BANDWIDTH, FLOPS, KERNEL_SHARE, MEMORY_BYTES, PARAMS, SHARE
from solver.catalog.types import Bound

MAX_USERS = 10_000_000
MAX_TOKENS = 10_000_000  # tokens per sequence: 75 × the longest context of a catalog model; catches unit slips
MAX_PARALLEL = 1024
MAX_GPUS = 100_000

USERS = Bound(1, MAX_USERS, integer=True)
TOKENS = Bound(1, MAX_TOKENS, integer=True)
PREFIX_TOKENS = Bound(0, MAX_TOKENS, integer=True)
HIT_RATE = Bound(0, 1)
DEGREE = Bound(1, MAX_PARALLEL, integer=True)
GPU_COUNT = Bound(1, MAX_GPUS, integer=True)
OWNED_COUNT = Bound(0, MAX_GPUS, integer=True)
SEQUENCES = Bound(1, 1_000_000, integer=True)
KV_FILL = Bound(0.001, 1)
LATENCY = Bound(1e-6, 3600, quantity="seconds", shown="1 µs to 1 h", plain_max=1.0)
"""A latency written as a plain number is in seconds, and at most 1: `max_tpot: 50` is refused (50 ms or 50 s?)."""
FRACTION = Bound(0.01, 1)
RATE = Bound(1e-6, 1e6, shown="0.000001 to 1,000,000 requests/s")
CV = Bound(0.05, 20)

Users = Annotated[int, USERS]
Tokens = Annotated[int, TOKENS]
PrefixTokens = Annotated[int, PREFIX_TOKENS]
HitRate = Annotated[float, HIT_RATE]
Degree = Annotated[int, DEGREE]
GpuCount = Annotated[int, GPU_COUNT]
OwnedCount = Annotated[int, OWNED_COUNT]
Sequences = Annotated[int, SEQUENCES]
KvFill = Annotated[float, KV_FILL]
Latency = Annotated[float, LATENCY]
MemoryBytes = Annotated[float, MEMORY_BYTES]
Bandwidth = Annotated[float, BANDWIDTH]
Flops = Annotated[float, FLOPS]
Params = Annotated[float, PARAMS]
KernelShare = Annotated[float, KERNEL_SHARE]
Fraction = Annotated[float, FRACTION]
Share = Annotated[float, SHARE]
Rate = Annotated[float, RATE]
Cv = Annotated[float, CV]


FLAG_ALLOWED = "must be true or false"


def _flag(v: object) -> object:
    """A boolean as written, and nothing else: pydantic's lax bool would read "yes",
    "off", "true" in quotes, 1 and 0 as switches without a word."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        raise ValueError(f"{FLAG_ALLOWED}, unquoted (text such as yes, on or a quoted true is not a boolean)")
    if isinstance(v, int | float):
        raise ValueError(f"{FLAG_ALLOWED} (a number such as 1 or 0 is not a boolean)")
    raise ValueError(FLAG_ALLOWED)


Flag = Annotated[bool, BeforeValidator(_flag)]
"""A switch: `true` or `false` only (see the module's note)."""


def _stripped(v: object) -> object:
    """A name as the user meant it: surrounding whitespace (" bf16", "fp8\\n") dropped,
    so the name the spec keeps is the one the catalog looks up."""
    if isinstance(v, str):
        v = v.strip()
        if not v:
            raise ValueError("must not be empty")
        if not v.isprintable():
            raise ValueError("must be printable text (no control characters)")
    return v


Name = Annotated[str, BeforeValidator(_stripped)]
"""A catalog name, alias or path, stripped of surrounding whitespace."""


def _format_name(v: object) -> object:
    """A number format's name as the catalog spells it: stripped, and an alias or
    another case ("awq", "FP8") turned into the catalog's name (int4-awq, fp8), so the
    spec names exactly what the plan runs. A name the catalog lacks is kept; its lookup
    refuses it later, naming the spec path."""
    v = _stripped(v)
    if not isinstance(v, str):
        return v
    from solver.catalog import default_catalog
    from solver.errors import InputError

    try:
        return default_catalog().precisions.get(v).name
    except InputError:
        return v


FormatName = Annotated[str, BeforeValidator(_format_name)]


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
