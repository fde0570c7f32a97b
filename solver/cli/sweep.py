"""`plan-opt sweep grid.yaml`: a base spec solved under many scenarios, to one table —
in a local process pool (default), serially, or on a Ray cluster; resumable."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from solver.errors import EXIT_OK, InputError

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
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the CSV table (read first to resume)")
    p.add_argument("--parquet", metavar="FILE", help="also write the table as Parquet (needs pyarrow: the sweep extra)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes of the local pool (default: the CPUs; 1: serial)")
    p.add_argument("--ray", metavar="ADDRESS", help="run on a Ray cluster at ADDRESS (or 'local' for one started here)")
    p.add_argument("--plot", metavar="FILE", help="draw cost against --x to FILE.png")
    p.add_argument("--x", metavar="AXIS", help="the axis --plot draws against (default: the first)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
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


def _progress(done: int, total: int, started: float, quiet: bool, final: bool = False) -> None:
    if quiet:
        return
    rate = done / max(1e-9, time.monotonic() - started)
    width = 30
    bar = "#" * round(width * done / max(1, total))
    line = f"[{bar:<{width}}] {done:,}/{total:,} scenarios, {rate:,.1f}/s"
    if sys.stderr.isatty():  # one line, redrawn
        sys.stderr.write("\r" + line + ("\n" if final else ""))
    elif final or done % max(1, total // 10) == 0:  # a log: a line at each tenth
        sys.stderr.write(line + "\n")
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    from solver.report.sweep_table import columns, plot, read_done, write_csv, write_parquet
    from solver.spec.sweep_spec import load_sweep, scenario_id, scenarios

    if not 1 <= args.workers <= 1024:
        raise InputError("--workers", args.workers, "1 to 1,024 processes")
    sweep, base, folder = load_sweep(args.sweep)
    todo = scenarios(sweep)
    axes = list(dict.fromkeys(k for s in todo for k in s))
    if args.x is not None and args.x not in axes:
        raise InputError("--x", args.x, f"one of the sweep's axes: {', '.join(axes)}")
    out = Path(args.output)
    if not out.parent.is_dir():
        raise InputError("--output", args.output, f"its folder {out.parent} does not exist")
    done = read_done(out)
    rows: dict[str, dict[str, Any]] = {}
    pending = []
    for i, settings in enumerate(todo):
        sid = scenario_id(settings)
        if sid in done:
            rows[sid] = {**done[sid], "scenario": i}
        else:
            pending.append((i, sid, settings))
    header = columns(axes)
    started = time.monotonic()
    total = len(pending)

    def keep(i: int, sid: str, settings: dict[str, Any], row: dict[str, Any]) -> None:
        rows[sid] = {"scenario": i, "id": sid, **{k: _cell(v) for k, v in settings.items()}, **row}

    finished = 0
    last_write = time.monotonic()
    for i, sid, settings, row in _execute(pending, base, str(folder), sweep.explain, args):
        keep(i, sid, settings, row)
        finished += 1
        _progress(finished, total, started, args.quiet)
        if time.monotonic() - last_write > 5:  # a table on disk to resume from
            write_csv(out, header, list(rows.values()))
            last_write = time.monotonic()
    _progress(finished, total, started, args.quiet, final=True)
    write_csv(out, header, list(rows.values()))
    if args.parquet:
        write_parquet(Path(args.parquet), header, list(rows.values()))
    if args.plot:
        drawn = plot(Path(args.plot), list(rows.values()), args.x or axes[0])
        print(f"picture: {drawn}", file=sys.stderr)
    print(f"{len(rows):,} scenarios in {out} ({len(done):,} already there, {finished:,} solved)", file=sys.stderr)
    return EXIT_OK


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

    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = {pool.submit(solve_row, base, settings, folder, explain): (i, sid, settings) for i, sid, settings in pending}
        for f in as_completed(futures):
            i, sid, settings = futures[f]
            yield i, sid, settings, f.result()


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
