"""From a spec and the catalog to every replica shape the spec allows — (GPU, TP, PP,
weight format, KV format) on the platform that can hold it — and, per shape, the
physics the CP-SAT model reads as integer coefficients.

The expensive part of the physics (memory per GPU, decode coefficients, TTFT)
depends on the shape and the context only, so it is computed once per shape and
context; a change of a latency target or of the users only re-reads it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from solver.catalog import Catalog, Device, Engine, Factors, Platform, Precision, Price
from solver.catalog.precisions import user_shares
from solver.catalog.topology import scale_up_domain_size
from solver.errors import InputError
from solver.optimise.problem import Problem, Shape, Skipped
from solver.physics.costs import gpu_hour_costs
from solver.physics.deployment import Deployment
from solver.physics.resolve import (
    apply_factors,
    band_of,
    check_engine_fits,
    checkpoint_formats,
    default_bands,
    engine_factors,
    fraction_given,
    override_device,
    release_engine,
    resolve_engine,
    resolve_model,
    targets_of,
    workload_of,
)
from solver.physics.speculation import resolve_speculation
from solver.spec.lengths_file import with_lengths
from solver.spec.solve_spec import Spec

_T = TypeVar("_T")

# --------------------------------------------------------------------------- building the problem


def _select_devices(spec: Spec, catalog: Catalog) -> list[Device]:
    wanted: list[str] = []
    families = {d.family for d in catalog.devices} | {d.vendor.lower() for d in catalog.devices}
    for i, token in enumerate(spec.search.gpus):
        t = token.strip().lower()
        if t == "all":
            wanted += [d.name for d in catalog.devices]
        elif t in families:
            wanted += [d.name for d in catalog.devices if t in (d.family, d.vendor.lower())]
        else:
            try:
                wanted.append(catalog.device(token).name)
            except InputError as exc:
                raise InputError(f"search.gpus[{i}]", token, exc.allowed + f"; or a family: {', '.join(sorted(families))}; or all") from None
    order = {d.name: i for i, d in enumerate(catalog.devices)}
    return [catalog.devices.entries[n] for n in sorted(set(wanted), key=order.__getitem__)]


def _apply_overrides(device: Device, spec: Spec, catalog: Catalog) -> Device:
    for name, o in spec.overrides.gpus.items():
        if catalog.device(name).name != device.name:
            continue
        device = override_device(device, o, f"overrides.gpus.{name}")
        changes: dict = {}
        if o.price_usd_per_gpu_hour is not None:
            changes["price"] = Price(
                o.price_usd_per_gpu_hour,
                "the spec",
                f"overrides.gpus.{name}.price_usd_per_gpu_hour",
                device.as_of,
                "the spec",
                "on_demand",
                "the spec's own price, not the price book",
            )
        if o.purchase_usd is not None:
            changes["purchase_usd"] = o.purchase_usd
            changes["purchase_source"] = "the spec"
        device = dataclasses.replace(device, **changes) if changes else device
    return device


def _factors(device: Device, engine: Engine, spec: Spec, catalog: Catalog) -> Factors:
    own = [o.factors for n, o in spec.overrides.gpus.items() if catalog.device(n).name == device.name]
    return apply_factors(engine_factors(catalog, device, engine, spec.sla.at), spec.overrides.factors, *own)


def _platform_for(device: Device, tp: int, pp: int, catalog: Catalog) -> Platform:
    """The first of the device's platforms whose scale-up domain holds the TP group
    and whose nodes hold a replica; else the nearest (widest domain, then most GPUs):
    the interconnect constraint rules the shape out, and its reason, naming that
    platform, speaks for all of them."""
    platforms = [catalog.platform(name) for name in device.platforms]
    for p in platforms:
        if tp <= 1 or p.layout != "single":
            if scale_up_domain_size(p) >= tp and p.gpus_per_node * p.max_nodes >= tp * pp:
                return p
    return max(platforms, key=lambda p: (p.layout != "single", scale_up_domain_size(p), p.gpus_per_node * p.max_nodes))


def _sixteen(device: Device, precision: Precision, catalog: Catalog, use: str) -> Precision:
    """bf16 and fp16 are the same size and speed: on a device that runs only one of
    them (V100 and T4 lack bf16), asking for 16-bit means the one it has."""
    formats = device.weight_formats if use == "weights" else device.kv_formats
    if precision.name in ("bf16", "fp16") and precision.name not in formats:
        other = "fp16" if precision.name == "bf16" else "bf16"
        if other in formats:
            return catalog.precision(other, use)
    return precision


def _looked_up(lookup: Callable[[], _T], field: str) -> _T:
    """A catalog lookup whose error names the spec's own path."""
    try:
        return lookup()
    except InputError as exc:
        raise exc.relabel(field) from None


MAX_SHAPES = 20_000
"""The most shapes one solve (or one fleet, all its classes together) works on. A solve
over all 58 devices × 4 TP × 2 × 2 formats has 928; 17,920 shapes take about 10 s of
CPU to solve and explain on these machines (bench/fuzz.py's limit)."""
MAX_SHAPES_ASKED = 10 * MAX_SHAPES
"""The most a spec may ask for before building: building is cheap (a device that
cannot run a format, or a layer split that repeats another, builds nothing), so the
exact count after building is what MAX_SHAPES bounds; this only bounds the asking."""


