"""Resolve an input against the catalog into the physics' plain dataclasses: the
model (catalog name, Hugging Face id or config.json), the device with its overrides,
the engine with its knobs, and the factors in the order they win."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from solver.catalog import Catalog, Device, Engine, FactorOverrides, Factors, Model
from solver.catalog.bands import Bands, bands_for, slow_edge, slowed
from solver.catalog.precisions import user_shares
from solver.errors import InputError
from solver.physics.deployment import Deployment, LengthDistribution, Targets, Traffic, Workload
from solver.physics.speculation import resolve_speculation
from solver.spec.evaluate_input import EvaluateInput
from solver.spec.fields import MAX_USERS, EngineIn, FactorsIn, GpuOverrides, LengthsIn, ModelOverrides, SlaIn, WorkloadIn
from solver.spec.lengths_file import lengths_digest


def _exists(path: Path) -> bool:
    """Whether a path names something, where asking cannot fail: a name too long for
    the file system, or with a NUL, names nothing (it is then looked up as a catalog name)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _resolve_model(name: str, catalog: Catalog, base_dir: Path | None) -> Model:
    candidate = Path(name)
    if base_dir is not None and not candidate.is_absolute():
        relative = base_dir / candidate
        if _exists(relative):
            candidate = relative
    if name.endswith(".json") or _is_dir(candidate) or _exists(candidate):
        from solver.catalog.hf_config import model_from_config

        return model_from_config(candidate / "config.json" if _is_dir(candidate) else candidate)
    return catalog.model(name)


def resolve_model(name: str, overrides: ModelOverrides, catalog: Catalog, base_dir: Path | None, container: str = "safetensors") -> Model:
    """The model by name or config.json, as the engine's files (`container`) store it,
    with the spec's parameter counts applied."""
    model = _resolve_model(name, catalog, base_dir)
    mo = overrides
    if mo.checkpoint is not None:  # the named checkpoint's layout, whatever the container
        model = served_checkpoint(model, mo.checkpoint)
    model = stored_in(model, container)
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


def stored_in(model: Model, container: str) -> Model:
    """The model with, per weight format, the checkpoint layouts of the engine's
    container where the catalog lists one (llama.cpp's GGUF conversion of gpt-oss stores
    what the safetensors checkpoint keeps in BF16 as Q8_0), else the other container's."""
    kept = tuple(
        c
        for f in sorted({c.format for c in model.checkpoints})
        for mine in [[c for c in model.checkpoints if c.format == f and c.container == container]]
        for c in (mine or [c for c in model.checkpoints if c.format == f])
    )
    return model if kept == model.checkpoints else dataclasses.replace(model, checkpoints=kept)


def served_checkpoint(model: Model, hf_id: str) -> Model:
    """The model as one of its published checkpoints stores it: the layouts of 16-bit
    tensors that name it (none: every linear layer in the checkpoint's format), and that
    checkpoint alone in its format, so that deploy serves it."""
    chosen = next((c for c in model.published if c.hf_id.lower() == hf_id.lower()), None)
    if chosen is None:
        listed = ", ".join(c.hf_id for c in model.published) or "none"
        raise InputError("overrides.model.checkpoint", hf_id, f"not a published checkpoint of {model.name}; the catalog lists: {listed}")
    layouts = tuple(
        c if c.format != chosen.format else dataclasses.replace(c, hf_ids=(chosen.hf_id,))
        for c in model.checkpoints
        if c.format != chosen.format or chosen.hf_id in c.hf_ids
    )
    published = tuple(c for c in model.published if c.format != chosen.format or c is chosen)
    return dataclasses.replace(model, checkpoints=layouts, published=published)


SIXTEEN_BIT = ("bf16", "fp16")


def checkpoint_formats(model: Model, hf_id: str | None) -> tuple[str, ...] | None:
    """The weight formats a plan of the named checkpoint may use: the one it stores (bf16
    and fp16 alike: same size and speed); None when no checkpoint is named. A plan in
    another format would not serve the checkpoint at all, so the override would do
    nothing: callers refuse that rather than ignore the name."""
    if hf_id is None:
        return None
    fmt = next(c.format for c in model.published if c.hf_id.lower() == hf_id.lower())
    return SIXTEEN_BIT if fmt in SIXTEEN_BIT else (fmt,)


