"""Resolve an input against the catalog into the physics' plain dataclasses: the
model (catalog name, Hugging Face id or config.json), the device with its overrides,
the engine with its knobs, and the factors in the order they win."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from solver.catalog import Catalog, Device, Engine, FactorOverrides, Factors, Model
from solver.catalog.calibration import pessimistic
from solver.errors import InputError
from solver.physics.deployment import Deployment, Targets, Workload
from solver.spec.evaluate_input import EvaluateInput
from solver.spec.fields import EngineIn, FactorsIn, GpuOverrides, ModelOverrides


def _resolve_model(name: str, catalog: Catalog, base_dir: Path | None) -> Model:
    candidate = Path(name)
    if base_dir is not None and not candidate.is_absolute():
        relative = base_dir / candidate
        if relative.exists():
            candidate = relative
    if name.endswith(".json") or candidate.is_dir() or (candidate.exists() and candidate.is_file()):
        from solver.catalog.hf_config import model_from_config

        return model_from_config(candidate / "config.json" if candidate.is_dir() else candidate)
    return catalog.model(name)


def resolve_model(name: str, overrides: ModelOverrides, catalog: Catalog, base_dir: Path | None) -> Model:
    """The model by name or config.json, with the spec's parameter counts applied."""
    model = _resolve_model(name, catalog, base_dir)
    mo = overrides
    if mo.total_params is None and mo.active_params is None:
        return model
    total = int(mo.total_params if mo.total_params is not None else model.total_params)
    if not model.is_moe:
        if mo.active_params is not None and int(mo.active_params) != total:
            raise InputError(
                "overrides.model.active_params",
                mo.active_params,
                f"{model.name} is a dense model: every parameter is active, so there is no active count apart from "
                f"total_params ({total:,}); set total_params alone",
            )
        return dataclasses.replace(model, total_params=total, active_params=total)
    active = int(mo.active_params if mo.active_params is not None else model.active_params)
    if active >= total:
        field = "overrides.model.active_params" if mo.active_params is not None else "overrides.model.total_params"
        value = mo.active_params if mo.active_params is not None else mo.total_params
        raise InputError(
            field, value, f"{model.name} is a mixture of experts: its active parameters ({active:,}) must be fewer than its total ({total:,})"
        )
    return dataclasses.replace(model, total_params=total, active_params=active)


def override_device(device: Device, go: GpuOverrides) -> Device:
    """The device with any catalog figure the spec gives instead."""
    if go.memory_bytes is None and go.memory_bandwidth_bytes_per_s is None and not go.dense_flops_per_s:
        return device
    return dataclasses.replace(
        device,
        memory_bytes=int(go.memory_bytes) if go.memory_bytes is not None else device.memory_bytes,
        memory_bandwidth_bytes_per_s=(
            go.memory_bandwidth_bytes_per_s if go.memory_bandwidth_bytes_per_s is not None else device.memory_bandwidth_bytes_per_s
        ),
        dense_flops_per_s={**device.dense_flops_per_s, **go.dense_flops_per_s} if go.dense_flops_per_s else device.dense_flops_per_s,
    )


def engine_factors(catalog: Catalog, device: Device, engine: Engine, at: str = "nominal") -> Factors:
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


def resolve_engine(engine_in: EngineIn, catalog: Catalog, device: Device) -> Engine:
    """The catalog's engine with the spec's knobs, the rest as the engine defaults
    them on this device (vLLM raises its batch knobs on GPUs of 70 GiB and more)."""
    engine = catalog.engine(engine_in.name)
    tokens, seqs = engine.batch_knobs(device.memory_bytes, device.name)
    if engine_in.split_mode is not None and engine.split_mode is None:
        raise InputError("engine.split_mode", engine_in.split_mode, f"only llama.cpp splits by layer or row, not {engine.display_name}")
    return dataclasses.replace(
        engine,
        max_num_batched_tokens=engine_in.max_num_batched_tokens or tokens,
        max_num_seqs=engine_in.max_num_seqs or seqs,
        max_model_len=engine_in.max_model_len or engine.max_model_len,
        fraction=engine_in.gpu_memory_utilization or engine.fraction,
        enable_chunked_prefill=engine_in.enable_chunked_prefill if engine_in.enable_chunked_prefill is not None else engine.enable_chunked_prefill,
        enforce_eager=engine_in.enforce_eager if engine_in.enforce_eager is not None else engine.enforce_eager,
        split_mode=engine_in.split_mode if engine_in.split_mode is not None else engine.split_mode,
    )


def check_engine_fits(engine: Engine, workload_context_tokens: int, tp: int, pp: int) -> None:
    """Refuse what the engine itself would refuse to start with."""
    if engine.max_model_len and engine.max_model_len < workload_context_tokens:
        raise InputError(
            "engine.max_model_len",
            engine.max_model_len,
            f"shorter than the workload's context ({workload_context_tokens:,} tokens): the engine would refuse those requests",
        )
    if engine.split_mode == "row" and pp > 1:
        raise InputError(
            "hardware.pp", pp, "llama.cpp's --split-mode row splits matrices across all its GPUs; it has no pipeline stages besides (use tp)"
        )


def band_of(catalog: Catalog, device: Device) -> tuple[float, float]:
    b = catalog.calibration_bands.get(device.name) or {}
    return (b.get("tpot", 0.0), b.get("ttft", 0.0))


def apply_factors(factors: Factors, *layers: FactorsIn) -> Factors:
    """Factor overrides, later layers winning."""
    for layer in layers:
        factors = FactorOverrides(**layer.model_dump(exclude_none=True)).apply(factors)
    return factors


def resolve(inp: EvaluateInput, catalog: Catalog, base_dir: Path | None = None) -> tuple[Deployment, Workload, Targets]:
    model = resolve_model(inp.model, inp.overrides.model, catalog, base_dir)
    mo = inp.overrides.model
    try:
        device = override_device(catalog.device(inp.hardware.gpu), inp.overrides.gpu)
    except InputError as exc:
        raise (exc.relabel("hardware.gpu") if exc.field == "gpu" else exc) from None

    hw = inp.hardware
    platform_name = hw.platform or device.platforms[0]
    try:
        platform = catalog.platform(platform_name)
    except InputError as exc:
        raise exc.relabel("hardware.platform") from None
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

    w = inp.workload
    # WorkloadIn's validator derives whichever of the three token counts was left out.
    assert w.context_tokens is not None and w.prompt_tokens is not None and w.output_tokens is not None
    engine = resolve_engine(inp.engine, catalog, device)
    check_engine_fits(engine, w.context_tokens, hw.tp, hw.pp)
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
    workload = Workload(w.users, w.context_tokens, w.prompt_tokens, w.output_tokens, w.kv_fill, w.batching)
    if workload.users < replicas:
        raise InputError("workload.users", w.users, f"fewer users than replicas ({replicas}); lower hardware.count")
    targets = Targets(max_ttft_s=inp.sla.max_ttft, max_tpot_s=inp.sla.max_tpot)
    return deployment, workload, targets
