"""`plan-opt sweep grid.yaml`: a base spec solved under many scenarios, to one table —
in a local process pool (default), serially, or on a Ray cluster; resumable."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from solver.errors import EXIT_OK, InputError

EXIT_INTERRUPTED = 130
"""As a shell reports a command stopped by Ctrl-C (128 + SIGINT)."""

EPILOG = """The sweep file:
  base: specs/chat-llama70b.yaml       a spec file (relative to this one), or spec: {...} inline
  axes:                                any spec fields, dotted; every combination (combine: zip for the i-th of each)
    workload.users: [32, 64, 128]
    sla.max_tpot: [30ms, 50ms]
    pricing.tier: [on_demand, spot]
  scenarios:                           further scenarios, each its own settings
    - {model: llama-3.1-8b, workload.users: 500}
  explain: false                       true: binding targets per row (slower)

Examples:
  plan-opt sweep study.yaml -o study.csv
  plan-opt sweep study.yaml -o study.csv --parquet study.parquet --plot cost.png --x workload.users
  plan-opt sweep study.yaml -o study.csv --ray local

A row is kept for a scenario (the base spec with its settings, whole) and reused when the
same command runs again on the same -o; an edited base spec solves every row anew.
Exit status: 0 done, 2 bad input, 130 interrupted (Ctrl-C: the table holds every row
finished; run the same command again to solve the rest).
"""


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sweep",
        help="solve a base spec under a grid (or list) of scenarios, to one CSV/Parquet table",
        description="Solve the sweep file's base spec once per scenario (any spec fields as axes, cartesian or "
        "zipped, and/or a list) and write one row per scenario — its settings, the plan, its cost, what bound it, "
        "the status — to a CSV table (and Parquet). Rows already in the table are skipped, so an interrupted "
        "sweep resumes where it stopped. Runs in a local process pool by default, or on a Ray cluster.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("sweep", help="YAML sweep file")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="the CSV table, read first to resume (a regular file that is a sweep table, at most 512 MiB; another file is "
        "refused, not overwritten). Written whole: beside it, then renamed over it; a device or FIFO (/dev/stdout) is "
        "written once, as a stream, and never read; a symbolic link is written through (the link stays)",
    )
    p.add_argument("--parquet", metavar="FILE", help="also write the table as Parquet (needs pyarrow: the sweep extra)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes of the local pool (default: the CPUs; 1: serial)")
    p.add_argument("--ray", metavar="ADDRESS", help="run on a Ray cluster at ADDRESS (or 'local' for one started here)")
    p.add_argument("--plot", metavar="FILE", help="draw cost against --x to FILE.png")
    p.add_argument("--x", metavar="AXIS", help="the axis --plot draws against (default: the first)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument(
        "--max-hours",
        type=float,
        default=DEFAULT_HOURS,
        metavar="H",
        help=f"refuse a sweep whose estimated work (scenarios left × the seconds each of the first took, over the workers) "
        f"is over H hours (default {DEFAULT_HOURS:g}; at most {MAX_HOURS:,})",
    )
    p.set_defaults(func=run)


def solve_row(base: dict[str, Any], settings: dict[str, Any], folder: str, explain: bool) -> dict[str, Any]:
    """One scenario, solved: its row (a bad input is a row too, with its message)."""
    from solver.catalog import default_catalog
    from solver.explain.solve import solve
    from solver.optimise.shapes import build_problem
    from solver.report.sweep_table import error_row, row_of
    from solver.spec.solve_spec import parse_spec
    from solver.spec.sweep_spec import with_settings

    try:
        spec = parse_spec(with_settings(base, settings))
        result = solve(build_problem(spec, default_catalog(), Path(folder)), explain=explain)
    except InputError as exc:
        return error_row(exc.message())
    return row_of(result)


def run(args: argparse.Namespace) -> int:
    from solver.cli import outputs
    from solver.cli.sweep_progress import Progress
    from solver.report.sweep_table import MAX_TABLE_BYTES, columns, plot, read_done, table_csv, write_parquet
    from solver.spec.sweep_spec import load_sweep, scenario_id, scenarios, with_settings

    if not 1 <= args.workers <= 1024:
        raise InputError("--workers", args.workers, "1 to 1,024 processes")
    if not 0 < args.max_hours <= MAX_HOURS:
        raise InputError("--max-hours", args.max_hours, f"hours of estimated work, more than 0 and at most {MAX_HOURS:,}")
    sweep, base, folder = load_sweep(args.sweep)
    todo = scenarios(sweep)
    axes = list(dict.fromkeys(k for s in todo for k in s))
    if args.x is not None and args.x not in axes:
        raise InputError("--x", args.x, f"one of the sweep's axes: {', '.join(axes)}")
    inputs = _inputs(args.sweep, sweep.base, base, folder)
    out = outputs.check(args.output, "--output", inputs)
    parquet = plot_to = None
    if args.parquet:
        outputs.needs("pyarrow", "--parquet", args.parquet, "sweep")
        parquet = outputs.check(args.parquet, "--parquet", inputs, [out])
    if args.plot:
        outputs.needs("matplotlib", "--plot", args.plot, "plot")
        name, fmt = outputs.plot_name(args.plot, "--plot")
        plot_to = outputs.check(name, "--plot", inputs, [t for t in (out, parquet) if t is not None])
    done = read_done(outputs.read_back(out, MAX_TABLE_BYTES), args.output)
    rows: dict[str, dict[str, Any]] = {}
    pending = []
    for i, settings in enumerate(todo):
        sid = scenario_id(with_settings(base, settings), sweep.explain)
        if sid in done:
            rows[sid] = {**done[sid], "scenario": i}
        else:
            pending.append((i, sid, settings))
    header = columns(axes)
    reused, stale = len(rows), len(done) - len(rows)

    def keep(i: int, sid: str, settings: dict[str, Any], row: dict[str, Any]) -> None:
        rows[sid] = {"scenario": i, "id": sid, **{k: _cell(v) for k, v in settings.items()}, **row}

    measured = _measure(pending, base, str(folder), sweep.explain)
    for i, sid, settings, row in measured.rows:
        keep(i, sid, settings, row)
    rest = pending[len(measured.rows) :]
    _budget(measured, len(rest), args)
    progress = Progress(len(rest), args.quiet)
    last_write = time.monotonic()
    try:
        for i, sid, settings, row in _execute(rest, base, str(folder), sweep.explain, args):
            keep(i, sid, settings, row)
            progress.step()
            if out.kind != outputs.STREAM and time.monotonic() - last_write > 5:  # a table on disk to resume from
                outputs.write_text(out, table_csv(header, list(rows.values())))
                last_write = time.monotonic()
    except KeyboardInterrupt:
        progress.close()
        outputs.write_text(out, table_csv(header, list(rows.values())))
        resume = " ".join(shlex.quote(a) for a in ["plan-opt", "sweep", args.sweep, "-o", args.output])
        print(
            f"plan-opt sweep: interrupted: {len(rows):,} of {len(todo):,} scenarios are in {args.output}; "
            f"run `{resume}` again to solve the other {len(todo) - len(rows):,}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    progress.close()
    finished = progress.done
    outputs.write_text(out, table_csv(header, list(rows.values())))
    if parquet is not None:
        outputs.write(parquet, lambda f: write_parquet(f, header, list(rows.values())))
    if plot_to is not None:
        outputs.save_figure(plot_to, plot(list(rows.values()), args.x or axes[0], axes), fmt, dpi=110)
        print(f"picture: {plot_to.given}", file=sys.stderr)
    solved = finished + len(measured.rows)
    dropped = f", {stale:,} rows of other scenarios dropped (an edited base spec or grid)" if stale else ""
    print(f"{len(rows):,} scenarios in {args.output} ({reused:,} already there, {solved:,} solved{dropped})", file=sys.stderr)
    return EXIT_OK


DEFAULT_HOURS = 2.0
MAX_HOURS = 10_000
MEASURE_N = 3
"""Scenarios solved first, one after another, to time them (their rows are kept)."""
MEASURE_S = 10.0
"""No more are timed once this many seconds are spent."""


def _inputs(sweep_file: str, base_name: str | None, base: dict[str, Any], folder: Path) -> list[Path]:
    """The files the sweep reads: the sweep file, its base spec, the base's lengths file."""
    files = [Path(sweep_file)]
    if base_name is not None:
        files.append(Path(sweep_file).parent / base_name)
    lengths = (base.get("workload") or {}).get("lengths_file") if isinstance(base.get("workload"), dict) else None
    if isinstance(lengths, str):
        files.append(Path(lengths) if Path(lengths).is_absolute() else folder / lengths)
    return files


