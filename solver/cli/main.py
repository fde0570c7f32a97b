"""The `plan-opt` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from solver import __version__
from solver.errors import EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT, EXIT_OK, InputError

EXIT_INTERNAL = 70

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


def _add_evaluate(sub) -> None:
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
    p.set_defaults(func=_cmd_evaluate)


def _catalog(args):
    from solver.catalog.calibration import with_calibration
    from solver.catalog import default_catalog

    return with_calibration(default_catalog(), getattr(args, "calibration", None))


def _set_path(data: dict, path: str, value) -> None:
    keys = path.split(".")
    node = data
    for k in keys[:-1]:
        if not isinstance(node.get(k), dict):
            node[k] = {}
        node = node[k]
    node[keys[-1]] = value


def _cmd_evaluate(args) -> int:
    from solver.physics.evaluate import evaluate
    from solver.spec.resolve import resolve
    from solver.spec.evaluate_input import parse_input
    from solver.catalog.yaml_lines import load_yaml_text, load_yaml_file

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
            raise InputError("input", None, "expected a YAML mapping with model, hardware and workload", source=source)
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
    for attr, path in flag_paths.items():
        value = getattr(args, attr)
        if value is not None:
            _set_path(data, path, value)
    for item in args.set:
        if "=" not in item:
            raise InputError("--set", item, "expected PATH=VALUE, e.g. overrides.factors.memory_utilization=1.0")
        path, raw = item.split("=", 1)
        value, _ = load_yaml_text(raw, source="--set")
        _set_path(data, path.strip(), value)
    if not data.get("model") or not data.get("hardware") or not data.get("workload"):
        missing = [k for k in ("model", "hardware", "workload") if not data.get(k)]
        raise InputError(
            missing[0],
            None,
            f"missing {', '.join(missing)}: give a YAML file or flags (--model, --gpu, --users, --context ...); see `plan-opt evaluate --help`",
            source=source,
        )
    inp = parse_input(data, lines, source)
    catalog = _catalog(args)
    deployment, workload, targets = resolve(inp, catalog, base_dir)
    ev = evaluate(deployment, workload, targets, precisions=catalog.precisions.entries)
    if args.format == "json":
        from solver.report.evaluation_report import to_dict

        print(json.dumps(to_dict(ev), indent=2))
    else:
        from solver.report.evaluation_report import render_text

        sys.stdout.write(render_text(ev))
    if args.check and not ev.ok:
        return EXIT_DOES_NOT_FIT
    return EXIT_OK


SOLVE_EPILOG = """\
The spec (YAML; `plan-opt schema` prints its JSON Schema, specs/ has examples):
  model: llama-3.1-70b                 catalog name, HF id, or path to a config.json
  workload: {users: 64, context_tokens: 8192, prompt_tokens: 2048, kv_fill: 1.0}
  sla: {max_ttft: 1s, max_tpot: 50ms}
  search: {gpus: [all], max_gpus: 64, tp: [1, 2, 4, 8], pp: [1], weights: [bf16, fp8, int4-awq], kv_cache: [bf16, fp8]}
  objective: min_cost                  min_cost | min_tco | min_gpus | min_purchase | min_tpot
  budget: {max_usd_per_hour: 200, max_purchase_usd: 500000}
  pricing: {providers: [gpu_cloud], tier: on_demand, statistic: median_low}   see `plan-opt list prices`
  ownership: {life_years: 5, utilisation: 1.0, pue: 1.58, usd_per_kwh: 0.0806, hosting_usd_per_kw_month: 184.06}
  inventory: {a100-80gb: 8}            GPUs you own: free, limited in number
  overrides: {gpus: {h100-sxm: {price_usd_per_gpu_hour: 2.5}}, factors: {...}, model: {...}}
  solver: {time_limit_s: 10}

Exit status: 0 a plan; 3 no plan meets the spec (the report says why); 2 bad input.

Examples:
  plan-opt solve specs/chat-llama70b.yaml
  plan-opt solve specs/impossible.yaml --format json
