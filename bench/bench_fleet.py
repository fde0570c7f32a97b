"""Time `plan-opt fleet` on 1, 10, 30 and 100 workloads over the whole catalog, the
whole process (imports, physics, CP-SAT, report), this tree against another (main) in
one run, paired: each size runs the baseline then this tree, `--runs` times, and the
medians of the child processes' CPU time (user + system) are printed beside the wall
time, the answer's status and gap, and the options: those every shape gives, those
derived (optimise/fleet_lazy.py) and those dominance pruning keeps.
Target (issue 44): 100 workloads ≤ 10 s, optimal or with the gap stated.

The workloads are drawn from a fixed seed over the bundled catalog's models (every one
served by some GPU), with varied users, context, prompt share and targets.

    python bench/bench_fleet.py [--runs 3] [--vs /work/main] [--sizes 1,10,30,100]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = [
    "llama-3.1-8b", "llama-3.1-70b", "llama-3.2-3b", "llama-3.3-70b", "qwen2.5-7b", "qwen2.5-14b",
    "qwen2.5-32b", "qwen2.5-72b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "mixtral-8x7b",
    "mistral-7b", "gpt-oss-20b", "gemma-3-27b", "phi-4", "llama-3.2-1b",
]  # fmt: skip


def fleet_spec(n: int, seed: int = 0) -> dict:
    """n workloads, the same for a given (n, seed): the first n of the seed's sequence."""
    rng = random.Random(seed)
    workloads = []
    for i in range(n):
        ctx = rng.choice([2048, 4096, 8192, 16384])
        workloads.append(
            {
                "name": f"svc{i:03d}",
                "model": MODELS[i % len(MODELS)],
                "workload": {"users": rng.choice([20, 50, 100, 200, 400]), "context_tokens": ctx, "prompt_tokens": ctx * rng.choice([1, 2, 3]) // 4},
                "sla": {"max_ttft": rng.choice(["500ms", "1s", "2s"]), "max_tpot": rng.choice(["30ms", "50ms", "80ms"])},
                "priority": rng.choice([1, 2, 3]),
            }
        )
    return {
        "workloads": workloads,
        "search": {"gpus": ["all"], "tp": [1, 2, 4, 8], "weights": ["bf16", "fp8"], "kv_cache": ["bf16", "fp8"]},
        "inventory": {"a100-80gb": 16},
        "quota": {"h100-sxm": 32},
    }


def run_cli(tree: Path, path: Path) -> tuple[float, float, dict | str]:
    """(CPU s, wall s, the JSON answer or the refusal's first line) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    p = subprocess.run(
        [sys.executable, "-m", "solver.cli", "fleet", str(path), "--format", "json"], cwd=tree, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode not in (0, 3) or not p.stdout.strip():
        return cpu, wall, (p.stderr.strip().splitlines() or ["no output"])[-1][:110]
    return cpu, wall, json.loads(p.stdout)


def answer(out: dict | str) -> str:
    if isinstance(out, str):
        return f"refused: {out}"
    gap = out.get("optimality")
    proof = f"gap {gap['gap']:.2%} ({gap['solver_status']})" if gap else "proven"
    return f"{out['status']}, {proof}, ${out['cost_usd_per_hour']:,.2f}/h, {sum(out['gpus'].values())} GPUs"


def option_counts(path: Path) -> tuple[int, int, int, float]:
    """The options options_of derives with every shape derived, those this tree's
    classes derive (fleet_lazy.py leaves out what pruning would drop whatever its
    capacity), those dominance pruning keeps, and CP-SAT's own wall time (this tree's
    code, in this process)."""
    from solver.catalog import default_catalog
    from solver.optimise.fleet import solve_fleet
    from solver.optimise.fleet_classes import build_classes
    from solver.optimise.fleet_options import options_of
    from solver.spec.fleet_spec import load_fleet_spec

    fs, _ = load_fleet_spec(path)
    classes = build_classes(fs, default_catalog())
    res = solve_fleet(fs, classes)
    every = sum(len(options_of(sc.problem)[0]) for sc in classes)
    return every, res.options_before, res.options_after, res.wall_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--vs", type=Path, default=Path("/work/main"), help="the baseline tree (default /work/main)")
    ap.add_argument("--sizes", default="1,10,30,100")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"plan-opt fleet, whole process, median of {args.runs} paired runs (CPU s = user + system of the child; wall s beside)")
        print(f"  before: {args.vs}   after: {ROOT}")
        for n in sizes:
            path = Path(tmp) / f"fleet-{n}.yaml"
            path.write_text(yaml.safe_dump(fleet_spec(n)))
            runs: dict[str, list[tuple[float, float, dict | str]]] = {"before": [], "after": []}
            for _ in range(args.runs):
                runs["before"].append(run_cli(args.vs, path))
                runs["after"].append(run_cli(ROOT, path))
            every, derived, pruned, cpsat_s = option_counts(path)
            print(
                f"{n:4d} workloads: options {every:,} with every shape derived, {derived:,} derived, {pruned:,} after pruning; CP-SAT {cpsat_s:.2f} s wall of the after"
            )
            for label, rs in runs.items():
                cpu = statistics.median(r[0] for r in rs)
                wall = statistics.median(r[1] for r in rs)
                print(f"       {label:6s} CPU {cpu:6.2f} s  wall {wall:6.2f} s   {answer(rs[-1][2])}")
            same = all(b[2] == a[2] for b, a in zip(runs["before"], runs["after"]))
            before, after = runs["before"][-1][2], runs["after"][-1][2]
            if same:
                print("       answers: the same JSON in every pair")
            elif isinstance(before, dict) and isinstance(after, dict):
                keys = ", ".join(k for k in sorted({*before, *after}) if before.get(k) != after.get(k))
                print(f"       answers differ in: {keys} (cost ${before['cost_usd_per_hour']:,.2f} -> ${after['cost_usd_per_hour']:,.2f}/h)")
            else:
                print("       answers differ (a refusal)")


if __name__ == "__main__":
    main()
