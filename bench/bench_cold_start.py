"""Cold start, whole processes, in one run (medians of CPU and wall, interleaved):
`plan-opt solve` with its explanation on every bundled spec, `evaluate`, `simulate` of a
plan given whole, beside the import floor (`python -c pass`, pydantic, numpy, OR-Tools'
`cp_model` as it imports itself — pandas and pyarrow with it — and as
solver/optimise/cpsat.py imports it, without them). Targets (issue 44): solve with its
explanation at most 1 s of CPU per process on every bundled spec, evaluate at most 0.3 s.

    python bench/bench_cold_start.py [--runs 3] [--vs /path/to/other/checkout] [--specs N]

`--vs` runs the same commands on another checkout (main's, say) in the same loop, so
the before and after come from one run. Each checkout's bytecode is compiled first
(`compileall`), as an installed package's is: a `PYTHONDONTWRITEBYTECODE=1` shell would
otherwise compile every module from source in every process.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SOLVE_TARGET_S = 1.0
EVALUATE_TARGET_S = 0.3
PLAN_GIVEN = ["--gpu", "h100-sxm", "--tp", "4", "--weights", "fp8", "--kv-cache", "bf16", "--replicas", "3"]

FLOOR = [
    ("python -c pass", "pass"),
    ("import pydantic", "import pydantic"),
    ("import numpy", "import numpy"),
    ("import pandas", "import pandas"),
    ("import cp_model's binding alone (cp_model_helper, not public API)", "from ortools.sat.python import cp_model_helper"),
    ("import cp_model as it imports itself (pandas, pyarrow)", "from ortools.sat.python import cp_model"),
    ("import cp_model through solver/optimise/cpsat.py", "from solver.optimise.cpsat import cp_model; cp_model.CpModel"),
]


def solve_specs(root: Path) -> list[str]:
    """Every bundled spec `solve` takes: specs/*.yaml but the fleets and the profiles (`schedule`), examples/solve-*.yaml."""
    specs = sorted(p for p in (root / "specs").glob("*.yaml") if not p.name.startswith("fleet-") and not p.stem.endswith("-profile"))
    return [str(p.relative_to(root)) for p in specs + sorted((root / "examples").glob("solve-*.yaml"))]


def commands(root: Path, n_specs: int | None) -> list[tuple[str, list[str], str]]:
    """(name, argv after `python`, target kind) of every command measured."""
    cli = ["-m", "solver.cli"]
    out = [
        ("evaluate examples/seed-step1-llama8b-rtx4090.yaml", [*cli, "evaluate", "examples/seed-step1-llama8b-rtx4090.yaml"], "evaluate"),
        ("simulate chat-70b-at-20-rps, plan given whole", [*cli, "simulate", "specs/chat-70b-at-20-rps.yaml", *PLAN_GIVEN], ""),
        ("solve specs/latency-critical-8b.yaml --no-explain", [*cli, "solve", "specs/latency-critical-8b.yaml", "--no-explain"], ""),
    ]
    for spec in solve_specs(root)[:n_specs]:
        out.append((f"solve {spec}", [*cli, "solve", spec], "solve"))
    return out


def timed(argv: list[str], root: Path) -> tuple[float, float]:
    """(CPU s, wall s) of one whole process: user + system of the child, and the clock."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run([PY, *argv], cwd=root, env=env, capture_output=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 3):  # 3: no plan (impossible.yaml) or a target missed, still a whole run
        raise SystemExit(f"{' '.join(argv)} in {root}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--vs", type=Path, help="another checkout, measured in the same loop (the 'before')")
    ap.add_argument("--specs", type=int, help="only the first N bundled solve specs")
    args = ap.parse_args()
    trees = {"this": ROOT, **({"vs": args.vs.resolve()} if args.vs else {})}
    for root in trees.values():
        compileall.compile_dir(root / "solver", quiet=1)
    cases: list[tuple[str, str, list[str], Path]] = []  # (name, tree, argv, root)
    for name, code in FLOOR:
        cases.append((name, "floor" if "solver" not in code else "this", ["-c", code], ROOT))
    for name, argv, _ in commands(ROOT, args.specs):
        for tree, root in trees.items():
            cases.append((name, tree, argv, root))
    got: dict[tuple[str, str], list[tuple[float, float]]] = {(n, t): [] for n, t, _, _ in cases}
    for _ in range(args.runs):  # interleaved, so a slow moment of the machine spreads over every case
        for name, tree, argv, root in cases:
            got[(name, tree)].append(timed(argv, root))

    def med(name: str, tree: str) -> tuple[float, float]:
        runs = got[(name, tree)]
        return statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs)

    vs = f"  vs {args.vs}" if args.vs else ""
    print(f"cold start, whole processes, medians of {args.runs} (interleaved), CPU = user + system; this = {ROOT}{vs}")
    print(f"\nimport floor:{'':<58}CPU s   wall s")
    for name, code in FLOOR:
        cpu, wall = med(name, "floor" if "solver" not in code else "this")
        print(f"  {name:<66} {cpu:6.3f}  {wall:6.3f}")
    head = "  this CPU  wall" + ("   vs CPU  wall   CPU ratio" if args.vs else "") + "   target"
    print(f"\ncommands:{'':<60}{head}")
    met = {"solve": [], "evaluate": []}
    for name, _, kind in commands(ROOT, args.specs):
        cpu, wall = med(name, "this")
        line = f"  {name:<66} {cpu:5.2f} {wall:5.2f}"
        if args.vs:
            b_cpu, b_wall = med(name, "vs")
            line += f"   {b_cpu:5.2f} {b_wall:5.2f}   × {cpu / b_cpu:4.2f}"
        target = {"solve": SOLVE_TARGET_S, "evaluate": EVALUATE_TARGET_S}.get(kind)
        if target is not None:
            met[kind].append(cpu <= target)
            line += f"   ≤ {target:g} s CPU: {'met' if cpu <= target else 'missed'}"
        print(line)
    solves = met["solve"]
    print(f"\nsolve with its explanation ≤ {SOLVE_TARGET_S:g} s CPU: {sum(solves)} of {len(solves)} specs met", end="")
    if args.vs:
        before = [med(name, "vs")[0] <= SOLVE_TARGET_S for name, _, kind in commands(ROOT, args.specs) if kind == "solve"]
        print(f" (vs: {sum(before)} of {len(before)})", end="")
    print(f"\nevaluate ≤ {EVALUATE_TARGET_S:g} s CPU: {'met' if all(met['evaluate']) else 'missed'}")


if __name__ == "__main__":
    main()
