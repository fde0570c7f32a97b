"""Cold start, whole process, in one run (medians): `plan-opt solve` (explanation
included, and plan only) and `plan-opt evaluate` on bundled inputs, beside `python -c
pass` and the imports they need (pydantic; OR-Tools' cp_model, which imports pandas; its
binding without cp_model). Targets (issue 14): solve under 1 s, evaluate under 0.3 s.

    python bench/bench_cold_start.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CLI = [PY, "-m", "solver.cli.main"]
CASES = [
    ("python -c pass", [PY, "-c", "pass"]),
    ("import pydantic", [PY, "-c", "import pydantic"]),
    ("import pandas", [PY, "-c", "import pandas"]),
    ("import ortools.sat.python.cp_model", [PY, "-c", "import ortools.sat.python.cp_model"]),
    ("import its binding alone (cp_model_helper)", [PY, "-c", "from ortools.sat.python import cp_model_helper"]),
    ("import solver.explain.solve", [PY, "-c", "import solver.explain.solve"]),
    ("evaluate examples/seed-step1-llama8b-rtx4090.yaml", [*CLI, "evaluate", "examples/seed-step1-llama8b-rtx4090.yaml"]),
    ("solve specs/latency-critical-8b.yaml --no-explain", [*CLI, "solve", "specs/latency-critical-8b.yaml", "--no-explain"]),
    ("solve specs/latency-critical-8b.yaml", [*CLI, "solve", "specs/latency-critical-8b.yaml"]),
    ("solve specs/chat-llama70b.yaml", [*CLI, "solve", "specs/chat-llama70b.yaml"]),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    times: dict[str, list[float]] = {name: [] for name, _ in CASES}
    for _ in range(args.runs):  # interleaved, so a slow moment spreads over every case
        for name, cmd in CASES:
            t = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
            times[name].append(time.perf_counter() - t)
    print(f"cold start, whole process, medians of {args.runs} (interleaved):")
    for name, _ in CASES:
        print(f"  {name:<52} {statistics.median(times[name]):6.3f} s")


if __name__ == "__main__":
    main()
