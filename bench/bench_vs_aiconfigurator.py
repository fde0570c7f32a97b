"""plan-opt beside NVIDIA aiconfigurator on the same question, as whole processes in one
run (medians of CPU = user + system, interleaved): Llama-3.1-70B on at most 8 × H200,
prompts of 2,048 tokens (ISL), outputs of 6,144 (OSL), TTFT ≤ 500 ms, TPOT ≤ 40 ms
(issue 44: plan-opt 0.96 s against aiconfigurator's 6.0 s).

    python bench/bench_vs_aiconfigurator.py [--runs 3] [--aic-python /tmp/aicvenv/bin/python] [--users 256]

aiconfigurator: `aiconfigurator cli default` (its agg vs disagg search over the GPUs
given) with --system h200_sxm --total-gpus 8 --isl 2048 --osl 6144 --ttft 500 --tpot 40,
run by the Python of a separate venv (never the project's):

    python3 -m venv /tmp/aicvenv && /tmp/aicvenv/bin/pip install aiconfigurator==0.12.0 pyyaml

Without it plan-opt's time is printed alone, with a line saying aiconfigurator is not
installed. plan-opt: `plan-opt solve` of a spec asking the same (its explanation
included): the cheapest plan for `--users` concurrent users (256, the concurrency of
aiconfigurator's best aggregated plan on these 8 GPUs) on H200s, at most 8 GPUs, the
formats both search (bf16, fp8), aggregated and disaggregated serving.
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ISL, OSL, TTFT_MS, TPOT_MS, GPUS = 2048, 6144, 500, 40, 8
AIC_ARGS = ["--model-path", "meta-llama/Meta-Llama-3.1-70B", "--system", "h200_sxm", "--total-gpus", str(GPUS)]
AIC_ARGS += ["--isl", str(ISL), "--osl", str(OSL), "--ttft", str(TTFT_MS), "--tpot", str(TPOT_MS)]
AIC_MAIN = "import sys; from aiconfigurator.main import main; sys.argv[0] = 'aiconfigurator'; sys.exit(main())"


def spec_text(users: int) -> str:
    """plan-opt's spec of the question (YAML)."""
    return f"""model: llama-3.1-70b
workload:
  users: {users}
  prompt_tokens: {ISL}
  output_tokens: {OSL}
sla:
  max_ttft: {TTFT_MS}ms
  max_tpot: {TPOT_MS}ms
search:
  gpus: [h200]
  max_gpus: {GPUS}
  weights: [bf16, fp8]
  kv_cache: [bf16, fp8]
  serving: [aggregated, disaggregated]
objective: min_cost
"""


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one whole process; a failed run stops the bench."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def aic_found(python: Path) -> str | None:
    """aiconfigurator's version under `python`, None where it is not installed there."""
    if not python.exists():
        return None
    done = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('aiconfigurator'))"], capture_output=True)
    return done.stdout.decode().strip() if done.returncode == 0 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--aic-python", type=Path, default=Path("/tmp/aicvenv/bin/python"), help="the Python of the venv with aiconfigurator")
    ap.add_argument("--users", type=int, default=256, help="concurrent users in plan-opt's spec")
    args = ap.parse_args()
    if args.runs < 1 or args.users < 1:
        ap.error(f"--runs and --users take a whole number of at least 1 (got --runs {args.runs}, --users {args.users})")
    compileall.compile_dir(ROOT / "solver", quiet=1)  # as installed: a PYTHONDONTWRITEBYTECODE shell compiles every module each run
    version = aic_found(args.aic_python)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "llama70b-8xh200.yaml"
        spec.write_text(spec_text(args.users))
        cases = {"plan-opt": ([sys.executable, "-m", "solver.cli", "solve", str(spec)], ROOT, {**os.environ, "PYTHONPATH": str(ROOT)})}
        if version:
            aic_env = {**os.environ, "AICONFIGURATOR_LOG_LEVEL": "ERROR"}
            cases["aiconfigurator"] = ([str(args.aic_python), "-c", AIC_MAIN, "cli", "default", *AIC_ARGS, "--save-dir", tmp], Path(tmp), aic_env)
        got: dict[str, list[float]] = {name: [] for name in cases}
        t = time.perf_counter()
        for _ in range(args.runs):  # interleaved: a slow moment of the machine spreads over both
            for name, (argv, cwd, env) in cases.items():
                got[name].append(timed(argv, cwd, env))
        wall = time.perf_counter() - t
    print(f"Llama-3.1-70B, ≤ {GPUS} × H200, ISL {ISL}, OSL {OSL}, TTFT ≤ {TTFT_MS} ms, TPOT ≤ {TPOT_MS} ms; whole processes,")
    print(f"median CPU (user + system) of {args.runs} interleaved runs ({wall:.0f} s wall in all)")
    ours = statistics.median(got["plan-opt"])
    print(f"  plan-opt solve ({args.users} users, explanation included)   {ours:6.2f} s CPU")
    if not version:
        print(f"  aiconfigurator: not installed at {args.aic_python} (pip install aiconfigurator==0.12.0 in a venv of its own; --aic-python)")
        return
    theirs = statistics.median(got["aiconfigurator"])
    print(f"  aiconfigurator {version} cli default                      {theirs:6.2f} s CPU")
    print(f"  plan-opt / aiconfigurator: × {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
