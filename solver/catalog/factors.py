"""Efficiency and utilisation factors: data, not constants (devices override the
catalog defaults, engines their measured shares, a spec both)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Annotated

from annotated_types import Ge, Le

from solver.catalog.types import (
    FORBID,
    Fraction,
    NonNegInt,
)

# --------------------------------------------------------------------------- factors


@dataclass(frozen=True)
class Factors:
    """Efficiency and utilisation factors. Data, not constants: devices override the
    catalog defaults and a spec overrides both."""

    __pydantic_config__ = FORBID
    memory_utilization: Fraction
    """Fraction of device memory the engine may use (vLLM's gpu_memory_utilization)."""
    runtime_overhead_bytes: NonNegInt
    """Per-GPU memory the engine needs beside weights and KV (CUDA context, activations)."""
    bandwidth_efficiency: Fraction
    """Achieved / peak memory bandwidth in decode."""
    compute_efficiency: Fraction
    """Achieved / peak dense tensor throughput (the seed's utilisation factor)."""
    step_overhead_s: Annotated[float, Ge(0), Le(1)] = 0.0
    """Fixed cost of every forward pass (scheduling, sampling, input preparation): what
    lets one bandwidth efficiency fit small fast models and large slow ones together."""
    layer_overhead_s: Annotated[float, Ge(0), Le(0.01)] = 0.0
    """Fixed cost per layer per forward pass (kernel launches, synchronisation), paid
    once per layer on each pipeline stage: deep models pay more per token."""
    sequence_overhead_s: Annotated[float, Ge(0), Le(0.01)] = 0.0
    """Fixed cost per sequence per decode step (sampling, detokenising, scheduler
    bookkeeping on the host): what makes large batches slower than their kernels."""
    expert_layer_overhead_s: Annotated[float, Ge(0), Le(0.01)] = 0.0
    """Further fixed cost per mixture-of-experts layer per forward pass: the router,
    top-k, token permutation and the grouped expert GEMMs are kernels of their own,
    latency-bound at small batches."""
    reserved_bytes: NonNegInt = 0
    """Device memory the driver keeps: the device's reported total less what the
    runtime sees (nvidia-smi total − torch.cuda.mem_get_info total)."""
    tp_overhead_bytes: NonNegInt = 0
    """Memory each GPU of a tensor-parallel group on an NVSwitch platform with NVLink
    SHARP needs besides (NCCL's NVLS multicast buffers, the engine's all-reduce
    buffers): vLLM's non-torch memory grows by it there at TP > 1."""
    activation_peak_scale: Annotated[float, Ge(0), Le(10)] = 1.0
    """Scale on the engine's profiled activation peak (0: ignore it, as the seed does)."""


@dataclass(frozen=True)
class FactorOverrides:
    __pydantic_config__ = FORBID
    memory_utilization: Fraction | None = None
    runtime_overhead_bytes: NonNegInt | None = None
    bandwidth_efficiency: Fraction | None = None
    compute_efficiency: Fraction | None = None
    step_overhead_s: Annotated[float, Ge(0), Le(1)] | None = None
    layer_overhead_s: Annotated[float, Ge(0), Le(0.01)] | None = None
    sequence_overhead_s: Annotated[float, Ge(0), Le(0.01)] | None = None
    expert_layer_overhead_s: Annotated[float, Ge(0), Le(0.01)] | None = None
    reserved_bytes: NonNegInt | None = None
    tp_overhead_bytes: NonNegInt | None = None
    activation_peak_scale: Annotated[float, Ge(0), Le(10)] | None = None

    def apply(self, base: Factors) -> Factors:
        changes = {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
        return dataclasses.replace(base, **changes)


@dataclass(frozen=True)
class DefaultFactors(Factors):
    source: str = ""
    as_of: dt.date = dt.date.min
