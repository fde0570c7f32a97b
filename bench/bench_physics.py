"""What the shapes' physics costs in a large solve, in one run (medians of CPU, interleaved):
`plan-opt solve --no-explain` and `plan-opt solve` on bench_solve.py's FULL spec (every GPU,
TP 1/2/4/8, PP 1/2, three weight and two KV formats) as whole processes, and inside one
process the solve's parts: every shape's physics (memory, prefill, decode coefficients),
every replica's TPOT and TTFT caps (the bisections over batches), and the whole solve
with and without its explanation (imports and the catalog's load excluded).

    python bench/bench_physics.py [--runs 5] [--vs /path/to/other/checkout]

`--vs` measures another checkout (main's, say) in the same loop, so the before and after
come from one run. Each checkout's bytecode is compiled first.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_solve import FULL  # noqa: E402 (the one definition of the full-catalog spec)

PARTS = r"""
import json, sys, time
from solver.catalog import default_catalog
from solver.explain.solve import solve
from solver.optimise.capacity import replica_capacity
from solver.optimise.shapes import build_problem
from solver.spec.solve_spec import parse_spec

spec = parse_spec(json.loads(sys.argv[1]))
catalog = default_catalog()
solve(build_problem(spec, catalog), explain=False)  # lazy imports and caches warm
cpu = time.process_time
p = build_problem(spec, catalog)
t0 = cpu()
physics = [p.physics(s, p.workload) for s in p.shapes]
t1 = cpu()
for ph in physics:
    if ph.valid and ph.decode is not None:
        replica_capacity(p, ph, p.workload, p.targets)
t2 = cpu()
p = build_problem(spec, catalog)
t3 = cpu()
solve(p, explain=False)
t4 = cpu()
p = build_problem(spec, catalog)
t5 = cpu()
solve(p, explain=True)
t6 = cpu()
print(json.dumps({"shapes": len(p.shapes), "physics": t1 - t0, "caps": t2 - t1, "solve": t4 - t3, "explained": t6 - t5}))
"""


def process_cpu(root: Path, argv: list[str]) -> tuple[float, str]:
    """User + system CPU of one whole process run in checkout `root`, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(argv[:4])} in {root}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout.decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--vs", type=Path, help="another checkout, measured in the same loop (the 'before')")
    args = ap.parse_args()
    trees = {"this": ROOT, **({"vs": args.vs.resolve()} if args.vs else {})}
    for root in trees.values():
        compileall.compile_dir(root / "solver", quiet=1)
    got: dict[tuple[str, str], list[float]] = {}
    shapes = 0
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "full-catalog.yaml"
        spec.write_text(yaml.safe_dump(FULL))
        cli = [sys.executable, "-m", "solver.cli", "solve", str(spec)]
        for _ in range(args.runs):  # interleaved: a slow moment of the machine spreads over every case
            for tree, root in trees.items():
                got.setdefault((tree, "process --no-explain"), []).append(process_cpu(root, [*cli, "--no-explain"])[0])
                got.setdefault((tree, "process explained"), []).append(process_cpu(root, cli)[0])
                _, out = process_cpu(root, [sys.executable, "-c", PARTS, json.dumps(FULL)])
                parts = json.loads(out.strip().splitlines()[-1])
                shapes = parts.pop("shapes")
                for name, seconds in parts.items():
                    got.setdefault((tree, f"in-process {name}"), []).append(seconds)

    def med(tree: str, name: str) -> float:
        return statistics.median(got[(tree, name)])

    print(
        f"plan-opt solve on FULL ({shapes} shapes), median CPU s of {args.runs} (interleaved); this = {ROOT}"
        + (f", vs = {args.vs}" if args.vs else "")
    )
    print(f"  {'':<34}{'this':>9}" + (f"{'vs':>9}{'this/vs':>9}" if args.vs else ""))
    names = ["process --no-explain", "process explained", "in-process physics", "in-process caps", "in-process solve", "in-process explained"]
    for name in names:
        line = f"  {name:<34}{med('this', name):9.3f}"
        if args.vs:
            line += f"{med('vs', name):9.3f}{med('this', name) / med('vs', name):9.2f}"
        print(line)
    print("  (physics: every shape's memory, prefill and decode coefficients; caps: every replica's TPOT and TTFT bisections;")
    print("   in-process solve/explained: explain.solve.solve on a fresh problem, imports and the catalog's load excluded)")


if __name__ == "__main__":
    main()
