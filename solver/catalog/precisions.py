"""Number formats for weights and the KV cache, with their real storage cost and quality."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Literal

from annotated_types import Ge, Gt, Le, MinLen

from solver.catalog.ranges import KERNEL_SHARE
from solver.catalog.types import (
    FORBID,
    ComputeDtype,
    Count,
    Name,
    NonNegInt,
    check_name,
)

# --------------------------------------------------------------------------- precisions


@dataclass(frozen=True)
class Precision:
    """A number format for weights and/or the KV cache, with its real storage cost."""

    __pydantic_config__ = FORBID
    name: Name
    display_name: str
    bits: Annotated[float, Gt(0), Le(32)]
    """Bits per stored value, before scales."""
    compute: ComputeDtype
    """Tensor-core precision its matmuls run in when the device has it."""
    use: Annotated[tuple[Literal["weights", "kv"], ...], MinLen(1)]
    source: str
    as_of: dt.date
    aliases: tuple[str, ...] = ()
    group_size: Count | None = None
    """Values sharing one scale (block formats)."""
    scale_bytes_per_group: Annotated[float, Ge(0)] = 0
    zero_bytes_per_group: Annotated[float, Ge(0)] = 0
    keeps_embeddings_16bit: bool = False
    """Embedding and LM head stay in 16-bit (AWQ/GPTQ/FP8 checkpoints)."""
    fallback_compute: ComputeDtype | None = None
    """Precision used (weight-only kernels) on a device without `compute`."""
    bandwidth_share: Annotated[float, KERNEL_SHARE] = 1.0
    """Share of a 16-bit GEMV's achieved bandwidth that this format's decode kernels
    reach (dequantisation costs); fitted, catalogs/fitted.yaml."""
    bandwidth_share_by_memory: dict[str, Annotated[float, KERNEL_SHARE]] = dataclasses.field(default_factory=dict)
    """The decode share on one backend's memory, keyed as the fitted factors are (vendor
    and memory kind, "apple.lpddr"): a format's kernels are written per backend (Metal's
    dequantising GEMVs are not CUDA's), so a share fitted on CUDA need not carry; where a
    key is absent, `bandwidth_share`. Sourced in catalogs/precisions.yaml."""
    bandwidth_share_by_memory_source: str = ""
    compute_share: Annotated[float, KERNEL_SHARE] = 1.0
    """Share of the engine's fitted utilisation (compute_efficiency, set by decode and
    prefill together) that this format's prefill GEMMs reach of their own peak: above 1
    for 16-bit (a prompt's GEMMs of thousands of tokens run nearer the matmul rate than
    a decode step's), FP8 at twice the peak near it; fitted, catalogs/fitted.yaml."""
    compute_share_by_memory: dict[str, Annotated[float, KERNEL_SHARE]] = dataclasses.field(default_factory=dict)
    """On one backend (keyed as bandwidth_share_by_memory), the format's prefill GEMMs as
    a share of the 16-bit formats' there, in place of `compute_share`: where a backend runs
    the format through its 16-bit matmul kernel after dequantising each tile (Metal's
    kernel_mul_mm), the format's prompt rate follows the 16-bit one less the dequantising,
    not a share fitted on another backend's kernels (CUDA's integer MMQ). Sourced in
    catalogs/precisions.yaml."""
    compute_share_by_memory_source: str = ""
    sixteen_bit_compute_share: float = 1.0
    """The 16-bit formats' fitted prefill share, which compute_share_by_memory's ratios
    multiply: set by the catalog from fp16's (catalog/load.py), so every command prices a
    prompt on that backend the same way."""
    expert_compute_share: Annotated[float, KERNEL_SHARE] = 1.0
    """Share of this format's dense prefill GEMM rate that its grouped expert GEMMs
    (a mixture-of-experts model's routed experts) reach: FP8 expert kernels fall
    further short of FP8's doubled peak than dense ones do; fitted (1: as dense)."""
    effective_bits_per_value: Annotated[float, Gt(0), Le(32)] | None = None
    """Bits per weight averaged over a whole model file, for formats that mix block
    types across tensors (GGUF Q4_K_M / Q5_K_M); when set, it is the storage cost and
    `bits`/`group_size`/scales describe only the base block."""
    quality_rank: NonNegInt = 0
    """Weights: higher is closer to the 16-bit model (see quality_source); orders
    formats at equal cost and sets search.min_weights_quality."""
    quality_source: str = ""

    def __post_init__(self) -> None:
        check_name("precision", self.name)
        if self.effective_bits_per_value is not None and self.effective_bits_per_value < self.bits:
            raise ValueError(
                f"precision '{self.name}': effective_bits_per_value {self.effective_bits_per_value} is below its stored bits {self.bits}"
            )

    def bandwidth_share_on(self, vendor: str, memory_kind: str) -> float:
        """The decode share on a device of this vendor and memory kind."""
        return self.bandwidth_share_by_memory.get(f"{vendor.lower()}.{memory_kind}", self.bandwidth_share)

    def compute_share_on(self, vendor: str, memory_kind: str) -> float:
        """The prefill share on a device of this vendor and memory kind: the 16-bit
        formats' share times the backend's own ratio (compute_share_by_memory), else the
        format's fitted `compute_share`."""
        ratio = self.compute_share_by_memory.get(f"{vendor.lower()}.{memory_kind}")
        return self.compute_share if ratio is None else self.sixteen_bit_compute_share * ratio

    @property
    def bytes_per_value(self) -> float:
        if self.effective_bits_per_value is not None:
            return self.effective_bits_per_value / 8
        per_group = 0.0
        if self.group_size:
            per_group = (self.scale_bytes_per_group + self.zero_bytes_per_group) / self.group_size
        return self.bits / 8 + per_group


def user_shares(overrides: dict) -> dict:
    """A spec's overrides.precision as fields of a weight format: a share the user gives
    holds on every backend, so its per-backend map is emptied with it."""
    shares = dict(overrides)
    if "bandwidth_share" in shares:
        shares["bandwidth_share_by_memory"] = {}
    if "compute_share" in shares:
        shares["compute_share_by_memory"] = {}
    return shares
