"""`plan-opt simulate spec.yaml`: the plan solve chooses for a request rate (or one given
by flags), served request by request in the simulator, with its percentiles."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from solver.cli import outputs
from solver.cli.common import catalog_for, problem_from
from solver.errors import EXIT_DOES_NOT_FIT, EXIT_OK, InputError
from solver.explain.simulated_plan import CHOICES, MAX_REPLICAS, named_by_choice, narrowed, plan_to_simulate

EPILOG = """Examples:
  plan-opt simulate specs/chat-70b-at-20-rps.yaml
  plan-opt simulate specs/chat-70b-at-20-rps.yaml --gpu h100-sxm --tp 4 --replicas 3 --plot sim.png
  plan-opt simulate specs/chat-70b-at-20-rps.yaml --requests 20000 --routing jsq --format json

Exit status: 0 when the simulated percentiles meet every target, 3 when one is missed
(or no plan exists), 2 for bad input."""

if TYPE_CHECKING:
    pass


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "simulate",
        help="serve a spec's request rate on a plan, request by request, and print the percentiles",
        description="Draw the spec's requests (workload.requests_per_s, its lengths; seeded), serve them on the plan "
        "`plan-opt solve` chooses (or the one --gpu/--tp/--replicas give) in an iteration-level simulator of "
        "continuous batching (chunked prefill, KV blocks, preemption), and print TTFT, TPOT and end-to-end "
        "percentiles, utilisation, the queue, preemptions and goodput.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("spec", help="YAML spec file with workload.requests_per_s")
    p.add_argument("--gpu", help="simulate this device (with --tp, --weights, --kv-cache) instead of solve's plan")
    p.add_argument("--tp", type=int, help="tensor-parallel degree of the plan given (default: solve's best on --gpu)")
    p.add_argument("--weights", help="weight format of the plan given")
    p.add_argument("--kv-cache", dest="kv_cache", help="KV-cache format of the plan given")
    p.add_argument("--replicas", type=int, help=f"replicas (1 to {MAX_REPLICAS:,}; default: as solve sizes them)")
    p.add_argument("--requests", type=int, help="requests to simulate (default: the spec's simulation.requests)")
    p.add_argument("--seed", type=int, help="seed of the draws (default: the spec's simulation.seed)")
    p.add_argument(
        "--one-seed",
        action="store_true",
        help="judge the plan on one draw; by default it is run on 5 seeds (--seed and the 4 after it) and each target "
        "held to the one-sided 95 %% bound for another seed's percentile, as solve's plans are",
    )
    p.add_argument("--routing", choices=["round_robin", "jsq"], help="how requests reach replicas (default: the spec's)")
    p.add_argument("--format", choices=["text", "json"], default="text", help="report format (default text)")
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the latency CDFs and the queue over time: FILE (.png, .svg, .pdf; FILE.png without a suffix), "
        "written whole; a device or FIFO as a stream; a symbolic link written through",
    )
    p.add_argument("--calibration", metavar="FILE", help="factors fitted by `plan-opt calibrate` (applied to their devices)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from solver.explain.verdicts import plan_check
    from solver.spec.solve_spec import MAX_SIMULATED_REQUESTS, load_spec
    from solver.traffic.verify import SEEDS, Settings

    spec, lines = load_spec(args.spec)
    picture = None
    if args.plot:  # checked before any work
        outputs.needs("matplotlib", "--plot", args.plot, "plot")
        name, fmt = outputs.plot_name(args.plot, "--plot")
        picture = outputs.check(name, "--plot", [args.spec, *([args.calibration] if args.calibration else [])])
    if spec.workload.requests_per_s is None:
        raise InputError(
            "workload.requests_per_s", None, "simulate serves a request rate: give workload.requests_per_s (and percentile targets)", source=args.spec
        )
    if args.replicas is not None and not 1 <= args.replicas <= MAX_REPLICAS:
        raise InputError("--replicas", args.replicas, f"must be a whole number from 1 to {MAX_REPLICAS:,}")
    sim = spec.simulation
    settings = Settings(
        args.requests if args.requests is not None else sim.requests, args.seed if args.seed is not None else sim.seed, args.routing or sim.routing
    )
    if not 100 <= settings.requests <= MAX_SIMULATED_REQUESTS:
        raise InputError("--requests", settings.requests, f"must be a whole number from 100 to {MAX_SIMULATED_REQUESTS:,}")
    if not 0 <= settings.seed < 2**32:
        raise InputError("--seed", settings.seed, "must be a whole number from 0 to 4,294,967,295")
    if any(getattr(args, a) is not None for a in CHOICES.values()):
        from pydantic import ValidationError

        from solver.spec.solve_spec import Spec

        try:
            spec = Spec.model_validate(narrowed(spec.model_dump(mode="json", exclude_unset=True), vars(args)))
        except ValidationError as exc:
            raise named_by_choice(InputError.from_validation(exc), vars(args), flags=True) from None
    try:
        problem = problem_from(spec, lines, args.spec, catalog_for(args))
    except InputError as exc:
        raise named_by_choice(exc, vars(args), flags=True) from None
    plan = plan_to_simulate(problem, args.replicas)
    if isinstance(plan, str):
        print(f"plan-opt simulate: {plan}", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    shape, replicas = plan
    check = plan_check(problem, shape, replicas, settings, 1 if args.one_seed else SEEDS)
    label = f"{replicas} × {shape.label}"
    if args.format == "json":
        from solver.report.simulate_report import to_dict

        print(json.dumps(to_dict(check, label, settings), indent=2, allow_nan=False))
    else:
        from solver.report.simulate_report import render

        sys.stdout.write(render(check, label, settings, spec.model))
    if picture is not None:
        from solver.report.simulate_report import plot

        outputs.save_figure(picture, plot(check, label), fmt, dpi=110)
        print(f"drew {picture.given}", file=sys.stderr)
    return EXIT_OK if check.ok else EXIT_DOES_NOT_FIT
