"""The catalog: devices, platforms, models and precisions, read from `catalogs/*.yaml`.

Every entry carries `source` and `as_of`, so a figure in a report can always be
traced to where it came from. Internal units are SI: bytes, bytes/s, FLOP/s,
seconds, US dollars.

The entries are plain frozen dataclasses; pydantic validates the YAML into them
(constraints live in the annotations, cross-field rules in `__post_init__`). The
validated catalog is cached on disk keyed by the files' bytes and this module's
source, so a CLI run pays neither YAML parsing nor validation for a catalog it has
seen before.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from annotated_types import Ge, Gt, Le, MinLen

from solver.catalog import cache
from solver.errors import InputError

ComputeDtype = Literal["fp16", "bf16", "fp8", "int8", "fp4"]
AttentionKind = Literal["mha", "gqa", "mqa", "mla"]
LinkKind = Literal[
    "nvlink", "nvswitch", "pcie", "infinity-fabric", "ici", "roce", "infiniband", "ethernet", "neuronlink"
]

Positive = Annotated[float, Gt(0)]
PositiveInt = Annotated[int, Gt(0)]
Count = Annotated[int, Ge(1)]
NonNegInt = Annotated[int, Ge(0)]
Fraction = Annotated[float, Gt(0), Le(1)]
Name = str  # checked in _check_name: lowercase letters, digits, '.', '_' and '-'

_FORBID = {"extra": "forbid"}  # read by pydantic: unknown keys are errors, not ignored


def _check_name(kind: str, name: str) -> None:
    ok = name and name[0].isalnum() and all(c.islower() or c.isdigit() or c in "._-" for c in name)
    if not ok:
        raise ValueError(f"{kind} name '{name}' must be lowercase letters, digits, '.', '_' or '-'")


# --------------------------------------------------------------------------- factors


@dataclass(frozen=True)
class Factors:
    """Efficiency and utilisation factors. Data, not constants: devices override the
    catalog defaults and a spec overrides both."""

    __pydantic_config__ = _FORBID
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
    __pydantic_config__ = _FORBID
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


# --------------------------------------------------------------------------- devices


@dataclass(frozen=True)
class Price:
    """What a GPU-hour costs in a plan: the offer it was priced at, and on what basis."""

    __pydantic_config__ = _FORBID
    usd_per_gpu_hour: Positive
    provider: str
    offer: str
    as_of: dt.date
    source: str
    tier: str = "on_demand"
    basis: str = ""
    """How the offer was chosen, e.g. "lower median of 7 gpu_cloud on_demand offers"."""


# --------------------------------------------------------------------------- the price book

Tier = Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "flex_start"]
ProviderKind = Literal["hyperscaler", "gpu_cloud", "marketplace", "managed"]
Statistic = Literal["median_low", "cheapest"]
TIERS: tuple[str, ...] = ("on_demand", "spot", "reserved_1y", "reserved_3y", "flex_start")


@dataclass(frozen=True)
class Provider:
    __pydantic_config__ = _FORBID
    kind: ProviderKind
    display_name: str


@dataclass(frozen=True)
class Offer:
    """One provider's dated price for one GPU on one tier (catalogs/prices.yaml)."""

    __pydantic_config__ = _FORBID
    provider: str
    gpu: str
    tier: Tier
    usd_per_gpu_hour: Positive
    as_of: dt.date
    source: str
    quote: str = ""
    source_kind: str = ""
    instance: str | None = None
    gpus_per_instance: PositiveInt | None = None
    instance_usd_per_hour: Positive | None = None
    region: str | None = None
    note: str = ""
    suspect: bool = False
    """Out of line with every other offer for the GPU: listed, never used."""


@dataclass(frozen=True)
class Pricing:
    """A basis for pricing every GPU the same way: which providers (names, kinds such as
    gpu_cloud, or all), which tier, and which of their offers."""

    __pydantic_config__ = _FORBID
    providers: Annotated[tuple[str, ...], MinLen(1)]
    tier: Tier = "on_demand"
    statistic: Statistic = "median_low"

    def label(self) -> str:
        how = "lower median" if self.statistic == "median_low" else "cheapest"
        return f"{how} of the {self.tier} offers from {', '.join(self.providers)}"