class _Measured:
    """The first scenarios, solved serially and timed: their rows and seconds each."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, str, dict[str, Any], dict[str, Any]]] = []
        self.seconds: list[float] = []

    def per_scenario_s(self) -> float:
        """Seconds a scenario: the first pays the imports and the catalog's load, so it
        is left out when there are later ones."""
        later = self.seconds[1:] or self.seconds
        return sum(later) / len(later) if later else 0.0


def _measure(pending: list, base: dict, folder: str, explain: bool) -> _Measured:
    m = _Measured()
    for i, sid, settings in pending[:MEASURE_N]:
        t0 = time.monotonic()
        m.rows.append((i, sid, settings, solve_row(base, settings, folder, explain)))
        m.seconds.append(time.monotonic() - t0)
        if sum(m.seconds) > MEASURE_S:
            break
    return m


def estimate_s(per_scenario_s: float, scenarios: int, workers: int) -> float:
    """Wall seconds for `scenarios` more on `workers` processes, none faster than one
    alone and no more of them at once than there are scenarios or CPUs."""
    parallel = max(1, min(workers, scenarios, os.cpu_count() or 1))
    return per_scenario_s * scenarios / parallel


def _budget(m: _Measured, left: int, args: argparse.Namespace) -> None:
    """Say the work before starting it; refuse it past --max-hours."""
    if not left:
        return
    per = m.per_scenario_s()
    workers = 1 if args.workers == 1 else args.workers
    wall = estimate_s(per, left, workers)
    where = f"on Ray (counted as {workers} workers)" if args.ray else f"on {max(1, min(workers, left, os.cpu_count() or 1))} process(es)"
    said = f"{left:,} scenarios left × about {per:.3g} s each (timed on the first {len(m.seconds)}) ≈ {_duration(wall)} {where}"
    if wall > args.max_hours * 3600:
        raise InputError(
            "--max-hours", f"{args.max_hours:g}", f"over {args.max_hours:g} h of work: {said}; raise --max-hours to run it, or split the grid"
        )
    print(f"plan-opt sweep: {said}", file=sys.stderr)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.2g} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _cell(value: Any) -> Any:
    return value if isinstance(value, (int, float, str)) else str(value)


def _execute(pending: list, base: dict, folder: str, explain: bool, args: argparse.Namespace) -> Any:
    """(index, id, settings, row) for each pending scenario, as they finish."""
    if args.ray:
        yield from _on_ray(pending, base, folder, explain, args.ray)
        return
    if args.workers == 1 or len(pending) <= 1:
        for i, sid, settings in pending:
            yield i, sid, settings, solve_row(base, settings, folder, explain)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed

    pool = ProcessPoolExecutor(max_workers=args.workers)
    try:
        futures = {pool.submit(solve_row, base, settings, folder, explain): (i, sid, settings) for i, sid, settings in pending}
        for f in as_completed(futures):
            i, sid, settings = futures[f]
            yield i, sid, settings, f.result()
    finally:  # an interrupt: what has not started is dropped, not waited for
        pool.shutdown(wait=False, cancel_futures=True)


def _on_ray(pending: list, base: dict, folder: str, explain: bool, address: str) -> Any:
    try:
        import ray
    except ImportError:
        raise InputError("--ray", address, "needs Ray: pip install 'plan-opt[sweep]'") from None
    ours = not ray.is_initialized()  # started here: shut down here (a local instance's processes with it)
    if ours:
        if address == "local":
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    try:
        task = ray.remote(solve_row)
        refs = {task.remote(base, settings, folder, explain): (i, sid, settings) for i, sid, settings in pending}
        waiting = list(refs)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=min(len(waiting), 16), timeout=None)
            for ref in ready:
                i, sid, settings = refs[ref]
                yield i, sid, settings, ray.get(ref)
    finally:
        if ours:
            ray.shutdown()
