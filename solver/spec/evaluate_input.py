"""The input of `plan-opt evaluate`, from a small YAML file and/or flags: pydantic at
the edge, resolved against the catalog into plain dataclasses for the physics.

    model: llama-3.1-8b            # catalog name, HF id, or a path to a config.json
    hardware: {gpu: rtx-4090, count: 1, tp: 1, pp: 1}
    precision: {weights: bf16, kv_cache: bf16}
    workload: {users: 16, context_tokens: 8192, prompt_tokens: 4096, output_tokens: 256}
    sla: {max_ttft: 2s, max_tpot: 50ms}
    overrides: {gpu: {...}, model: {...}, factors: {...}}
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from solver.catalog.load import Catalog, ComputeDtype, FactorOverrides
from solver.physics.deployment import Deployment, Workload
from solver.catalog.calibration import pessimistic
from solver.errors import InputError
from solver.physics.evaluate import Targets
from solver.units import parse_quantity

MAX_USERS = 10_000_000
MAX_TOKENS = 100_000_000  # far beyond any model's context; catches unit slips
MAX_PARALLEL = 1024


def _quantity(kind: str):
    def parse(v):
        return parse_quantity(v, kind)

    return BeforeValidator(parse)


Bytes = Annotated[float, _quantity("bytes"), Field(gt=0)]
NonNegBytes = Annotated[float, _quantity("bytes"), Field(ge=0)]
Seconds = Annotated[float, _quantity("seconds"), Field(gt=0, le=3600)]
BytesPerS = Annotated[float, _quantity("bytes_per_s"), Field(gt=0, lt=1e15)]
FlopPerS = Annotated[float, _quantity("flop_per_s"), Field(gt=0, lt=1e18)]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class HardwareIn(_In):
    gpu: str = Field(description="Device name from the catalog (`plan-opt list devices`).")
    count: int | None = Field(default=None, ge=1, le=1_000_000, description="GPUs in all; a multiple of tp × pp. Default tp × pp.")
    tp: int = Field(default=1, ge=1, le=MAX_PARALLEL, description="Tensor-parallel degree.")
    pp: int = Field(default=1, ge=1, le=MAX_PARALLEL, description="Pipeline-parallel degree.")
    platform: str | None = Field(default=None, description="How the GPUs connect; default the device's first platform.")

    @model_validator(mode="after")
    def _count(self):
        if self.count is not None and self.count % (self.tp * self.pp):
            raise ValueError(
                f"count {self.count} is not a multiple of tp × pp = {self.tp * self.pp} (each replica takes tp × pp GPUs)"
            )
        return self


class PrecisionIn(_In):
    weights: str = Field(default="bf16", description="Weight format (`plan-opt list precisions`).")
    kv_cache: str = Field(default="bf16", description="KV-cache format.")


class WorkloadIn(_In):
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
    def _derive(self):
        given = [x is not None for x in (self.context_tokens, self.prompt_tokens, self.output_tokens)]
        if sum(given) < 2:
            raise ValueError("give at least two of context_tokens, prompt_tokens, output_tokens (the third is derived)")
        if self.context_tokens is None:
            self.context_tokens = self.prompt_tokens + self.output_tokens
        elif self.prompt_tokens is None:
            if self.output_tokens >= self.context_tokens:
                raise ValueError("output_tokens must be less than context_tokens to leave room for a prompt")
            self.prompt_tokens = self.context_tokens - self.output_tokens
        elif self.output_tokens is None:
            if self.prompt_tokens >= self.context_tokens:
                raise ValueError("prompt_tokens must be less than context_tokens to leave room for output")
            self.output_tokens = self.context_tokens - self.prompt_tokens
        return self


class SlaIn(_In):
    max_ttft: Seconds | None = Field(default=None, description='Time to first token, e.g. "500ms".')
    max_tpot: Seconds | None = Field(default=None, description='Time per output token, e.g. "50ms".')
    at: Literal["nominal", "pessimistic"] = Field(
        default="nominal",
        description="pessimistic: with --calibration, hold the targets at the slow edge of the band the calibration residuals give.",
    )


class GpuOverrides(_In):
    memory_bytes: Bytes | None = None
    memory_bandwidth_bytes_per_s: BytesPerS | None = None
    dense_flops_per_s: dict[ComputeDtype, FlopPerS] | None = None


class ModelOverrides(_In):
    total_params: Annotated[float, Field(gt=0, lt=1e14)] | None = None
    active_params: Annotated[float, Field(gt=0, lt=1e14)] | None = None
    weights_bytes: Bytes | None = Field(default=None, description="Whole-model weight bytes, e.g. a checkpoint's size.")


class FactorsIn(_In):
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


class PrecisionOverrides(_In):
    bandwidth_share: float | None = Field(default=None, gt=0, le=1.5, description="Of the weight format's decode kernels.")
    compute_share: float | None = Field(default=None, gt=0, le=1.5, description="Of the weight format's prefill GEMMs.")


class OverridesIn(_In):
    gpu: GpuOverrides = GpuOverrides()
    model: ModelOverrides = ModelOverrides()
    factors: FactorsIn = FactorsIn()
    precision: PrecisionOverrides = Field(default=PrecisionOverrides(), description="Kernel shares of the weight format.")


class EngineIn(_In):
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


def _engine_field(v):
    if isinstance(v, str):
        return {"name": v}
    if isinstance(v, (dict, EngineIn)):
        return v
    raise ValueError("expected an engine name (vllm, sglang, trtllm, llama.cpp) or a mapping such as {name: vllm, max_num_seqs: 256}")


EngineField = Annotated[EngineIn, BeforeValidator(_engine_field)]


class EvaluateInput(_In):
    model: str = Field(description="Catalog name, Hugging Face id, or path to a local config.json.")
    engine: EngineField = Field(default=EngineIn(), description="Serving engine: a name, or a mapping with its knobs.")
    hardware: HardwareIn
    precision: PrecisionIn = PrecisionIn()
    workload: WorkloadIn
    sla: SlaIn = SlaIn()
    overrides: OverridesIn = OverridesIn()


def parse_input(data: object, lines: dict | None = None, source: str | None = None) -> EvaluateInput:
    if not isinstance(data, dict):
        raise InputError("input", None, "expected a YAML mapping with model, hardware and workload", source=source)
    try:
        return EvaluateInput.model_validate(data)
    except ValidationError as exc:
        raise InputError.from_validation(exc, lines, source=source) from None


def _resolve_model(name: str, catalog: Catalog, base_dir: Path | None):
    candidate = Path(name)
    if base_dir is not None and not candidate.is_absolute():
        relative = base_dir / candidate
        if relative.exists():
            candidate = relative
    if name.endswith(".json") or candidate.is_dir() or (candidate.exists() and candidate.is_file()):
        from solver.catalog.hf_config import model_from_config

        return model_from_config(candidate / "config.json" if candidate.is_dir() else candidate)
    return catalog.model(name)


def resolve_model(name: str, overrides: ModelOverrides, catalog: Catalog, base_dir: Path | None):
    """The model by name or config.json, with the spec's parameter counts applied."""
    model = _resolve_model(name, catalog, base_dir)
    mo = overrides
    if mo.total_params is not None or mo.active_params is not None:
        total = int(mo.total_params if mo.total_params is not None else model.total_params)
        active = int(mo.active_params if mo.active_params is not None else (total if not model.is_moe else model.active_params))
        if active > total:
            raise InputError("overrides.model.active_params", active, f"must not exceed total_params ({total})")
        model = dataclasses.replace(model, total_params=total, active_params=active)
    return model


