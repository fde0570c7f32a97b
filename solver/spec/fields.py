"""The field sections every input file shares (evaluate, solve, fleet): the hardware,
the precisions, the workload, the SLA, the engine section and the overrides, on the
bounded quantities of `spec/quantities.py` (its table lists every range) and the
traffic parts of `spec/traffic_fields.py`. Pydantic at the edge."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BeforeValidator, Field, model_validator

from solver.catalog import ComputeDtype
from solver.catalog.factors import Efficiency, Imbalance, MemoryShare, OverheadBytes, PeakScale, SmallOverhead, StepOverhead
from solver.catalog.factors import Share as UnhiddenShare
from solver.catalog.types import Bound
from solver.spec.quantities import (
    BANDWIDTH,
    CV,
    DEGREE,
    FLOPS,
    FRACTION,
    GPU_COUNT,
    KERNEL_SHARE,
    KV_FILL,
    LATENCY,
    MAX_GPUS,
    MAX_PARALLEL,
    MAX_TOKENS,
    MAX_USERS,
    MEMORY_BYTES,
    OWNED_COUNT,
    PARAMS,
    RATE,
    SEQUENCES,
    SHARE,
    TOKENS,
    USERS,
    Bandwidth,
    Cv,
    Degree,
    Flag,
    Flops,
    FormatName,
    Fraction,
    GpuCount,
    HitRate,
    KernelShare,
    KvFill,
    Latency,
    MemoryBytes,
    Name,
    OwnedCount,
    Params,
    PrefixTokens,
    Rate,
    Sequences,
    Share,
    SpecModel,
    Tokens,
    Users,
)
from solver.spec.traffic_fields import Z_P99, ArrivalIn, Length, LengthsIn, PercentileIn, check_traffic, length_mean, longest_tokens, traffic_mismatch

__all__ = [  # re-exported: the quantities and traffic parts are read from here too
    "BANDWIDTH",
    "CV",
    "DEGREE",
    "FLOPS",
    "FRACTION",
    "GPU_COUNT",
    "KERNEL_SHARE",
    "KV_FILL",
    "LATENCY",
    "MAX_GPUS",
    "MAX_PARALLEL",
    "MAX_TOKENS",
    "MAX_USERS",
    "MEMORY_BYTES",
    "OWNED_COUNT",
    "PARAMS",
    "RATE",
    "SEQUENCES",
    "SHARE",
    "TOKENS",
    "USERS",
    "Z_P99",
    "ArrivalIn",
    "Bandwidth",
    "ComputeDtype",
    "Cv",
    "Degree",
    "EngineField",
    "EngineIn",
    "FactorsIn",
    "Flops",
    "FormatName",
    "Fraction",
    "GpuCount",
    "GpuOverrides",
    "HardwareIn",
    "KernelShare",
    "KvFill",
    "Latency",
    "Length",
    "LengthsIn",
    "MemoryBytes",
    "ModelOverrides",
    "Name",
    "OverridesIn",
    "OwnedCount",
    "Params",
    "PercentileIn",
    "PrecisionIn",
    "PrecisionOverrides",
    "Rate",
    "Sequences",
    "Share",
    "SlaIn",
    "SpecModel",
    "Tokens",
    "Users",
    "WorkloadIn",
    "check_traffic",
    "length_mean",
    "traffic_mismatch",
]


class HardwareIn(SpecModel):
    gpu: Name = Field(description="Device name from the catalog (`plan-opt list devices`).")
    count: GpuCount | None = Field(default=None, description=f"GPUs in all, {GPU_COUNT}; a multiple of tp × pp. Default tp × pp.")
    tp: Degree = Field(default=1, description=f"Tensor-parallel degree, {DEGREE}.")
    pp: Degree = Field(default=1, description=f"Pipeline-parallel degree, {DEGREE}.")
    platform: Name | None = Field(default=None, description="How the GPUs connect; default the device's first platform.")
    parallelism: Literal["tp", "dp_ep", "tp_ep"] = Field(
        default="tp",
        description="tp: every layer split over the tp GPUs; dp_ep (mixture-of-experts models): data-parallel attention "
        "on each of the tp GPUs and the routed experts split over them (expert parallelism); tp_ep: tensor-parallel "
        "attention and the routed experts whole, split over the tp GPUs.",
    )

    @model_validator(mode="after")
    def _count(self) -> Self:
        if self.count is not None and self.count % (self.tp * self.pp):
            raise ValueError(f"count {self.count} is not a multiple of tp × pp = {self.tp * self.pp} (each replica takes tp × pp GPUs)")
        return self


class PrecisionIn(SpecModel):
    weights: FormatName = Field(default="bf16", description="Weight format (`plan-opt list precisions`).")
    kv_cache: FormatName = Field(default="bf16", description="KV-cache format.")


class WorkloadIn(SpecModel):
    users: Users | None = Field(default=None, description=f"Concurrent users (sequences in flight), {USERS}; or give requests_per_s.")
    requests_per_s: Rate | None = Field(
        default=None, description=f"Requests arriving per second over all replicas (open loop), {RATE}; instead of users."
    )
    arrival: ArrivalIn | None = Field(default=None, description="With requests_per_s: how arrivals cluster (default Poisson).")
    lengths_file: Name | None = Field(
        default=None,
        description="With requests_per_s: a CSV (prompt_tokens,output_tokens) or JSON Lines file of request lengths, "
        "relative to the spec; each request's two lengths are drawn from it together. Instead of prompt_tokens and output_tokens.",
    )
    context_tokens: Tokens | None = Field(default=None, description=f"Tokens per sequence at its longest, {TOKENS}.")
    prompt_tokens: Length | None = Field(
        default=None,
        description=f"Prompt tokens per sequence, {TOKENS}; with requests_per_s also a distribution, e.g. {{dist: lognormal, mean: 1000, p99: 6000}}.",
    )
    output_tokens: Length | None = Field(default=None, description=f"Output tokens per sequence, {TOKENS}; or a distribution, as prompt_tokens.")
    kv_fill: KvFill = Field(
        default=1.0, description=f"Share of the context each user holds on average, {KV_FILL}; 1.0 = all at full context (worst case)."
    )
    batching: Literal["isolated", "continuous"] | None = Field(
        default=None,
        description="Left out: the engine's own (catalogs/engines.yaml `batching`: continuous for vLLM, SGLang, TensorRT-LLM "
        "and llama.cpp). continuous: prompts prefilled in chunks inside the decode steps (as vLLM V1 schedules; SGLang by "
        "default runs a chunk as a pass of its own, which the decoders wait for), so TTFT and TPOT grow with the load; "
        "isolated: the seed's figures (each prompt and step alone, TPOT without the prompts' work). Under requests_per_s "
        "always continuous.",
    )
    shared_prefix_tokens: PrefixTokens = Field(
        default=0,
        description="Tokens at the start of every prompt that all requests share (a system prompt, a RAG corpus "
        "header), 0 to 10,000,000; with an engine that caches prefixes they are prefilled once and held once per "
        "replica. Less than the (mean) prompt.",
    )
    prefix_hit_rate: HitRate = Field(
        default=1.0, description="Share of prompts whose shared prefix is found cached, 0 to 1 (1: every one after the first)."
    )

    @property
    def prompt_mean_tokens(self) -> int:
        """The prompt's tokens (a distribution's mean); set once validated."""
        v = length_mean(self.prompt_tokens)
        assert v is not None  # _derive fills it
        return v

    @property
    def output_mean_tokens(self) -> int:
        v = length_mean(self.output_tokens)
        assert v is not None  # _derive fills it
        return v

    @model_validator(mode="after")
    def _derive(self) -> Self:
        if (self.users is None) == (self.requests_per_s is None):
            raise ValueError("give users (concurrent sequences) or requests_per_s (arrivals per second), one of them")
        traffic = self.requests_per_s is not None
        if self.lengths_file is not None:
            if not traffic:
                raise ValueError("lengths_file describes requests_per_s; a users workload has one prompt and output length")
            if self.prompt_tokens is not None or self.output_tokens is not None:
                raise ValueError("lengths_file gives both lengths: drop prompt_tokens and output_tokens")
            return self  # the file is read with the spec's folder known (spec/lengths_file.py)
        if traffic and self.batching == "isolated":
            raise ValueError(
                "batching: isolated cannot hold under requests_per_s: the traffic screen and simulator batch continuously, "
                "as the engines do; drop batching, or give users"
            )
        if not traffic:
            if self.arrival is not None:
                raise ValueError("arrival describes requests_per_s; a users workload has none")
            for key in ("prompt_tokens", "output_tokens"):
                if isinstance(getattr(self, key), LengthsIn):
                    raise ValueError(f"{key} as a distribution needs requests_per_s (users are all alike)")
        prompt, output = length_mean(self.prompt_tokens), length_mean(self.output_tokens)
        given = [x is not None for x in (self.context_tokens, prompt, output)]
        if sum(given) < 2:
            raise ValueError("give at least two of context_tokens, prompt_tokens, output_tokens (the third is derived)")
        if traffic and (prompt is None or output is None):
            raise ValueError("with requests_per_s give prompt_tokens and output_tokens (each a number or a distribution)")
        # At most one of the three is None from here on: the one derived below.
        if self.context_tokens is None:
            assert prompt is not None and output is not None
            longest = longest_tokens(self.prompt_tokens) + longest_tokens(self.output_tokens) if traffic else prompt + output
            if longest > MAX_TOKENS:
                raise ValueError(f"prompt_tokens + output_tokens is the context, and must be at most {MAX_TOKENS:,}")
            self.context_tokens = longest
        elif prompt is None:
            assert output is not None
            if output >= self.context_tokens:
                raise ValueError("output_tokens must be less than context_tokens to leave room for a prompt")
            self.prompt_tokens = self.context_tokens - output
        elif output is None:
            if prompt >= self.context_tokens:
                raise ValueError("prompt_tokens must be less than context_tokens to leave room for output")
            self.output_tokens = self.context_tokens - prompt
        elif traffic and prompt + output > self.context_tokens:
            raise ValueError(f"the mean prompt and output ({prompt:,} + {output:,}) exceed context_tokens ({self.context_tokens:,})")
        if self.shared_prefix_tokens and self.shared_prefix_tokens >= self.prompt_mean_tokens:
            raise ValueError(
                f"shared_prefix_tokens ({self.shared_prefix_tokens:,}) must be less than the (mean) prompt "
                f"({self.prompt_mean_tokens:,}): a prompt is its shared prefix and its own tokens"
            )
        return self


class SlaIn(SpecModel):
    max_ttft: Latency | None = Field(default=None, description=f'Time to first token, {LATENCY}, e.g. "500ms".')
    max_tpot: Latency | None = Field(default=None, description=f'Time per output token, {LATENCY}, e.g. "50ms".')
    ttft: PercentileIn | None = Field(default=None, description="With requests_per_s: TTFT at a percentile, e.g. {p99: 2s}.")
    tpot: PercentileIn | None = Field(default=None, description="With requests_per_s: TPOT at a percentile, e.g. {p90: 40ms}.")
    e2e: PercentileIn | None = Field(default=None, description="With requests_per_s: end-to-end time at a percentile, e.g. {p50: 20s}.")
    goodput: Share | None = Field(default=None, description=f"With requests_per_s: share of requests meeting every target at once, {SHARE}.")
    at: Literal["nominal", "pessimistic"] = Field(
        default="nominal",
        description="pessimistic: hold the targets at the slow edge of the band: the calibration residuals' with --calibration, "
        "else the default P90 of catalogs/bands.yaml (every step and prompt that much slower).",
    )


class GpuOverrides(SpecModel):
    memory_bytes: MemoryBytes | None = Field(default=None, description=f"Device memory, {MEMORY_BYTES}.")
    memory_bandwidth_bytes_per_s: Bandwidth | None = Field(default=None, description=f"Peak memory bandwidth, {BANDWIDTH}.")
    dense_flops_per_s: dict[ComputeDtype, Flops] | None = Field(default=None, description=f"Dense tensor throughput per data type, {FLOPS}.")
    matmul_share: dict[ComputeDtype, Share] | None = Field(
        default=None,
        description=f"Per data type, the share of the dense throughput the best measured matmuls reach on this GPU, {SHARE} "
        "(catalogs/devices.yaml `matmul_share`; 1 runs matmuls at the datasheet peak × the utilisation factor).",
    )


class ModelOverrides(SpecModel):
    total_params: Params | None = Field(default=None, description=f"Parameters in all, {PARAMS}.")
    active_params: Params | None = Field(
        default=None, description=f"Parameters each token uses (mixture-of-experts models only; a dense model uses all), {PARAMS}."
    )
    weights_bytes: MemoryBytes | None = Field(default=None, description=f"Whole-model weight bytes, e.g. a checkpoint's size, {MEMORY_BYTES}.")
    checkpoint: Name | None = Field(
        default=None,
        description="The published checkpoint served, by Hugging Face id, where the model has more than one in a format "
        "(its `published` list in catalogs/models.yaml): its layout of 16-bit tensors sets the weights' bytes, and deploy serves it.",
    )


class FactorsIn(SpecModel):
    """The factors of `solver/catalog/factors.py`, with the ranges stated there."""

    memory_utilization: MemoryShare | None = Field(default=None, description="Share of device memory the engine may use, 0.01 to 1.")
    runtime_overhead_bytes: OverheadBytes | None = Field(default=None, description="Per-GPU engine memory beside weights and KV, 0 to 1e15 bytes.")
    bandwidth_efficiency: Efficiency | None = Field(default=None, description="Achieved / peak memory bandwidth in decode, 0.01 to 1.")
    compute_efficiency: Efficiency | None = Field(
        default=None, description="Achieved / the device's matmul rate (dense peak × its measured matmul share), 0.01 to 1."
    )
    attention_bandwidth_share: Efficiency | None = Field(
        default=None, description="Of the weights' achieved bandwidth, the share decode attention's KV reads reach, 0.01 to 1."
    )
    step_overhead_s: StepOverhead | None = Field(default=None, description="Fixed cost of every forward pass, 0 to 1 s.")
    layer_overhead_s: SmallOverhead | None = Field(default=None, description="Fixed cost per layer per forward pass, 0 to 10 ms.")
    sequence_overhead_s: SmallOverhead | None = Field(default=None, description="Fixed cost per sequence per decode step, 0 to 10 ms.")
    expert_layer_overhead_s: SmallOverhead | None = Field(default=None, description="Further fixed cost per MoE layer per pass, 0 to 10 ms.")
    prefill_expert_overhead_s: SmallOverhead | None = Field(
        default=None, description="A prefill's fixed cost per routed expert it reaches, per MoE layer, 0 to 10 ms."
    )
    tp_rank_overhead_s: SmallOverhead | None = Field(
        default=None, description="Further fixed cost per pass per tensor-parallel rank beyond the first, 0 to 10 ms."
    )
    request_overhead_s: StepOverhead | None = Field(
        default=None, description="The serving front end's time per request, in TTFT and end to end, 0 to 1 s."
    )
    reserved_bytes: OverheadBytes | None = Field(default=None, description="Device memory the driver keeps, 0 to 1e15 bytes.")
    tp_overhead_bytes: OverheadBytes | None = Field(default=None, description="Memory per GPU of a TP group on NVLink SHARP, 0 to 1e15 bytes.")
    activation_peak_scale: PeakScale | None = Field(default=None, description="Scale on the engine's profiled activation peak, 0 to 10.")
    expert_load_imbalance: Imbalance | None = Field(
        default=None,
        description="Under dp_ep or tp_ep: the busiest GPU's routed tokens over the mean, 1 to 8 (default 1: experts equally loaded, as with a load balancer).",
    )
    unhidden_share: UnhiddenShare | None = Field(
        default=None,
        description="Of a kernel's shorter part, reads or math, the share not hidden under the longer: max + share × min, 0 to 1 (0: the roofline's max).",
    )
    prefill_unhidden_share: UnhiddenShare | None = Field(
        default=None,
        description="The same share for a prefill's GEMMs (weights read, matmul FLOPs), 0 to 1 (default fitted: 1, their sum).",
    )


class PrecisionOverrides(SpecModel):
    bandwidth_share: KernelShare | None = Field(default=None, description=f"Of the weight format's decode kernels, {KERNEL_SHARE}.")
    compute_share: KernelShare | None = Field(default=None, description=f"Of the weight format's prefill GEMMs, {KERNEL_SHARE}.")
    expert_compute_share: KernelShare | None = Field(
        default=None, description=f"Of the weight format's dense prefill GEMMs, what its grouped expert GEMMs reach, {KERNEL_SHARE}."
    )


class OverridesIn(SpecModel):
    gpu: GpuOverrides = GpuOverrides()
    model: ModelOverrides = ModelOverrides()
    factors: FactorsIn = FactorsIn()
    precision: PrecisionOverrides = Field(default=PrecisionOverrides(), description="Kernel shares of the weight format.")


class SpeculativeIn(SpecModel):
    """Speculative decoding: a draft proposes tokens, the target verifies them in one
    step (catalogs/engines.yaml `speculative` holds each method's defaults and sources).
    A bare method name (`speculative: eagle`) stands for `{method: eagle}`."""

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, v: object) -> object:
        return {"method": v} if isinstance(v, str) else v

    method: Literal["eagle", "eagle3", "mtp", "draft_model"] = Field(
        description="eagle: an EAGLE-1/2 head (one layer on the target's hidden states); eagle3: an EAGLE-3 head (fed three of "
        "its layers' hidden states; engines load it apart); mtp: the model's own multi-token-prediction "
        "module (DeepSeek-V3/R1); draft_model: a small model of the same family (give draft_model)."
    )
    draft_model: Name | None = Field(default=None, description="draft_model: the draft's catalog name (`plan-opt list models`).")
    draft_checkpoint: Name | None = Field(
        default=None, description="The draft's Hugging Face id for `deploy` (an EAGLE head's repository; default: the draft model's own)."
    )
    num_tokens: Annotated[int, Bound(1, 16, integer=True)] | None = Field(
        default=None, description="Tokens drafted per step, 1 to 16 (default: the method's)."
    )
    acceptance: Annotated[float, Bound(0.01, 0.99)] | None = Field(
        default=None,
        description="Acceptance rate α, 0.01 to 0.99, at every drafted position (default: the method's α by position for the model's family, sourced in catalogs/engines.yaml).",
    )

    @model_validator(mode="after")
    def _draft(self) -> Self:
        if self.method == "draft_model" and self.draft_model is None:
            raise ValueError("method draft_model needs draft_model (the draft's catalog name)")
        if self.method != "draft_model" and self.draft_model is not None:
            raise ValueError(f"draft_model is for method draft_model; {self.method} drafts with a head of the target itself")
        return self


class EngineIn(SpecModel):
    """The serving engine and the knobs that size its memory and batches; each one
    left out is defaulted as the engine defaults it (on this GPU)."""

    name: Name = Field(default="vllm", description="vllm, sglang, trtllm or llama.cpp (`plan-opt list engines`).")
    version: str | None = Field(
        default=None,
        max_length=64,
        description='The engine\'s release ("0.6.3", "v0.6.3"; llama.cpp a build, "b4567"): its line\'s defaults '
        "(catalogs/engine_releases.yaml, `plan-opt list engines`). Default: the current release.",
    )
    max_num_seqs: Sequences | None = Field(default=None, description=f"Sequences in one batch at most, {SEQUENCES}.")
    max_num_batched_tokens: Tokens | None = Field(default=None, description=f"Tokens one step may process, {TOKENS}.")
    max_model_len: Tokens | None = Field(default=None, description=f"Longest sequence, {TOKENS}; default the workload's context.")
    gpu_memory_utilization: Fraction | None = Field(
        default=None, description=f"Share of GPU memory the engine may use (SGLang: mem_fraction_static), {FRACTION}."
    )
    enable_chunked_prefill: Flag | None = Field(default=None, description="Prompts in chunks of max_num_batched_tokens.")
    enforce_eager: Flag | None = Field(default=None, description="No CUDA graphs.")
    split_mode: Literal["layer", "row"] | None = Field(default=None, description="llama.cpp over several GPUs.")


def _engine_field(v: object) -> dict[Any, Any] | EngineIn:
    if isinstance(v, str):
        return {"name": v}
    if isinstance(v, (dict, EngineIn)):
        return v
    raise ValueError("expected an engine name (vllm, sglang, trtllm, llama.cpp) or a mapping such as {name: vllm, max_num_seqs: 256}")


EngineField = Annotated[EngineIn, BeforeValidator(_engine_field)]