def override_device(device: Device, go: GpuOverrides, field: str = "overrides.gpu") -> Device:
    """The device with any catalog figure the spec gives instead (`field`: where the spec
    gives them, for the message when one cannot apply)."""
    if go.memory_bytes is None and go.memory_bandwidth_bytes_per_s is None and not go.dense_flops_per_s and not go.matmul_share:
        return device
    flops = {**device.dense_flops_per_s, **(go.dense_flops_per_s or {})}
    for dtype, share in (go.matmul_share or {}).items():
        if dtype not in flops:
            raise InputError(
                f"{field}.matmul_share.{dtype}", share, f"{device.name} has no {dtype} throughput; give one of {', '.join(sorted(flops))}"
            )
    return dataclasses.replace(
        device,
        memory_bytes=int(go.memory_bytes) if go.memory_bytes is not None else device.memory_bytes,
        memory_bandwidth_bytes_per_s=(
            go.memory_bandwidth_bytes_per_s if go.memory_bandwidth_bytes_per_s is not None else device.memory_bandwidth_bytes_per_s
        ),
        dense_flops_per_s={**device.dense_flops_per_s, **go.dense_flops_per_s} if go.dense_flops_per_s else device.dense_flops_per_s,
        matmul_share={**device.matmul_share, **go.matmul_share} if go.matmul_share else device.matmul_share,
        matmul_source=device.matmul_source or ("the spec's overrides" if go.matmul_share else None),
    )


def engine_factors(catalog: Catalog, device: Device, engine: Engine, at: str = "nominal") -> Factors:
    """Catalog defaults, then the engine's memory fraction and its measured efficiency
    on this kind of memory, then the device's own factors (an Apple GPU's Metal cap
    wins over any engine), then a calibration's fitted factors — at the slow edge of
    its band when `at` is pessimistic; without a calibration, at the slow edge of the
    default bands (catalogs/bands.yaml): every step and prompt at least its band's
    upper quantile slower."""
    base = dataclasses.replace(catalog.default_factors, memory_utilization=engine.fraction)
    measured = engine.efficiency_on(device)
    if measured:
        base = measured.apply(base)
    if engine.release_step_overhead_s:  # the release line's own fitted step cost, beyond the engine's
        base = dataclasses.replace(base, step_overhead_s=base.step_overhead_s + engine.release_step_overhead_s)
    factors = device.factors.apply(base)
    fitted = catalog.calibration.get(device.name)
    factors = fitted.apply(factors) if fitted else factors
    band = catalog.calibration_bands.get(device.name)
    if at == "pessimistic" and band:
        from solver.catalog.calibration import pessimistic  # a calibration's band: its module is loaded already

        factors = pessimistic(factors, band)
    elif at == "pessimistic":
        b = default_bands(catalog, device, engine)
        if b is not None:
            factors = slowed(factors, max(slow_edge(b.tpot1), slow_edge(b.tpot)), slow_edge(b.ttft))
    return factors


def release_engine(engine_in: EngineIn, catalog: Catalog) -> Engine:
    """The catalog's engine with the defaults of the release the spec names
    (engine.version; none: the current release, the catalog's entry as it is)."""
    return catalog.releases.engine_at(catalog.engine(engine_in.name), engine_in.version)


def default_bands(catalog: Catalog, device: Device, engine: Engine) -> Bands | None:
    """The default bands of this engine's figures on this kind of memory."""
    return bands_for(catalog.bands, engine.name, device.memory_kind)


