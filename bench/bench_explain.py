"""What the explanation costs, in one run (medians of CPU time, interleaved): whole
`plan-opt solve` processes with and without the explanation at 32 options, at
bench_solve.py's FULL (960) and at FULL with every weight and KV format the catalog has
(13 × 5: 10,400 options; issue 44's 14,560 counted 7 KV formats); the rate form
(`chat-70b-at-20-rps.yaml`) beside the users form (`chat-llama70b.yaml`); and a warm
POST /solve with the full explanation (FastAPI's TestClient in one process, the
problem cached as `plan-opt serve` caches it). Targets (issue 44): the largest search
explained in at most 3 s of CPU; the rate form at most 1.5 × the users form; the warm
HTTP solve at most 100 ms.

    python bench/bench_explain.py [--runs 5] [--vs /path/to/other/checkout]

`--vs` runs the same on another checkout (main's, say) in the same loop, so the before
and after come from one run. Each checkout's bytecode is compiled first.
"""

from __future__ import annotations

import argparse
import compileall
import copy
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

FULL_TARGET_S = 3.0
RATE_RATIO_TARGET = 1.5
WARM_HTTP_TARGET_S = 0.100
EVERY_WEIGHT = ["fp16", "bf16", "fp8", "int8", "int4-awq", "int4-gptq", "fp4", "mxfp4", "q8_0", "q4_0", "q6_k", "q5_k_m", "q4_k_m"]
EVERY_KV = ["fp16", "bf16", "fp8", "q8_0", "q4_0"]
WARM_SPEC = "specs/chat-llama70b.yaml"

# Run in each checkout (its own `solver`): the median CPU of a warm POST /solve.
WARM_HTTP = """
import json, statistics, sys, time
from pathlib import Path
from fastapi.testclient import TestClient
from solver.api.app import create_app
client = TestClient(create_app())
body = Path(sys.argv[1]).read_bytes()
assert client.post("/solve", content=body).status_code == 200  # the problem built and cached
times = []
for _ in range(int(sys.argv[2])):
    t = time.process_time()
    r = client.post("/solve", content=body)
    times.append(time.process_time() - t)
    assert r.status_code == 200 and r.json()["sensitivity"], r.text[:300]
print(json.dumps(statistics.median(times)))
"""


def specs(tmp: Path) -> list[tuple[str, str]]:
    """(name, spec path relative to a checkout or absolute)."""

    def full_with(**search: object) -> str:
        data = copy.deepcopy(FULL)
        data["search"].update(search)
        path = tmp / f"full-{len(list(tmp.iterdir()))}.yaml"
        path.write_text(yaml.safe_dump(data))
        return str(path)

    return [
        ("32 options (FULL on h100-sxm, h200)", full_with(gpus=["h100-sxm", "h200"], weights=["bf16", "fp8"], kv_cache=["bf16"])),
        ("960 options (bench_solve FULL)", full_with()),
        ("10,400 options (FULL, 13 W x 5 KV)", full_with(weights=EVERY_WEIGHT, kv_cache=EVERY_KV)),
        ("users form: chat-llama70b", "specs/chat-llama70b.yaml"),
        ("rate form: chat-70b-at-20-rps", "specs/chat-70b-at-20-rps.yaml"),
    ]


def options(spec: str) -> int:
    """Options the spec searches (this checkout's count)."""
    from solver.catalog import default_catalog
    from solver.optimise.shapes import build_problem
    from solver.spec.solve_spec import load_spec

    path = spec if Path(spec).is_absolute() else str(ROOT / spec)
    return len(build_problem(load_spec(path)[0], default_catalog(), Path(path).parent).shapes)


def run(root: Path, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run([sys.executable, *argv], cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True)
    if done.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(argv)} in {root}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    return done


def cpu_of(root: Path, spec: str, explain: bool) -> float:
    """User + system CPU of one whole `plan-opt solve` process in checkout `root`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run(root, ["-m", "solver.cli", "solve", spec, *([] if explain else ["--no-explain"])])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def warm_http(root: Path, requests: int) -> float:
    return float(json.loads(run(root, ["-c", WARM_HTTP, WARM_SPEC, str(requests)]).stdout))


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "missed"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--vs", type=Path, help="another checkout, measured in the same loop (the 'before')")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    trees = {"this": ROOT, **({"vs": args.vs.resolve()} if args.vs else {})}
    for root in trees.values():
        compileall.compile_dir(root / "solver", quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        cases = specs(Path(tmp))
        counts = {name: options(spec) for name, spec in cases}
        todo = [(name, spec, tree, explain) for name, spec in cases for tree in trees for explain in (True, False)]
        got: dict[tuple[str, str, bool], list[float]] = {(n, t, e): [] for n, _, t, e in todo}
        warm: dict[str, list[float]] = {tree: [] for tree in trees}
        for _ in range(args.runs):  # interleaved: a slow moment of the machine spreads over every case
            for name, spec, tree, explain in todo:
                got[(name, tree, explain)].append(cpu_of(trees[tree], spec, explain))
            for tree in trees:
                warm[tree].append(warm_http(trees[tree], 7))

    def med(name: str, tree: str, explain: bool) -> float:
        return statistics.median(got[(name, tree, explain)])

    print(f"plan-opt solve, whole processes, median CPU s of {args.runs} (interleaved); this = {ROOT}" + (f", vs = {args.vs}" if args.vs else ""))
    head = f"  {'':<38}{'options':>8}{'explained':>10}{'plan only':>10}{'explanation':>12}"
    print(head + ("   | vs: explained  plan only  explanation   explained this/vs" if args.vs else ""))
    for name, _ in cases:
        e, p = med(name, "this", True), med(name, "this", False)
        line = f"  {name:<38}{counts[name]:8,}{e:10.2f}{p:10.2f}{e - p:12.2f}"
        if args.vs:
            ve, vp = med(name, "vs", True), med(name, "vs", False)
            line += f"   | {ve:13.2f}{vp:11.2f}{ve - vp:13.2f}   × {e / ve:4.2f}"
        print(line)
    print(f"warm POST /solve ({WARM_SPEC}, full explanation), median CPU of {args.runs} runs × medians of 7 requests:")
    for tree in trees:
        print(f"  {tree}: {statistics.median(warm[tree]) * 1e3:.0f} ms")
    biggest = cases[2][0]
    for tree in trees:
        f = med(biggest, tree, True)
        ratio = med("rate form: chat-70b-at-20-rps", tree, True) / med("users form: chat-llama70b", tree, True)
        w = statistics.median(warm[tree])
        print(
            f"{tree}: {counts[biggest]:,} options explained {f:.2f} s (≤ {FULL_TARGET_S:g} s: {verdict(f, FULL_TARGET_S)}); "
            f"rate form / users form × {ratio:.2f} (≤ {RATE_RATIO_TARGET:g}: {verdict(ratio, RATE_RATIO_TARGET)}); "
            f"warm HTTP solve {w * 1e3:.0f} ms (≤ {WARM_HTTP_TARGET_S * 1e3:.0f} ms: {verdict(w, WARM_HTTP_TARGET_S)})"
        )


if __name__ == "__main__":
    main()
