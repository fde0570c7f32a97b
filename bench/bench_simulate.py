"""Time the traffic simulator (solver/traffic/simulate.py) on one replica under steady
load: Poisson arrivals at 80 % of the replica's saturation rate, prompts of about
1,000 tokens and outputs of about 300 (lognormal), max_num_seqs 256, a budget of
8,192 tokens and a KV cache of 400k tokens, with a synthetic affine iteration cost
shaped like a 70B model on one H100. Target: 100,000 requests in under 5 s, time
growing linearly with the request count (N/4, N/2, N).

    python bench/bench_simulate.py [--requests 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = simulate(requests, cost, LIMITS)
        times.append(time.perf_counter() - start)
    assert result is not None
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fixed-ms", type=float, default=12.0, help="per iteration (default 12)")
    ap.add_argument("--context-us", type=float, default=1.5, help="per resident context token a decode step reads (default 1.5)")
    ap.add_argument("--prompt-ms-per-1k", type=float, default=0.2, help="per 1,000 prompt tokens (default 0.2)")
    ap.add_argument("--attention-ps-per-pair", type=float, default=0.1, help="per prompt attention pair (default 0.1)")
    args = ap.parse_args()
    cost = AffineCost(args.fixed_ms * 1e-3, args.context_us * 1e-6, args.prompt_ms_per_1k * 1e-6, args.attention_ps_per_pair * 1e-12)

    n = args.requests
    print(f"cost: {args.fixed_ms:g} ms + {args.context_us:g} µs/context token + {args.prompt_ms_per_1k:g} ms/1k prompt tokens")
    rows = []
    for size in (n // 4, n // 2, n):
        requests, rate = workload(size, cost)
        wall, r = timed(requests, cost, args.runs)
        rows.append((size, wall))
        it = sum(s.iterations for s in r.replicas)
        print(
            f"{size:>8,} requests at {rate:.3g}/s: {wall:6.2f} s median of {args.runs} "
            f"({wall / size * 1e6:.1f} µs/request; {it:,} iterations simulated, utilisation {r.utilisation:.0%}, "
            f"P50/P90 TTFT {r.percentile('ttft_s', 50):.3g}/{r.percentile('ttft_s', 90):.3g} s, "
            f"P50 TPOT {r.percentile('tpot_s', 50) * 1e3:.3g} ms, max queue {max(s.max_queue for s in r.replicas)})"
        )
    (n1, t1), (n2, t2), (n3, t3) = rows
    print(f"growth: ×{t2 / t1:.2f} for ×{n2 / n1:.0f} requests, ×{t3 / t2:.2f} for ×{n3 / n2:.0f} (linear: ×2)")
    verdict = "meets" if t3 < 5.0 or n != 100_000 else "MISSES"
    print(f"target: {n:,} requests under 5 s: {verdict} ({t3:.2f} s)")


if __name__ == "__main__":
    main()
