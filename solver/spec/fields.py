"""The field types every input file shares (evaluate, solve, fleet): quantities with
units, the workload, the SLA, the engine section and the overrides. Pydantic at the
edge; `SpecModel` refuses unknown keys.

Every number a user gives is checked here, once: finite, of the right sign, and
within a stated range (a `Bound`, whose refusal names the field, the value and the
range). The ranges lie beyond anything a real deployment reaches; they stop unit
slips and nonsense before they reach the physics and the solver's integer
coefficients. The factors' ranges are in `solver/catalog/factors.py`.

| type | range | fields |
|---|---|---|
| Users | 1 to 10,000,000 | workload.users |
| Tokens | 1 to 10,000,000 | context, prompt and output tokens; engine.max_model_len, max_num_batched_tokens |
| Degree | 1 to 1,024 | tp, pp, search.tp, search.pp |
| GpuCount | 1 to 100,000 | hardware.count, search.max_gpus |
| OwnedCount | 0 to 100,000 | inventory, quota |
| Sequences | 1 to 1,000,000 | engine.max_num_seqs |
| KvFill | 0.001 to 1 | workload.kv_fill |
| Latency | 1 µs to 1 h | sla.max_ttft, sla.max_tpot |
| MemoryBytes | 1 MB to 1,000 TB | overrides' memory_bytes, weights_bytes |
| Bandwidth | 1 GB/s to 1,000 TB/s | memory_bandwidth_bytes_per_s |
| Flops | 1 GFLOP/s to 1 EFLOP/s | dense_flops_per_s |
| Params | 1e6 to 1e13 | total_params, active_params |
| KernelShare | 0.01 to 1.5 | a weight format's bandwidth_share, compute_share |
| Fraction | 0.01 to 1 | engine.gpu_memory_utilization, ownership.utilisation |
| Share | 0.001 to 1 | a mix class's share, sla.goodput |
| Rate | 0.000001 to 1,000,000 | workload.requests_per_s |
| Cv | 0.05 to 20 | workload.arrival.cv |
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, model_validator

from solver.catalog import ComputeDtype
from solver.catalog.factors import Efficiency, MemoryShare, OverheadBytes, PeakScale, SmallOverhead, StepOverhead
from solver.catalog.types import Bound

MAX_USERS = 10_000_000
MAX_TOKENS = 10_000_000  # tokens per sequence: 75 × the longest context of a catalog model; catches unit slips
MAX_PARALLEL = 1024
MAX_GPUS = 100_000

USERS = Bound(1, MAX_USERS, integer=True)
TOKENS = Bound(1, MAX_TOKENS, integer=True)
DEGREE = Bound(1, MAX_PARALLEL, integer=True)
GPU_COUNT = Bound(1, MAX_GPUS, integer=True)
OWNED_COUNT = Bound(0, MAX_GPUS, integer=True)
SEQUENCES = Bound(1, 1_000_000, integer=True)
KV_FILL = Bound(0.001, 1)
LATENCY = Bound(1e-6, 3600, quantity="seconds", shown="1 µs to 1 h")
MEMORY_BYTES = Bound(1e6, 1e15, quantity="bytes", shown="1 MB to 1,000 TB (1e6 to 1e15 bytes)")
BANDWIDTH = Bound(1e9, 1e15, quantity="bytes_per_s", shown="1 GB/s to 1,000 TB/s (1e9 to 1e15 bytes/s)")
FLOPS = Bound(1e9, 1e18, quantity="flop_per_s", shown="1 GFLOP/s to 1 EFLOP/s (1e9 to 1e18 FLOP/s)")
PARAMS = Bound(1e6, 1e13, shown="1e6 to 1e13 (a million to ten trillion)")
KERNEL_SHARE = Bound(0.01, 1.5)
FRACTION = Bound(0.01, 1)
SHARE = Bound(0.001, 1)
RATE = Bound(1e-6, 1e6, shown="0.000001 to 1,000,000 requests/s")
CV = Bound(0.05, 20)

Users = Annotated[int, USERS]
Tokens = Annotated[int, TOKENS]
Degree = Annotated[int, DEGREE]
GpuCount = Annotated[int, GPU_COUNT]
OwnedCount = Annotated[int, OWNED_COUNT]
Sequences = Annotated[int, SEQUENCES]
KvFill = Annotated[float, KV_FILL]
Latency = Annotated[float, LATENCY]
MemoryBytes = Annotated[float, MEMORY_BYTES]
Bandwidth = Annotated[float, BANDWIDTH]
Flops = Annotated[float, FLOPS]
Params = Annotated[float, PARAMS]
KernelShare = Annotated[float, KERNEL_SHARE]
Fraction = Annotated[float, FRACTION]
Share = Annotated[float, SHARE]
Rate = Annotated[float, RATE]
Cv = Annotated[float, CV]


def _stripped(v: object) -> object:
    """A name as the user meant it: surrounding whitespace (" bf16", "fp8\\n") dropped,
    so the name the spec keeps is the one the catalog looks up."""
    if isinstance(v, str):
        v = v.strip()
        if not v:
            raise ValueError("must not be empty")
        if not v.isprintable():
            raise ValueError("must be printable text (no control characters)")
    return v


Name = Annotated[str, BeforeValidator(_stripped)]
"""A catalog name, alias or path, stripped of surrounding whitespace."""


def _format_name(v: object) -> object:
    """A number format's name as the catalog spells it: stripped, and an alias or
    another case ("awq", "FP8") turned into the catalog's name (int4-awq, fp8), so the
    spec names exactly what the plan runs. A name the catalog lacks is kept; its lookup
    refuses it later, naming the spec path."""
    v = _stripped(v)
    if not isinstance(v, str):
        return v
    from solver.catalog import default_catalog
    from solver.errors import InputError

    try:
        return default_catalog().precisions.get(v).name
    except InputError:
        return v


FormatName = Annotated[str, BeforeValidator(_format_name)]


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class HardwareIn(SpecModel):
    gpu: Name = Field(description="Device name from the catalog (`plan-opt list devices`).")
    count: GpuCount | None = Field(default=None, description=f"GPUs in all, {GPU_COUNT}; a multiple of tp × pp. Default tp × pp.")
    tp: Degree = Field(default=1, description=f"Tensor-parallel degree, {DEGREE}.")
    pp: Degree = Field(default=1, description=f"Pipeline-parallel degree, {DEGREE}.")
    platform: Name | None = Field(default=None, description="How the GPUs connect; default the device's first platform.")

    @model_validator(mode="after")
    def _count(self) -> Self:
        if self.count is not None and self.count % (self.tp * self.pp):
            raise ValueError(f"count {self.count} is not a multiple of tp × pp = {self.tp * self.pp} (each replica takes tp × pp GPUs)")
        return self


class PrecisionIn(SpecModel):
    weights: FormatName = Field(default="bf16", description="Weight format (`plan-opt list precisions`).")
    kv_cache: FormatName = Field(default="bf16", description="KV-cache format.")


Z_P99 = 2.3263478740408408
"""The standard normal's 99th percentile: a lognormal's P99 is exp(mu + Z_P99 × sigma)."""


class LengthsIn(SpecModel):
    """Request lengths that vary: `{dist: lognormal, mean: 1000, p99: 6000}`,
    `{dist: exponential, mean: 300}`, `{dist: uniform, min: 100, max: 900}`; every draw
    is clipped to [min, max] (default 1 and the context)."""

    dist: Literal["fixed", "lognormal", "exponential", "uniform"] = Field(description="The shape of the lengths.")
    mean: Tokens | None = Field(default=None, description=f"Mean tokens, {TOKENS} (uniform: the middle of min and max).")
    p99: Tokens | None = Field(default=None, description=f"lognormal: the 99th percentile, {TOKENS}; above the mean, at most 14.9 × it.")
    min: Tokens | None = Field(default=None, description=f"Shortest draw, {TOKENS} (default 1).")
    max: Tokens | None = Field(default=None, description=f"Longest draw, {TOKENS} (default: what the context leaves).")

    @model_validator(mode="after")
    def _shape(self) -> Self:
        if self.dist == "uniform":
            if self.min is None or self.max is None:
                raise ValueError("a uniform length needs min and max")
            if self.mean is not None and self.mean * 2 != self.min + self.max:
                raise ValueError(f"a uniform length's mean is (min + max) / 2 = {(self.min + self.max) / 2:g}; leave mean out")
            self.mean = (self.min + self.max) // 2
        if self.mean is None:
            raise ValueError(f"a {self.dist} length needs its mean")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min:,}) must not exceed max ({self.max:,})")
        if (self.min is not None and self.mean < self.min) or (self.max is not None and self.mean > self.max):
            raise ValueError("the mean must lie between min and max")
        if self.dist == "lognormal":
            if self.p99 is None:
                raise ValueError("a lognormal length needs its p99 (how far the long requests reach)")
            ratio = self.p99 / self.mean
            if not 1 < ratio < math.exp(Z_P99**2 / 2):
                raise ValueError(f"a lognormal's p99 must lie above its mean and below {math.exp(Z_P99**2 / 2):.1f} × it; got {ratio:.2f} ×")
        elif self.p99 is not None:
            raise ValueError(f"p99 sets a lognormal's spread; a {self.dist} length has none")
        return self


def _length_kind(v: object) -> str:
    return "length-distribution" if isinstance(v, dict | LengthsIn) else "length-tokens"


Length = Annotated[
    Annotated[Tokens, Tag("length-tokens")] | Annotated[LengthsIn, Tag("length-distribution")],
    Discriminator(_length_kind),
]
"""A length as tokens, or (a mapping) a distribution; an error names the branch the value took."""


class ArrivalIn(SpecModel):
    process: Literal["poisson", "gamma"] = Field(default="poisson", description="poisson: independent arrivals; gamma: gaps with the given cv.")
    cv: Cv = Field(default=1.0, description=f"Coefficient of variation of the gaps between arrivals, {CV}; 1 is Poisson, above 1 burstier.")

    @model_validator(mode="after")
    def _poisson(self) -> Self:
        if self.process == "poisson" and self.cv != 1.0:
            raise ValueError("Poisson arrivals have cv 1; write process: gamma for another cv")
        return self


def length_mean(v: int | LengthsIn | None) -> int | None:
    """The mean tokens of a length given as a number or a distribution."""
    return v.mean if isinstance(v, LengthsIn) else v


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
    batching: Literal["isolated", "continuous"] = Field(
        default="isolated",
        description="isolated: the seed's figures (each prompt and step alone); continuous: prompts prefilled in chunks "
        "inside the decode steps, as vLLM and SGLang do, so TTFT and TPOT grow with the load.",
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
            longest = _longest(self.prompt_tokens) + _longest(self.output_tokens) if traffic else prompt + output
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
        return self


def _longest(v: int | LengthsIn | None) -> int:
    """The longest length a draw may take, for the context it needs: a distribution's
    max, else a lognormal's P99.9 and an exponential's (7 × its mean), else the value."""
    if v is None:
        return 0
    if not isinstance(v, LengthsIn):
        return v
    assert v.mean is not None  # LengthsIn._shape fills it
    if v.max is not None:
        return v.max
    if v.dist == "lognormal":
        assert v.p99 is not None
        sigma = Z_P99 - math.sqrt(Z_P99**2 - 2 * math.log(v.p99 / v.mean))
        mu = math.log(v.mean) - sigma**2 / 2
        return math.ceil(math.exp(mu + 3.0902 * sigma))  # P99.9
    if v.dist == "exponential":
        return math.ceil(v.mean * math.log(1000))  # P99.9
    return v.mean


class PercentileIn(SpecModel):
    """A latency target at one percentile of the requests: `{p99: 2s}`."""

    p50: Latency | None = None
    p90: Latency | None = None
    p95: Latency | None = None
    p99: Latency | None = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        given = [k for k in ("p50", "p90", "p95", "p99") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give one percentile (p50, p90, p95 or p99), not {len(given)}")
        return self

    @property
    def percentile(self) -> float:
        return next(float(k[1:]) for k in ("p50", "p90", "p95", "p99") if getattr(self, k) is not None)

    @property
    def limit_s(self) -> float:
        return next(v for k in ("p50", "p90", "p95", "p99") if (v := getattr(self, k)) is not None)


class SlaIn(SpecModel):
    max_ttft: Latency | None = Field(default=None, description=f'Time to first token, {LATENCY}, e.g. "500ms".')
    max_tpot: Latency | None = Field(default=None, description=f'Time per output token, {LATENCY}, e.g. "50ms".')
    ttft: PercentileIn | None = Field(default=None, description="With requests_per_s: TTFT at a percentile, e.g. {p99: 2s}.")
    tpot: PercentileIn | None = Field(default=None, description="With requests_per_s: TPOT at a percentile, e.g. {p90: 40ms}.")
    e2e: PercentileIn | None = Field(default=None, description="With requests_per_s: end-to-end time at a percentile, e.g. {p50: 20s}.")
    goodput: Share | None = Field(default=None, description=f"With requests_per_s: share of requests meeting every target at once, {SHARE}.")
    at: Literal["nominal", "pessimistic"] = Field(
        default="nominal",
        description="pessimistic: with --calibration, hold the targets at the slow edge of the band the calibration residuals give.",
    )


class GpuOverrides(SpecModel):
    memory_bytes: MemoryBytes | None = Field(default=None, description=f"Device memory, {MEMORY_BYTES}.")
    memory_bandwidth_bytes_per_s: Bandwidth | None = Field(default=None, description=f"Peak memory bandwidth, {BANDWIDTH}.")
    dense_flops_per_s: dict[ComputeDtype, Flops] | None = Field(default=None, description=f"Dense tensor throughput per data type, {FLOPS}.")


class ModelOverrides(SpecModel):
    total_params: Params | None = Field(default=None, description=f"Parameters in all, {PARAMS}.")
    active_params: Params | None = Field(
        default=None, description=f"Parameters each token uses (mixture-of-experts models only; a dense model uses all), {PARAMS}."
    )
    weights_bytes: MemoryBytes | None = Field(default=None, description=f"Whole-model weight bytes, e.g. a checkpoint's size, {MEMORY_BYTES}.")


class FactorsIn(SpecModel):
    """The factors of `solver/catalog/factors.py`, with the ranges stated there."""

    memory_utilization: MemoryShare | None = Field(default=None, description="Share of device memory the engine may use, 0.01 to 1.")
    runtime_overhead_bytes: OverheadBytes | None = Field(default=None, description="Per-GPU engine memory beside weights and KV, 0 to 1e15 bytes.")
    bandwidth_efficiency: Efficiency | None = Field(default=None, description="Achieved / peak memory bandwidth in decode, 0.01 to 1.")
    compute_efficiency: Efficiency | None = Field(default=None, description="Achieved / peak dense tensor throughput, 0.01 to 1.")
    step_overhead_s: StepOverhead | None = Field(default=None, description="Fixed cost of every forward pass, 0 to 1 s.")
    layer_overhead_s: SmallOverhead | None = Field(default=None, description="Fixed cost per layer per forward pass, 0 to 10 ms.")
    sequence_overhead_s: SmallOverhead | None = Field(default=None, description="Fixed cost per sequence per decode step, 0 to 10 ms.")
    expert_layer_overhead_s: SmallOverhead | None = Field(default=None, description="Further fixed cost per MoE layer per pass, 0 to 10 ms.")
    reserved_bytes: OverheadBytes | None = Field(default=None, description="Device memory the driver keeps, 0 to 1e15 bytes.")
    tp_overhead_bytes: OverheadBytes | None = Field(default=None, description="Memory per GPU of a TP group on NVLink SHARP, 0 to 1e15 bytes.")
    activation_peak_scale: PeakScale | None = Field(default=None, description="Scale on the engine's profiled activation peak, 0 to 10.")


class PrecisionOverrides(SpecModel):
    bandwidth_share: KernelShare | None = Field(default=None, description=f"Of the weight format's decode kernels, {KERNEL_SHARE}.")
    compute_share: KernelShare | None = Field(default=None, description=f"Of the weight format's prefill GEMMs, {KERNEL_SHARE}.")


class OverridesIn(SpecModel):
    gpu: GpuOverrides = GpuOverrides()
    model: ModelOverrides = ModelOverrides()
    factors: FactorsIn = FactorsIn()
    precision: PrecisionOverrides = Field(default=PrecisionOverrides(), description="Kernel shares of the weight format.")


class EngineIn(SpecModel):
    """The serving engine and the knobs that size its memory and batches; each one
    left out is defaulted as the engine defaults it (on this GPU)."""

    name: Name = Field(default="vllm", description="vllm, sglang, trtllm or llama.cpp (`plan-opt list engines`).")
    max_num_seqs: Sequences | None = Field(default=None, description=f"Sequences in one batch at most, {SEQUENCES}.")
    max_num_batched_tokens: Tokens | None = Field(default=None, description=f"Tokens one step may process, {TOKENS}.")
    max_model_len: Tokens | None = Field(default=None, description=f"Longest sequence, {TOKENS}; default the workload's context.")
    gpu_memory_utilization: Fraction | None = Field(
        default=None, description=f"Share of GPU memory the engine may use (SGLang: mem_fraction_static), {FRACTION}."
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


def traffic_mismatch(workload: WorkloadIn, sla: SlaIn) -> tuple[str, str] | None:
    """(field, what is wrong) when percentile targets and a rate do not go together:
    percentiles need a rate, and under a rate every limit names its percentile (the
    slowest of an unbounded stream of requests has no bound)."""
    traffic = workload.requests_per_s is not None
    percentiles = [k for k in ("ttft", "tpot", "e2e", "goodput") if getattr(sla, k) is not None]
    if not traffic and percentiles:
        return (
            f"sla.{percentiles[0]}",
            f"sla.{percentiles[0]} holds at a percentile of requests: give workload.requests_per_s (or use sla.max_ttft, sla.max_tpot)",
        )
    if traffic:
        for plain, pct in (("max_ttft", "ttft"), ("max_tpot", "tpot")):
            if getattr(sla, plain) is not None:
                return (
                    f"sla.{plain}",
                    f"under requests_per_s the slowest request has no bound; give sla.{pct} at a percentile, e.g. {pct}: {{p99: ...}}, instead of sla.{plain}",
                )
    return None


def check_traffic(workload: WorkloadIn, sla: SlaIn) -> None:
    """traffic_mismatch as a validation error (inside a pydantic validator)."""
    bad = traffic_mismatch(workload, sla)
    if bad:
        raise ValueError(bad[1])
