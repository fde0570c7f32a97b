"""Time the traffic simulator (solver/traffic/simulate.py) on one replica under steady
load: Poisson arrivals at 80 % of the replica's saturation rate, prompts of about
1,000 tokens and outputs of about 300 (lognormal), max_num_seqs 256, a budget of
8,192 tokens and a KV cache of 400k tokens, with a synthetic affine iteration cost
shaped like a 70B model on one H100. Target (issue 44): 100,000 requests in at most
1.5 s of CPU, time growing linearly with the request count (N/4, N/2, N).

Beside it, the floor: a bare event loop that only prices each iteration with the same
cost model (as many iterations as the simulator simulated, no scheduling), timed in
the same process; the ratio is what the simulator's bookkeeping costs over it.

--vs TREE times another checkout (e.g. /work/main) against this one in one go: each
run is a fresh process per tree, the trees alternating, CPU time, medians; the digest
of every request's times and every replica's figures shows whether the results are the
same bit for bit.

    python bench/bench_simulate.py [--requests 100000] [--runs 3] [--vs /work/main]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A worker for --vs imports the simulator of the tree it is given instead.
TREE = Path(sys.argv[sys.argv.index("--tree") + 1]).resolve() if "--tree" in sys.argv else ROOT
sys.path.insert(0, str(TREE))

from solver.traffic.simulate import EngineLimits, Request, SimResult, simulate  # noqa: E402

LIMITS = EngineLimits(max_num_seqs=256, max_num_batched_tokens=8192, kv_capacity_tokens=400_000)
LOAD = 0.8


@dataclass(frozen=True)
class AffineCost:
    """Seconds per iteration: a fixed part (the weights read once), a part per resident
    context token (the KV read), a part per prompt token (the matmuls) and per
    attention pair; affine in every argument, as the physics is in the context."""

    fixed_s: float
    per_context_token_s: float
    per_prompt_token_s: float
    per_attention_pair_s: float

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        return (
            self.fixed_s
            + self.per_context_token_s * decode_context_tokens
            + self.per_prompt_token_s * prefill_tokens
            + self.per_attention_pair_s * prefill_attention_tokens
        )


def lognormal(rng: random.Random, mean: float, sigma: float, low: int, high: int) -> int:
    """A lognormal integer with about this mean, clipped to [low, high]."""
    mu = math.log(mean) - sigma * sigma / 2
    return min(high, max(low, round(rng.lognormvariate(mu, sigma))))


def shapes(n: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(lognormal(rng, 1000, 0.6, 16, 16_000), lognormal(rng, 300, 0.6, 1, 4_000)) for _ in range(n)]


def saturation_per_s(cost: AffineCost, sizes: list[tuple[int, int]]) -> float:
    """Requests per second one replica completes with its batch full: max_num_seqs
    decoders (or as many as the KV holds) at the mean context, each iteration also
    carrying its share of the prompts (batch / mean output of them)."""
    prompt = statistics.fmean(p for p, _ in sizes)
    output = statistics.fmean(o for _, o in sizes)
    context = prompt + output / 2
    batch = min(LIMITS.max_num_seqs, LIMITS.kv_capacity_tokens / context)
    prompts_per_iteration = batch / output
    iteration = (
        cost.fixed_s
        + cost.per_context_token_s * batch * context
        + prompts_per_iteration * (cost.per_prompt_token_s * prompt + cost.per_attention_pair_s * prompt * prompt / 2)
    )
    return batch / iteration / output


def workload(n: int, cost: AffineCost, seed: int = 1) -> tuple[list[Request], float]:
    sizes = shapes(n, seed)
    rate = LOAD * saturation_per_s(cost, sizes)
    rng = random.Random(seed + 1)
    t, out = 0.0, []
    for p, o in sizes:
        t += rng.expovariate(rate)
        out.append(Request(t, p, o))
    return out, rate


def timed(requests: list[Request], cost: AffineCost, runs: int) -> tuple[float, SimResult]:
    """Median CPU seconds of `runs` simulations, and the last one's result."""
    times, result = [], None
    for _ in range(runs):
        start = time.process_time()
        result = simulate(requests, cost, LIMITS)
        times.append(time.process_time() - start)
    assert result is not None
    return statistics.median(times), result