"""


def _add_solve(sub) -> None:
    p = sub.add_parser(
        "solve",
        help="find the cheapest hardware that meets a spec, and say why",
        description="Search every GPU, TP/PP split and precision the spec allows with CP-SAT; print the optimal plan, "
        "the constraint that binds, the slack of the others, the price of each target and the runners-up. "
        "For an impossible spec: the smallest set of targets that conflict and how far each must move.",
        epilog=SOLVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("spec", help="YAML spec file")
    p.add_argument("--format", choices=["text", "json", "markdown"], default="text", help="report format (default text)")
    p.add_argument("--time-limit", type=float, metavar="S", help="CP-SAT time limit per solve, seconds (overrides the spec)")
    p.add_argument("--no-explain", action="store_true", help="the plan only: skip sensitivity and runners-up")
    p.add_argument("--calibration", metavar="FILE", help="factors fitted by `plan-opt calibrate` (applied to their devices)")
    p.set_defaults(func=_cmd_solve)


def _cmd_solve(args) -> int:
    from solver.optimise.shapes import build_problem
    from solver.explain.solve import solve
    from solver.report.solve_report import render, to_json
    from solver.spec.solve_spec import load_spec

    spec, _ = load_spec(args.spec)
    if args.time_limit is not None:
        if not 0 < args.time_limit <= 3600:
            raise InputError("--time-limit", args.time_limit, "must be between 0 and 3600 seconds")
        spec = spec.model_copy(update={"solver": spec.solver.model_copy(update={"time_limit_s": args.time_limit})})
    problem = build_problem(spec, _catalog(args), Path(args.spec).parent)
    result = solve(problem, explain=not args.no_explain)
    if args.format == "json":
        print(to_json(result))
    else:
        sys.stdout.write(render(result, markdown=args.format == "markdown"))
    return EXIT_OK if result.feasible else EXIT_DOES_NOT_FIT


def _add_pareto(sub) -> None:
    p = sub.add_parser(
        "pareto",
        help="every Pareto-optimal plan trading cost against TPOT, TTFT and users served",
        description="Epsilon-constraint on the CP-SAT model: the cheapest plan, then the cheapest that is strictly "
        "faster, and so on, for cost against TPOT and against TTFT (the traded target lifted, the others held), "
        "and cost against users served. Prints the frontiers and, with --plot, draws them.",
        epilog="Example:\n  plan-opt pareto specs/chat-llama70b.yaml --plot pareto.png\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("spec", help="YAML spec file (as for solve)")
    p.add_argument("--axes", default="tpot,ttft,users", help="which frontiers, comma-separated: tpot, ttft, users (default all)")
    p.add_argument("--format", choices=["text", "json", "markdown"], default="text", help="report format (default text)")
    p.add_argument("--plot", metavar="FILE", help="also draw the frontiers: FILE.png and FILE.svg")
    p.add_argument("--max-cost-ratio", metavar="R", help="stop the latency frontiers at R × their cheapest plan "
                   "(default: the spec's pareto.max_cost_ratio, else 10); none for no cap")
    p.add_argument("--calibration", metavar="FILE", help="factors fitted by `plan-opt calibrate` (applied to their devices)")
    p.set_defaults(func=_cmd_pareto)


def _cost_ratio(text: str) -> float | None:
    if text.strip().lower() in ("none", "null", "off"):
        return None
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 1 <= v <= 1e6:
        raise InputError("--max-cost-ratio", text, "a number from 1 to 1000000, or none for no cap")
    return v


def _cmd_pareto(args) -> int:
    from solver.optimise.pareto import AXES, frontiers
    from solver.report.pareto_report import plot, render, to_json
    from solver.optimise.shapes import build_problem
    from solver.spec.solve_spec import load_spec

    axes = [a.strip() for a in args.axes.split(",") if a.strip()]
    bad = [a for a in axes if a not in AXES]
    if bad or not axes:
        raise InputError("--axes", args.axes, f"choose from {', '.join(AXES)}")
    spec, _ = load_spec(args.spec)
    if args.max_cost_ratio is not None:
        spec = spec.model_copy(update={"pareto": spec.pareto.model_copy(update={"max_cost_ratio": _cost_ratio(args.max_cost_ratio)})})
    problem = build_problem(spec, _catalog(args), Path(args.spec).parent)
    fronts = frontiers(problem, axes)
    w = problem.workload
    title = f"plan-opt pareto · {problem.shapes[0].deployment.model.display_name if problem.shapes else spec.model} · {w.users:,} users × {w.context_tokens:,} tokens"
    if problem.pricing:
        title += f"\nprices: {problem.pricing.label()} (catalogs/prices.yaml)"
    if args.format == "json":
        print(to_json(fronts))
    else:
        sys.stdout.write(render(fronts, title, markdown=args.format == "markdown"))
    if args.plot:
        files = plot(fronts, title, Path(args.plot))
        print(f"picture: {', '.join(str(f) for f in files)}", file=sys.stderr)
    return EXIT_OK if any(f.points for f in fronts.values()) else EXIT_DOES_NOT_FIT


def _add_fleet(sub) -> None:
    p = sub.add_parser(
        "fleet",
        help="one fleet for several workloads, within budgets, quotas and owned GPUs",
        description="Choose GPU types and replica counts for several workloads at once (each workload, or each "
        "request-size class of its mix, on replicas of its own), proven optimal by CP-SAT: the least cost serving "
        "all demand, or (objective max_served) the most weighted demand within the budget.",
        epilog="""The fleet file:
  workloads:
    - {name: chat, model: llama-3.1-70b, workload: {users: 200, context_tokens: 8192, prompt_tokens: 2048},
       sla: {max_ttft: 1s, max_tpot: 50ms}, priority: 3,
       mix: [{share: 0.8, context_tokens: 2048, prompt_tokens: 1536}, {share: 0.2, context_tokens: 32768, prompt_tokens: 30000}]}
  search, budget, inventory, overrides, solver: as in a solve spec
  quota: {h100-sxm: 64}                most GPUs of a type that can be rented
  objective: min_cost | max_served
  single_shape: true                   one shape per service (also per workload); off, a split service gets router weights