@dataclass(frozen=True)
class Ownership:
    """What owning a GPU costs beside its purchase (catalogs/ownership.yaml; a spec's
    `ownership:` overrides any figure)."""

    __pydantic_config__ = _FORBID
    life_years: Annotated[float, Gt(0), Le(30)]
    utilisation: Fraction
    pue: Annotated[float, Ge(1), Le(5)]
    usd_per_kwh: Annotated[float, Ge(0), Le(10)]
    hosting_usd_per_kw_month: Annotated[float, Ge(0), Le(100_000)]
    as_of: dt.date = dt.date.min
    life_source: str = ""
    utilisation_source: str = ""
    pue_source: str = ""
    usd_per_kwh_source: str = ""
    hosting_source: str = ""


@dataclass(frozen=True)
class _PricesFile:
    __pydantic_config__ = _FORBID
    as_of: dt.date
    default: Pricing
    providers: dict[str, Provider]
    offers: tuple[Offer, ...]


@dataclass(frozen=True)
class Device:
    __pydantic_config__ = _FORBID
    name: Name
    display_name: str
    vendor: str
    family: str
    memory_bytes: PositiveInt
    """Device memory as the device reports it (e.g. nvidia-smi total)."""
    memory_note: str
    """Where memory_bytes comes from."""
    memory_bandwidth_bytes_per_s: Positive
    memory_kind: Literal["hbm", "gddr", "lpddr"]
    """HBM, GDDR or LPDDR (unified memory): engines reach different shares of each."""
    dense_flops_per_s: dict[ComputeDtype, Positive]
    """Dense (no 2:4 sparsity) tensor throughput per precision; absent = unsupported.
    16-bit figures are with FP32 accumulate (what cuBLAS uses for LLM GEMMs)."""
    weight_formats: Annotated[tuple[str, ...], MinLen(1)]
    kv_formats: Annotated[tuple[str, ...], MinLen(1)]
    platforms: Annotated[tuple[str, ...], MinLen(1)]
    """Platforms this device ships in; the first is the default."""
    source: str
    as_of: dt.date
    aliases: tuple[str, ...] = ()
    tdp_w: Positive | None = None
    price: Price | None = None
    purchase_usd: Positive | None = None
    purchase_source: str | None = None
    factors: FactorOverrides = FactorOverrides()
    pcie_p2p: bool = True
    """Whether the driver lets two of these cards read each other's memory over PCIe
    (GeForce cards: no). Without it a PCIe all-reduce bounces through host memory."""
    pcie_p2p_source: str | None = None
    fp16_accumulate_flops_per_s: Positive | None = None
    """FP16 matmuls with FP16 accumulate, where faster than with FP32 accumulate
    (GeForce: twice): what an engine that accumulates in FP16 (llama.cpp) reaches."""

    def __post_init__(self) -> None:
        _check_name("device", self.name)
        if not self.pcie_p2p and not self.pcie_p2p_source:
            raise ValueError("pcie_p2p: false needs pcie_p2p_source")
        if not self.dense_flops_per_s:
            raise ValueError("dense_flops_per_s needs at least one precision")
        if self.purchase_usd is not None and not self.purchase_source:
            raise ValueError("purchase_usd needs purchase_source")


# --------------------------------------------------------------------------- platforms


@dataclass(frozen=True)
class Link:
    __pydantic_config__ = _FORBID
    kind: LinkKind
    bandwidth_bytes_per_s: Positive
    """Per GPU, per direction."""
    latency_s: Annotated[float, Ge(0)]
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

    __pydantic_config__ = _FORBID
    one_shot_latency_s: Positive
    """Fixed cost of one one-stage call (launch + two barriers), at a tiny message."""
    two_shot_latency_s: Positive
    """Fixed cost of one two-stage call (reduce-scatter, barrier, all-gather)."""
    source: str
    max_bytes: tuple[PositiveInt, PositiveInt, PositiveInt, PositiveInt] | None = None
    """Largest message the engine sends through these kernels at TP 2, 4, 6, 8; None:
    vLLM's default buffer, 8 MiB (lower where the engine prefers NVLS above)."""

    def limit_bytes(self, tp: int) -> int:
        if self.max_bytes is None or tp not in TP_SIZES_WITH_CUSTOM_ALLREDUCE:
            return 8 * 1024 * 1024
        return self.max_bytes[TP_SIZES_WITH_CUSTOM_ALLREDUCE.index(tp)]


