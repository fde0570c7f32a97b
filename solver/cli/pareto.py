"""`plan-opt pareto`: cost against TPOT, TTFT and users."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from solver.cli import outputs
from solver.cli.common import catalog_for, problem_from
from solver.errors import EXIT_DOES_NOT_FIT, EXIT_OK, InputError

if TYPE_CHECKING:
    from solver.spec.solve_spec import Spec


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


DEFAULT_AXES = "all"


def _axes(text: str, spec: Spec) -> list[str]:
    """The frontiers asked for: users only for a users workload, rate only for a rate;
    pNN_ttft / pNN_tpot name the latency axes at the spec's percentile."""
    from solver.optimise.pareto import AXES

    rate = spec.workload.requests_per_s is not None
    if text.strip() == DEFAULT_AXES:
        return ["tpot", "ttft", "rate" if rate else "users"]
    sla = spec.sla
    percentiles = {"ttft": sla.ttft.percentile if sla.ttft else None, "tpot": sla.tpot.percentile if sla.tpot else None}
    axes = []
    for name in (a.strip() for a in text.split(",")):
        if not name:
            continue
        axis = name
        if "_" in name and name.split("_", 1)[1] in percentiles and name.startswith("p"):
            axis = name.split("_", 1)[1]
            asked, spec_p = name.split("_", 1)[0][1:], percentiles[axis]
            if spec_p is None or asked != f"{spec_p:g}":
                at = f"P{spec_p:g}" if spec_p is not None else "no percentile (set sla." + axis + ": {pNN: ...})"
                raise InputError("--axes", text, f"{name}: the spec's {axis.upper()} target is at {at}; the frontier is at the target's percentile")
        if axis not in AXES:
            raise InputError("--axes", text, f"choose from {', '.join(AXES)} (or pNN_ttft, pNN_tpot at the spec's percentiles)")
        if axis == "users" and rate:
            raise InputError("--axes", text, "the users frontier is for a users workload; under requests_per_s choose from tpot, ttft, rate")
        if axis == "rate" and not rate:
            raise InputError("--axes", text, "the rate frontier is for a workload in requests_per_s; for users choose from tpot, ttft, users")
        if axis not in axes:
            axes.append(axis)
    if not axes:
        raise InputError("--axes", text, f"choose from {', '.join(AXES)}")
    return axes


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
    axes = _axes(args.axes, spec)
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
