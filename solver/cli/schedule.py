"""`plan-opt schedule`: capacity over time, reserved + on-demand + spot per slot."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import TYPE_CHECKING

from solver.cli import outputs
from solver.cli.common import catalog_for, problem_from
from solver.errors import EXIT_DOES_NOT_FIT, EXIT_INVALID_PLAN, EXIT_OK, InputError

if TYPE_CHECKING:
    from solver.explain.schedule import ScheduleResult

EMIT_KINDS = ("hpa", "keda")

EPILOG = """\
The spec is a solve spec (`plan-opt schema`) without workload.requests_per_s, plus:
  traffic_profile: {slot: 1h, requests_per_s: [2, 2, 3, ...]}   or csv: day.csv (slot_start,requests_per_s)
                   or trace: day.csv (TIMESTAMP,ContextTokens,GeneratedTokens: the Azure LLM trace layout),
                   binned into slots; its lengths are the workload's where it gives none
                   growth: {per_month: 0.10, months: 6}          the plan covers the grown day
  tiers: [reserved_1y, on_demand, spot]       price tiers that may serve (catalogs/prices.yaml)
  spot: {interruptions_per_gpu_hour: 3.4e-5}  default catalogs/autoscaling.yaml
  readiness: {provisioning_s: 15min, storage_bytes_per_s: 1GB/s}
  min_replicas: 1
  availability: {survive: 1, unit: nodes}     every slot keeps its rate after losing the worst N

Exit status: 0 a plan (and with --replay, its day meets the SLA in every slot); 3 no
shape covers every slot, or the replayed day misses a slot; 2 bad input; 4 the solver-free
check refused the schedule (a bug).

--replay replays the planned day request by request (the plan's replicas per slot,
each scale-up ordered its readiness lag ahead): a day of ~730k requests costs ~15 s of
CPU a seed, so --seeds is 1 by default; --seeds 5 gives the 95 % bound over seeds (5x).
A trace profile replays the trace's own requests, once. The whole day is replayed (a
slot alone would start with an empty queue and hide what a transition costs).

Examples:
  plan-opt schedule specs/daily-chat-profile.yaml --plot day.png
  plan-opt schedule specs/trace-profile.yaml --replay
  plan-opt schedule specs/daily-chat-profile.yaml --emit keda -o scaledobject.yaml
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
    p.add_argument("--replay", action="store_true", help="replay the planned day request by request: per slot P50/P99, goodput, misses")
    p.add_argument("--seeds", type=int, default=1, metavar="N", help="--replay's seeds: 1 (default) or 5 (the 95%% bound; 5x the CPU)")
    p.add_argument("--emit", metavar="KIND", help="print the plan's autoscaler instead of the report: hpa (autoscaling/v2) or keda (ScaledObject)")
    p.add_argument("-o", "--output", metavar="FILE", help="with --emit: write it to FILE")
    p.add_argument("--utilisation", type=float, default=0.8, metavar="U", help="with --emit: the share of a replica's capacity its target is, (0, 1]")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from solver.explain.schedule import plan_schedule
    from solver.explain.schedule_replay import SEED_CHOICES
    from solver.report.schedule_report import plot, render
    from solver.spec.schedule_spec import load_schedule

    if args.emit is not None and args.emit not in EMIT_KINDS:
        raise InputError("--emit", args.emit, f"one of {', '.join(EMIT_KINDS)}")
    if args.seeds not in SEED_CHOICES:
        raise InputError("--seeds", args.seeds, f"{' or '.join(map(str, SEED_CHOICES))} (the bound over seeds is Student's t for 5)")
    if args.seeds != 1 and not args.replay:
        raise InputError("--seeds", args.seeds, "is --replay's: give --replay too")
    if args.emit is None and (args.output is not None or args.utilisation != 0.8):
        raise InputError("--output" if args.output is not None else "--utilisation", args.output or args.utilisation, "goes with --emit hpa|keda")
    if args.emit is not None and (args.replay or args.json or args.plot):
        raise InputError("--emit", args.emit, "prints the autoscaler alone: leave out --replay, --json and --plot")
    if not 0 < args.utilisation <= 1:
        raise InputError("--utilisation", args.utilisation, "the share of a replica's capacity at which to add one, more than 0 and at most 1")
    target = outputs.check(args.output, "--output", [args.spec]) if args.output is not None else None
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
    if args.emit is not None:
        return _emit(result, args, target)
    day = None
    if args.replay and result.schedule is not None:
        from solver.explain.schedule_replay import replay_schedule

        day = replay_schedule(result, args.seeds)
    if args.json:
        from solver.report.schedule_replay_report import replay_dict
        from solver.report.schedule_report import to_dict

        out = to_dict(result)
        if day is not None:
            out["replay"] = replay_dict(day)
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render(result))
        if day is not None:
            from solver.report.schedule_replay_report import render_replay
            from solver.report.schedule_report import hhmm

            sys.stdout.write(render_replay(day, hhmm))
    if picture is not None:
        fig = plot(result)
        outputs.save_figure(picture[0], fig, picture[1], dpi=130)
        print(f"picture: {picture[0].given}", file=sys.stderr)
    if result.schedule is None:
        return EXIT_DOES_NOT_FIT
    return EXIT_OK if day is None or day.meets else EXIT_DOES_NOT_FIT  # as simulate: a target missed


def _emit(result: ScheduleResult, args: argparse.Namespace, target: outputs.Target | None) -> int:
    from solver.explain.schedule_replay import replica_capacity
    from solver.report.schedule_replay_report import emit_autoscaler

    if result.schedule is None:
        print("plan-opt: no shape covers every slot: no autoscaler to emit; run without --emit for the reason", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    text = emit_autoscaler(result, args.emit, replica_capacity(result), args.utilisation)
    if target is None:
        sys.stdout.write(text)
    else:
        outputs.write_text(target, text)
        print(f"{args.emit}: {target.given}", file=sys.stderr)
    return EXIT_OK