@dataclass(frozen=True)
class Nvls:
    """NVLink SHARP: the NVSwitch reduces (multimem.ld_reduce) and multicasts the
    result, so each GPU sends and receives the message about once."""

    __pydantic_config__ = _FORBID
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

    __pydantic_config__ = _FORBID
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

    __pydantic_config__ = _FORBID
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
        _check_name("platform", self.name)
        if self.layout == "single":
            if self.gpus_per_node != 1:
                raise ValueError("layout 'single' has gpus_per_node 1")
        elif self.scale_up is None:
            raise ValueError(f"layout '{self.layout}' needs a scale_up link")
        if self.layout == "pairs" and self.host is None:
            raise ValueError("layout 'pairs' needs a host link to join the pairs")
        if self.max_nodes > 1 and self.scale_out is None:
            raise ValueError("max_nodes > 1 needs a scale_out link")


# --------------------------------------------------------------------------- models

TensorGroup = Literal["embeddings", "lm_head", "attention", "mlp", "experts"]


@dataclass(frozen=True)
class CheckpointLayout:
    """Which tensors of a published quantised checkpoint stay in 16-bit (Meta's
    Llama-3.1-405B FP8 keeps attention and its first and last blocks in BF16;
    gpt-oss quantises only the experts to MXFP4)."""

    __pydantic_config__ = _FORBID
    format: str
    """The weight format (precision name) this layout applies to."""
    source: str
    sixteen_bit: tuple[TensorGroup, ...] = ()
    sixteen_bit_layers: NonNegInt = 0
    """Whole transformer blocks kept in 16-bit (the first and last ones)."""


@dataclass(frozen=True)
class PublishedCheckpoint:
    """A repository a publisher put on Hugging Face, so that `deploy` serves the
    checkpoint whose weights are already in the plan's format (no runtime
    quantisation) and an instruct one unless told otherwise."""

    __pydantic_config__ = _FORBID
    hf_id: str
    format: str
    """The weight format (precision name) its weights are stored in."""
    variant: Literal["instruct", "base"]
    """instruct: post-trained for chat (Instruct, -it, R1, gpt-oss); base: pretrained only."""
    source: str
    as_of: dt.date
    container: Literal["safetensors", "gguf"] = "safetensors"
    """gguf: a llama.cpp file (llama-server `-hf <hf_id>:<FORMAT>` picks it)."""


