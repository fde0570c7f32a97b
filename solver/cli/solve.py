"""`plan-opt solve`: the cheapest plan and why."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from solver.cli.collector import collected_after_imports
from solver.cli.common import catalog_for, problem_from
from solver.errors import EXIT_DOES_NOT_FIT, EXIT_INVALID_PLAN, EXIT_OK, InputError

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

Exit status: 0 a plan; 3 no plan meets the spec (the report says why); 2 bad input;
4 the solver-free validator refused the plan (a bug: nothing is printed on standard output).

Examples:
  plan-opt solve specs/chat-llama70b.yaml
  plan-opt solve specs/impossible.yaml --format json
"""


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with collected_after_imports() as imported:
        return _run(args, imported)


def _run(args: argparse.Namespace, imported: Callable[[], None]) -> int:
    from solver.explain.solve import solve
    from solver.optimise.cpsat import import_cp_model
    from solver.report.solve_json import to_json
    from solver.spec.solve_spec import load_spec

    import_cp_model()  # its numpy, with the rest of what a solve loads (cli/collector.py)
    imported()
    spec, lines = load_spec(args.spec)
    if args.time_limit is not None:
        if not 0 < args.time_limit <= 3600:
            raise InputError("--time-limit", args.time_limit, "seconds, more than 0 and at most 3600")
        spec = spec.model_copy(update={"solver": spec.solver.model_copy(update={"time_limit_s": args.time_limit})})
    problem = problem_from(spec, lines, args.spec, catalog_for(args))
    result = solve(problem, explain=not args.no_explain)
    if result.violations:  # a plan the validator refuses is never printed: a reader would act on it
        for v in result.violations:
            print(f"plan-opt: internal error: the plan breaks {v.rule}: {v.detail} (a bug: please report it)", file=sys.stderr)
        return EXIT_INVALID_PLAN
    if args.format == "json":
        print(to_json(result))
    else:
        from solver.report.solve_text import render

        sys.stdout.write(render(result, markdown=args.format == "markdown"))
    return EXIT_OK if result.feasible else EXIT_DOES_NOT_FIT
