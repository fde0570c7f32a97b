"""Serving engines: how each sizes its KV cache and batches, and the defaults of its knobs."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Annotated, Literal

from annotated_types import Ge, Gt, Le, Lt

from solver.catalog.devices import Device
from solver.catalog.factors import FactorOverrides, SmallOverhead
from solver.catalog.types import (
    FORBID,
    Count,
    Fraction,
    Name,
    NonNegInt,
    PositiveInt,
    check_name,
)

# --------------------------------------------------------------------------- engines


@dataclass(frozen=True)
class MoePadding:
    """How an engine rounds each GPU's expert matrices up before it allocates them, for
    one weight format on some devices (catalogs/engines.yaml `moe_padding`). The gate-up
    matrix is 2·I rows by H columns, the down matrix H rows by I columns (I: each GPU's
    expert intermediate size, H: the hidden size); the engine first rounds I up to
    `intermediate_multiple` and H to `hidden_multiple` (vLLM's
    mxfp4_round_up_hidden_size_and_intermediate_size), then its kernel's layout rounds
    each matrix's rows up to `rows_multiple` and its columns (the reduced dimension) to
    `columns_multiple` (triton_kernels' Hopper MXFP4 value layout). The padding is
    allocated and streamed like the weights it pads."""

    __pydantic_config__ = FORBID
    formats: tuple[str, ...]
    backend: str
    """The kernel family the engine picks there, as its source names it."""
    source: str
    families: tuple[str, ...] = ()
    """Device families (Device.family) the rule holds on."""
    devices: tuple[str, ...] = ()
    """Device names it holds on beside the families (a family the engine splits)."""
    intermediate_multiple: PositiveInt = 1
    hidden_multiple: PositiveInt = 1
    rows_multiple: PositiveInt = 1
    columns_multiple: PositiveInt = 1

    def holds_on(self, device: Device) -> bool:
        return device.name in self.devices or device.family in self.families


@dataclass(frozen=True)
class TpFraction:
    """The default static fraction from this TP size up (to the next step's)."""

    __pydantic_config__ = FORBID
    min_tp: Count
    fraction: Fraction


@dataclass(frozen=True)
class ReserveBucket:
    """The defaults on GPUs under `below_mib` MiB (nvidia-smi's total; None: every larger
    GPU): the chunked-prefill size and the largest CUDA-graph batch, below TP 4 and from TP 4."""

    __pydantic_config__ = FORBID
    below_mib: PositiveInt | None
    chunked_prefill_size: Count
    cuda_graph_max_bs: Count
    cuda_graph_max_bs_tp4: Count


@dataclass(frozen=True)
class FractionRule:
    """How the engine picks its static memory fraction when it is not given (SGLang's
    mem_fraction_static): by TP size (`by_tp`, the step of the largest min_tp ≤ TP), or
    as what is left of the GPU's MiB after a reserve (`reserve`): base_mib +
    prefill_mib_per_token × max(chunked_prefill_size, min_prefill_tokens) +
    graph_mib_per_batch × cuda_graph_max_bs + mib_per_eight_ranks × TP × PP / 8, at least
    floor_mib on GPUs over floor_above_mib, plus draft_mib (a speculative head) or
    draft_model_mib (a separate draft model); the fraction (MiB − reserve) / MiB to 3 places."""

    __pydantic_config__ = FORBID
    source: str
    by_tp: tuple[TpFraction, ...] = ()
    reserve: tuple[ReserveBucket, ...] = ()
    base_mib: NonNegInt = 0
    prefill_mib_per_token: Annotated[float, Ge(0), Le(1024)] = 0.0
    min_prefill_tokens: NonNegInt = 0
    graph_mib_per_batch: Annotated[float, Ge(0), Le(1024)] = 0.0
    mib_per_eight_ranks: NonNegInt = 0
    floor_mib: NonNegInt = 0
    floor_above_mib: NonNegInt = 0
    draft_mib: NonNegInt = 0
    draft_model_mib: NonNegInt = 0

    def __post_init__(self) -> None:
        if bool(self.by_tp) == bool(self.reserve):
            raise ValueError("fraction_rule: give by_tp (fractions by TP size) or reserve (buckets by GPU memory), one of the two")
        tps = [s.min_tp for s in self.by_tp]
        if self.by_tp and (tps[0] != 1 or tps != sorted(set(tps))):
            raise ValueError(f"fraction_rule.by_tp: min_tp must start at 1 and rise, got {tps}")
        bounds = [b.below_mib for b in self.reserve]
        if self.reserve and (bounds[-1] is not None or None in bounds[:-1] or bounds[:-1] != sorted(set(bounds[:-1]))):  # type: ignore[type-var]
            raise ValueError(f"fraction_rule.reserve: below_mib must rise, the last bucket without one (every larger GPU), got {bounds}")

    def __str__(self) -> str:
        """The rule as a listing names it (its steps by TP, or the reserve by GPU memory)."""
        if self.by_tp:
            return "by TP: " + ", ".join(f"{s.fraction:g} from TP {s.min_tp}" for s in self.by_tp)
        return "(MiB - reserve) / MiB, the reserve by GPU memory, TP and PP (catalogs/engines.yaml fraction_rule)"

    def fraction(self, memory_mib: float, tp: int, pp: int, draft: str | None = None) -> float:
        """The fraction the engine picks on a GPU of memory_mib MiB at this TP and PP;
        draft: "head" or "model" when a speculative draft runs beside the target."""
        if self.by_tp:
            return next(s.fraction for s in reversed(self.by_tp) if s.min_tp <= tp)
        b = next(b for b in self.reserve if b.below_mib is None or memory_mib < b.below_mib)
        graph_bs = b.cuda_graph_max_bs if tp < 4 else b.cuda_graph_max_bs_tp4
        mib = self.base_mib + self.prefill_mib_per_token * max(b.chunked_prefill_size, self.min_prefill_tokens)
        mib += self.graph_mib_per_batch * graph_bs + self.mib_per_eight_ranks * tp * pp / 8
        if memory_mib > self.floor_above_mib:
            mib = max(mib, self.floor_mib)
        mib += {"head": self.draft_mib, "model": self.draft_model_mib}.get(draft or "", 0)
        return round((memory_mib - mib) / memory_mib, 3)


@dataclass(frozen=True)
class Engine:
    """How a serving engine sizes its KV cache (see catalogs/engines.yaml)."""

    __pydantic_config__ = FORBID
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
    weights_container: Literal["safetensors", "gguf"] = "safetensors"
    """The files it reads weights from: a model's checkpoint layouts in that container
    are the ones its plans weigh (Model.checkpoints)."""
    runs_on: tuple[str, ...] = ()
    """Device vendors the engine has a backend for (empty: any)."""
    runs_on_source: str = ""
    efficiency: dict[str, FactorOverrides] = field(default_factory=dict)
    """Shares of peak this engine reaches on each memory kind, fitted on the
    validation set's fit points (catalogs/fitted.yaml, bench/fit_defaults.py)."""
    max_model_len: Count | None = None
    """Longest sequence the engine admits; None: the workload's context."""
    enable_chunked_prefill: bool = True
    """Prompts split into chunks of max_num_batched_tokens. Off, a prompt is one pass
    and the memory profile runs max(max_model_len, max_num_batched_tokens) tokens."""
    unchunked_budget_holds_model_len: bool = False
    """Without chunked prefill a step takes max(max_model_len, max_num_batched_tokens)
    tokens, so any prompt the engine admits is one pass (vLLM V0's SchedulerConfig)."""
    enforce_eager: bool = False
    """No CUDA graphs: every layer's kernels are launched from Python each step."""
    large_gpu: LargeGpuDefaults | None = None
    """Bigger default batch knobs on large-memory GPUs (vLLM)."""
    profiles_activation: bool = False
    """The KV budget leaves room for the activation peak of a profiled forward pass
    over max_num_batched_tokens tokens and max_num_seqs sampled rows (vLLM)."""
    sampler_bytes_per_logit: NonNegInt = 0
    """Bytes per vocabulary entry per sequence the sampler holds at its peak."""
    sampler_bytes_allocated: bool = False
    """Those bytes are buffers the runtime allocates per max_batch_size slot before it
    sizes KV (TensorRT-LLM's TensorRT flow), not the peak of a profiled sampler run
    over max_num_seqs rows (vLLM's): the same bytes, read and named differently."""
    profiles_cuda_graphs: bool = False
    """The KV budget leaves room for the CUDA graphs it will capture (vLLM from
    v0.21.0); before, graphs are captured after the KV cache is sized, beyond it."""
    cuda_graph_max_capture_size: NonNegInt = 0
    """Largest batch captured as a CUDA graph (vLLM max_cudagraph_capture_size, at
    most 2 × max_num_seqs); the sizes below it follow the engine's default list."""
    cuda_graph_bytes_per_layer_graph: NonNegInt = 0
    """Pool bytes one captured size costs per layer piece (piecewise graphs), on every
    TP rank alike."""
    cuda_graph_sharded_bytes_per_layer_graph: NonNegInt = 0
    """Of the same, the bytes TP splits (the captured activations' sharded share)."""
    overlaps_memory_and_compute: bool = True
    """Its kernels stream weights while they compute, so a matmul takes the larger of
    its read and its FLOPs; without (llama.cpp's dequantising kernels), the sum."""
    accumulates_fp16: bool = False
    """FP16 matmuls accumulate in FP16 (llama.cpp's cuBLAS path), at the device's
    fp16_accumulate_flops_per_s where it has one."""
    split_mode: Literal["layer", "row"] | None = None
    """llama.cpp over several GPUs: whole layers per GPU, run one after another
    (layer, the default) or each matrix split by rows (row)."""
    row_split_peer_issue_s: SmallOverhead = 0.0
    """Row split: the host's time to hand one GPU beyond the main one its part of one
    weight matrix (the runtime calls ggml-cuda issues per peer, per matmul)."""
    row_split_source: str = ""
    running_limit: Literal["max_num_seqs", "kv_half_pool"] = "max_num_seqs"
    """What bounds the sequences the scheduler runs at once, unless the spec sets
    max_num_seqs: max_num_seqs itself, or (SGLang's max_running_requests) half the KV
    pool's tokens, at most its request pool (2,048 to 4,096 by the pool's size)."""
    running_limit_source: str = ""
    prefix_caching: bool = True
    """Its KV blocks are kept and matched by prefix, so prompts that share a prefix
    prefill it once and hold it once (vLLM V1, SGLang, TensorRT-LLM's block reuse)."""
    prefix_caching_source: str = ""
    disaggregation: bool = False
    """It serves prompts and decoding on separate instances, the KV cache sent between
    them (vLLM's KV connectors, SGLang's --disaggregation-mode, TensorRT-LLM's
    disaggregated trtllm-serve)."""
    disaggregation_source: str = ""
    batching: Literal["isolated", "continuous"] = "continuous"
    """How it batches by default, the mode a spec without workload.batching is planned
    in: continuous (prompts' chunks inside the decode steps, so TPOT counts the prompts'
    work and TTFT the load) for every engine listed; isolated is the seed's figures."""
    batching_source: str = ""
    prefill_schedule: Literal["mixed", "separate"] = "mixed"
    """Where a prompt's chunk runs under continuous batching: inside the decode step
    (mixed: vLLM, TensorRT-LLM) or as a pass of its own that runs first while every
    decoder waits (separate: SGLang unless --enable-mixed-chunk)."""
    num_scheduler_steps: Count = 1
    """Decode steps scheduled at once (vLLM 0.5.5-0.7 V0 --num-scheduler-steps): the
    scheduler runs again only when the steps in flight are done, so a prompt that
    arrives meanwhile waits for them."""
    reserve_new_tokens: bool = False
    """It admits a prompt only while the KV also holds a share of every running request's
    output to come (SGLang's new_token_ratio), so that it seldom retracts."""
    overlap_schedule: bool = False
    """It chooses the next batch while the current one runs on the GPU (SGLang's
    overlap scheduler, on unless --disable-overlap-schedule): a prompt that arrives
    during an iteration waits for that one and the next, already chosen."""
    scheduling_source: str = ""
    weight_formats: tuple[str, ...] = ()
    """Weight formats it has kernels for (empty: not listed, none refused); solve offers
    and deploy emits these only (physics/validity.py, report/deploy.py)."""
    kv_formats: tuple[str, ...] = ()
    """KV-cache formats it stores (empty: not listed, none refused)."""
    formats_source: str = ""
    pads_moe_intermediate: tuple[str, ...] = ()
    """Weight formats whose expert MLP it pads per GPU to its kernels' block, so a TP
    split that leaves part of a block per GPU still loads (vLLM's MXFP4 MoE)."""
    pads_source: str = ""
    moe_padding: tuple[MoePadding, ...] = ()
    """The padding of pads_moe_intermediate's formats, by device, where its source gives
    the rule; the first rule that holds on a device is the engine's there (none: the
    padding is not modelled on that device)."""
    single_node: bool = False
    """A replica runs on one machine's GPUs only (llama.cpp: no multi-node backend modelled)."""
    single_node_source: str = ""
    release_step_overhead_s: SmallOverhead = 0.0
    """What a forward pass of this release line costs beyond the engine's fitted fixed
    cost (catalogs/fitted.yaml `releases`, fitted by bench/fit_defaults.py on the lines
    the fit half holds enough campaigns of: vLLM's V0 engine, whose scheduler, input
    preparation and sampling ran on the CPU between steps; 0 for every other line)."""
    fraction_rule: FractionRule | None = None
    """How the engine picks `fraction` itself when the knob is not given, by the
    deployment (SGLang's mem_fraction_static by TP size, later by GPU memory); None:
    `fraction` everywhere. A spec's knob (engine.gpu_memory_utilization or
    overrides.factors.memory_utilization) wins over it."""
    release: str = ""
    """The release line whose defaults these are, as a report names it (catalogs/
    engine_releases.yaml, set by catalog/releases.py); "" for the current release."""

    def __post_init__(self) -> None:
        check_name("engine", self.name)

    def efficiency_on(self, device: Device) -> FactorOverrides | None:
        """What this engine reaches on the device: fitted for its vendor and memory kind
        ("amd.hbm"), else for the memory kind ("hbm")."""
        kind = device.memory_kind
        return self.efficiency.get(f"{device.vendor.lower()}.{kind}") or self.efficiency.get(kind)

    def batch_knobs(self, device_memory_bytes: float, device_name: str) -> tuple[int, int]:
        """(max_num_batched_tokens, max_num_seqs) as the engine defaults them on this GPU."""
        big = self.large_gpu
        named = not big or not big.only_names or any(x in device_name for x in big.only_names)
        if big and named and device_memory_bytes >= big.min_memory_bytes and not any(x in device_name for x in big.except_names):
            return big.max_num_batched_tokens, big.max_num_seqs
        return self.max_num_batched_tokens, self.max_num_seqs

    def moe_padding_on(self, weights: str, device: Device) -> MoePadding | None:
        """The expert padding this engine applies to `weights` on `device` (None: none modelled)."""
        return next((r for r in self.moe_padding if weights in r.formats and r.holds_on(device)), None)


Acceptance = Annotated[float, Gt(0), Lt(1)]


@dataclass(frozen=True)
class SpeculativeHead:
    """Published acceptance of one method's drafts on a family of target models: the
    heads trained for them differ (a Qwen3 EAGLE-3 head keeps fewer tokens than a Llama
    one), and so does a reused MTP module's decay with depth."""

    __pydantic_config__ = FORBID
    models: tuple[Name, ...]
    """The catalog's model names these figures stand for."""
    acceptance: tuple[Acceptance, ...]
    """α_k by position k = 1, 2, ...: the chance the k-th drafted token is kept, given
    the ones before it were (positions past the list keep its last value)."""
    source: str
    as_of: dt.date


@dataclass(frozen=True)
class SpeculativeMethod:
    """A way of drafting tokens for the target model to verify in one step, with the
    defaults plan-opt assumes when the spec gives none (catalogs/engines.yaml)."""

    __pydantic_config__ = FORBID
    name: Literal["draft_model", "eagle", "eagle3", "mtp"]
    draft: Literal["model", "head"]
    """A separate small model (draft_model), or one layer on the target's own hidden
    states that shares its embedding and head (EAGLE, DeepSeek's MTP module)."""
    num_tokens: Count
    """Tokens drafted per step (k) by default."""
    acceptance: tuple[Acceptance, ...]
    """α_k by position by default (a model no head below names): the chance the k-th
    drafted token is kept given the ones before it were; past the list, its last value."""
    source: str
    as_of: dt.date
    heads: tuple[SpeculativeHead, ...] = ()
    """Acceptance by model family, where published (each with its source)."""
    draft_vocab_size: Count | None = None
    """Rows of a head's own LM head where it drafts over a vocabulary of its own (EAGLE-3's
    config.json `draft_vocab_size`, mapped to the target's by its d2t table); None: the
    head shares the target's LM head, every row of it."""

    def __post_init__(self) -> None:
        for where, alphas in [("acceptance", self.acceptance)] + [(f"heads[{i}].acceptance", h.acceptance) for i, h in enumerate(self.heads)]:
            if not alphas:
                raise ValueError(f"speculative {self.name}: {where} is empty; give α for at least the first drafted token")

    def acceptance_for(self, model_name: str) -> tuple[float, ...]:
        """α_k by position for drafts on this model: its family's published figures, or
        the method's default."""
        head = next((h for h in self.heads if model_name in h.models), None)
        return head.acceptance if head else self.acceptance

    vllm_method: str | None = None
    """The `method` of vLLM's --speculative-config (None: given by the draft model alone)."""
    sglang_algorithm: str | None = None
    """SGLang's --speculative-algorithm (None: SGLang has no such method)."""


@dataclass(frozen=True)
class LargeGpuDefaults:
    __pydantic_config__ = FORBID
    min_memory_bytes: PositiveInt
    max_num_batched_tokens: Count
    max_num_seqs: Count
    except_names: tuple[str, ...] = ()
    only_names: tuple[str, ...] = ()
    """Devices named so alone (empty: any): vLLM 0.8 raised its knobs on H100 and H200 by name."""
