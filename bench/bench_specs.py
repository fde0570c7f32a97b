"""`plan-opt solve` with its explanation (the default) on every bundled spec, each a whole
process: the median CPU (user + system) of interleaved runs, and whether it meets issue
44's target of 1 s CPU. `--vs` runs the same specs on another checkout (main's, say) in
the same loop, so that before and after come from one run; each checkout's bytecode is
compiled first (`compileall`), as an installed package's is.

    python bench/bench_specs.py [--runs 5] [--vs /path/to/other/checkout] [--phases] [--spec NAME]

`--phases` adds, for this checkout, where each spec's time goes inside one process (CPU
of the imports, the problem's build, the first solve and each explanation step), to
say what to profile next. Request-rate specs (workload.requests_per_s: the plan and its
runners-up simulated under traffic) are marked `rate`. `--spec NAME` (repeatable) measures
only the specs whose path contains NAME: one spec's before and after, more runs a minute.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cold_start import ROOT, SOLVE_TARGET_S, solve_specs, timed  # noqa: E402

PHASES = r"""
import sys, time
t0 = time.process_time()
import solver.explain.solve as es
from solver.catalog import default_catalog
from solver.cli.common import problem_from
from solver.spec.solve_spec import load_spec
t1 = time.process_time()
spent = {}
def wrap(name, label):
    real = getattr(es, name)
    def step(*a, **k):
        t = time.process_time()
        try:
            return real(*a, **k)
        finally:
            spent[label] = spent.get(label, 0.0) + time.process_time() - t
    setattr(es, name, step)
for name, label in [("solve_scenario", "first solve"), ("sensitivity", "targets"), ("runners_up", "runners-up"),
                    ("verify_runners_up", "runners-up simulated"), ("compare_serving", "serving"),
                    ("better_weights", "weights"), ("diagnose", "diagnosis"), ("mixed_plan", "mixed")]:
    wrap(name, label)
spec, lines = load_spec(sys.argv[1])
problem = problem_from(spec, lines, sys.argv[1], default_catalog())
t2 = time.process_time()
es.solve(problem)
t3 = time.process_time()
rest = (t3 - t2) - sum(spent.values())
print(f"imports {t1 - t0:.2f}  build {t2 - t1:.2f}  solve {t3 - t2:.2f}:", "  ".join(f"{k} {v:.2f}" for k, v in spent.items() if v >= 0.005), f" other {rest:.2f}")
"""


def is_rate(root: Path, spec: str) -> bool:
    """Whether the spec asks in requests per second (the traffic path)."""
    return "requests_per_s:" in (root / spec).read_text()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--vs", type=Path, help="another checkout, measured in the same loop (the 'before')")
    ap.add_argument("--phases", action="store_true", help="where each spec's time goes in one process (this checkout)")
    ap.add_argument("--spec", action="append", default=[], help="only the specs whose path contains this (repeatable)")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error(f"--runs takes a whole number of at least 1, not {args.runs}")
    trees = {"this": ROOT, **({"vs": args.vs.resolve()} if args.vs else {})}
    for root in trees.values():
        compileall.compile_dir(root / "solver", quiet=1)
    specs = [s for s in solve_specs(ROOT) if not args.spec or any(name in s for name in args.spec)]
    if not specs:
        ap.error(f"--spec {args.spec} names no bundled spec (they are specs/*.yaml and examples/solve-*.yaml)")
    got: dict[tuple[str, str], list[float]] = {(s, t): [] for s in specs for t in trees}
    for _ in range(args.runs):  # interleaved, so a slow moment of the machine spreads over every case
        for spec in specs:
            for tree, root in trees.items():
                got[(spec, tree)].append(timed(["-m", "solver.cli", "solve", spec], root)[0])
    vs = f"; vs = {args.vs}" if args.vs else ""
    print(f"plan-opt solve SPEC (explained), whole processes: median CPU (user + system) of {args.runs} interleaved runs; this = {ROOT}{vs}")
    print(f"  {'spec':<44}{'this s':>8}" + (f"{'vs s':>8}{'ratio':>8}" if args.vs else "") + f"   ≤ {SOLVE_TARGET_S:g} s CPU")
    met = {t: 0 for t in trees}
    for spec in specs:
        cpu = {t: statistics.median(got[(spec, t)]) for t in trees}
        for t in trees:
            met[t] += cpu[t] <= SOLVE_TARGET_S
        line = f"  {spec:<44}{cpu['this']:8.2f}"
        if args.vs:
            line += f"{cpu['vs']:8.2f}   × {cpu['this'] / cpu['vs']:4.2f}"
        line += f"   {'met' if cpu['this'] <= SOLVE_TARGET_S else 'missed'}" + ("   (rate)" if is_rate(ROOT, spec) else "")
        print(line)
    print(f"\n{met['this']} of {len(specs)} specs ≤ {SOLVE_TARGET_S:g} s CPU" + (f" (vs: {met['vs']} of {len(specs)})" if args.vs else ""))
    if args.phases:
        print("\nwhere the time goes, one process each (CPU s, this checkout):")
        for spec in specs:
            done = subprocess.run(
                [sys.executable, "-c", PHASES, spec], cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
            )
            print(f"  {spec:<44}{done.stdout.strip() or done.stderr.strip()[-300:]}")


if __name__ == "__main__":
    main()
