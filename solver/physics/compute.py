"""What a device can do per second for a given weight format: the rate its matmuls
reach in the precision they run in — the datasheet's dense tensor peak times the share
of it that measured matmuls reach on that device (`matmul_share` in
catalogs/devices.yaml)."""

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


def matmul_share(device: Device, dtype: ComputeDtype) -> float:
    """Of the datasheet's dense peak in `dtype`, the share the best measured matmuls reach
    on this device (catalogs/devices.yaml `matmul_share`, sourced). fp16 and bf16 run at
    one rate, so each takes the other's figure; an 8- or 4-bit dtype without its own takes
    FP8's, then the 16-bit one; a device without any measurement, 1 (the datasheet's
    figure: the engine's fitted utilisation is then all there is)."""
    shares = device.matmul_share
    if dtype in shares:
        return shares[dtype]
    order: tuple[ComputeDtype, ...] = ("bf16", "fp16") if dtype in ("fp16", "bf16") else ("fp8", "bf16", "fp16")
    return next((shares[d] for d in order if d in shares), 1.0)


def matmul_flops_per_s(device: Device, precision: Precision, engine: Engine | None = None) -> float:
    """The matmuls' rate: the dense peak of the dtype they run in (FP16 at the
    FP16-accumulate rate for an engine that accumulates in FP16, on devices where that is
    faster) times the share measured matmuls reach of it."""
    dtype = matmul_dtype(device, precision)
    return dtype_flops_per_s(device, dtype, fp16_accumulate=engine is not None and engine.accumulates_fp16)


def dtype_flops_per_s(device: Device, dtype: ComputeDtype, fp16_accumulate: bool = False) -> float:
    """The matmul rate in one dtype: its dense peak × the device's measured share. The
    shares were measured with FP32 accumulation (PyTorch's matmuls: on an RTX 3090 its
    FP16 and BF16 reach the same ~76 TFLOPS, not twice in FP16), so the FP16-accumulate
    rate, where faster, stays at its datasheet figure: nothing measured it."""
    if dtype == "fp16" and fp16_accumulate and device.fp16_accumulate_flops_per_s:
        return device.fp16_accumulate_flops_per_s
    return device.dense_flops_per_s[dtype] * matmul_share(device, dtype)