def resolve_engine(engine_in: EngineIn, catalog: Catalog, device: Device) -> Engine:
    """The release's engine with the spec's knobs, the rest as the engine defaults
    them on this device (vLLM raises its batch knobs on GPUs of 70 GiB and more)."""
    engine = release_engine(engine_in, catalog)
    tokens, seqs = engine.batch_knobs(device.memory_bytes, device.name)
    if engine_in.split_mode is not None and engine.split_mode is None:
        raise InputError("engine.split_mode", engine_in.split_mode, f"only llama.cpp splits by layer or row, not {engine.display_name}")
    return dataclasses.replace(
        engine,
        max_num_batched_tokens=engine_in.max_num_batched_tokens or tokens,
        max_num_seqs=engine_in.max_num_seqs or seqs,
        max_model_len=engine_in.max_model_len or engine.max_model_len,
        fraction=engine_in.gpu_memory_utilization or engine.fraction,
        fraction_rule=None if engine_in.gpu_memory_utilization else engine.fraction_rule,
        enable_chunked_prefill=engine_in.enable_chunked_prefill if engine_in.enable_chunked_prefill is not None else engine.enable_chunked_prefill,
        enforce_eager=engine_in.enforce_eager if engine_in.enforce_eager is not None else engine.enforce_eager,
        split_mode=engine_in.split_mode if engine_in.split_mode is not None else engine.split_mode,
        running_limit="max_num_seqs" if engine_in.max_num_seqs is not None else engine.running_limit,
    )


def fraction_given(engine: Engine, catalog: Catalog, device: Device, *overrides: FactorsIn) -> Engine:
    """The engine without its own fraction rule where a factor that wins over the engine's
    default gives the memory fraction (engine_factors' order: the engine's measured
    factors, the device's, a calibration's, then the spec's overrides.factors or a GPU's):
    the rule is the engine's default, and those win over it as over `fraction`."""
    if engine.fraction_rule is None:
        return engine
    catalogued = [engine.efficiency_on(device), device.factors, catalog.calibration.get(device.name)]
    if any(f is not None and f.memory_utilization is not None for f in catalogued) or any(o.memory_utilization is not None for o in overrides):
        return dataclasses.replace(engine, fraction_rule=None)
    return engine


def check_engine_fits(engine: Engine, workload_context_tokens: int, tp: int, pp: int, model: Model | None = None) -> None:
    """Refuse what the engine itself would refuse to start with, and the one layout
    plan-opt does not model (llama.cpp's row split of a mixture-of-experts model)."""
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
    if engine.split_mode == "row" and model is not None and model.is_moe:
        # ggml-cuda's split buffers hold 2-D matrices only (supports_op: ne[2] > 1 is refused),
        # so the experts' 3-D tensors stay whole on the main GPU: not modelled
        raise InputError(
            "engine.split_mode",
            "row",
            f"llama.cpp keeps {model.name}'s experts whole on its main GPU under --split-mode row; plan-opt models row split for dense models only (use layer)",
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
    model = resolve_model(inp.model, inp.overrides.model, catalog, base_dir, catalog.engine(inp.engine.name).weights_container)
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
    allowed = checkpoint_formats(model, mo.checkpoint)
    if allowed is not None and weights.name not in allowed:
        raise InputError(
            "overrides.model.checkpoint",
            mo.checkpoint,
            f"stores {allowed[0]} weights, but precision.weights is {weights.name}; set precision.weights: {allowed[0]}, or drop the checkpoint",
        )
    shares = user_shares(inp.overrides.precision.model_dump(exclude_none=True))
    weights = dataclasses.replace(weights, **shares) if shares else weights
    kv = catalog.precision(inp.precision.kv_cache, "kv")

    w = inp.workload
    # WorkloadIn's validator derives whichever of the three token counts was left out.
    assert w.context_tokens is not None
    engine = resolve_engine(inp.engine, catalog, device)
    check_engine_fits(engine, w.context_tokens, hw.tp, hw.pp, model)
    factors = apply_factors(engine_factors(catalog, device, engine, inp.sla.at), inp.overrides.factors)
    engine = fraction_given(engine, catalog, device, inp.overrides.factors)

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
        bands=default_bands(catalog, device, engine),
        speculation=resolve_speculation(inp.speculative, model, weights, kv, engine, catalog),
        parallelism=hw.parallelism,
    ).as_engine_runs()
    workload = workload_of(w, inp.sla, engine=engine)
    if workload.users < replicas:
        raise InputError("workload.users", w.users, f"fewer users than replicas ({replicas}); lower hardware.count")
    return deployment, workload, targets_of(inp.sla)


