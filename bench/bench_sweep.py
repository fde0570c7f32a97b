"""`plan-opt sweep` of 1,000 scenarios (a 10 × 10 × 10 grid of users, TPOT and TTFT
targets over three GPUs), serially, in the local process pool and on a local Ray
instance, whole process each, in one run: scenarios per second and the speed-ups, and
that the three tables are the same.

    python bench/bench_sweep.py [--ray/--no-ray]
"""

from __future__ import annotations

import argparse
import filecmp
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
GRID = {
    "spec": {
        "model": "llama-3.1-8b",
        "workload": {"users": 32, "context_tokens": 4096, "prompt_tokens": 1024},
        "sla": {"max_ttft": "1s", "max_tpot": "40ms"},
        "search": {"gpus": ["l40s", "a100-80gb", "h100-sxm"], "tp": [1, 2], "weights": ["bf16", "fp8"], "kv_cache": ["bf16"]},
    },
    "axes": {
        "workload.users": [4, 8, 16, 32, 64, 96, 128, 192, 256, 512],
        "sla.max_tpot": [f"{x}ms" for x in (15, 20, 25, 30, 35, 40, 50, 60, 80, 100)],
        "sla.max_ttft": [f"{x}ms" for x in (200, 300, 400, 500, 750, 1000, 1500, 2000, 3000, 5000)],
    },
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ray", action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args()
    exe = [sys.executable, "-m", "solver.cli.main", "sweep"]
    with tempfile.TemporaryDirectory() as tmp:
        grid = Path(tmp) / "grid.yaml"
        grid.write_text(yaml.safe_dump(GRID))
        runs = [("serial", ["--workers", "1"]), ("process pool, 2 workers", ["--workers", "2"])]
        if args.ray:
            runs.append(("local Ray", ["--ray", "local"]))
        times = {}
        for name, flags in runs:
            out = Path(tmp) / f"{name.split()[0]}.csv"
            t = time.perf_counter()
            subprocess.run([*exe, str(grid), "-o", str(out), "--quiet", *flags], check=True, cwd=ROOT, capture_output=True)
            times[name] = (time.perf_counter() - t, out)
        n = 1000
        base = times["serial"][0]
        print(f"plan-opt sweep, {n:,} scenarios (10 users × 10 TPOT × 10 TTFT targets, 3 GPUs), whole process, one run:")
        for name, (secs, out) in times.items():
            same = filecmp.cmp(out, times["serial"][1], shallow=False)
            print(f"  {name:<26} {secs:7.1f} s  {n / secs:6.1f} scenarios/s  × {base / secs:4.2f}  table {'the same' if same else 'DIFFERS'}")


if __name__ == "__main__":
    main()
