"""Time `plan-opt solve` on the full catalog, against an exhaustive enumeration of
the same space, in one run; how solve time grows with the catalog (1x, 2x, 4x the
devices); the Pareto frontiers of the largest spec in specs/; and a fleet of ten
workloads over the full catalog. Targets: the whole solve process, explanation
included, under 1 s; at least 10x faster than enumeration; growth at most linear;
a Pareto frontier (20+ points) under 3 s; the 10-workload fleet under 5 s.

    python bench/bench_solve.py [--runs 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FULL = {
    "model": "llama-3.1-70b",
    "workload": {"users": 64, "context_tokens": 8192, "prompt_tokens": 2048},
    "sla": {"max_ttft": "1s", "max_tpot": "50ms"},
    "search": {"gpus": ["all"], "tp": [1, 2, 4, 8], "pp": [1, 2], "weights": ["bf16", "fp8", "int4-awq"], "kv_cache": ["bf16", "fp8"]},
}


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def scaled(problem, k: int):
    """The problem with every device present k times (renamed copies, prices up by
    0.1 % per copy so that no two are tied)."""
    from solver.optimise.problem import Problem, Shape

    shapes, devices = [], []
    for copy in range(k):
        renamed = {}
        for d in problem.devices:
            price = d.price and dataclasses.replace(d.price, usd_per_gpu_hour=d.price.usd_per_gpu_hour * (1 + 0.001 * copy))
            nd = dataclasses.replace(d, name=f"{d.name}-{copy}" if copy else d.name, price=price)
            renamed[d.name] = nd
            devices.append(nd)
        for sh in problem.shapes:
            dep = dataclasses.replace(sh.deployment, device=renamed[sh.device.name])
            shapes.append(Shape(len(shapes), dep, sh.domain, sh.owned, sh.costs))
    return Problem(problem.spec, shapes, problem.workload, problem.targets, devices, problem.excluded)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    import yaml

    from solver.catalog import default_catalog
    from solver.explain.solve import solve
    from solver.optimise.candidates import candidates
    from solver.optimise.enumerate import exhaustive
    from solver.optimise.model import optimise
    from solver.optimise.scenario import scenario_of
    from solver.optimise.shapes import build_problem
    from solver.spec.solve_spec import parse_spec

    spec_file = ROOT / "bench" / "results" / "full-catalog.yaml"
    spec_file.parent.mkdir(exist_ok=True)
    spec_file.write_text(yaml.safe_dump(FULL))
    exe = shutil.which("plan-opt")
    cmd = [exe] if exe else [sys.executable, "-m", "solver.cli.main"]

    print(f"plan-opt solve on the full catalog ({args.runs} runs each; medians)")
    subprocess.run([*cmd, "solve", str(spec_file)], capture_output=True)  # warm caches
    whole = median_time(lambda: subprocess.run([*cmd, "solve", str(spec_file)], capture_output=True), args.runs)
    plan_only = median_time(lambda: subprocess.run([*cmd, "solve", str(spec_file), "--no-explain"], capture_output=True), args.runs)
    floor = median_time(
        lambda: subprocess.run(
            [sys.executable, "-c", "import pydantic; from solver.optimise.cpsat import cp_model; cp_model.CpModel"], capture_output=True, cwd=ROOT
        ),
        args.runs,
    )  # cp_model as plan-opt imports it, without pandas (solver/optimise/cpsat.py)
    print(f"  whole process, explanation included   {whole:7.3f} s")
    print(f"  whole process, plan only (--no-explain) {plan_only:5.3f} s")
    print(f"  floor: python + import pydantic + cp_model (cpsat.py) {floor:5.3f} s")

    catalog = default_catalog()
    problem = build_problem(parse_spec(FULL), catalog)
    s = scenario_of(problem)

    def cpsat_path(p=problem):
        p._physics.clear()
        cands = candidates(p)
        return optimise(cands, s.limits(), p.objective)

    def enumeration(p=problem):
        return exhaustive(p)

    cp = cpsat_path()
    en = enumeration()
    assert (cp.candidate.shape.index, cp.candidate.replicas) == (en.shape.index, en.replicas), "CP-SAT and enumeration disagree"
    t_cp = median_time(cpsat_path, args.runs)
    t_en = median_time(enumeration, max(1, args.runs // 2))
    t_explain = median_time(lambda: solve(problem), args.runs)
    print(f"in-process, {len(problem.shapes)} shapes on {len(problem.devices)} devices, {s.workload.users} users:")
    print(f"  CP-SAT (physics + model + proof)      {t_cp * 1e3:8.1f} ms")
    print(f"  exhaustive enumeration                {t_en * 1e3:8.1f} ms")
    print(f"  ratio enumeration / CP-SAT            {t_en / t_cp:8.1f} x")
    print(f"  solve with full explanation           {t_explain * 1e3:8.1f} ms")
    print("growth with the catalog (CP-SAT path, physics included):")
    base = None
    for k in (1, 2, 4):
        pk = scaled(problem, k)
        t = median_time(lambda pk=pk: cpsat_path(pk), args.runs)
        base = base or t
        print(f"  {k}x devices ({len(pk.shapes):5d} shapes)  {t * 1e3:8.1f} ms   {t / base:5.2f}x")
    bench_pareto_and_fleet(args.runs)
    bench_disaggregated(args.runs)


def bench_disaggregated(runs: int) -> None:
    """specs/long-prompts-disaggregated.yaml in-process: the CP-SAT path with aggregated
    plans only and with the pairs of pools too, and how the pairs and the time grow with
    the catalog (1x, 2x, 4x the devices). The copies of a device are dearer by 0.1 % and
    otherwise alike, so their prefill shapes are dominated and pruned: the growth shown is
    the pruned one (without pruning, pairs grow as decode options × prefill shapes)."""
    import yaml

    from solver.catalog import default_catalog
    from solver.optimise.candidates import candidates
    from solver.optimise.model import optimise
    from solver.optimise.scenario import scenario_of, with_serving
    from solver.optimise.shapes import build_problem
    from solver.spec.solve_spec import parse_spec

    spec = yaml.safe_load((ROOT / "specs" / "long-prompts-disaggregated.yaml").read_text())
    problem = build_problem(parse_spec(spec), default_catalog())
    s = scenario_of(problem)

    def path(p):
        p._physics.clear()
        p._caps.clear()
        p._pools.clear()
        p._transfers.clear()
        cands = candidates(p)
        return len(cands), optimise(cands, s.limits(), p.objective)

    aggregated = with_serving(problem, "aggregated")
    n_agg, sol_agg = path(aggregated)
    n_both, sol_both = path(problem)
    t_agg = median_time(lambda: path(aggregated), runs)
    t_both = median_time(lambda: path(problem), runs)
    print(f"disaggregated serving, specs/long-prompts-disaggregated.yaml ({len(problem.shapes)} shapes), physics included:")
    print(f"  aggregated only       {n_agg:6d} candidates  {t_agg * 1e3:8.1f} ms  ${sol_agg.chosen.cost_usd_per_hour:,.2f}/h")
    print(
        f"  both ways             {n_both:6d} candidates  {t_both * 1e3:8.1f} ms  ${sol_both.chosen.cost_usd_per_hour:,.2f}/h ({sol_both.chosen.serving})"
    )
    print("growth with the catalog (both ways):")
    base = None
    for k in (1, 2, 4):
        pk = scaled(problem, k)
        n, _ = path(pk)
        t = median_time(lambda pk=pk: path(pk), runs)
        base = base or t
        print(f"  {k}x devices ({len(pk.shapes):5d} shapes, {n:6d} candidates)  {t * 1e3:8.1f} ms   {t / base:5.2f}x")


TEN = [
    ("chat-70b", "llama-3.1-70b", {"users": 200, "context_tokens": 8192, "prompt_tokens": 2048}, {"max_ttft": "1s", "max_tpot": "50ms"}, 3),
    ("chat-8b", "llama-3.1-8b", {"users": 400, "context_tokens": 8192, "prompt_tokens": 2048}, {"max_ttft": "500ms", "max_tpot": "30ms"}, 2),
    ("code", "qwen2.5-7b", {"users": 300, "context_tokens": 4096, "prompt_tokens": 3584}, {"max_ttft": "300ms", "max_tpot": "15ms"}, 2),
    ("rag", "qwen2.5-32b", {"users": 50, "context_tokens": 32768, "prompt_tokens": 30000}, {"max_ttft": "5s", "max_tpot": "60ms"}, 2),
    ("agents", "qwen3-32b", {"users": 80, "context_tokens": 16384, "prompt_tokens": 12000}, {"max_ttft": "3s", "max_tpot": "40ms"}, 1),
    ("moe", "qwen3-30b-a3b", {"users": 150, "context_tokens": 8192, "prompt_tokens": 4096}, {"max_ttft": "1s", "max_tpot": "25ms"}, 1),
    ("mixtral", "mixtral-8x7b", {"users": 60, "context_tokens": 8192, "prompt_tokens": 4096}, {"max_ttft": "2s", "max_tpot": "40ms"}, 1),
    ("small", "llama-3.2-3b", {"users": 500, "context_tokens": 4096, "prompt_tokens": 2048}, {"max_ttft": "300ms", "max_tpot": "20ms"}, 1),
    ("gemma", "gemma-2-27b", {"users": 40, "context_tokens": 8192, "prompt_tokens": 4096}, {"max_ttft": "2s", "max_tpot": "50ms"}, 1),
    ("phi", "phi-4", {"users": 120, "context_tokens": 16384, "prompt_tokens": 8192}, {"max_ttft": "2s", "max_tpot": "40ms"}, 1),
]


def bench_pareto_and_fleet(runs: int) -> None:
    from solver.catalog import default_catalog
    from solver.optimise.fleet import solve_fleet
    from solver.optimise.fleet_classes import build_classes
    from solver.optimise.pareto import frontiers
    from solver.optimise.shapes import build_problem
    from solver.spec.fleet_spec import FleetSpec
    from solver.spec.solve_spec import load_spec

    catalog = default_catalog()
    largest = max(
        (p for p in (ROOT / "specs").glob("*.yaml") if not p.name.startswith(("fleet-", "impossible")) and not p.stem.endswith("-profile")),
        key=lambda p: len(build_problem(load_spec(p)[0], catalog).shapes),
    )

    def pareto():
        problem = build_problem(load_spec(largest)[0], catalog)
        return frontiers(problem)

    fronts = pareto()
    t = median_time(pareto, runs)
    sizes = ", ".join(f"{a} {len(f.points)}" for a, f in fronts.items())
    print(f"Pareto frontiers of {largest.name} (points: {sizes}), physics included:")
    print(f"  median to the proven frontiers        {t * 1e3:8.1f} ms")
    spec = {
        "workloads": [{"name": n, "model": m, "workload": w, "sla": sla, "priority": pr} for n, m, w, sla, pr in TEN],
        "search": {"gpus": ["all"], "tp": [1, 2, 4, 8], "weights": ["bf16", "fp8"], "kv_cache": ["bf16", "fp8"]},
        "inventory": {"a100-80gb": 16},
        "quota": {"h100-sxm": 32},
    }
    fs = FleetSpec.model_validate(spec)

    def fleet():
        return solve_fleet(fs, build_classes(fs, catalog))

    res = fleet()
    t = median_time(fleet, runs)
    print(f"fleet of {len(TEN)} workloads over the full catalog: {res.status}, {sum(res.gpus.values())} GPUs, ${res.cost_usd_per_hour:,.2f}/h")
    print(f"  median to the proven optimum (physics included) {t * 1e3:8.1f} ms (CP-SAT alone {res.wall_s * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
