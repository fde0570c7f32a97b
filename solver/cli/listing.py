"""`plan-opt list`: the catalog, and the price book."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from solver.errors import EXIT_OK, InputError

if TYPE_CHECKING:
    from solver.catalog import Catalog


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "list",
        help="list the catalog: devices, models, platforms, precisions, engines or prices",
        description="List the catalog. `list prices` prints the price book (catalogs/prices.yaml): every "
        "dated offer, and what each GPU costs on the default basis or the one the flags choose.",
    )
    p.add_argument("what", choices=["devices", "models", "platforms", "precisions", "engines", "prices"])
    p.add_argument("--gpu", action="append", default=None, help="prices: only these GPUs (repeatable)")
    p.add_argument(
        "--provider",
        action="append",
        default=None,
        help="prices: providers, or kinds (hyperscaler, gpu_cloud, marketplace, managed), or all (repeatable)",
    )
    p.add_argument(
        "--tier", default=None, choices=["on_demand", "spot", "reserved_1y", "reserved_3y", "flex_start"], help="prices: the tier (default on_demand)"
    )
    p.add_argument("--secondary", action="store_true", help="prices: include offers known only from secondary sources")
    p.add_argument("--statistic", default=None, choices=["median_low", "cheapest"], help="prices: of the providers' offers")
    p.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="json: devices, models and prices as data (the API's GET /devices, /models, /prices)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from solver.catalog import default_catalog
    from solver.units import GB, GiB

    cat = default_catalog()
    if args.what != "prices" and (args.gpu or args.provider or args.tier or args.statistic or args.secondary):
        raise InputError("list", args.what, "--gpu, --provider, --tier and --statistic apply to `list prices` only")
    if args.format == "json":
        return _list_json(cat, args)
    if args.what == "prices":
        return _list_prices(cat, args)
    if args.what == "devices":
        print(f"{'name':<18} {'memory':>22} {'bandwidth':>11} {'fp16 dense':>12} {'measured':>8}  {'$/GPU-h':>8}  display name")
        for d in cat.devices:
            fp16 = d.dense_flops_per_s.get("fp16") or d.dense_flops_per_s.get("bf16")
            price = f"{d.price.usd_per_gpu_hour:.2f}" if d.price else "—"
            mem = f"{d.memory_bytes / GB:.1f} GB/{d.memory_bytes / GiB:.1f} GiB"
            fp16s = f"{fp16 / 1e12:,.0f} TFLOP/s" if fp16 else "—"
            share = d.matmul_share.get("bf16") or d.matmul_share.get("fp16")  # of the 16-bit peak its matmuls reach
            shares = f"{share:.0%}" if share else "—"
            print(f"{d.name:<18} {mem:>22} {d.memory_bandwidth_bytes_per_s / 1e9:>6,.0f} GB/s {fp16s:>12} {shares:>8}  {price:>8}  {d.display_name}")
    elif args.what == "models":
        print(f"{'name':<18} {'params':>9} {'active':>8} {'layers':>6} {'attn':>4}  hf id")
        for m in cat.models:
            print(f"{m.name:<18} {m.total_params / 1e9:>8.1f}B {m.active_params / 1e9:>7.1f}B {m.num_layers:>6} {m.attention:>4}  {m.hf_id or ''}")
    elif args.what == "platforms":
        for p in cat.platforms:
            print(f"{p.name:<24} {p.layout:<7} {p.gpus_per_node:>3} GPUs/node × {p.max_nodes:<3} {p.display_name}")
    elif args.what == "engines":
        for e in cat.engines:
            fraction = "by rule" if e.fraction_rule else f"{e.fraction:g}"  # SGLang picks its own (FractionRule)
            flag = f"{e.fraction_flag} {fraction}" if e.fraction_flag else "—"
            print(f"{e.name:<10} {e.rule:<18} {flag:<40} block {e.block_size_tokens:>2}  {e.display_name}")
        _list_releases(cat)
    else:
        for prec in cat.precisions:
            print(f"{prec.name:<10} {prec.bytes_per_value:>8.5f} B/value  {'+'.join(prec.use):<10} {prec.display_name}")
    return EXIT_OK


def _list_releases(cat: Catalog) -> None:
    """Each engine's release lines (engine.version picks one), what each sets apart from
    the catalog's engine, and the defaults recorded that no Engine field models yet."""
    print()
    print("release lines (engine.version; none given: the current line, the last of each engine)")
    for e in cat.engines:
        for ln in cat.releases.of(e.name):
            print(f"{e.name:<10} {ln.spec.line:<12} {ln.span:<26} {ln.spec.label}")
            changed = ", ".join(f"{k}={v}" for k, v in ln.overrides.items() if k != "display_name")
            print(f"{'':<10} {'':<12} sets: {changed or 'nothing (the catalog engine as it is)'}")
            if ln.spec.recorded:
                print(f"{'':<10} {'':<12} recorded: {', '.join(f'{k}={r.value}' for k, r in ln.spec.recorded.items())}")


def _list_prices(cat: Catalog, args: argparse.Namespace) -> int:
    pricing = cat.pricing(args.provider, args.tier, args.statistic, where="--provider", secondary=args.secondary or None)
    gpus = [cat.device(g).name for g in args.gpu] if args.gpu else [d.name for d in cat.devices]
    allowed = set(cat.providers_of(pricing))
    print(f"price book {cat.prices.as_of}: {len(cat.prices.offers)} offers; basis: {pricing.label()}")
    print(f"{'gpu':<16} {'$/GPU-h':>8}  priced at")
    for g in gpus:
        price = cat.price(g, pricing)
        print(
            f"{g:<16} {price.usd_per_gpu_hour:>8.2f}  {price.provider}, {price.offer} ({price.as_of}); {price.basis.split(': ', 1)[1]}"
            if price
            else f"{g:<16} {'—':>8}  no {pricing.tier} offer from {', '.join(pricing.providers)}"
        )
    print()
    print(f"{'provider':<17} {'gpu':<15} {'tier':<11} {'$/GPU-h':>8}  {'as of':<10}  {'source kind':<12} instance / region")
    for o in sorted(cat.prices.offers, key=lambda o: (o.gpu, o.tier, o.usd_per_gpu_hour)):
        if o.gpu not in gpus or o.provider not in allowed or o.tier != pricing.tier:
            continue
        where = ", ".join(x for x in (o.instance, o.region) if x)
        flag = "  SUSPECT, unused" if o.suspect else ""
        print(f"{o.provider:<17} {o.gpu:<15} {o.tier:<11} {o.usd_per_gpu_hour:>8.2f}  {o.as_of}  {o.source_kind.split(' ')[0]:<12} {where}{flag}")
    return EXIT_OK


def _list_json(cat: Catalog, args: argparse.Namespace) -> int:
    import json

    from solver.report.catalog_json import devices_out, models_out, price_book_out

    if args.what == "devices":
        data: object = [d.model_dump(mode="json") for d in devices_out(cat)]
    elif args.what == "models":
        data = [m.model_dump(mode="json") for m in models_out(cat)]
    elif args.what == "prices":
        pricing = cat.pricing(args.provider, args.tier, args.statistic, where="--provider", secondary=args.secondary or None)
        gpus = [cat.device(g).name for g in args.gpu] if args.gpu else [d.name for d in cat.devices]
        data = price_book_out(cat, pricing, gpus).model_dump(mode="json")
    else:
        raise InputError("--format", "json", "json lists devices, models and prices; the others print as text")
    print(json.dumps(data, indent=2))
    return EXIT_OK