def override_device(device, go: GpuOverrides):
    """The device with any catalog figure the spec gives instead."""
    update = {}
    if go.memory_bytes is not None:
        update["memory_bytes"] = int(go.memory_bytes)
    if go.memory_bandwidth_bytes_per_s is not None:
        update["memory_bandwidth_bytes_per_s"] = go.memory_bandwidth_bytes_per_s
    if go.dense_flops_per_s:
        update["dense_flops_per_s"] = {**device.dense_flops_per_s, **go.dense_flops_per_s}
    return dataclasses.replace(device, **update) if update else device


def engine_factors(catalog: Catalog, device, engine, at: str = "nominal"):
    """Catalog defaults, then the engine's memory fraction and its measured efficiency
    on this kind of memory, then the device's own factors (an Apple GPU's Metal cap
    wins over any engine), then a calibration's fitted factors — at the slow edge of
    its band when `at` is pessimistic."""
    base = dataclasses.replace(catalog.default_factors, memory_utilization=engine.fraction)
    measured = engine.efficiency_on(device)
    if measured:
        base = measured.apply(base)
    factors = device.factors.apply(base)
    fitted = catalog.calibration.get(device.name)
    factors = fitted.apply(factors) if fitted else factors
    band = catalog.calibration_bands.get(device.name)
    if at == "pessimistic" and band:
        factors = pessimistic(factors, band)
    return factors