def shape_count(spec: Spec, catalog: Catalog) -> tuple[int, str]:
    """How many shapes the spec asks for, counted before any is built, and the product
    in words (what to narrow)."""
    devices = len(_select_devices(spec, catalog))
    s = spec.search
    factors = [
        (devices, "devices"),
        (len(set(s.tp)), "TP"),
        (len(set(s.pp)), "PP"),
        (len(set(s.weights)), "weight formats"),
        (len(set(s.kv_cache)), "KV formats"),
    ]
    n = 1
    for k, _ in factors:
        n *= k
    return n, " × ".join(f"{k:,} {what}" for k, what in factors)


def check_work(spec: Spec, catalog: Catalog, already: int = 0, where: str = "search") -> int:
    """Refuse, before building anything, a search that asks for more than
    MAX_SHAPES_ASKED shapes (with those already asked for by other fleet classes)."""
    n, words = shape_count(spec, catalog)
    if already + n > MAX_SHAPES_ASKED:
        raise InputError(
            where,
            f"{already + n:,} shapes" if already else f"{words} = {n:,} shapes",
            f"at most {MAX_SHAPES_ASKED:,} asked for in one run; narrow search.gpus, tp, pp, weights or kv_cache",
        )
    return n


def check_built(shapes: int, where: str = "search", limit: int | None = None) -> None:
    """Refuse a problem of more than `limit` (MAX_SHAPES) runnable shapes before any physics."""
    limit = MAX_SHAPES if limit is None else limit
    if shapes > limit:
        raise InputError(where, f"{shapes:,} shapes", f"at most {limit:,} in one run; narrow search.gpus, tp, pp, weights or kv_cache")


def needs_price(spec: Spec) -> bool:
    return spec.objective == "min_cost" or spec.budget.max_usd_per_hour is not None


def needs_purchase(spec: Spec) -> bool:
    return spec.objective == "min_purchase" or spec.budget.max_purchase_usd is not None


