"""`plan-opt fleet`: one fleet for several workloads, or a budget sweep."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from solver.cli.common import catalog_for
from solver.errors import EXIT_DOES_NOT_FIT, EXIT_OK, InputError

MAX_BUDGETS = 50
"""Budgets in one sweep: each is a fleet solve, and they share the command's clock."""
MAX_BUDGET_USD_PER_HOUR = 1e9


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "fleet",
        help="one fleet for several workloads, within budgets, quotas and owned GPUs",
        description="Choose GPU types and replica counts for several workloads at once (each workload, or each "
        "request-size class of its mix, on replicas of its own), proven optimal by CP-SAT: the least cost serving "
        "all demand, or (objective max_served) the largest priority-weighted share of demand within the budget.",
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
    p.add_argument(
        "--budget",
        metavar="B1,B2,...",
        help="sweep $/hour budgets: the largest weighted share of demand each buys, rate services simulated as fleet does",
    )
    p.add_argument("--format", choices=["text", "json", "markdown"], default="text", help="report format (default text)")
    p.add_argument("--calibration", metavar="FILE", help="factors fitted by `plan-opt calibrate` (applied to their devices)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from solver.optimise.fleet_classes import build_classes
    from solver.optimise.fleet_traffic import solve_fleet_verified, sweep_verified
    from solver.report.fleet_report import render, render_sweep, to_json
    from solver.spec.fleet_spec import load_fleet_spec

    fs, lines = load_fleet_spec(args.fleet)
    budgets = None
    if args.budget:
        try:
            budgets = [float(x) for x in args.budget.split(",") if x.strip()]
        except ValueError:
            raise InputError("--budget", args.budget, "a comma-separated list of $/hour figures, e.g. 100,200,400") from None
        if not budgets or any(not 0 < b <= MAX_BUDGET_USD_PER_HOUR for b in budgets):  # also refuses nan and inf
            raise InputError("--budget", args.budget, f"budgets must be $/hour figures in (0, {MAX_BUDGET_USD_PER_HOUR:.0e}]")
        if len(budgets) > MAX_BUDGETS:
            raise InputError("--budget", f"{len(budgets)} budgets", f"at most {MAX_BUDGETS} in one sweep")
    try:
        classes = build_classes(fs, catalog_for(args), Path(args.fleet).parent)
    except InputError as exc:
        raise exc.located(lines, args.fleet) from None
    title = f"plan-opt fleet · {len(fs.workloads)} workload(s): " + ", ".join(w.name for w in fs.workloads)
    if budgets:
        swept = sweep_verified(fs, classes, budgets)
        if args.format == "json":
            print(to_json(None, swept))
        else:
            sys.stdout.write(render_sweep(swept, title + " · budget sweep", markdown=args.format == "markdown"))
        return EXIT_OK
    res = solve_fleet_verified(fs, classes)
    if args.format == "json":
        print(to_json(res))
    else:
        sys.stdout.write(render(res, title, markdown=args.format == "markdown", show_purchase=fs.budget.max_purchase_usd is not None))
    return EXIT_OK if res.feasible else EXIT_DOES_NOT_FIT
