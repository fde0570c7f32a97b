"""Efficiency and utilisation factors: data, not constants (devices override the
catalog defaults, engines their measured shares, a spec both).

Each factor's range is stated once, here, and read by the catalog, a user's
calibration file and a spec's overrides alike:

| factor | range | why |
|---|---|---|
| memory_utilization | 0.01 to 1 | a share of the device's memory |
| bandwidth_efficiency, compute_efficiency | 0.01 to 1 | achieved / peak: never above it; below 1 % is a slip (1e-300 gave a TPOT of 1e291 s) |
| attention_bandwidth_share | 0.01 to 1 | of the weights' achieved bandwidth, the share decode attention's KV reads reach: never more; fitted 0.82 for the serving engines on AMD Instinct, 0.89 on GDDR, 1 on NVIDIA HBM and for llama.cpp |
| step_overhead_s | 0 to 1 s | a fixed cost per forward pass; fitted ≤ 0.5 ms (the fit's cap: the fixed cost follows the layers) |
| layer_, sequence_, expert_layer_overhead_s | 0 to 10 ms | per layer or sequence per pass; per layer held at 50 µs, per sequence fitted ≤ 7 µs, per MoE layer on AMD Instinct 0.26 ms |
| prefill_expert_overhead_s | 0 to 10 ms | per routed expert a prefill reaches, per MoE layer; fitted 9.6 µs for every engine |
| tp_rank_overhead_s | 0 to 10 ms | per pass per TP rank beyond the first; fitted ≈ 0.2 ms |
| request_overhead_s | 0 to 1 s | the serving front end's time per request; fitted ≤ 0.2 s |
| runtime_overhead_bytes, reserved_bytes, tp_overhead_bytes | 0 to 1e15 bytes (1,000 TB) | more than any device holds |
| activation_peak_scale | 0 to 10 | a scale on the profiled peak |
| expert_load_imbalance | 1 to 8 | the busiest expert-parallel GPU's routed tokens over the mean: at least 1 |
| unhidden_share | 0 to 1 | of a kernel's shorter part, reads or math, the share not hidden under the longer: 0 the roofline's max, 1 their sum |
| prefill_unhidden_share | 0 to 1 | the same for a prefill's GEMMs (weights read, matmul FLOPs); fitted 1, their sum |
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Annotated

from solver.catalog.types import FORBID, Bound

MEMORY_SHARE = Bound(0.01, 1)
EFFICIENCY = Bound(0.01, 1)
STEP_OVERHEAD = Bound(0, 1, quantity="seconds", shown="0 to 1 s")
SMALL_OVERHEAD = Bound(0, 0.01, quantity="seconds", shown="0 to 10 ms")
OVERHEAD_BYTES = Bound(0, 1e15, integer=True, quantity="bytes", shown="0 to 1e15 bytes (1,000 TB)")
PEAK_SCALE = Bound(0, 10)
IMBALANCE = Bound(1, 8)
SHARE = Bound(0, 1)

MemoryShare = Annotated[float, MEMORY_SHARE]
Efficiency = Annotated[float, EFFICIENCY]
StepOverhead = Annotated[float, STEP_OVERHEAD]
SmallOverhead = Annotated[float, SMALL_OVERHEAD]
OverheadBytes = Annotated[int, OVERHEAD_BYTES]
PeakScale = Annotated[float, PEAK_SCALE]
Imbalance = Annotated[float, IMBALANCE]
Share = Annotated[float, SHARE]

# --------------------------------------------------------------------------- factors


@dataclass(frozen=True)
class Factors:
    """Efficiency and utilisation factors. Data, not constants: devices override the
    catalog defaults and a spec overrides both."""

    __pydantic_config__ = FORBID
    memory_utilization: MemoryShare
    """Fraction of device memory the engine may use (vLLM's gpu_memory_utilization); 0.01 to 1."""
    runtime_overhead_bytes: OverheadBytes
    """Per-GPU memory the engine needs beside weights and KV (CUDA context, activations); 0 to 1e15."""
    bandwidth_efficiency: Efficiency
    """Achieved / peak memory bandwidth in decode; 0.01 to 1."""
    compute_efficiency: Efficiency
    """Achieved / peak dense tensor throughput (the seed's utilisation factor); 0.01 to 1."""
    attention_bandwidth_share: Efficiency = 1.0
    """Of the bandwidth the weight reads reach, the share a decode step's attention
    kernels reach reading the KV cache: paged attention gathers each sequence's blocks
    through its block table, rows of a few hundred bytes per head, where a GEMV streams
    one contiguous matrix. What makes a long-context step slower than its bytes at the
    weights' speed; 1 (the seed): the same speed; 0.01 to 1."""
    step_overhead_s: StepOverhead = 0.0
    """Fixed cost of every forward pass (scheduling, sampling, input preparation): what
    lets one bandwidth efficiency fit small fast models and large slow ones together; 0 to 1 s."""
    layer_overhead_s: SmallOverhead = 0.0
    """Fixed cost per layer per forward pass (kernel launches, synchronisation), paid
    once per layer on each pipeline stage: deep models pay more per token; 0 to 10 ms."""
    sequence_overhead_s: SmallOverhead = 0.0
    """Fixed cost per sequence per decode step (sampling, detokenising, scheduler
    bookkeeping on the host): what makes large batches slower than their kernels; 0 to 10 ms."""
    expert_layer_overhead_s: SmallOverhead = 0.0
    """Further fixed cost per mixture-of-experts layer per forward pass: the router,
    top-k, token permutation and the grouped expert GEMMs are kernels of their own,
    latency-bound at small batches; 0 to 10 ms."""
    prefill_expert_overhead_s: SmallOverhead = 0.0
    """A prefill's fixed cost per routed expert it reaches, per MoE layer: each expert a
    prompt's tokens are routed to is a GEMM problem of its own (its rows gathered, its
    tiles scheduled, its output scattered back), and engines run prefills without the
    CUDA graphs that hide such costs in decode. What makes a 1,000-token DeepSeek-R1
    prompt (58 MoE layers × 256 experts) take 100 ms more than its FLOPs and reads,
    and Mixtral's (32 × 8) none. In the prompt's own time: a prefill-only pass, and
    under continuous batching each of its chunks, never the decoders' steps; 0 to 10 ms."""
    tp_rank_overhead_s: SmallOverhead = 0.0
    """Further fixed cost of every pass per tensor-parallel rank beyond the first: the
    engine hands each step's batch to every rank's worker and the ranks meet at every
    collective, so a wider group waits longer on its slowest rank (vLLM V1's broadcast
    of the scheduler output to its TP workers, NCCL's launch skew); 0 to 10 ms."""
    request_overhead_s: StepOverhead = 0.0
    """The serving front end's time per request before its first token, beside the
    GPU's work: HTTP, tokenisation, scheduling, streaming the token back. Counted in
    TTFT and end to end, never in a step; 0 for an engine measured without its server;
    0 to 1 s."""
    reserved_bytes: OverheadBytes = 0
    """Device memory the driver keeps: the device's reported total less what the
    runtime sees (nvidia-smi total − torch.cuda.mem_get_info total); 0 to 1e15."""
    tp_overhead_bytes: OverheadBytes = 0
    """Memory each GPU of a tensor-parallel group on an NVSwitch platform with NVLink
    SHARP needs besides (NCCL's NVLS multicast buffers, the engine's all-reduce
    buffers): vLLM's non-torch memory grows by it there at TP > 1; 0 to 1e15."""
    activation_peak_scale: PeakScale = 1.0
    """Scale on the engine's profiled activation peak (0: ignore it, as the seed does); 0 to 10."""
    expert_load_imbalance: Imbalance = 1.0
    """Under expert parallelism (dp_ep, tp_ep), the busiest GPU's routed tokens over the mean:
    a step waits for it, so its experts' FLOPs and its all-to-all traffic scale by this.
    1: every expert equally loaded (a load balancer such as DeepSeek's EPLB replicating
    the hot experts; an assumption, not a measurement); 1 to 8."""
    unhidden_share: Share = 0.0
    """Of a kernel's shorter part (its weight or KV reads, or its math), the share that
    does not hide under the longer: a kernel takes max(read, math) + this × min(read,
    math). 0 is the roofline's max (the seed); 1 their sum, as an engine that does not
    overlap them (llama.cpp) always runs. Real GEMMs sit between: near the ridge point
    neither the memory pipe nor the tensor cores run at their best; 0 to 1."""
    prefill_unhidden_share: Share = 0.0
    """The same share for a prefill's GEMMs: they take max(weights read, FLOPs) + this ×
    min. A prompt's time is its FLOPs plus about one read of the weights at every length
    measured: TensorRT-LLM's 128- and 2,048-token prefills of one model meet at a zero-
    length intercept of the fixed cost plus one read (A100 FP16 8.5 ms, H100 FP8 4.7 ms;
    bench/fit_defaults.py, UNHIDDEN_PREFILL); 0 to 1."""


@dataclass(frozen=True)
class FactorOverrides:
    """Some of the factors, each in the range `Factors` states (an engine's measured
    shares, a device's own, a user's calibration)."""

    __pydantic_config__ = FORBID
    memory_utilization: MemoryShare | None = None
    runtime_overhead_bytes: OverheadBytes | None = None
    bandwidth_efficiency: Efficiency | None = None
    compute_efficiency: Efficiency | None = None
    attention_bandwidth_share: Efficiency | None = None
    step_overhead_s: StepOverhead | None = None
    layer_overhead_s: SmallOverhead | None = None
    sequence_overhead_s: SmallOverhead | None = None
    expert_layer_overhead_s: SmallOverhead | None = None
    prefill_expert_overhead_s: SmallOverhead | None = None
    tp_rank_overhead_s: SmallOverhead | None = None
    request_overhead_s: StepOverhead | None = None
    reserved_bytes: OverheadBytes | None = None
    tp_overhead_bytes: OverheadBytes | None = None
    activation_peak_scale: PeakScale | None = None
    expert_load_imbalance: Imbalance | None = None
    unhidden_share: Share | None = None
    prefill_unhidden_share: Share | None = None

    def apply(self, base: Factors) -> Factors:
        changes = {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
        return dataclasses.replace(base, **changes)


@dataclass(frozen=True)
class DefaultFactors(Factors):
    source: str = ""
    as_of: dt.date = dt.date.min
