"""Accelerators and the platforms they sit in (links, all-reduce algorithms)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Literal

from annotated_types import Ge, Le, MinLen

from solver.catalog.factors import FactorOverrides
from solver.catalog.prices import Price
from solver.catalog.ranges import BANDWIDTH, BOARD_POWER_W, FLOPS, GPU_PURCHASE_USD, MATMUL_SHARE, MEMORY_BYTES
from solver.catalog.types import (
    FORBID,
    ComputeDtype,
    Count,
    LinkKind,
    Name,
    Positive,
    PositiveInt,
    check_name,
)


@dataclass(frozen=True)
class Device:
    __pydantic_config__ = FORBID
    name: Name
    display_name: str
    vendor: str
    family: str
    memory_bytes: Annotated[int, MEMORY_BYTES]
    """Device memory as the device reports it (e.g. nvidia-smi total)."""
    memory_note: str
    """Where memory_bytes comes from."""
    memory_bandwidth_bytes_per_s: Annotated[float, BANDWIDTH]
    memory_kind: Literal["hbm", "gddr", "lpddr"]
    """HBM, GDDR or LPDDR (unified memory): engines reach different shares of each."""
    dense_flops_per_s: dict[ComputeDtype, Annotated[float, FLOPS]]
    """Dense (no 2:4 sparsity) tensor throughput per precision; absent = unsupported.
    16-bit figures are with FP32 accumulate (what cuBLAS uses for LLM GEMMs)."""
    weight_formats: Annotated[tuple[str, ...], MinLen(1)]
    kv_formats: Annotated[tuple[str, ...], MinLen(1)]
    platforms: Annotated[tuple[str, ...], MinLen(1)]
    """Platforms this device ships in; the first is the default."""
    source: str
    as_of: dt.date
    aliases: tuple[str, ...] = ()
    tdp_w: Annotated[float, BOARD_POWER_W] | None = None
    price: Price | None = None
    purchase_usd: Annotated[float, GPU_PURCHASE_USD] | None = None
    purchase_source: str | None = None
    factors: FactorOverrides = FactorOverrides()
    pcie_p2p: bool = True
    """Whether the driver lets two of these cards read each other's memory over PCIe
    (GeForce cards: no). Without it a PCIe all-reduce bounces through host memory."""
    pcie_p2p_source: str | None = None
    fp16_accumulate_flops_per_s: Annotated[float, FLOPS] | None = None
    """FP16 matmuls with FP16 accumulate, where faster than with FP32 accumulate
    (GeForce: twice): what an engine that accumulates in FP16 (llama.cpp) reaches."""
    matmul_share: dict[ComputeDtype, Annotated[float, MATMUL_SHARE]] = dataclasses.field(default_factory=dict)
    """Per dtype, the share of dense_flops_per_s the best measured matmuls reach on this
    device (maximum achievable matmul FLOPS over the peak; above 1 where the card runs
    faster than the clock its datasheet quotes the peak at, GeForce); absent = not
    measured (see physics/compute.matmul_share for which figure a dtype without its own takes)."""
    matmul_source: str | None = None

    def __post_init__(self) -> None:
        check_name("device", self.name)
        if not self.pcie_p2p and not self.pcie_p2p_source:
            raise ValueError("pcie_p2p: false needs pcie_p2p_source")
        if not self.dense_flops_per_s:
            raise ValueError("dense_flops_per_s needs at least one precision")
        if self.matmul_share and not self.matmul_source:
            raise ValueError("matmul_share needs matmul_source")
        for dtype in self.matmul_share:
            if dtype not in self.dense_flops_per_s:
                raise ValueError(f"matmul_share names {dtype}, which dense_flops_per_s does not list")
        if self.purchase_usd is not None and not self.purchase_source:
            raise ValueError("purchase_usd needs purchase_source")


# --------------------------------------------------------------------------- platforms


@dataclass(frozen=True)
class Link:
    __pydantic_config__ = FORBID
    kind: LinkKind
    bandwidth_bytes_per_s: Annotated[float, BANDWIDTH]
    """Per GPU, per direction."""
    latency_s: Annotated[float, Ge(0), Le(1)]
    """Per link."""
    source: str


TP_SIZES_WITH_CUSTOM_ALLREDUCE = (2, 4, 6, 8)
"""The world sizes vLLM's custom all-reduce kernels are built for
(vllm/distributed/device_communicators/custom_all_reduce.py, _SUPPORTED_WORLD_SIZES)."""


@dataclass(frozen=True)
class CustomAllReduce:
    """The engines' own all-reduce kernels over peer-to-peer loads (vLLM's
    csrc/custom_all_reduce.cuh, SGLang's copy of it, TensorRT-LLM's ONESHOT/TWOSHOT):
    one kernel per call, a flag barrier instead of NCCL's protocol."""

    __pydantic_config__ = FORBID
    one_shot_latency_s: Positive
    """Fixed cost of one one-stage call (launch + two barriers), at a tiny message."""
    two_shot_latency_s: Positive
    """Fixed cost of one two-stage call (reduce-scatter, barrier, all-gather)."""
    source: str
    two_shot_bandwidth_bytes_per_s: Positive | tuple[tuple[PositiveInt, Positive], ...] | None = None
    """The rate a two-stage call's 2(t−1)/t × message moves at per GPU, where measured
    below the link's (its peer loads and stores do not reach NVLink's rate); by TP size
    where it depends on the group (on a full mesh each GPU reads over t−1 links, so the
    rate grows with the group, but not in step with the links' sum), as (TP size, rate)
    pairs; None, or a TP size not listed: the link's rate."""
    two_shot_source: str = ""
    max_bytes: tuple[PositiveInt, PositiveInt, PositiveInt, PositiveInt] | None = None
    """Largest message the engine sends through these kernels at TP 2, 4, 6, 8; None:
    vLLM's default buffer, 8 MiB (lower where the engine prefers NVLS above)."""

    def two_shot_rate(self, tp: int) -> float | None:
        """The two-stage call's measured rate per GPU at TP `tp`, None where unmeasured."""
        rate = self.two_shot_bandwidth_bytes_per_s
        if isinstance(rate, tuple):
            return next((r for size, r in rate if size == tp), None)
        return rate

    def limit_bytes(self, tp: int) -> int:
        if self.max_bytes is None or tp not in TP_SIZES_WITH_CUSTOM_ALLREDUCE:
            return 8 * 1024 * 1024
        return self.max_bytes[TP_SIZES_WITH_CUSTOM_ALLREDUCE.index(tp)]


