"""`plan-opt evaluate`: one configuration through the four steps."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from solver.cli.common import catalog_for
from solver.errors import EXIT_DOES_NOT_FIT, EXIT_OK, InputError
from solver.spec.paths import set_path

EVALUATE_EPILOG = """\
Input: a YAML file, flags, or both (flags win). The file's fields:
  model: llama-3.1-8b              catalog name, HF id, or path to a config.json
  hardware: {gpu: rtx-4090, count: 1, tp: 1, pp: 1, platform: ...}
  precision: {weights: bf16, kv_cache: bf16}
  workload: {users: 16, context_tokens: 8192, prompt_tokens: 4096, output_tokens: 256}
  sla: {max_ttft: 2s, max_tpot: 50ms}
  overrides:                       any catalog figure, to reproduce a worked example
    gpu: {memory_bytes: 24GiB, memory_bandwidth_bytes_per_s: 800GB/s, dense_flops_per_s: {fp16: 756TFLOP/s}}
    model: {total_params: 8e9, active_params: 13e9, weights_bytes: 18GB}
    factors: {memory_utilization: 1.0, runtime_overhead_bytes: 0, bandwidth_efficiency: 1.0, compute_efficiency: 0.5}
Of context, prompt and output tokens give two; the third is derived.

Exit status: 0 report printed; 2 bad input; 3 with --check, a constraint fails.

Examples:
  plan-opt evaluate examples/seed-step1-llama8b-rtx4090.yaml
  plan-opt evaluate --model llama-3.1-70b --gpu h100-sxm --tp 4 --users 32 --context 8192 --output 512 --max-tpot 50ms
  plan-opt evaluate spec.yaml --set overrides.factors.memory_utilization=0.95 --format json
"""


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "evaluate",
        help="estimate one configuration against the four physical limits",
        description="Walk one configuration through the seed's four steps — memory capacity, decode bandwidth, "
        "prefill compute, interconnect — with every figure and its unit, a verdict per constraint, and remedies when one fails.",
        epilog=EVALUATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", nargs="?", help="YAML input file (optional when flags give everything)")
    g = p.add_argument_group("configuration")
    g.add_argument("--model", help="catalog model name, HF id, or path to a config.json")
    g.add_argument("--gpu", help="catalog device name (see `plan-opt list devices`)")
    g.add_argument("--count", type=int, help="GPUs in all (a multiple of tp × pp; default tp × pp)")
    g.add_argument("--tp", type=int, help="tensor-parallel degree (default 1)")
    g.add_argument("--pp", type=int, help="pipeline-parallel degree (default 1)")
    g.add_argument("--platform", help="platform the GPUs sit in (default: the device's first)")
    g.add_argument("--engine", help="serving engine whose KV sizing to follow: vllm (default), sglang, trtllm, llama.cpp")
    g.add_argument("--weights", help="weight precision (default bf16)")
    g.add_argument("--kv-cache", dest="kv_cache", help="KV-cache precision (default bf16)")
    g = p.add_argument_group("workload and targets")
    g.add_argument("--users", type=int, help="concurrent users (sequences in flight)")
    g.add_argument("--context", type=int, dest="context_tokens", help="tokens per sequence at its longest")
    g.add_argument("--prompt", type=int, dest="prompt_tokens", help="prompt tokens")
    g.add_argument("--output", type=int, dest="output_tokens", help="output tokens")
    g.add_argument("--max-ttft", help='time-to-first-token target, e.g. "500ms"')
    g.add_argument("--max-tpot", help='time-per-output-token target, e.g. "50ms"')
    g = p.add_argument_group("output")
    g.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="set any input field by its dotted path, e.g. overrides.factors.memory_utilization=1.0",
    )
    g.add_argument("--format", choices=["text", "json"], default="text", help="report format (default text)")
    g.add_argument("--check", action="store_true", help="exit 3 when any constraint fails")
    p.add_argument("--calibration", metavar="FILE", help="factors fitted by `plan-opt calibrate` (applied to their devices)")
    p.set_defaults(func=run)


def _named(exc: InputError, from_flags: dict[str, str], lines: dict, source: str | None) -> InputError:
    """An error in a value a flag gave names the flag (and the field); one from the
    file names the file and line."""
    for path, flag in from_flags.items():
        if exc.field == path or exc.field.startswith((path + ".", path + "[")):
            label = flag if flag.lstrip("-") == exc.field else f"{flag} ({exc.field})"
            return InputError(label, exc.value, exc.allowed)
    return exc.located(lines, source)


def run(args: argparse.Namespace) -> int:
    from solver.catalog.yaml_lines import load_yaml_file, load_yaml_text
    from solver.physics.evaluate import evaluate
    from solver.physics.resolve import resolve
    from solver.spec.evaluate_input import parse_input

    data: dict = {}
    lines: dict = {}
    source = None
    base_dir = None
    if args.file:
        loaded, lines = load_yaml_file(args.file)
        source = args.file
        base_dir = Path(args.file).parent
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise InputError("input", None, "expected a YAML mapping with model, hardware and workload", source=source, line=1)
        data = loaded
    flag_paths = {
        "model": "model",
        "engine": "engine.name",
        "gpu": "hardware.gpu",
        "count": "hardware.count",
        "tp": "hardware.tp",
        "pp": "hardware.pp",
        "platform": "hardware.platform",
        "weights": "precision.weights",
        "kv_cache": "precision.kv_cache",
        "users": "workload.users",
        "context_tokens": "workload.context_tokens",
        "prompt_tokens": "workload.prompt_tokens",
        "output_tokens": "workload.output_tokens",
        "max_ttft": "sla.max_ttft",
        "max_tpot": "sla.max_tpot",
    }
    if isinstance(data.get("engine"), str):  # `engine: vllm` is short for {name: vllm}
        data["engine"] = {"name": data["engine"]}
    from_flags: dict[str, str] = {}  # field → the flag that set it: an error there names the flag, not a line
    for attr, path in flag_paths.items():
        value = getattr(args, attr)
        if value is not None:
            set_path(data, path, value)
            from_flags[path] = "--" + attr.removesuffix("_tokens").replace("_", "-")
    for item in args.set:
        if "=" not in item:
            raise InputError("--set", item, "expected PATH=VALUE, e.g. overrides.factors.memory_utilization=1.0")
        path, raw = item.split("=", 1)
        value, _ = load_yaml_text(raw, source="--set")
        set_path(data, path.strip(), value)
        from_flags[path.strip()] = f"--set {path.strip()}"
    if not data.get("model") or not data.get("hardware") or not data.get("workload"):
        missing = [k for k in ("model", "hardware", "workload") if not data.get(k)]
        raise InputError(
            missing[0],
            None,
            f"missing {', '.join(missing)}: give a YAML file or flags (--model, --gpu, --users, --context ...); see `plan-opt evaluate --help`",
            source=source,
            line=(min(lines.values()) if lines else 1) if source else None,
        )
    try:
        inp = parse_input(data, lines, source)
        catalog = catalog_for(args)
        deployment, workload, targets = resolve(inp, catalog, base_dir)
    except InputError as exc:
        raise _named(exc, from_flags, lines, source) from None
    ev = evaluate(deployment, workload, targets, precisions=catalog.precisions.entries)
    if args.format == "json":
        from solver.report.evaluation_json import to_dict

        print(json.dumps(to_dict(ev), indent=2))
    else:
        from solver.report.evaluation_text import render_text

        sys.stdout.write(render_text(ev))
    if args.check and not ev.ok:
        return EXIT_DOES_NOT_FIT
    return EXIT_OK