def _lengths(v: int | LengthsIn, context_tokens: int, other_mean: int) -> LengthDistribution:
    """A length as the physics reads it; draws are clipped to what the context leaves
    beside the other length's mean."""
    if not isinstance(v, LengthsIn):
        return LengthDistribution("fixed", float(v), v, v)
    assert v.mean is not None  # LengthsIn fills it
    high = v.max if v.max is not None else max(v.mean, context_tokens - other_mean)
    return LengthDistribution(v.dist, float(v.mean), v.min or 1, high, float(v.p99) if v.p99 is not None else None)


FIRST_GUESS_TTFT_S = 1.0
FIRST_GUESS_TPOT_S = 0.05
"""Under traffic without a TTFT or TPOT target: the times the first guess of the
concurrency assumes (the traffic screen then sizes every shape on its own times)."""


def workload_of(w: WorkloadIn, sla: SlaIn, pairs: tuple[tuple[int, int], ...] = (), *, engine: Engine) -> Workload:
    """The physics' workload. Under requests_per_s, `users` is a first guess of the
    concurrency (Little's law at the targets: rate × (TTFT + output × TPOT)); each
    plan's own concurrency comes from the traffic screen, which batches continuously.
    Batching: the spec's, else the engine's default (catalogs/engines.yaml)."""
    assert w.context_tokens is not None  # WorkloadIn derives it
    prompt, output = w.prompt_mean_tokens, w.output_mean_tokens
    if w.requests_per_s is None:
        assert w.users is not None  # WorkloadIn: users or requests_per_s
        return Workload(
            w.users,
            w.context_tokens,
            prompt,
            output,
            w.kv_fill,
            w.batching or engine.batching,
            shared_prefix_tokens=w.shared_prefix_tokens,
            prefix_hit_rate=w.prefix_hit_rate,
        )
    ttft = sla.ttft.limit_s if sla.ttft else FIRST_GUESS_TTFT_S
    tpot = sla.tpot.limit_s if sla.tpot else FIRST_GUESS_TPOT_S
    users = max(1, math.ceil(w.requests_per_s * (ttft + output * tpot)))
    if pairs:  # a lengths file (spec/lengths_file.py): the requests as logged
        digest = lengths_digest(pairs)
        prompts, outputs = tuple(p for p, _ in pairs), tuple(o for _, o in pairs)
        traffic = Traffic(
            requests_per_s=w.requests_per_s,
            prompt=LengthDistribution("empirical", sum(prompts) / len(prompts), min(prompts), max(prompts), samples=prompts, digest=digest),
            output=LengthDistribution("empirical", sum(outputs) / len(outputs), min(outputs), max(outputs), samples=outputs, digest=digest),
            arrival_cv=w.arrival.cv if w.arrival else 1.0,
            pairs=pairs,
        )
    else:
        traffic = Traffic(
            requests_per_s=w.requests_per_s,
            prompt=_lengths(w.prompt_tokens or prompt, w.context_tokens, output),
            output=_lengths(w.output_tokens or output, w.context_tokens, prompt),
            arrival_cv=w.arrival.cv if w.arrival else 1.0,
        )
    # KV is sized at the average sequence: half its output written, on average over its life.
    fill = min(1.0, (prompt + output / 2) / w.context_tokens)
    return Workload(
        min(users, MAX_USERS),
        w.context_tokens,
        prompt,
        output,
        fill,
        "continuous",
        traffic,
        shared_prefix_tokens=w.shared_prefix_tokens,
        prefix_hit_rate=w.prefix_hit_rate,
    )


def targets_of(sla: SlaIn) -> Targets:
    """The latency limits; under traffic each at its percentile."""
    if sla.ttft is None and sla.tpot is None and sla.e2e is None and sla.goodput is None:
        return Targets(max_ttft_s=sla.max_ttft, max_tpot_s=sla.max_tpot)
    return Targets(
        max_ttft_s=sla.ttft.limit_s if sla.ttft else None,
        max_tpot_s=sla.tpot.limit_s if sla.tpot else None,
        ttft_percentile=sla.ttft.percentile if sla.ttft else None,
        tpot_percentile=sla.tpot.percentile if sla.tpot else None,
        max_e2e_s=sla.e2e.limit_s if sla.e2e else None,
        e2e_percentile=sla.e2e.percentile if sla.e2e else None,
        min_goodput=sla.goodput,
    )