def resolve_engine(engine_in: EngineIn, catalog: Catalog, device):
    """The catalog's engine with the spec's knobs, the rest as the engine defaults
    them on this device (vLLM raises its batch knobs on GPUs of 70 GiB and more)."""
    engine = catalog.engine(engine_in.name)
    tokens, seqs = engine.batch_knobs(device.memory_bytes, device.name)
    knobs = {
        "max_num_batched_tokens": engine_in.max_num_batched_tokens or tokens,
        "max_num_seqs": engine_in.max_num_seqs or seqs,
        "max_model_len": engine_in.max_model_len or engine.max_model_len,
        "fraction": engine_in.gpu_memory_utilization or engine.fraction,
    }
    for name in ("enable_chunked_prefill", "enforce_eager", "split_mode"):
        value = getattr(engine_in, name)
        if value is not None:
            knobs[name] = value
    if engine_in.split_mode is not None and engine.split_mode is None:
        raise InputError("engine.split_mode", engine_in.split_mode, f"only llama.cpp splits by layer or row, not {engine.display_name}")
    return dataclasses.replace(engine, **knobs)


def check_engine_fits(engine, workload_context_tokens: int, tp: int, pp: int) -> None:
    """Refuse what the engine itself would refuse to start with."""
    if engine.max_model_len and engine.max_model_len < workload_context_tokens:
        raise InputError("engine.max_model_len", engine.max_model_len,
                         f"shorter than the workload's context ({workload_context_tokens:,} tokens): the engine would refuse those requests")
    if engine.split_mode == "row" and pp > 1:
        raise InputError("hardware.pp", pp, "llama.cpp's --split-mode row splits matrices across all its GPUs; it has no pipeline stages besides (use tp)")


def band_of(catalog: Catalog, device) -> tuple[float, float]:
    b = catalog.calibration_bands.get(device.name) or {}
    return (b.get("tpot", 0.0), b.get("ttft", 0.0))


def apply_factors(factors, *layers: FactorsIn):
    """Factor overrides, later layers winning."""
    for layer in layers:
        fo = layer.model_dump(exclude_none=True)
        for key in ("runtime_overhead_bytes", "reserved_bytes", "tp_overhead_bytes"):
            if key in fo:
                fo[key] = int(fo[key])
        factors = FactorOverrides(**fo).apply(factors)
    return factors


def resolve(inp: EvaluateInput, catalog: Catalog, base_dir: Path | None = None) -> tuple[Deployment, Workload, Targets]:
    model = resolve_model(inp.model, inp.overrides.model, catalog, base_dir)
    mo = inp.overrides.model
    device = override_device(catalog.device(inp.hardware.gpu), inp.overrides.gpu)

    hw = inp.hardware
    platform_name = hw.platform or device.platforms[0]
    platform = catalog.platform(platform_name)
    if platform.name not in device.platforms:
        raise InputError("hardware.platform", platform_name, f"{device.display_name} ships in: {', '.join(device.platforms)}")
    if hw.tp > 1 and platform.layout == "single":
        better = [p for p in device.platforms if catalog.platform(p).layout != "single"]
        hint = f"; pick a multi-GPU platform: {', '.join(better)}" if better else f"; {device.display_name} has no multi-GPU platform"
        raise InputError("hardware.tp", hw.tp, f"platform {platform.name} holds one device{hint}")

    weights = catalog.precision(inp.precision.weights, "weights")
    shares = inp.overrides.precision.model_dump(exclude_none=True)
    weights = dataclasses.replace(weights, **shares) if shares else weights
    kv = catalog.precision(inp.precision.kv_cache, "kv")

    engine = resolve_engine(inp.engine, catalog, device)
    check_engine_fits(engine, inp.workload.context_tokens, hw.tp, hw.pp)
    factors = apply_factors(engine_factors(catalog, device, engine, inp.sla.at), inp.overrides.factors)

    replicas = (hw.count // (hw.tp * hw.pp)) if hw.count else 1
    deployment = Deployment(
        model=model,
        device=device,
        platform=platform,
        weights=weights,
        kv=kv,
        factors=factors,
        tp=hw.tp,
        pp=hw.pp,
        replicas=replicas,
        weights_bytes_override=mo.weights_bytes,
        engine=engine,
        band=band_of(catalog, device),
    ).as_engine_runs()
    w = inp.workload
    workload = Workload(w.users, w.context_tokens, w.prompt_tokens, w.output_tokens, w.kv_fill, w.batching)
    if workload.users < replicas:
        raise InputError("workload.users", w.users, f"fewer users than replicas ({replicas}); lower hardware.count")
    targets = Targets(max_ttft_s=inp.sla.max_ttft, max_tpot_s=inp.sla.max_tpot)
    return deployment, workload, targets