@dataclass(frozen=True)
class Nvls:
    """NVLink SHARP: the NVSwitch reduces (multimem.ld_reduce) and multicasts the
    result, so each GPU sends and receives the message about once."""

    __pydantic_config__ = FORBID
    bandwidth_bytes_per_s: Positive
    """Message bytes per second at large sizes (the measured algorithm bandwidth)."""
    latency_s: Annotated[float, Ge(0)]
    source: str
    max_bytes: PositiveInt = 64 * 1024 * 1024
    """Largest message the engine sends through its own NVLS path (vLLM's torch
    symmetric-memory all-reduce); above it NCCL, which may pick NVLS itself."""


@dataclass(frozen=True)
class AllReduceSpec:
    """The all-reduce algorithms a platform offers beside NCCL's ring."""

    __pydantic_config__ = FORBID
    custom: CustomAllReduce | None = None
    nvls: Nvls | None = None
    host_staged_hop_latency_s: Annotated[float, Ge(0)] | None = None
    """Cards without PCIe peer access (GeForce): one ring hop through host memory —
    device→host write, host→device read — as NCCL's shared-memory transport does."""
    host_staged_source: str | None = None

    def __post_init__(self) -> None:
        if self.host_staged_hop_latency_s is not None and not self.host_staged_source:
            raise ValueError("host_staged_hop_latency_s needs host_staged_source")


@dataclass(frozen=True)
class Platform:
    """How devices connect. `layout` says how the scale-up links are wired:
    switch — every GPU on one switch (NVSwitch, PCIe switch, ICI approximated);
    mesh — every pair of GPUs has its own link (AMD Infinity Fabric, Gaudi RoCE);
    pairs — GPUs bridged two by two, pairs joined through the host link (NVLink bridge);
    single — one device, no scale-up."""

    __pydantic_config__ = FORBID
    name: Name
    display_name: str
    layout: Literal["switch", "mesh", "pairs", "single"]
    gpus_per_node: Count
    source: str
    as_of: dt.date
    scale_up: Link | None = None
    host: Link | None = None
    """PCIe link to the host (joins bridged pairs)."""
    scale_out: Link | None = None
    """Network between nodes; absent = one node only."""
    max_nodes: Count = 1
    allreduce: AllReduceSpec = AllReduceSpec()
    """Algorithms beside NCCL's ring: the engines' custom kernels, NVLS, host staging."""

    def __post_init__(self) -> None:
        check_name("platform", self.name)
        if self.layout == "single":
            if self.gpus_per_node != 1:
                raise ValueError("layout 'single' has gpus_per_node 1")
        elif self.scale_up is None:
            raise ValueError(f"layout '{self.layout}' needs a scale_up link")
        if self.layout == "pairs" and self.host is None:
            raise ValueError("layout 'pairs' needs a host link to join the pairs")
        if self.max_nodes > 1 and self.scale_out is None:
            raise ValueError("max_nodes > 1 needs a scale_out link")