Examples:
  plan-opt fleet specs/fleet-three-services.yaml
  plan-opt fleet specs/fleet-three-services.yaml --budget 10,20,40
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("fleet", help="YAML fleet file")
    p.add_argument("--budget", metavar="B1,B2,...", help="sweep $/hour budgets: the most weighted demand each buys")
    p.add_argument("--format", choices=["text", "json", "markdown"], default="text", help="report format (default text)")
    p.add_argument("--calibration", metavar="FILE", help="factors fitted by `plan-opt calibrate` (applied to their devices)")
    p.set_defaults(func=_cmd_fleet)


def _cmd_fleet(args) -> int:
    from solver.optimise.fleet import build_classes, solve_fleet, sweep
    from solver.spec.fleet_spec import load_fleet_spec
    from solver.report.fleet_report import render, render_sweep, to_json

    fs = load_fleet_spec(args.fleet)
    budgets = None
    if args.budget:
        try:
            budgets = [float(x) for x in args.budget.split(",") if x.strip()]
        except ValueError:
            raise InputError("--budget", args.budget, "a comma-separated list of $/hour figures, e.g. 100,200,400") from None
        if not budgets or any(b <= 0 for b in budgets):
            raise InputError("--budget", args.budget, "budgets must be positive $/hour figures")
    classes = build_classes(fs, _catalog(args), Path(args.fleet).parent)
    title = f"plan-opt fleet · {len(fs.workloads)} workload(s): " + ", ".join(w.name for w in fs.workloads)
    if budgets:
        swept = sweep(fs, classes, budgets)
        if args.format == "json":
            print(to_json(None, swept))
        else:
            sys.stdout.write(render_sweep(swept, title + " · budget sweep", markdown=args.format == "markdown"))
        return EXIT_OK
    res = solve_fleet(fs, classes)
    if args.format == "json":
        print(to_json(res))
    else:
        sys.stdout.write(render(res, title, markdown=args.format == "markdown", show_purchase=fs.budget.max_purchase_usd is not None))
    return EXIT_OK if res.feasible else EXIT_DOES_NOT_FIT


