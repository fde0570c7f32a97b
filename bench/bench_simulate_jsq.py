"""Time the issue 43 item 6 cases (JSQ at high rates and on many replicas) as commands,
in this tree or another (--tree: a checkout of the commit before, for the before
figure). Each case's median wall time of --runs, CPU time beside it (the machine is
shared), or "> timeout" when a run did not finish.

    python bench/bench_simulate_jsq.py [--tree DIR] [--runs 3] [--timeout 300]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RATE_SPEC = """model: {model}
workload:
  requests_per_s: {rate}
  prompt_tokens: {{dist: lognormal, mean: 1000, p99: 6000}}
  output_tokens: {{dist: lognormal, mean: 300, p99: 1200}}
sla:
  ttft: {{p99: 2s}}
  tpot: {{p90: 50ms}}
search:
  gpus: [h100-sxm, h200, a100-80gb, l40s, mi300x]
  tp: [1, 2, 4, 8]
  weights: [bf16, fp8]
  kv_cache: [bf16, fp8]
simulation: {{routing: jsq}}
"""


def cases(folder: Path) -> list[tuple[str, list[str]]]:
    (folder / "r1e5.yaml").write_text(RATE_SPEC.format(model="llama-3.1-70b", rate=100_000))
    (folder / "r1e6.yaml").write_text(RATE_SPEC.format(model="llama-3.1-8b", rate=1_000_000))
    return [
        ("solve --no-explain, 70B at 10^5 req/s, jsq", ["solve", str(folder / "r1e5.yaml"), "--no-explain"]),
        ("solve --no-explain, 8B at 10^6 req/s, jsq", ["solve", str(folder / "r1e6.yaml"), "--no-explain"]),
        (
            "simulate chat-70b-at-20-rps --replicas 10000 --requests 200000 --routing jsq --one-seed",
            [
                "simulate",
                str(ROOT / "specs" / "chat-70b-at-20-rps.yaml"),
                "--replicas",
                "10000",
                "--requests",
                "200000",
                "--routing",
                "jsq",
                "--one-seed",
            ],
        ),
    ]


def timed(tree: Path, argv: list[str], timeout_s: float) -> tuple[float, float] | None:
    """(wall, CPU) seconds of one run, or None past the timeout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        subprocess.run(
            [sys.executable, "-m", "solver.cli", *argv], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - start, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=ROOT, help="the plan-opt tree to time (default this one)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a run may take (default 300)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv in cases(Path(tmp)):
            runs = [timed(args.tree.resolve(), argv, args.timeout) for _ in range(args.runs)]
            done = [r for r in runs if r is not None]
            if len(done) < len(runs):
                print(f"{name}: > {args.timeout:g} s ({len(runs) - len(done)} of {len(runs)} runs past it)", flush=True)
                continue
            print(
                f"{name}: {statistics.median(w for w, _ in done):.1f} s median of {len(done)} (CPU {statistics.median(c for _, c in done):.1f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