@dataclass(frozen=True)
class Model:
    __pydantic_config__ = _FORBID
    name: Name
    display_name: str
    num_layers: Count
    hidden_size: Count
    num_attention_heads: Count
    num_kv_heads: Count
    head_dim: Count
    intermediate_size: Count
    vocab_size: Count
    total_params: PositiveInt
    active_params: PositiveInt
    """Parameters used per token (= total for dense models)."""
    attention: AttentionKind
    max_context_tokens: Count
    source: str
    as_of: dt.date
    hf_id: str | None = None
    aliases: tuple[str, ...] = ()
    v_head_dim: Count | None = None
    """When V heads differ from Q/K heads (MLA)."""
    moe_intermediate_size: Count | None = None
    tie_word_embeddings: bool = False
    num_experts: NonNegInt = 0
    """Routed experts per MoE layer (0 = dense)."""
    experts_per_token: NonNegInt = 0
    shared_experts: NonNegInt = 0
    dense_layers: NonNegInt = 0
    """Leading layers of an MoE model with a dense MLP (config.json first_k_dense_replace)."""
    kv_lora_rank: Count | None = None
    """MLA: compressed KV latent width."""
    qk_rope_head_dim: Count | None = None
    """MLA: decoupled RoPE key width."""
    sliding_window: Count | None = None
    sliding_layers: NonNegInt = 0
    """How many layers attend only within the window."""
    checkpoints: tuple[CheckpointLayout, ...] = ()
    """Published checkpoints whose tensors are not all in one format."""
    published: tuple[PublishedCheckpoint, ...] = ()
    """The checkpoints on Hugging Face, per format and variant (catalogs/models.yaml)."""

    def __post_init__(self) -> None:
        _check_name("model", self.name)
        h, kv = self.num_attention_heads, self.num_kv_heads
        if self.attention == "mha" and kv != h:
            raise ValueError(f"attention 'mha' needs num_kv_heads == num_attention_heads ({kv} != {h})")
        if self.attention == "mqa" and kv != 1:
            raise ValueError("attention 'mqa' needs num_kv_heads 1")
        if self.attention == "gqa" and not (1 < kv < h and h % kv == 0):
            raise ValueError(f"attention 'gqa' needs 1 < num_kv_heads < heads, dividing them ({kv}, {h})")
        if self.attention == "mla" and (self.kv_lora_rank is None or self.qk_rope_head_dim is None):
            raise ValueError("attention 'mla' needs kv_lora_rank and qk_rope_head_dim")
        if self.active_params > self.total_params:
            raise ValueError("active_params exceeds total_params")
        if self.num_experts:
            if not 0 < self.experts_per_token <= self.num_experts:
                raise ValueError("experts_per_token must be in 1..num_experts")
            if self.active_params >= self.total_params:
                raise ValueError("an MoE model has fewer active than total parameters")
        elif self.active_params != self.total_params:
            raise ValueError("a dense model (num_experts 0) has active_params == total_params")
        if self.sliding_layers > self.num_layers:
            raise ValueError("sliding_layers exceeds num_layers")
        if self.sliding_layers and self.sliding_window is None:
            raise ValueError("sliding_layers needs sliding_window")

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def moe_layers(self) -> int:
        """Layers that route to experts (all but the leading dense ones)."""
        return self.num_layers - self.dense_layers if self.is_moe else 0

    @property
    def embedding_params(self) -> int:
        """Input embedding plus LM head (one matrix when tied)."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    def checkpoint(self, weights_format: str) -> CheckpointLayout | None:
        return next((c for c in self.checkpoints if c.format == weights_format), None)

    @property
    def attention_params(self) -> int:
        """Q, K, V and O projections of every layer (MLA: not derivable from these
        fields, so 0 and counted with the MLP)."""
        if self.attention == "mla":
            return 0
        q = self.num_attention_heads * self.head_dim
        kv = 2 * self.num_kv_heads * self.head_dim
        return self.num_layers * self.hidden_size * (2 * q + kv)

    def param_groups(self) -> dict[str, int]:
        """Parameters per tensor group: input embeddings, LM head, attention, routed
        experts, and the rest of the blocks (dense MLP, shared experts, router, norms)."""
        emb = self.vocab_size * self.hidden_size
        head = 0 if self.tie_word_embeddings else emb
        experts = self.routed_expert_params
        attention = self.attention_params
        mlp = max(0, self.total_params - emb - head - experts - attention)
        return {"embeddings": emb, "lm_head": head, "attention": attention, "mlp": mlp, "experts": experts}

    @property
    def routed_expert_params(self) -> int:
        """All routed-expert parameters, from total = rest + routed and
        active = rest + routed · k/E (so no per-layer bookkeeping is needed)."""
        if not self.is_moe:
            return 0
        frac = self.experts_per_token / self.num_experts
        return round((self.total_params - self.active_params) / (1 - frac))


# --------------------------------------------------------------------------- precisions


@dataclass(frozen=True)
class Precision:
    """A number format for weights and/or the KV cache, with its real storage cost."""

    __pydantic_config__ = _FORBID
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
    bandwidth_share: Annotated[float, Gt(0), Le(1.5)] = 1.0
    """Share of a 16-bit GEMV's achieved bandwidth that this format's decode kernels
    reach (dequantisation costs); fitted, catalogs/fitted.yaml."""
    compute_share: Annotated[float, Gt(0), Le(1.5)] = 1.0
    """Share of the 16-bit GEMMs' utilisation this format's prefill GEMMs reach of
    their own peak (FP8 at twice the peak reaches a smaller share); fitted."""
    effective_bits_per_value: Annotated[float, Gt(0), Le(32)] | None = None
    """Bits per weight averaged over a whole model file, for formats that mix block
    types across tensors (GGUF Q4_K_M / Q5_K_M); when set, it is the storage cost and
    `bits`/`group_size`/scales describe only the base block."""
    quality_rank: NonNegInt = 0
    """Weights: higher is closer to the 16-bit model (see quality_source); orders
    formats at equal cost and sets search.min_weights_quality."""
    quality_source: str = ""

    def __post_init__(self) -> None:
        _check_name("precision", self.name)
        if self.effective_bits_per_value is not None and self.effective_bits_per_value < self.bits:
            raise ValueError(
                f"precision '{self.name}': effective_bits_per_value {self.effective_bits_per_value} "
                f"is below its stored bits {self.bits}"
            )

    @property
    def bytes_per_value(self) -> float:
        if self.effective_bits_per_value is not None:
            return self.effective_bits_per_value / 8
        per_group = 0.0
        if self.group_size:
            per_group = (self.scale_bytes_per_group + self.zero_bytes_per_group) / self.group_size
        return self.bits / 8 + per_group


# --------------------------------------------------------------------------- engines


@dataclass(frozen=True)
class Engine:
    """How a serving engine sizes its KV cache (see catalogs/engines.yaml)."""

    __pydantic_config__ = _FORBID
    name: Name
    display_name: str
    rule: Literal["fraction_of_total", "static_fraction", "fraction_of_free", "contiguous"]
    fraction: Fraction
    fraction_flag: str | None
    block_size_tokens: Count
    max_num_batched_tokens: Count
    max_num_seqs: Count
    source: str
    as_of: dt.date
    aliases: tuple[str, ...] = ()
    efficiency: dict[str, FactorOverrides] = field(default_factory=dict)
    """Shares of peak this engine reaches on each memory kind, fitted on the
    validation set's fit points (catalogs/fitted.yaml, bench/fit_defaults.py)."""
    max_model_len: Count | None = None
    """Longest sequence the engine admits; None: the workload's context."""
    enable_chunked_prefill: bool = True
    """Prompts split into chunks of max_num_batched_tokens. Off, a prompt is one pass
    and the memory profile runs max(max_model_len, max_num_batched_tokens) tokens."""
    enforce_eager: bool = False
    """No CUDA graphs: every layer's kernels are launched from Python each step."""
    large_gpu: LargeGpuDefaults | None = None
    """Bigger default batch knobs on large-memory GPUs (vLLM)."""
    profiles_activation: bool = False
    """The KV budget leaves room for the activation peak of a profiled forward pass
    over max_num_batched_tokens tokens and max_num_seqs sampled rows (vLLM)."""
    sampler_bytes_per_logit: NonNegInt = 0
    """Bytes per vocabulary entry per sequence the sampler holds at its peak."""
    overlaps_memory_and_compute: bool = True
    """Its kernels stream weights while they compute, so a matmul takes the larger of
    its read and its FLOPs; without (llama.cpp's dequantising kernels), the sum."""
    accumulates_fp16: bool = False
    """FP16 matmuls accumulate in FP16 (llama.cpp's cuBLAS path), at the device's
    fp16_accumulate_flops_per_s where it has one."""
    split_mode: Literal["layer", "row"] | None = None
    """llama.cpp over several GPUs: whole layers per GPU, run one after another
    (layer, the default) or each matrix split by rows (row)."""

    def __post_init__(self) -> None:
        _check_name("engine", self.name)

    def efficiency_on(self, device: Device) -> FactorOverrides | None:
        """What this engine reaches on the device: fitted for its vendor and memory kind
        ("amd.hbm"), else for the memory kind ("hbm")."""
        kind = device.memory_kind
        return self.efficiency.get(f"{device.vendor.lower()}.{kind}") or self.efficiency.get(kind)

    def batch_knobs(self, device_memory_bytes: float, device_name: str) -> tuple[int, int]:
        """(max_num_batched_tokens, max_num_seqs) as the engine defaults them on this GPU."""
        big = self.large_gpu
        if big and device_memory_bytes >= big.min_memory_bytes and not any(x in device_name for x in big.except_names):
            return big.max_num_batched_tokens, big.max_num_seqs
        return self.max_num_batched_tokens, self.max_num_seqs