def _add_deploy(sub) -> None:
    p = sub.add_parser(
        "deploy",
        help="solve a spec and print the commands (or Kubernetes manifests) that serve the plan",
        description="Solve the spec, then turn the plan into what runs it: the published checkpoint in the plan's "
        "weight format, the engine command one replica runs (vLLM's `vllm serve`, SGLang's launch_server or "
        "llama.cpp's llama-server) on every node it spans, with the cluster setup a multi-node replica needs, and "
        "the number of replicas; or, with --emit k8s, Kubernetes manifests. Flags are checked against "
        "catalogs/engine_flags.yaml; a plan the engine cannot run (a KV or weight format it lacks) is refused.",
        epilog="Examples:\n  plan-opt deploy specs/chat-llama70b.yaml --engine sglang\n"
        "  plan-opt deploy specs/pipeline-405b.yaml --emit k8s > 405b.yaml\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("spec", help="YAML spec file (as for solve)")
    p.add_argument("--engine", choices=["vllm", "sglang", "llama.cpp"],
                   help="command to emit (default: the spec's engine when deploy has its template, else vllm)")
    p.add_argument("--variant", choices=["instruct", "base"], default="instruct",
                   help="which published checkpoint to serve: post-trained for chat (default) or the base model")
    p.add_argument("--emit", choices=["commands", "k8s"], default="commands",
                   help="shell commands per node (default) or Kubernetes manifests (Deployment / LeaderWorkerSet)")
    p.add_argument("--image", help="container image for --emit k8s (default: the engine's image for the GPU vendor)")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--calibration", metavar="FILE", help="factors fitted by `plan-opt calibrate` (applied to their devices)")
    p.set_defaults(func=_cmd_deploy)


def _cmd_deploy(args) -> int:
    from solver.report.deploy import ENGINES, check_flags, emit
    from solver.optimise.shapes import build_problem
    from solver.explain.solve import solve
    from solver.spec.solve_spec import load_spec

    spec, _ = load_spec(args.spec)
    engine = args.engine or (spec.engine.name if spec.engine.name in ENGINES else "vllm")
    result = solve(build_problem(spec, _catalog(args), Path(args.spec).parent), explain=False)
    if not result.feasible:
        print("plan-opt: no plan meets the spec; run `plan-opt solve` for the reason", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    dep = emit(result, engine, args.variant)
    if engine != spec.engine.name:
        dep.notes.append(f"the plan was sized with {spec.engine.name}'s memory rule; set `engine: {engine}` in the spec to size it for {engine}")
    bad = check_flags(dep)
    if bad:  # a bug in the template, not the user's input
        raise RuntimeError("emitted flags not in the engine's list: " + "; ".join(bad))
    c = result.solution.candidate
    if args.emit == "k8s":
        from solver.report.deploy_k8s import manifests, to_yaml
        from solver.physics.memory import deployment_weights_bytes

        docs = manifests(dep, name=f"{c.shape.deployment.model.name}-{engine}", image=args.image,
                         weights_bytes=deployment_weights_bytes(c.shape.deployment))
        if args.format == "json":
            print(json.dumps(docs, indent=2))
        else:
            print("# " + f"plan-opt deploy: {dep.replicas} replica(s) × {dep.nodes_per_replica} node(s) × "
                  f"{dep.gpus_per_node} × {c.shape.device.display_name} — {dep.engine}, {dep.model_id}")
            for n in dep.notes:
                print(f"# {n}")
            sys.stdout.write(to_yaml(docs))
        return EXIT_OK
    if args.format == "json":
        ck = dep.checkpoint
        print(json.dumps({"engine": dep.engine, "command": dep.argv, "replicas": dep.replicas,
                          "gpus_per_replica": dep.gpus_per_replica, "nodes_per_replica": dep.nodes_per_replica,
                          "gpus_per_node": dep.gpus_per_node, "model": dep.model_id,
                          "checkpoint": None if ck is None else {"hf_id": ck.hf_id, "format": ck.format, "variant": ck.variant,
                                                                  "container": ck.container, "source": ck.source},
                          "launch": [{"node": s.node, "command": s.argv} for s in dep.steps],
                          "notes": dep.notes}, indent=2))
    else:
        print(f"# {dep.replicas} replica(s) × {dep.gpus_per_replica} × {c.shape.device.display_name} — {dep.engine}"
              + (f", {dep.nodes_per_replica} nodes of {dep.gpus_per_node} per replica" if dep.nodes_per_replica > 1 else ""))
        if dep.nodes_per_replica > 1:
            for s in dep.steps:
                print(f"[{s.node}] {s.command}")
        else:
            print(dep.command)
        for n in dep.notes:
            print(f"# {n}")
    return EXIT_OK


def _add_schema(sub) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of the spec (or of solve's JSON output)")
    p.add_argument("--result", action="store_true", help="the schema of `solve --format json` instead of the spec")
    p.set_defaults(func=_cmd_schema)


def _cmd_schema(args) -> int:
    if args.result:
        from solver.report.solve_report import result_json_schema

        print(json.dumps(result_json_schema(), indent=2))
    else:
        from solver.spec.solve_spec import spec_json_schema

        print(json.dumps(spec_json_schema(), indent=2))
    return EXIT_OK


def _add_calibrate(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="fit efficiency factors to your own measurements",
        description="Fit each device's bandwidth efficiency, per-step decode overhead and compute efficiency to "
        "measured TPOT and TTFT (least squares on the physics, which is linear in them), print the error before and "
        "after, and write a calibration file that evaluate, solve, pareto, fleet and deploy accept (--calibration).",
        epilog="""The CSV: one row per measurement, columns
  model, gpu, tp, weights, kv_cache, batch, prompt_tokens, output_tokens   (required)
  tpot_ms, ttft_ms                                                        (at least one)
  count, pp, engine                                                       (optional)
Or the JSON of `vllm bench serve --save-result` with --model --gpu --tp --weights --kv-cache.

Example:
  plan-opt calibrate my-runs.csv -o calibration.yaml
  plan-opt solve spec.yaml --calibration calibration.yaml
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("measurements", nargs="+", help="CSV file(s), or vllm bench JSON file(s)")
    p.add_argument("-o", "--output", default="calibration.yaml", help="calibration file to write (default calibration.yaml)")
    for flag in ("--model", "--gpu", "--weights", "--kv-cache"):
        p.add_argument(flag, help="for vllm bench JSON inputs")
    p.add_argument("--tp", type=int, default=1, help="for vllm bench JSON inputs")
    p.set_defaults(func=_cmd_calibrate)


def _cmd_calibrate(args) -> int:
    from solver.optimise.calibrate import fit, read_csv, read_vllm_bench, write_calibration
    from solver.catalog import default_catalog

    ms = []
    for f in args.measurements:
        if f.endswith(".json"):
            if not (args.model and args.gpu):
                raise InputError("--model/--gpu", None, f"{f} is a vllm bench JSON: say which model and GPU it measured")
            ms += read_vllm_bench(f, model=args.model, gpu=args.gpu, tp=args.tp, weights=args.weights or "bf16", kv_cache=args.kv_cache or "bf16")
        else:
            ms += read_csv(f)
    fits = fit(ms, default_catalog())
    for f in fits:
        print(f"{f.gpu} ({f.engine}): {f.tpot_points} TPOT and {f.ttft_points} TTFT points")
        for k, v in f.factors.items():
            print(f"  {k:<22} {v:.4g}")
        for metric in ("tpot", "ttft"):
            b, a = f.before.get(metric), f.after.get(metric)
            if b:
                print(f"  {metric.upper()} error: median {b['median_ape']:.1%} → {a['median_ape']:.1%}, worst {b['max_ape']:.1%} → {a['max_ape']:.1%}")
        for r in f.refused:
            print(f"  not fitted: {r}")
    if not any(f.factors for f in fits):
        raise InputError("measurements", ", ".join(args.measurements), "too few usable points to fit anything (see above)")
    write_calibration(fits, args.output, ", ".join(args.measurements))
    print(f"wrote {args.output}")
    return EXIT_OK


def _add_list(sub) -> None:
    p = sub.add_parser("list", help="list the catalog: devices, models, platforms, precisions, engines or prices",
                       description="List the catalog. `list prices` prints the price book (catalogs/prices.yaml): every "
                       "dated offer, and what each GPU costs on the default basis or the one the flags choose.")
    p.add_argument("what", choices=["devices", "models", "platforms", "precisions", "engines", "prices"])
    p.add_argument("--gpu", action="append", default=None, help="prices: only these GPUs (repeatable)")
    p.add_argument("--provider", action="append", default=None,
                   help="prices: providers, or kinds (hyperscaler, gpu_cloud, marketplace, managed), or all (repeatable)")
    p.add_argument("--tier", default=None, choices=["on_demand", "spot", "reserved_1y", "reserved_3y", "flex_start"],
                   help="prices: the tier (default on_demand)")
    p.add_argument("--statistic", default=None, choices=["median_low", "cheapest"], help="prices: of the providers' offers")
    p.set_defaults(func=_cmd_list)


def _cmd_list(args) -> int:
    from solver.catalog import default_catalog
    from solver.units import GB, GiB

    cat = default_catalog()
    if args.what != "prices" and (args.gpu or args.provider or args.tier or args.statistic):
        raise InputError("list", args.what, "--gpu, --provider, --tier and --statistic apply to `list prices` only")
    if args.what == "prices":
        return _list_prices(cat, args)
    if args.what == "devices":
        print(f"{'name':<18} {'memory':>22} {'bandwidth':>11} {'fp16 dense':>12}  {'$/GPU-h':>8}  display name")
        for d in cat.devices:
            fp16 = d.dense_flops_per_s.get("fp16") or d.dense_flops_per_s.get("bf16")
            price = f"{d.price.usd_per_gpu_hour:.2f}" if d.price else "—"
            mem = f"{d.memory_bytes / GB:.1f} GB/{d.memory_bytes / GiB:.1f} GiB"
            fp16s = f"{fp16 / 1e12:,.0f} TFLOP/s" if fp16 else "—"
            print(f"{d.name:<18} {mem:>22} {d.memory_bandwidth_bytes_per_s / 1e9:>6,.0f} GB/s {fp16s:>12}  {price:>8}  {d.display_name}")
    elif args.what == "models":
        print(f"{'name':<18} {'params':>9} {'active':>8} {'layers':>6} {'attn':>4}  hf id")
        for m in cat.models:
            print(
                f"{m.name:<18} {m.total_params / 1e9:>8.1f}B {m.active_params / 1e9:>7.1f}B {m.num_layers:>6} {m.attention:>4}  {m.hf_id or ''}"
            )
    elif args.what == "platforms":
        for p in cat.platforms:
            print(f"{p.name:<24} {p.layout:<7} {p.gpus_per_node:>3} GPUs/node × {p.max_nodes:<3} {p.display_name}")
    elif args.what == "engines":
        for e in cat.engines:
            flag = f"{e.fraction_flag} {e.fraction:g}" if e.fraction_flag else "—"
            print(f"{e.name:<10} {e.rule:<18} {flag:<40} block {e.block_size_tokens:>2}  {e.display_name}")
    else:
        for p in cat.precisions:
            print(f"{p.name:<10} {p.bytes_per_value:>8.5f} B/value  {'+'.join(p.use):<10} {p.display_name}")
    return EXIT_OK


def _list_prices(cat, args) -> int:
    pricing = cat.pricing(args.provider, args.tier, args.statistic, where="--provider")
    gpus = [cat.device(g).name for g in args.gpu] if args.gpu else [d.name for d in cat.devices]
    allowed = set(cat.providers_of(pricing))
    print(f"price book {cat.prices.as_of}: {len(cat.prices.offers)} offers; basis: {pricing.label()}")
    print(f"{'gpu':<16} {'$/GPU-h':>8}  priced at")
    for g in gpus:
        price = cat.price(g, pricing)
        print(f"{g:<16} {price.usd_per_gpu_hour:>8.2f}  {price.provider}, {price.offer} ({price.as_of}); "
              f"{price.basis.split(': ', 1)[1]}" if price else f"{g:<16} {'—':>8}  no {pricing.tier} offer from {', '.join(pricing.providers)}")
    print()
    print(f"{'provider':<17} {'gpu':<15} {'tier':<11} {'$/GPU-h':>8}  {'as of':<10}  {'source kind':<12} instance / region")
    for o in sorted(cat.prices.offers, key=lambda o: (o.gpu, o.tier, o.usd_per_gpu_hour)):
        if o.gpu not in gpus or o.provider not in allowed or o.tier != pricing.tier:
            continue
        where = ", ".join(x for x in (o.instance, o.region) if x)
        flag = "  SUSPECT, unused" if o.suspect else ""
        print(f"{o.provider:<17} {o.gpu:<15} {o.tier:<11} {o.usd_per_gpu_hour:>8.2f}  {o.as_of}  {o.source_kind.split(' ')[0]:<12} {where}{flag}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="plan-opt",
        description="What hardware serves this model to these users at this latency, and what will it cost? "
        "plan-opt checks memory capacity, memory bandwidth, compute and interconnect.",
    )
    parser.add_argument("--version", action="version", version=f"plan-opt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_solve(sub)
    _add_pareto(sub)
    _add_fleet(sub)
    _add_deploy(sub)
    _add_evaluate(sub)
    _add_calibrate(sub)
    _add_schema(sub)
    _add_list(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return args.func(args)
    except InputError as exc:
        print(f"plan-opt: error: {exc.message()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug, not bad input: say so in one line
        if os.environ.get("PLAN_OPT_DEBUG"):
            raise
        print(
            f"plan-opt: internal error: {type(exc).__name__}: {exc} (set PLAN_OPT_DEBUG=1 for the traceback; please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
