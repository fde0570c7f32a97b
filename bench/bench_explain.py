"""What the explanation costs, whole processes, in one run (medians of CPU, interleaved):
`plan-opt solve` with and without its explanation on a small spec, on the full catalog
(bench_solve.py's FULL: every GPU, TP 1/2/4/8, PP 1/2, three weight and two KV formats),
and the rate form (`chat-70b-at-20-rps.yaml`) beside the users form
(`chat-llama70b.yaml`). Targets (issue 44): the full catalog solved and explained in at
most 3 s of CPU; the rate form at most 1.5 × the users form.

    python bench/bench_explain.py [--runs 5] [--vs /path/to/other/checkout]

`--vs` runs the same commands on another checkout (main's, say) in the same loop, so the
before and after come from one run. Each checkout's bytecode is compiled first.
"""

from __future__ import annotations

import argparse
import compileall
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

FULL_TARGET_S = 3.0
RATE_RATIO_TARGET = 1.5


def cases(full_spec: str) -> list[tuple[str, str]]:
    """(name, spec path relative to a checkout or absolute)."""
    return [
        ("small: latency-critical-8b", "specs/latency-critical-8b.yaml"),
        ("full catalog (bench_solve FULL)", full_spec),
        ("users form: chat-llama70b", "specs/chat-llama70b.yaml"),
        ("rate form: chat-70b-at-20-rps", "specs/chat-70b-at-20-rps.yaml"),
    ]


def cpu_of(root: Path, spec: str, explain: bool) -> float:
    """User + system CPU of one whole `plan-opt solve` process in checkout `root`."""
    argv = [sys.executable, "-m", "solver.cli", "solve", spec, *([] if explain else ["--no-explain"])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(argv)} in {root}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--vs", type=Path, help="another checkout, measured in the same loop (the 'before')")
    args = ap.parse_args()
    trees = {"this": ROOT, **({"vs": args.vs.resolve()} if args.vs else {})}
    for root in trees.values():
        compileall.compile_dir(root / "solver", quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp) / "full-catalog.yaml"
        full.write_text(yaml.safe_dump(FULL))
        todo = [(name, spec, tree, explain) for name, spec in cases(str(full)) for tree in trees for explain in (True, False)]
        got: dict[tuple[str, str, bool], list[float]] = {(n, t, e): [] for n, _, t, e in todo}
        for _ in range(args.runs):  # interleaved: a slow moment of the machine spreads over every case
            for name, spec, tree, explain in todo:
                got[(name, tree, explain)].append(cpu_of(trees[tree], spec, explain))

    def med(name: str, tree: str, explain: bool) -> float:
        return statistics.median(got[(name, tree, explain)])

    print(f"plan-opt solve, whole processes, median CPU s of {args.runs} (interleaved); this = {ROOT}" + (f", vs = {args.vs}" if args.vs else ""))
    head = f"  {'':<34}{'explained':>10}{'plan only':>10}{'explanation':>12}"
    print(head + ("   | vs: explained  plan only  explanation   explained this/vs" if args.vs else ""))
    for name, _ in cases(""):
        e, p = med(name, "this", True), med(name, "this", False)
        line = f"  {name:<34}{e:10.2f}{p:10.2f}{e - p:12.2f}"
        if args.vs:
            ve, vp = med(name, "vs", True), med(name, "vs", False)
            line += f"   | {ve:13.2f}{vp:11.2f}{ve - vp:13.2f}   × {e / ve:4.2f}"
        print(line)
    for tree in trees:
        f = med("full catalog (bench_solve FULL)", tree, True)
        ratio = med("rate form: chat-70b-at-20-rps", tree, True) / med("users form: chat-llama70b", tree, True)
        print(
            f"{tree}: full catalog explained {f:.2f} s (≤ {FULL_TARGET_S:g} s: {'met' if f <= FULL_TARGET_S else 'missed'}); "
            f"rate form / users form × {ratio:.2f} (≤ {RATE_RATIO_TARGET:g}: {'met' if ratio <= RATE_RATIO_TARGET else 'missed'})"
        )


if __name__ == "__main__":
    main()