@dataclass(frozen=True)
class LargeGpuDefaults:
    __pydantic_config__ = _FORBID
    min_memory_bytes: PositiveInt
    max_num_batched_tokens: Count
    max_num_seqs: Count
    except_names: tuple[str, ...] = ()


# --------------------------------------------------------------------------- the catalog files


@dataclass(frozen=True)
class _DevicesFile:
    __pydantic_config__ = _FORBID
    default_factors: DefaultFactors
    devices: list[Device]


@dataclass(frozen=True)
class _PlatformsFile:
    __pydantic_config__ = _FORBID
    platforms: list[Platform]


@dataclass(frozen=True)
class _ModelsFile:
    __pydantic_config__ = _FORBID
    models: list[Model]


@dataclass(frozen=True)
class _PrecisionsFile:
    __pydantic_config__ = _FORBID
    precisions: list[Precision]


@dataclass(frozen=True)
class _EnginesFile:
    __pydantic_config__ = _FORBID
    engines: list[Engine]


@dataclass(frozen=True)
class FittedShares:
    __pydantic_config__ = _FORBID
    bandwidth_share: Annotated[float, Gt(0), Le(1.5)] | None = None
    compute_share: Annotated[float, Gt(0), Le(1.5)] | None = None


@dataclass(frozen=True)
class _FittedFile:
    """Factors fitted on the validation set's fit points by bench/fit_defaults.py."""

    __pydantic_config__ = _FORBID
    fitted_on: str
    as_of: dt.date
    engines: dict[str, dict[str, FactorOverrides]] = field(default_factory=dict)
    """engine → memory kind ("hbm"), or vendor and memory kind ("amd.hbm") → factors."""
    defaults: FactorOverrides = FactorOverrides()
    """Memory factors fitted on the fit split's logs (runtime overhead, TP overhead)."""
    precisions: dict[str, FittedShares] = field(default_factory=dict)


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum() or ch == ".")


