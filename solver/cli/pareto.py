"""`plan-opt pareto`: cost against TPOT, TTFT and users."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from solver.cli import outputs
from solver.cli.common import catalog_for, problem_from
from solver.errors import EXIT_DOES_NOT_FIT, EXIT_OK, InputError
from solver.optimise.pareto_axes import DEFAULT_AXES, chosen_axes


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    p.add_argument(
        "--axes",
        default=DEFAULT_AXES,
        help="which frontiers, comma-separated: tpot, ttft, and users (a users workload) or rate (requests_per_s: cost "
        "against the requests served); under requests_per_s tpot and ttft are at the targets' percentiles, and may be "
        "named by them (p99_ttft, p90_tpot). Default: all that apply",
    )
    p.add_argument("--format", choices=["text", "json", "markdown"], default="text", help="report format (default text)")
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the frontiers: FILE.png and FILE.svg (FILE's suffix replaced), each written whole; a device or "
        "FIFO gets the PNG only, as a stream; a symbolic link is written through",
    )
    p.add_argument(
        "--max-cost-ratio",
        metavar="R",
        help="stop the latency frontiers at R × their cheapest plan (default: the spec's pareto.max_cost_ratio, else 10); none for no cap",
    )
    p.add_argument("--calibration", metavar="FILE", help="factors fitted by `plan-opt calibrate` (applied to their devices)")
    p.set_defaults(func=run)


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


def _pictures(args: argparse.Namespace) -> list[tuple[outputs.Target, str]]:
    """--plot's files, checked before any work: FILE.png and FILE.svg, or a stream's PNG."""
    outputs.needs("matplotlib", "--plot", args.plot, "plot")
    inputs = [args.spec, *([args.calibration] if args.calibration else [])]
    if outputs.plot_name(args.plot, "--plot")[0] == args.plot and outputs.is_stream(args.plot):
        return [(outputs.check(args.plot, "--plot", inputs), "png")]
    png = outputs.check(str(Path(args.plot).with_suffix(".png")), "--plot", inputs)
    return [(png, "png"), (outputs.check(str(Path(args.plot).with_suffix(".svg")), "--plot", inputs, [png]), "svg")]


def run(args: argparse.Namespace) -> int:
    from solver.optimise.pareto import frontiers
    from solver.report.batching import batching_line
    from solver.report.pareto_report import plot, render, to_json
    from solver.spec.solve_spec import load_spec

    spec, lines = load_spec(args.spec)
    axes = chosen_axes(args.axes, spec)
    pictures = _pictures(args) if args.plot else []
    if args.max_cost_ratio is not None:
        spec = spec.model_copy(update={"pareto": spec.pareto.model_copy(update={"max_cost_ratio": _cost_ratio(args.max_cost_ratio)})})
    problem = problem_from(spec, lines, args.spec, catalog_for(args))
    fronts = frontiers(problem, axes)
    w = problem.workload
    name = problem.shapes[0].deployment.model.display_name if problem.shapes else spec.model
    if w.traffic is not None:
        title = (
            f"plan-opt pareto · {name} · {w.traffic.requests_per_s:,.4g} requests/s · TPOT and TTFT at their percentiles, "
            "screened (not simulated: check a point with `plan-opt simulate --gpu ... --tp ... --replicas ...`)"
        )
    else:
        title = f"plan-opt pareto · {name} · {w.users:,} users × {w.context_tokens:,} tokens"
    if problem.pricing:
        title += f"\nprices: {problem.pricing.label()} (catalogs/prices.yaml)"
    if args.format == "json":
        print(to_json(fronts))
    else:
        engine = problem.shapes[0].deployment.engine if problem.shapes else None
        said = batching_line(w.batching, engine, traffic=w.traffic is not None)
        sys.stdout.write(render(fronts, f"{title}\n{said}", markdown=args.format == "markdown"))
    if pictures:
        from solver.cli.outputs import save_figure

        fig = plot(fronts, title)
        for target, fmt in pictures:
            save_figure(target, fig, fmt, dpi=130)
        print(f"picture: {', '.join(t.given for t, _ in pictures)}", file=sys.stderr)
    return EXIT_OK if any(f.points for f in fronts.values()) else EXIT_DOES_NOT_FIT
