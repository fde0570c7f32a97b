"""Time `plan-opt evaluate` as a whole process (start-up, catalog load, estimate,
report), the way a user meets it. Prints the median and spread of N runs for a few
inputs. Target (issue 2): median under 0.3 s.

    python bench/bench_evaluate.py [--runs 15]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "seed step 1 (TP=1, remedies)": ["evaluate", str(ROOT / "examples" / "seed-step1-llama8b-rtx4090.yaml")],
    "seed step 1, JSON": ["evaluate", str(ROOT / "examples" / "seed-step1-llama8b-rtx4090.yaml"), "--format", "json"],
    "70B chat, TP=4 (topology graph)": ["evaluate", str(ROOT / "examples" / "chat-llama70b-h100.yaml")],
    "--help (start-up floor)": ["--help"],
}
# What the process cannot avoid on this machine: the interpreter with its site hooks,
# and importing the libraries the edges are built on.
FLOORS = {
    "python -c pass": "pass",
    "import yaml": "import yaml",
    "import pydantic.BaseModel": "from pydantic import BaseModel",
    "import networkx": "import networkx",
}


def command() -> list[str]:
    exe = shutil.which("plan-opt")
    return [exe] if exe else [sys.executable, "-m", "solver.cli.main"]


def time_once(argv: list[str], cmd: list[str] | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run([*(cmd or command()), *argv], capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{done.stderr.decode()}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    print(f"plan-opt evaluate, whole process, {args.runs} runs each ({' '.join(command())})")
    print(f"{'case':<34} {'median':>8} {'min':>8} {'max':>8}")
    for name, argv in CASES.items():
        time_once(argv)  # warm the file cache
        times = [time_once(argv) for _ in range(args.runs)]
        print(f"{name:<34} {statistics.median(times):>7.3f}s {min(times):>7.3f}s {max(times):>7.3f}s")
    print("floors (same interpreter):")
    for name, code in FLOORS.items():
        times = [time_once(["-c", code], [sys.executable]) for _ in range(args.runs)]
        print(f"  {name:<32} {statistics.median(times):>7.3f}s {min(times):>7.3f}s {max(times):>7.3f}s")


if __name__ == "__main__":
    main()