@dataclass(frozen=True)
class _Index:
    """Name → entry with aliases, case and punctuation folded, and 'did you mean'."""

    kind: str
    field_name: str
    entries: dict[str, object]
    keys: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, kind: str, field_name: str, items: list) -> _Index:
        entries = {}
        keys: dict[str, str] = {}
        for item in items:
            if item.name in entries:
                raise ValueError(f"duplicate {kind} name '{item.name}'")
            entries[item.name] = item
            names = [item.name, *getattr(item, "aliases", [])]
            if getattr(item, "hf_id", None):
                names.append(item.hf_id)
            for n in names:
                k = _norm(n)
                if k in keys and keys[k] != item.name:
                    raise ValueError(f"{kind} alias '{n}' names both '{keys[k]}' and '{item.name}'")
                keys[k] = item.name
        return cls(kind, field_name, entries, keys)

    def get(self, name: str):
        key = self.keys.get(_norm(str(name)))
        if key is not None:
            return self.entries[key]
        close = difflib.get_close_matches(_norm(str(name)), list(self.keys), n=3, cutoff=0.5)
        suggestions = list(dict.fromkeys(self.keys[c] for c in close))  # closest first
        hint = f"did you mean {', '.join(repr(s) for s in suggestions)}? " if suggestions else ""
        raise InputError(
            self.field_name,
            name,
            f"unknown {self.kind}; {hint}`plan-opt list {self.kind}s` shows all {len(self.entries)}",
        )

    def __iter__(self):
        return iter(self.entries.values())

    def __len__(self) -> int:
        return len(self.entries)


