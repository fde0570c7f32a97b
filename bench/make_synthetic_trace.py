"""Write specs/synthetic-azure-layout-trace.csv: a SYNTHETIC request trace (nothing
downloaded, nothing measured) in the column layout of the public Azure LLM inference
traces (TIMESTAMP,ContextTokens,GeneratedTokens; solver/traffic/trace.py cites it), for
the trace reader's tests and the replay bench.

24 minutes in twelve 2-minute slots: a quiet start, a peak 10× it, a burst, a decline.
Arrivals are Poisson at each slot's rate, prompts lognormal about 1,000 tokens (σ 0.8,
within [2, 8,000]) and outputs about 250 (σ 0.6, within [1, 2,000]); seeded, so the file
is the same on every run. Timestamps are written as the Azure files write them
(seven fractional digits) from a made-up start, 2026-01-01 00:00.

    python bench/make_synthetic_trace.py [--out specs/synthetic-azure-layout-trace.csv]
"""

from __future__ import annotations

import argparse
import math
import random
from datetime import datetime, timedelta
from pathlib import Path

SLOT_S = 120.0
RATES_PER_S = (0.2, 0.2, 0.4, 0.8, 1.4, 2.0, 2.0, 3.5, 1.8, 1.2, 0.6, 0.3)
START = datetime(2026, 1, 1)
SEED = 46


def lognormal(rng: random.Random, mean: float, sigma: float, low: int, high: int) -> int:
    mu = math.log(mean) - sigma * sigma / 2
    return min(high, max(low, round(rng.lognormvariate(mu, sigma))))


def rows(seed: int = SEED) -> list[tuple[float, int, int]]:
    rng = random.Random(seed)
    out = []
    for k, rate in enumerate(RATES_PER_S):
        t = k * SLOT_S + rng.expovariate(rate)
        while t < (k + 1) * SLOT_S:
            out.append((t, lognormal(rng, 1000, 0.8, 2, 8000), lognormal(rng, 250, 0.6, 1, 2000)))
            t += rng.expovariate(rate)
    return out


def stamp(t_s: float) -> str:
    """As the Azure files: date, time and seven fractional digits (100 ns ticks)."""
    whole = math.floor(t_s)
    moment = START + timedelta(seconds=whole)
    ticks = min(10**7 - 1, int((t_s - whole) * 1e7))
    return moment.strftime("%Y-%m-%d %H:%M:%S") + f".{ticks:07d}"


def text() -> str:
    """The file's contents."""
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [f"{stamp(t)},{p},{o}" for t, p, o in rows()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "specs" / "synthetic-azure-layout-trace.csv")
    args = parser.parse_args()
    args.out.write_text(text())
    print(f"{len(rows())} requests -> {args.out}")


if __name__ == "__main__":
    main()
