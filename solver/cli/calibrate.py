"""`plan-opt calibrate`: fit a device's factors from measurements."""

from __future__ import annotations

import argparse

from solver.errors import EXIT_OK, InputError
from solver.spec.bench_files import KINDS


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "calibrate",
        help="fit efficiency factors to your own measurements",
        description="Fit each device's decode factors and compute efficiency to measured TPOT and TTFT (least squares on "
        "the physics, which is linear in them), print the error before and after, and write a calibration file that "
        "evaluate, solve, pareto, fleet and deploy accept (--calibration). For TPOT it tries a scale of the default "
        "model's reads and fixed costs and, where no scale from 0.1 to 10 fits, a two-parameter line (bandwidth efficiency "
        "and per-step overhead), and keeps "
        "the one, or the defaults, that predicts each point best from a fit to the others.",
        epilog="""The CSV: one row per measurement, columns
  model, gpu, tp, weights, kv_cache, batch, prompt_tokens, output_tokens   (required)
  tpot_ms, ttft_ms                                                        (at least one)
  count, pp, engine                                                       (optional)
Or the benchmark reports you already have, with --gpu and --tp (none says them); the model
is the one the file names and the weights the format of that checkpoint, unless --model or
--weights say otherwise. The kind is told from the contents, or named by --kind:
  vllm-bench      `vllm bench serve --save-result` JSON (its mean TTFT and TPOT)
  guidellm        GuideLLM's benchmarks.json (`guidellm run --output kind=json`): one
                  point per benchmark (a sweep gives several)
  genai-perf      genai-perf's profile_export_genai_perf.json; genai-perf-csv its CSV
                  (which names no model: give --model)
  prometheus      a scrape of vLLM's /metrics taken while the benchmark runs (curl
                  http://HOST:8000/metrics > scrape.txt): TTFT and inter-token means from
                  the histograms' _sum/_count, vllm:num_requests_running as the batch
`plan-opt deploy` prints the vllm bench and guidellm commands that check a plan.

Example:
  plan-opt calibrate my-runs.csv -o calibration.yaml
  plan-opt solve spec.yaml --calibration calibration.yaml
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("measurements", nargs="+", help="CSV file(s), or benchmark reports (see --kind)")
    p.add_argument(
        "--kind",
        choices=("auto", *KINDS),
        default="auto",
        help="what the files are (default auto: told from each file's contents)",
    )
    p.add_argument(
        "-o",
        "--output",
        default="calibration.yaml",
        help="calibration file to write (default calibration.yaml): written whole, beside it then renamed over it; a device "
        "or FIFO as a stream; a symbolic link written through (the link stays); never one of the measurement files",
    )
    for flag in ("--model", "--gpu", "--weights", "--kv-cache"):
        p.add_argument(flag, help="for benchmark reports (every kind but csv)")
    p.add_argument("--tp", type=int, default=1, help="for benchmark reports")
    p.add_argument("--pp", type=int, default=1, help="for benchmark reports: pipeline stages")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from solver.catalog import default_catalog
    from solver.cli import outputs
    from solver.optimise.calibrate import calibration_yaml, fit
    from solver.spec.bench_files import Replica, detect_kind, read_genai_perf, read_genai_perf_csv, read_guidellm
    from solver.spec.measurements import read_csv, read_vllm_bench
    from solver.spec.prometheus_scrape import read_prometheus

    for flag, listing in (("--model", "models"), ("--gpu", "devices"), ("--weights", "precisions"), ("--kv-cache", "precisions")):
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None and not value.strip():
            raise InputError(flag, value, f"must not be empty: a name `plan-opt list {listing}` shows, or leave the flag out")
    out = outputs.check(args.output, "--output", args.measurements)
    readers = {"guidellm": read_guidellm, "genai-perf": read_genai_perf, "genai-perf-csv": read_genai_perf_csv, "prometheus": read_prometheus}
    ms = []
    for f in args.measurements:
        kind = detect_kind(f) if args.kind == "auto" else args.kind
        if kind == "csv":
            ms += read_csv(f)
            continue
        for flag, value in (("--tp", args.tp), ("--pp", args.pp)):
            if not 1 <= value <= 1024:
                raise InputError(flag, value, "a whole number from 1 to 1,024")
        if not args.gpu:
            raise InputError("--gpu", None, f"{f} is a {kind} report, which does not say which GPU it measured: give --gpu (and --tp)")
        if kind == "vllm-bench":
            ms += read_vllm_bench(f, model=args.model, gpu=args.gpu, tp=args.tp, pp=args.pp, weights=args.weights, kv_cache=args.kv_cache or "bf16")
        else:
            replica = Replica(args.gpu, args.tp, args.pp, args.model, args.weights, args.kv_cache or "bf16")
            ms += readers[kind](f, replica)
    fits = fit(ms, default_catalog())
    for f in fits:
        print(f"{f.gpu} ({f.engine}): {f.tpot_points} TPOT and {f.ttft_points} TTFT points")
        if f.tpot_method:
            tried = ", ".join(f"{k} {v:.1%}" for k, v in f.tpot_held_out.items())
            kept = " (the defaults kept)" if f.tpot_method == "defaults" else ""
            print(f"  TPOT fit: {f.tpot_method}{kept}; mean error held out, each point from a fit to the others: {tried}")
        if f.ttft_method and f.ttft_held_out:
            tried = ", ".join(f"{k} {v:.1%}" for k, v in f.ttft_held_out.items())
            kept = " (the default utilisation kept)" if f.ttft_method == "defaults" else ""
            print(f"  TTFT fit: {f.ttft_method}{kept}; mean error held out: {tried}")
        elif f.ttft_method:
            print("  TTFT fit: defaults (no prompt took longer than its fixed costs and communication)")
        for k, v in f.factors.items():
            print(f"  {k:<24} {v:.4g}")
        for metric in ("tpot", "ttft"):
            b, a = f.before.get(metric), f.after.get(metric)
            if b:
                assert a is not None, "the fitted factors leave the same points valid, so each metric has its error after too"
                print(
                    f"  {metric.upper()} error: median {b['median_ape']:.1%} → {a['median_ape']:.1%}, worst {b['max_ape']:.1%} → {a['max_ape']:.1%}"
                )
        for r in f.refused:
            print(f"  not fitted: {r}")
        for n in f.notes:
            print(f"  note: {n}")
    if not any(f.factors for f in fits):
        if any("defaults" in (f.tpot_method, f.ttft_method) for f in fits):
            raise InputError(
                "measurements", ", ".join(args.measurements), "the defaults predict these points best held out: nothing to write (see above)"
            )
        raise InputError("measurements", ", ".join(args.measurements), "too few usable points to fit anything (see above)")
    outputs.write_text(out, calibration_yaml(fits, ", ".join(args.measurements)))
    print(f"wrote {args.output}")
    return EXIT_OK
