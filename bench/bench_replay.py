"""Time the replay of a day (solver/traffic/replay.py): the 70B chat plan of
specs/chat-70b-at-20-rps.yaml (solved first: its deployment's iteration model and engine
limits, its replicas' rate each), over 24 hourly slots of a daily profile (a quiet
night at a tenth of the peak, a daytime peak of --peak requests/s and a burst hour at
1.3× it), replicas per slot enough for each slot's rate at the plan's rate per replica,
ordered a 5-minute lag ahead. Prints the CPU time of drawing the requests and of the
whole replay, per seed, and the slots that miss; then the same for the bundled synthetic
trace (specs/synthetic-azure-layout-trace.csv, 2-minute slots).

    python bench/bench_replay.py [--peak 20] [--seeds 1] [--runs 3]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from solver.catalog import default_catalog  # noqa: E402
from solver.explain.solve import solve  # noqa: E402
from solver.optimise.shapes import build_problem  # noqa: E402
from solver.physics.iteration import iteration_model  # noqa: E402
from solver.spec.solve_spec import load_spec  # noqa: E402
from solver.traffic.replay import day_requests, replay  # noqa: E402
from solver.traffic.screen import engine_limits  # noqa: E402
from solver.traffic.trace import read_trace  # noqa: E402

LAG_S = 300.0


def profile(peak: float) -> list[float]:
    """Hourly rates: night at peak/10, a cosine day peaking at 14:00, a burst at 17:00."""
    rates = [peak * (0.1 + 0.9 * max(0.0, math.cos(math.pi * (h - 14) / 16)) ** 2) for h in range(24)]
    rates[17] = 1.3 * peak
    return rates


def cpu(f):  # type: ignore[no-untyped-def]
    t0 = time.process_time()
    out = f()
    return time.process_time() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peak", type=float, default=20.0)
    parser.add_argument("--seeds", type=int, default=1, choices=(1, 5))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    spec, _ = load_spec(ROOT / "specs" / "chat-70b-at-20-rps.yaml")
    problem = build_problem(spec, default_catalog())
    chosen = solve(problem, explain=False).solution.chosen
    assert chosen is not None
    d, w = chosen.shape.deployment, problem.workload
    assert w.traffic is not None
    cost, limits = iteration_model(d, w), engine_limits(d, w)
    per_replica = w.traffic.requests_per_s / chosen.replicas
    print(f"plan: {chosen.replicas} × {d.device.name} ({per_replica:.1f} requests/s a replica), lag {LAG_S:.0f} s, ordered a lag ahead")

    rates = profile(args.peak)
    plan = [max(1, math.ceil(r / per_replica)) for r in rates]
    print(f"day: peak {args.peak:g}/s, {sum(rates) * 3600:,.0f} requests expected; replicas {plan}")
    gen_s, total_s = [], []
    day = None
    for _ in range(args.runs):
        g, reqs = cpu(lambda: day_requests(3600, rates, w.traffic.prompt, w.traffic.output, 0))
        t, day = cpu(
            lambda: replay(
                3600,
                plan,
                cost,
                limits,
                problem.targets,
                rates_per_s=rates,
                prompt=w.traffic.prompt,
                output=w.traffic.output,
                lag_s=LAG_S,
                lead_s=LAG_S,
                front_end_s=cost.request_overhead_s,
                seeds=args.seeds,
            )  # fmt: skip
        )
        gen_s.append(g)
        total_s.append(t)
    assert day is not None
    n = day.requests
    t = statistics.median(total_s)
    print(
        f"  replay: {n:,} requests ({args.seeds} seed{'s' if args.seeds > 1 else ''}) in {t:.2f} s CPU (median of {args.runs}), "
        f"{n / t:,.0f} requests/s; drawing one seed's requests {statistics.median(gen_s):.2f} s"
    )
    print(f"  slots missing the SLA: {day.missing_slots or 'none'}")

    trace = read_trace(ROOT / "specs" / "synthetic-azure-layout-trace.csv")
    counts = trace.counts(120)
    tplan = [max(1, math.ceil(c / 120 / per_replica)) for c in counts]
    times = []
    for _ in range(args.runs):
        tt, tday = cpu(lambda: replay(120, tplan, cost, limits, problem.targets, requests=trace.requests, lag_s=60, lead_s=60))
        times.append(tt)
    print(
        f"trace: {len(trace.requests):,} requests in {len(counts)} slots, replicas {tplan}: {statistics.median(times):.3f} s CPU; missing {tday.missing_slots or 'none'}"
    )


if __name__ == "__main__":
    main()
