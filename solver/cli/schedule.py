"""`plan-opt schedule`: capacity over time, reserved + on-demand + spot per slot."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from solver.cli import outputs
from solver.cli.common import catalog_for, problem_from
from solver.errors import EXIT_DOES_NOT_FIT, EXIT_INVALID_PLAN, EXIT_OK, InputError

EPILOG = """\
The spec is a solve spec (`plan-opt schema`) without workload.requests_per_s, plus:
  traffic_profile: {slot: 1h, requests_per_s: [2, 2, 3, ...]}   or csv: day.csv (slot_start,requests_per_s)
                   growth: {per_month: 0.10, months: 6}          the plan covers the grown day
  tiers: [reserved_1y, on_demand, spot]       price tiers that may serve (catalogs/prices.yaml)
  spot: {interruptions_per_gpu_hour: 3.4e-5}  default catalogs/autoscaling.yaml
  readiness: {provisioning_s: 15min, storage_bytes_per_s: 1GB/s}
  min_replicas: 1
  availability: {survive: 1, unit: nodes}     every slot keeps its rate after losing the worst N

Exit status: 0 a plan; 3 no shape covers every slot; 2 bad input; 4 the solver-free
check refused the schedule (a bug).

Example:
  plan-opt schedule specs/daily-chat-profile.yaml --plot day.png
"""


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "schedule",
        help="plan capacity over a traffic profile: reserved, on-demand and spot replicas per slot",
        description="One CP-SAT model over the profile: a reserved count fixed all day, on-demand and spot counts per slot, "
        "each slot's replicas from solve's capacity rule at its rate; the cost against peak provisioning and on-demand only.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("spec", help="YAML schedule spec")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("--plot", metavar="FILE", help="draw reserved / on-demand / spot replicas against demand per slot: FILE.png or FILE.svg")
    p.add_argument("--time-limit", type=float, metavar="S", help="CP-SAT time limit per solve, seconds (overrides the spec)")
    p.add_argument("--calibration", metavar="FILE", help="factors fitted by `plan-opt calibrate` (applied to their devices)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from solver.explain.schedule import plan_schedule
    from solver.report.schedule_report import plot, render, to_json
    from solver.spec.schedule_spec import load_schedule

    picture = None
    if args.plot:
        outputs.needs("matplotlib", "--plot", args.plot, "plot")
        name, fmt = outputs.plot_name(args.plot, "--plot")
        picture = (outputs.check(name, "--plot", [args.spec]), fmt)
    ss, lines = load_schedule(args.spec)
    if args.time_limit is not None:
        if not 0 < args.time_limit <= 3600:
            raise InputError("--time-limit", args.time_limit, "seconds, more than 0 and at most 3600")
        ss = dataclasses.replace(ss, spec=ss.spec.model_copy(update={"solver": ss.spec.solver.model_copy(update={"time_limit_s": args.time_limit})}))
    if ss.spec.pricing.tier not in (None, "on_demand"):
        raise InputError("pricing.tier", ss.spec.pricing.tier, "a schedule prices every tier itself: leave pricing.tier out and list tiers").located(
            lines, args.spec
        )
    if ss.spec.objective != "min_cost":
        raise InputError("objective", ss.spec.objective, "a schedule minimises rented cost: min_cost only").located(lines, args.spec)
    if ss.spec.inventory:
        raise InputError("inventory", dict(ss.spec.inventory), "a schedule rents every GPU: leave inventory out").located(lines, args.spec)
    catalog = catalog_for(args)
    problem = problem_from(ss.spec, lines, args.spec, catalog)
    result = plan_schedule(ss, problem, catalog)
    if result.violations:
        for v in result.violations:
            print(f"plan-opt: internal error: the schedule breaks {v} (a bug: please report it)", file=sys.stderr)
        return EXIT_INVALID_PLAN
    sys.stdout.write(to_json(result) + "\n" if args.json else render(result))
    if picture is not None:
        fig = plot(result)
        outputs.save_figure(picture[0], fig, picture[1], dpi=130)
        print(f"picture: {picture[0].given}", file=sys.stderr)
    return EXIT_OK if result.schedule is not None else EXIT_DOES_NOT_FIT