def bare_loop_s(iterations: int, requests: list[Request], cost: AffineCost) -> float:
    """CPU seconds of the floor: an event loop that prices `iterations` iterations with
    the same cost model and nothing else (a batch of the mean size, its context growing
    a token a step, arrivals taken in order), no queue, blocks or completions."""
    price = cost.iteration_s
    per_arrival = max(1, iterations // max(1, len(requests)))
    arrivals = iter(requests)
    start = time.process_time()
    clock, n, context = 0.0, 16, 16_000
    for i in range(iterations):
        if i % per_arrival == 0:
            next(arrivals, None)
        clock += price(n, context, 0, 0.0)
        context += n
    assert clock > 0
    return time.process_time() - start


def digest(r: SimResult) -> str:
    """Every request's and replica's figures, hashed: equal digests, equal results bit for bit."""
    h = hashlib.sha256()
    for x in r.results:
        h.update(repr((x.replica, x.first_token_s, x.finish_s, x.preemptions)).encode())
    for s in r.replicas:
        h.update(repr((s.busy_s, s.iterations, s.preemptions, s.max_queue, s.mean_queue, s.tokens_out, s.queue_timeline)).encode())
    h.update(repr((r.duration_s, len(r.rejected))).encode())
    return h.hexdigest()[:16]


def worker(n: int, cost: AffineCost) -> None:
    """One run in this process: the simulator's CPU seconds and the bare loop's, as JSON."""
    requests, _ = workload(n, cost)
    sim_s, r = timed(requests, cost, 1)
    iterations = sum(s.iterations for s in r.replicas)
    bare_s = bare_loop_s(iterations, requests, cost)
    print(json.dumps({"sim_s": sim_s, "bare_s": bare_s, "iterations": iterations, "digest": digest(r)}))


def versus(trees: list[Path], args: argparse.Namespace) -> None:
    """Paired runs of N requests on each tree, alternating, one fresh process each."""
    runs: dict[Path, list[dict[str, float | str]]] = {t: [] for t in trees}
    flags = ["--requests", str(args.requests), "--fixed-ms", str(args.fixed_ms), "--context-us", str(args.context_us)]
    flags += ["--prompt-ms-per-1k", str(args.prompt_ms_per_1k), "--attention-ps-per-pair", str(args.attention_ps_per_pair)]
    for _ in range(args.runs):
        for t in trees:
            env = dict(os.environ, PYTHONPATH=str(t))
            out = subprocess.run(
                [sys.executable, __file__, "--worker", "--tree", str(t), *flags], env=env, check=True, capture_output=True, text=True
            )
            runs[t].append(json.loads(out.stdout.splitlines()[-1]))
    n = args.requests
    print(f"{n:,} requests, {args.runs} paired runs (a fresh process per tree per run, CPU time, medians):")
    for t in trees:
        sim = statistics.median(float(x["sim_s"]) for x in runs[t])
        bare = statistics.median(float(x["bare_s"]) for x in runs[t])
        ratio = statistics.median(float(x["sim_s"]) / float(x["bare_s"]) for x in runs[t])
        digests = sorted({str(x["digest"]) for x in runs[t]})
        print(
            f"  {str(t):<28} {sim:6.3f} s  {n / sim:>9,.0f} requests/s  bare loop {bare:.3f} s "
            f"({runs[t][0]['iterations']:,} iterations priced)  ×{ratio:.2f} the bare loop  digest {', '.join(digests)}"
        )
    a, b = (statistics.median(float(x["sim_s"]) for x in runs[t]) for t in trees)
    same = {str(x["digest"]) for t in trees for x in runs[t]}
    print(f"  {trees[1]} / {trees[0]}: ×{b / a:.2f}; results {'identical' if len(same) == 1 else 'DIFFER'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fixed-ms", type=float, default=12.0, help="per iteration (default 12)")
    ap.add_argument("--context-us", type=float, default=1.5, help="per resident context token a decode step reads (default 1.5)")
    ap.add_argument("--prompt-ms-per-1k", type=float, default=0.2, help="per 1,000 prompt tokens (default 0.2)")
    ap.add_argument("--attention-ps-per-pair", type=float, default=0.1, help="per prompt attention pair (default 0.1)")
    ap.add_argument("--vs", type=Path, help="also time this other checkout's simulator (e.g. /work/main), paired with this one")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    cost = AffineCost(args.fixed_ms * 1e-3, args.context_us * 1e-6, args.prompt_ms_per_1k * 1e-6, args.attention_ps_per_pair * 1e-12)
    if args.worker:
        worker(args.requests, cost)
        return
    if args.vs is not None:
        versus([args.vs.resolve(), ROOT], args)
        return

    n = args.requests
    print(f"cost: {args.fixed_ms:g} ms + {args.context_us:g} µs/context token + {args.prompt_ms_per_1k:g} ms/1k prompt tokens")
    rows = []
    for size in (n // 4, n // 2, n):
        requests, rate = workload(size, cost)
        wall, r = timed(requests, cost, args.runs)
        rows.append((size, wall))
        it = sum(s.iterations for s in r.replicas)
        print(
            f"{size:>8,} requests at {rate:.3g}/s: {wall:6.2f} s CPU median of {args.runs} "
            f"({size / wall:,.0f} requests/s; {it:,} iterations simulated, utilisation {r.utilisation:.0%}, "
            f"P50/P90 TTFT {r.percentile('ttft_s', 50):.3g}/{r.percentile('ttft_s', 90):.3g} s, "
            f"P50 TPOT {r.percentile('tpot_s', 50) * 1e3:.3g} ms, max queue {max(s.max_queue for s in r.replicas)})"
        )
    (n1, t1), (n2, t2), (n3, t3) = rows
    print(f"growth: ×{t2 / t1:.2f} for ×{n2 / n1:.0f} requests, ×{t3 / t2:.2f} for ×{n3 / n2:.0f} (linear: ×2)")
    bare = statistics.median(bare_loop_s(it, requests, cost) for _ in range(args.runs))
    print(f"bare loop pricing the same {it:,} iterations: {bare:.3f} s CPU; the simulator takes ×{t3 / bare:.2f} that")
    verdict = "meets" if t3 <= 1.5 or n != 100_000 else "MISSES"
    print(f"target: {n:,} requests in at most 1.5 s: {verdict} ({t3:.2f} s)")


if __name__ == "__main__":
    main()