def build_problem(spec: Spec, catalog: Catalog, base_dir: Path | None = None) -> Problem:
    pairs: tuple[tuple[int, int], ...] = ()
    if spec.workload.lengths_file is not None:  # the means and the context from the file
        filled, pairs = with_lengths(spec.workload, base_dir)
        spec = spec.model_copy(update={"workload": filled})
    check_work(spec, catalog)
    model = resolve_model(spec.model, spec.overrides.model, catalog, base_dir, catalog.engine(spec.engine.name).weights_container)
    mo = spec.overrides.model
    shares = user_shares(spec.overrides.precision.model_dump(exclude_none=True))  # every weight format's kernel shares
    for name in list(spec.inventory) + list(spec.overrides.gpus):
        catalog.device(name)  # unknown names are errors, with a did-you-mean
    weights = [_looked_up(functools.partial(catalog.precision, p, "weights"), f"search.weights[{i}]") for i, p in enumerate(spec.search.weights)]
    if spec.search.min_weights_quality is not None:
        floor = _looked_up(functools.partial(catalog.precision, spec.search.min_weights_quality, "weights"), "search.min_weights_quality")
        weights = [p for p in weights if p.quality_rank >= floor.quality_rank]
        if not weights:
            raise InputError(
                "search.min_weights_quality",
                spec.search.min_weights_quality,
                f"no format in search.weights is as good (quality_rank ≥ {floor.quality_rank}); "
                f"allowed: {', '.join(p.name for p in catalog.precisions if p.quality_rank >= floor.quality_rank and 'weights' in p.use)}",
            )
    allowed = checkpoint_formats(model, mo.checkpoint)
    if allowed is not None:
        asked = ", ".join(p.name for p in weights)
        weights = [p for p in weights if p.name in allowed]
        if not weights:
            raise InputError(
                "overrides.model.checkpoint",
                mo.checkpoint,
                f"stores {allowed[0]} weights, which search.weights ({asked}) does not allow; add {allowed[0]} to search.weights, or drop the checkpoint",
            )
    kvs = [_looked_up(functools.partial(catalog.precision, p, "kv"), f"search.kv_cache[{i}]") for i, p in enumerate(spec.search.kv_cache)]
    owned = {catalog.device(n).name: c for n, c in spec.inventory.items()}

    w = spec.workload
    # WorkloadIn derives the third of context, prompt and output from the other two.
    assert w.context_tokens is not None
    workload = workload_of(w, spec.sla, pairs, engine=release_engine(spec.engine, catalog))
    targets = targets_of(spec.sla)
    pricing = catalog.pricing(spec.pricing.providers, spec.pricing.tier, spec.pricing.statistic, secondary=spec.pricing.secondary)
    ownership = dataclasses.replace(catalog.ownership, **spec.ownership.model_dump(exclude_none=True))
    devices = [_apply_overrides(dataclasses.replace(d, price=catalog.price(d.name, pricing)), spec, catalog) for d in _select_devices(spec, catalog)]
    excluded: dict[str, str] = {}
    skipped: list[Skipped] = []
    shapes: list[Shape] = []
    if spec.search.serving == ["disaggregated"] and devices:
        engine = resolve_engine(spec.engine, catalog, devices[0])
        if not engine.disaggregation:
            able = ", ".join(e.name for e in catalog.engines if e.disaggregation)
            raise InputError("search.serving", "disaggregated", f"{engine.display_name} has no prefill/decode split (engines with one: {able})")
    for device in devices:
        own = owned.get(device.name, 0)
        if needs_price(spec) and device.price is None and not own:
            second = catalog.offers_for(device.name, dataclasses.replace(pricing, secondary=True)) if not pricing.secondary else []
            hint = (
                f"; {', '.join(f'{o.provider} ${o.usd_per_gpu_hour:.2f}' for o in second)} known only from a secondary source "
                "(pricing.secondary: true uses it)"
                if second
                else ""
            )
            excluded[device.name] = (
                f"no {pricing.tier} offer from {', '.join(pricing.providers)} in the price book{hint} "
                f"(`plan-opt list prices --gpu {device.name}`; choose pricing.providers, or give "
                f"overrides.gpus.{device.name}.price_usd_per_gpu_hour)"
            )
            continue
        if needs_purchase(spec) and device.purchase_usd is None and not own:
            excluded[device.name] = "no purchase price in the catalog (give overrides.gpus.<name>.purchase_usd)"
            continue
        if spec.objective == "min_tco" and device.price is None and device.purchase_usd is None and not own:
            excluded[device.name] = (
                f"neither a {pricing.tier} offer from {', '.join(pricing.providers)} nor a purchase "
                f"price (give overrides.gpus.{device.name}.price_usd_per_gpu_hour or purchase_usd)"
            )
            continue
        hour_costs = gpu_hour_costs(device, ownership)
        engine = resolve_engine(spec.engine, catalog, device)
        if engine.runs_on and device.vendor not in engine.runs_on:
            excluded[device.name] = f"{engine.display_name} has no backend for {device.vendor} devices (it runs on {', '.join(engine.runs_on)})"
            continue
        check_engine_fits(engine, w.context_tokens, 1, 1, model)
        factors = _factors(device, engine, spec, catalog)
        engine = fraction_given(
            engine,
            catalog,
            device,
            spec.overrides.factors,
            *(o.factors for n, o in spec.overrides.gpus.items() if catalog.device(n).name == device.name),
        )
        bands = default_bands(catalog, device, engine)  # the device's and engine's: once, not per shape
        splits_seen: set[tuple] = set()
        # With a speculative section, each split with the draft and without (search.speculative).
        drafting = tuple(dict.fromkeys(spec.search.speculative)) if spec.speculative is not None else (False,)
        layouts = tuple(dict.fromkeys(spec.search.parallelism))
        for tp in dict.fromkeys(spec.search.tp):
            for pp in dict.fromkeys(spec.search.pp):
                if engine.split_mode == "row" and pp > 1:
                    formats = {
                        (_sixteen(device, wp, catalog, "weights").name, _sixteen(device, kp, catalog, "kv").name) for wp in weights for kp in kvs
                    }
                    skipped.append(
                        Skipped(
                            device.name,
                            tp,
                            pp,
                            "engine",
                            len(formats),
                            "llama.cpp's --split-mode row splits matrices across all its GPUs: it has no pipeline stages besides",
                        )
                    )
                    continue
                platform = _platform_for(device, tp, pp, catalog)
                domain = scale_up_domain_size(platform)
                seen = set()
                for wp in weights:
                    for kp in kvs:
                        wf, kf = _sixteen(device, wp, catalog, "weights"), _sixteen(device, kp, catalog, "kv")
                        if (wf.name, kf.name) in seen:
                            continue
                        seen.add((wf.name, kf.name))
                        wf = dataclasses.replace(wf, **shares) if shares else wf
                        for drafts, parallel in ((x, y) for x in drafting for y in layouts if y == "tp" or (model.is_moe and tp > 1)):
                            d = Deployment(
                                model,
                                device,
                                platform,
                                wf,
                                kf,
                                factors,
                                tp=tp,
                                pp=pp,
                                weights_bytes_override=mo.weights_bytes,
                                engine=engine,
                                band=band_of(catalog, device),
                                bands=bands,
                                speculation=resolve_speculation(spec.speculative, model, wf, kf, engine, catalog) if drafts else None,
                                parallelism=parallel,
                            ).as_engine_runs()
                            key = (d.tp, d.pp, wf.name, kf.name, drafts, parallel)
                            if key in splits_seen:  # llama.cpp's layer split makes TP 2 and PP 2 one shape
                                continue
                            splits_seen.add(key)
                            shapes.append(Shape(len(shapes), d, domain, own, hour_costs))
    if not devices:
        raise InputError("search.gpus", spec.search.gpus, "selects no device")
    check_built(len(shapes))
    return Problem(spec, shapes, workload, targets, devices, excluded, skipped, pricing=pricing, ownership=ownership)