class Catalog:
    """Everything plan-opt knows about hardware and models, validated."""

    def __init__(
        self,
        devices: _DevicesFile,
        platforms: _PlatformsFile,
        models: _ModelsFile,
        precisions: _PrecisionsFile,
        engines: _EnginesFile,
        fitted: _FittedFile | None = None,
        prices: _PricesFile | None = None,
        ownership: Ownership | None = None,
    ):
        df = devices.default_factors
        fitted = fitted or _FittedFile("nothing", dt.date.min)
        priors = Factors(**{f.name: getattr(df, f.name) for f in dataclasses.fields(Factors)})
        self.default_factors = fitted.defaults.apply(priors)
        self.prices = prices or _PricesFile(dt.date.min, Pricing(("gpu_cloud",)), {}, ())
        self.ownership = ownership or Ownership(5, 1.0, 1.0, 0.0, 0.0)
        self.calibration: dict[str, FactorOverrides] = {}
        """Device → factors a user's calibration fitted (--calibration; see catalog/calibration.py)."""
        self.calibration_bands: dict[str, dict[str, float]] = {}
        """Device → the worst residual per metric that calibration left (its band)."""
        self.default_pricing = self.prices.default
        for d in devices.devices:
            if d.price is not None:
                raise ValueError(f"device '{d.name}' has a price: prices live in prices.yaml")
        self.devices = _Index.build("device", "gpu", devices.devices)
        self._check_prices()
        self.devices = _Index.build("device", "gpu", [
            dataclasses.replace(d, price=self.price(d.name, self.default_pricing)) for d in devices.devices])
        self.platforms = _Index.build("platform", "platform", platforms.platforms)
        self.models = _Index.build("model", "model", models.models)
        self.fitted_on = fitted.fitted_on
        self.precisions = _Index.build("precision", "precision", [_with_shares(p, fitted) for p in precisions.precisions])
        self.engines = _Index.build("engine", "engine", [_with_efficiency(e, fitted) for e in engines.engines])
        for groups in fitted.engines.values():
            for key in groups:
                if key.split(".")[-1] not in ("hbm", "gddr", "lpddr"):
                    raise ValueError(f"fitted.yaml: '{key}' is not a memory kind (hbm, gddr, lpddr) or vendor.kind")
        for name in [*fitted.engines, *fitted.precisions]:
            if name not in self.engines.entries and name not in self.precisions.entries:
                raise ValueError(f"fitted.yaml names unknown engine or precision '{name}'")
        self._cross_check()

    def _cross_check(self) -> None:
        for m in self.models:
            for c in m.published:
                if c.format not in self.precisions.entries or "weights" not in self.precisions.entries[c.format].use:
                    raise ValueError(f"model '{m.name}': published checkpoint {c.hf_id} names '{c.format}', not a weight format")
        for d in self.devices:
            for p in d.platforms:
                if p not in self.platforms.entries:
                    raise ValueError(f"device '{d.name}' names unknown platform '{p}'")
            for fmt in d.weight_formats + d.kv_formats:
                if fmt not in self.precisions.entries:
                    raise ValueError(f"device '{d.name}' names unknown precision '{fmt}'")
            for fmt in d.weight_formats:
                if "weights" not in self.precisions.entries[fmt].use:
                    raise ValueError(f"device '{d.name}': '{fmt}' is not a weight format")
            for fmt in d.kv_formats:
                if "kv" not in self.precisions.entries[fmt].use:
                    raise ValueError(f"device '{d.name}': '{fmt}' is not a KV-cache format")

    def _check_prices(self) -> None:
        for o in self.prices.offers:
            if o.provider not in self.prices.providers:
                raise ValueError(f"prices.yaml: offer for '{o.gpu}' names unknown provider '{o.provider}'")
            if o.gpu not in self.devices.entries:
                raise ValueError(f"prices.yaml: offer of '{o.provider}' names unknown device '{o.gpu}'")
        self.pricing(self.default_pricing.providers, self.default_pricing.tier, self.default_pricing.statistic)

    def pricing(self, providers, tier: str | None = None, statistic: str | None = None, where: str = "pricing.providers") -> Pricing:
        """A pricing basis from a spec's tokens: provider names, kinds, or all; the
        catalog's default for whatever is not given."""
        base = self.default_pricing
        kinds = sorted({p.kind for p in self.prices.providers.values()})
        names = []
        for i, token in enumerate(providers or base.providers):
            t = str(token).strip().lower()
            if t != "all" and t not in kinds and t not in self.prices.providers:
                close = difflib.get_close_matches(t, list(self.prices.providers) + kinds, n=3, cutoff=0.5)
                hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
                raise InputError(f"{where}[{i}]", token, f"unknown provider; {hint}allowed: a provider "
                                 f"({', '.join(self.prices.providers)}), a kind ({', '.join(kinds)}), or all "
                                 "(`plan-opt list prices` shows the book)")
            names.append(t)
        return Pricing(tuple(dict.fromkeys(names)), tier or base.tier, statistic or base.statistic)

    def providers_of(self, pricing: Pricing) -> list[str]:
        out = []
        for t in pricing.providers:
            out += [n for n, p in self.prices.providers.items() if t in ("all", n, p.kind)]
        return list(dict.fromkeys(out))

    def offers_for(self, gpu: str, pricing: Pricing) -> list[Offer]:
        """Each provider's offer for the GPU on the tier: its newest, and of those its
        cheapest (a provider lists one price per instance and region); cheapest first."""
        allowed = set(self.providers_of(pricing))
        best: dict[str, Offer] = {}
        for o in self.prices.offers:
            if o.gpu != gpu or o.tier != pricing.tier or o.provider not in allowed or o.suspect:
                continue
            b = best.get(o.provider)
            if b is None or (o.as_of, -o.usd_per_gpu_hour) > (b.as_of, -b.usd_per_gpu_hour):
                best[o.provider] = o
        return sorted(best.values(), key=lambda o: (o.usd_per_gpu_hour, o.provider))

    def price(self, gpu: str, pricing: Pricing) -> Price | None:
        """The GPU's price on this basis, naming the offer it comes from; None when no
        provider of the basis offers it on the tier."""
        offers = self.offers_for(gpu, pricing)
        if not offers:
            return None
        o = offers[0] if pricing.statistic == "cheapest" else offers[(len(offers) - 1) // 2]
        prov = self.prices.providers[o.provider]
        seen = ", ".join(f"{x.provider} ${x.usd_per_gpu_hour:.2f}" for x in offers)
        return Price(o.usd_per_gpu_hour, prov.display_name, o.instance or o.gpu, o.as_of, o.source, o.tier,
                     f"{pricing.label()}: {len(offers)} offer{'s' if len(offers) != 1 else ''} ({seen})")

    def device(self, name: str) -> Device:
        return self.devices.get(name)

    def model(self, name: str) -> Model:
        return self.models.get(name)

    def platform(self, name: str) -> Platform:
        return self.platforms.get(name)

    def precision(self, name: str, use: str = "weights") -> Precision:
        p = self.precisions.get(name)
        if use not in p.use:
            allowed = ", ".join(x.name for x in self.precisions if use in x.use)
            raise InputError(f"precision.{'kv_cache' if use == 'kv' else use}", name, f"not a {use} format; allowed: {allowed}")
        return p

    def engine(self, name: str) -> Engine:
        return self.engines.get(name)

    def factors_for(self, device: Device) -> Factors:
        return device.factors.apply(self.default_factors)


def _with_shares(p: Precision, fitted: _FittedFile) -> Precision:
    got = fitted.precisions.get(p.name)
    if not got:
        return p
    changes = {k: v for k, v in dataclasses.asdict(got).items() if v is not None}
    return dataclasses.replace(p, **changes)


def _with_efficiency(e: Engine, fitted: _FittedFile) -> Engine:
    got = fitted.engines.get(e.name)
    return dataclasses.replace(e, efficiency={**e.efficiency, **got}) if got else e


CATALOG_FILES = {
    "devices": ("devices.yaml", _DevicesFile),
    "platforms": ("platforms.yaml", _PlatformsFile),
    "models": ("models.yaml", _ModelsFile),
    "precisions": ("precisions.yaml", _PrecisionsFile),
    "engines": ("engines.yaml", _EnginesFile),
    "fitted": ("fitted.yaml", _FittedFile),
    "prices": ("prices.yaml", _PricesFile),
    "ownership": ("ownership.yaml", Ownership),
}


def catalog_dir() -> Path:
    """The shipped catalogs: `solver/catalogs/` in an installed wheel (setuptools maps
    the top-level `catalogs/` there), or `catalogs/` beside the package in a source
    checkout or editable install."""
    here = Path(__file__).resolve().parent.parent  # the solver package
    for candidate in (here / "catalogs", here.parent / "catalogs"):
        if (candidate / "devices.yaml").exists():
            return candidate
    raise InputError("catalog", str(here), "the catalogs are missing from this installation; reinstall plan-opt")


def _validate_file(path: Path, text: str, schema: type):
    from pydantic import TypeAdapter, ValidationError

    from solver.catalog.yaml_lines import load_yaml_text

    data, lines = load_yaml_text(text, source=str(path))
    try:
        return TypeAdapter(schema).validate_python(data)
    except ValidationError as exc:
        raise InputError.from_validation(exc, lines, source=str(path)) from None


def load_catalog(directory: Path | None = None, *, use_cache: bool = True) -> Catalog:
    """Validate the four catalog files, or reuse the validated catalog cached for
    exactly these bytes and this code."""
    directory = Path(directory) if directory else catalog_dir()
    texts = {}
    for key, (fname, _) in CATALOG_FILES.items():
        try:
            texts[key] = (directory / fname).read_text(encoding="utf-8")
        except OSError:
            raise InputError("catalog", str(directory / fname), "no such catalog file") from None
    cache_name = "catalog-" + cache.digest(
        Path(__file__).read_bytes(), *(t.encode() for t in texts.values())
    ) + ".pickle"
    if use_cache:
        raw = cache.read_bytes(cache_name)
        if raw:
            try:
                return pickle.loads(raw)
            except Exception:  # a cache from an older layout: rebuild it
                pass
    parts = {key: _validate_file(directory / fname, texts[key], schema) for key, (fname, schema) in CATALOG_FILES.items()}
    try:
        catalog = Catalog(**parts)
    except ValueError as exc:
        raise InputError("catalog", str(directory), str(exc)) from None
    if use_cache:
        cache.write_bytes(cache_name, pickle.dumps(catalog, protocol=pickle.HIGHEST_PROTOCOL))
    return catalog


_cached: Catalog | None = None


def default_catalog() -> Catalog:
    global _cached
    if _cached is None:
        _cached = load_catalog()
    return _cached
