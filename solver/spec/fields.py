"""The field types every input file shares (evaluate, solve, fleet): quantities with
units, the workload, the SLA, the engine section and the overrides. Pydantic at the
edge; `SpecModel` refuses unknown keys."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from solver.catalog import ComputeDtype
from solver.units import parse_quantity

MAX_USERS = 10_000_000
MAX_TOKENS = 100_000_000  # far beyond any model's context; catches unit slips
MAX_PARALLEL = 1024


def _quantity(kind: str) -> BeforeValidator:
    def parse(v: object) -> float:
        return parse_quantity(v, kind)

    return BeforeValidator(parse)


Bytes = Annotated[float, _quantity("bytes"), Field(gt=0)]
NonNegBytes = Annotated[float, _quantity("bytes"), Field(ge=0)]
Seconds = Annotated[float, _quantity("seconds"), Field(gt=0, le=3600)]
BytesPerS = Annotated[float, _quantity("bytes_per_s"), Field(gt=0, lt=1e15)]
FlopPerS = Annotated[float, _quantity("flop_per_s"), Field(gt=0, lt=1e18)]


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class HardwareIn(SpecModel):
    gpu: str = Field(description="Device name from the catalog (`plan-opt list devices`).")
    count: int | None = Field(default=None, ge=1, le=1_000_000, description="GPUs in all; a multiple of tp × pp. Default tp × pp.")
    tp: int = Field(default=1, ge=1, le=MAX_PARALLEL, description="Tensor-parallel degree.")
    pp: int = Field(default=1, ge=1, le=MAX_PARALLEL, description="Pipeline-parallel degree.")
    platform: str | None = Field(default=None, description="How the GPUs connect; default the device's first platform.")

    @model_validator(mode="after")
    def _count(self) -> Self:
        if self.count is not None and self.count % (self.tp * self.pp):
            raise ValueError(f"count {self.count} is not a multiple of tp × pp = {self.tp * self.pp} (each replica takes tp × pp GPUs)")
        return self


class PrecisionIn(SpecModel):
    weights: str = Field(default="bf16", description="Weight format (`plan-opt list precisions`).")
    kv_cache: str = Field(default="bf16", description="KV-cache format.")


class WorkloadIn(SpecModel):
    users: int = Field(ge=1, le=MAX_USERS, description="Concurrent users (sequences in flight).")
    context_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS, description="Tokens per sequence at its longest.")
    prompt_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    output_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    kv_fill: float = Field(
        default=1.0, gt=0, le=1, description="Share of the context each user holds on average; 1.0 = all at full context (worst case)."
    )
    batching: Literal["isolated", "continuous"] = Field(
        default="isolated",
        description="isolated: the seed's figures (each prompt and step alone); continuous: prompts prefilled in chunks "
        "inside the decode steps, as vLLM and SGLang do, so TTFT and TPOT grow with the load.",
    )

    @model_validator(mode="after")
    def _derive(self) -> Self:
        given = [x is not None for x in (self.context_tokens, self.prompt_tokens, self.output_tokens)]
        if sum(given) < 2:
            raise ValueError("give at least two of context_tokens, prompt_tokens, output_tokens (the third is derived)")
        # At most one of the three is None from here on: the one derived below.
        if self.context_tokens is None:
            assert self.prompt_tokens is not None and self.output_tokens is not None
            self.context_tokens = self.prompt_tokens + self.output_tokens
        elif self.prompt_tokens is None:
            assert self.output_tokens is not None
            if self.output_tokens >= self.context_tokens:
                raise ValueError("output_tokens must be less than context_tokens to leave room for a prompt")
            self.prompt_tokens = self.context_tokens - self.output_tokens
        elif self.output_tokens is None:
            if self.prompt_tokens >= self.context_tokens:
                raise ValueError("prompt_tokens must be less than context_tokens to leave room for output")
            self.output_tokens = self.context_tokens - self.prompt_tokens
        return self


class SlaIn(SpecModel):
    max_ttft: Seconds | None = Field(default=None, description='Time to first token, e.g. "500ms".')
    max_tpot: Seconds | None = Field(default=None, description='Time per output token, e.g. "50ms".')
    at: Literal["nominal", "pessimistic"] = Field(
        default="nominal",
        description="pessimistic: with --calibration, hold the targets at the slow edge of the band the calibration residuals give.",
    )


class GpuOverrides(SpecModel):
    memory_bytes: Bytes | None = None
    memory_bandwidth_bytes_per_s: BytesPerS | None = None
    dense_flops_per_s: dict[ComputeDtype, FlopPerS] | None = None


class ModelOverrides(SpecModel):
    total_params: Annotated[float, Field(gt=0, lt=1e14)] | None = None
    active_params: Annotated[float, Field(gt=0, lt=1e14)] | None = None
    weights_bytes: Bytes | None = Field(default=None, description="Whole-model weight bytes, e.g. a checkpoint's size.")


class FactorsIn(SpecModel):
    memory_utilization: float | None = Field(default=None, gt=0, le=1)
    runtime_overhead_bytes: NonNegBytes | None = None
    bandwidth_efficiency: float | None = Field(default=None, gt=0, le=1)
    compute_efficiency: float | None = Field(default=None, gt=0, le=1)
    step_overhead_s: Annotated[float, _quantity("seconds"), Field(ge=0, le=1)] | None = None
    layer_overhead_s: Annotated[float, _quantity("seconds"), Field(ge=0, le=0.01)] | None = None
    sequence_overhead_s: Annotated[float, _quantity("seconds"), Field(ge=0, le=0.01)] | None = None
    expert_layer_overhead_s: Annotated[float, _quantity("seconds"), Field(ge=0, le=0.01)] | None = None
    reserved_bytes: NonNegBytes | None = None
    tp_overhead_bytes: NonNegBytes | None = None
    activation_peak_scale: float | None = Field(default=None, ge=0, le=10)


class PrecisionOverrides(SpecModel):
    bandwidth_share: float | None = Field(default=None, gt=0, le=1.5, description="Of the weight format's decode kernels.")
    compute_share: float | None = Field(default=None, gt=0, le=1.5, description="Of the weight format's prefill GEMMs.")


class OverridesIn(SpecModel):
    gpu: GpuOverrides = GpuOverrides()
    model: ModelOverrides = ModelOverrides()
    factors: FactorsIn = FactorsIn()
    precision: PrecisionOverrides = Field(default=PrecisionOverrides(), description="Kernel shares of the weight format.")


class EngineIn(SpecModel):
    """The serving engine and the knobs that size its memory and batches; each one
    left out is defaulted as the engine defaults it (on this GPU)."""

    name: str = Field(default="vllm", description="vllm, sglang, trtllm or llama.cpp (`plan-opt list engines`).")
    max_num_seqs: int | None = Field(default=None, ge=1, le=1_000_000, description="Sequences in one batch at most.")
    max_num_batched_tokens: int | None = Field(default=None, ge=1, le=10_000_000, description="Tokens one step may process.")
    max_model_len: int | None = Field(default=None, ge=1, le=MAX_TOKENS, description="Longest sequence; default the workload's context.")
    gpu_memory_utilization: float | None = Field(
        default=None, gt=0, le=1, description="Share of GPU memory the engine may use (SGLang: mem_fraction_static)."
    )
    enable_chunked_prefill: bool | None = Field(default=None, description="Prompts in chunks of max_num_batched_tokens.")
    enforce_eager: bool | None = Field(default=None, description="No CUDA graphs.")
    split_mode: Literal["layer", "row"] | None = Field(default=None, description="llama.cpp over several GPUs.")


def _engine_field(v: object) -> dict[Any, Any] | EngineIn:
    if isinstance(v, str):
        return {"name": v}
    if isinstance(v, (dict, EngineIn)):
        return v
    raise ValueError("expected an engine name (vllm, sglang, trtllm, llama.cpp) or a mapping such as {name: vllm, max_num_seqs: 256}")


EngineField = Annotated[EngineIn, BeforeValidator(_engine_field)]
