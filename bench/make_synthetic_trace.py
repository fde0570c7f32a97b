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

`--day` writes specs/synthetic-azure-layout-trace-day.csv instead, the trace of
specs/trace-profile.yaml: an hour in twelve 5-minute slots (DAY_RATES_PER_S: a quiet
start at 1 request/s, a peak 8× it, a burst of 11 and a decline), same lengths, seed 4646.
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
DAY_SLOT_S = 300.0
DAY_RATES_PER_S = (1.0, 1.0, 1.5, 3.0, 5.0, 8.0, 8.0, 11.0, 7.0, 4.0, 2.0, 1.2)
DAY_SEED = 4646


def lognormal(rng: random.Random, mean: float, sigma: float, low: int, high: int) -> int:
    mu = math.log(mean) - sigma * sigma / 2
    return min(high, max(low, round(rng.lognormvariate(mu, sigma))))


def rows(seed: int = SEED, rates: tuple[float, ...] = RATES_PER_S, slot_s: float = SLOT_S) -> list[tuple[float, int, int]]:
    rng = random.Random(seed)
    out = []
    for k, rate in enumerate(rates):
        t = k * slot_s + rng.expovariate(rate)
        while t < (k + 1) * slot_s:
            out.append((t, lognormal(rng, 1000, 0.8, 2, 8000), lognormal(rng, 250, 0.6, 1, 2000)))
            t += rng.expovariate(rate)
    return out


def stamp(t_s: float) -> str:
    """As the Azure files: date, time and seven fractional digits (100 ns ticks)."""
    whole = math.floor(t_s)
    moment = START + timedelta(seconds=whole)
    ticks = min(10**7 - 1, int((t_s - whole) * 1e7))
    return moment.strftime("%Y-%m-%d %H:%M:%S") + f".{ticks:07d}"


def text(day: bool = False) -> str:
    """The file's contents (`day`: the longer trace of specs/trace-profile.yaml)."""
    got = rows(DAY_SEED, DAY_RATES_PER_S, DAY_SLOT_S) if day else rows()
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [f"{stamp(t)},{p},{o}" for t, p, o in got]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--day", action="store_true", help="the hour-long trace of specs/trace-profile.yaml")
    args = parser.parse_args()
    name = "synthetic-azure-layout-trace-day.csv" if args.day else "synthetic-azure-layout-trace.csv"
    out = args.out or Path(__file__).resolve().parents[1] / "specs" / name
    body = text(args.day)
    out.write_text(body)
    print(f"{body.count(chr(10)) - 1} requests -> {out}")


if __name__ == "__main__":
    main()
