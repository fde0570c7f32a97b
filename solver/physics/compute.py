"""What a device can do per second for a given weight format: the tensor-core peak of
the precision its matmuls run in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from solver.catalog import Device, Precision
from solver.catalog.types import ComputeDtype

if TYPE_CHECKING:
    from solver.catalog import Engine


def compute_dtype(device: Device, precision: Precision) -> ComputeDtype | None:
    """The precision matmuls run in: the format's own where the device has tensor
    support for it, else its weight-only fallback (dequantise to 16-bit), else None."""
    if precision.compute in device.dense_flops_per_s:
        return precision.compute
    fb = precision.fallback_compute
    if fb and fb in device.dense_flops_per_s:
        return fb
    sixteens: tuple[ComputeDtype, ...] = ("fp16", "bf16")
    for sixteen in sixteens:  # a 16-bit format runs as the other on devices lacking one
        if precision.compute in ("fp16", "bf16") and sixteen in device.dense_flops_per_s:
            return sixteen
    return None


def matmul_dtype(device: Device, precision: Precision) -> ComputeDtype:
    """The precision matmuls run in, for a deployment validity has let through (it
    refuses a format the device cannot compute in)."""
    dtype = compute_dtype(device, precision)
    if dtype is None:
        raise ValueError(f"{device.name} has no tensor throughput for {precision.name}")
    return dtype


def peak_flops_per_s(device: Device, precision: Precision, engine: Engine | None = None) -> float:
    """The matmuls' peak; FP16 at the FP16-accumulate rate for an engine that
    accumulates in FP16, on devices where that is faster."""
    dtype = matmul_dtype(device, precision)
    if dtype == "fp16" and engine is not None and engine.accumulates_fp16 and device.fp16_accumulate_flops_per_s:
        return device.fp16_accumulate_flops_per_s
    return device.dense_flops_per_s[dtype]
