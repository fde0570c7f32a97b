"""Fuzz plan-opt with mutated bundled inputs and print the outcomes per class.

    python bench/fuzz.py                       # 10,000 cases, every input kind
    python bench/fuzz.py --cases 500 --kind config --seed 7 --show 5

A defect is any outcome but exit 0 (a plan), 2 (bad input, one line) or 3
(impossible): an internal error, a traceback, a hang past --timeout, a validator
violation, a message over several lines, or NaN/Infinity in JSON output.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.cases import KINDS  # noqa: E402
from tests.fuzz.runner import message_place, run_cases  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=10_000, help="cases in all (default 10000)")
    ap.add_argument("--kind", choices=sorted(KINDS), action="append", help="input kinds (default all, in turn)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds before a case counts as a hang")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--show", type=int, default=3, help="examples to print per defect class")
    args = ap.parse_args()
    kinds = args.kind or sorted(KINDS)

    # Warm the catalog cache once, so no case pays for building it.
    from solver.catalog import default_catalog

    default_catalog()

    def cases():
        for i in range(args.cases):
            kind = kinds[i % len(kinds)]
            yield KINDS[kind](random.Random(f"{args.seed}:{i}"))

    counts: Counter[tuple[str, str]] = Counter()
    places: Counter[tuple[str, str]] = Counter()
    place_examples: dict[tuple[str, str], list] = defaultdict(list)
    examples: dict[tuple[str, str], list] = defaultdict(list)
    slowest = 0.0
    start = time.monotonic()
    for n, outcome in enumerate(run_cases(cases(), timeout_s=args.timeout, jobs=args.jobs), 1):
        key = (outcome.case.kind, outcome.verdict)
        counts[key] += 1
        slowest = max(slowest, outcome.seconds)
        if outcome.verdict == "bad input" and not outcome.stderr.startswith("usage:"):
            place = (outcome.case.kind, message_place(outcome.stderr))
            places[place] += 1
            if place[1] != "file and line" and len(place_examples[place]) < args.show:
                place_examples[place].append(outcome)
        if outcome.defect and len(examples[key]) < args.show:
            examples[key].append(outcome)
        if n % 500 == 0:
            print(f"  {n:,} cases, {time.monotonic() - start:.0f} s", file=sys.stderr)
    wall = time.monotonic() - start

    print(f"plan-opt fuzz: {sum(counts.values()):,} cases, seed {args.seed}, {wall:.0f} s wall, slowest case {slowest:.1f} s")
    print(f"{'input kind':<10} {'outcome':<22} {'cases':>7}")
    for (kind, verdict), n in sorted(counts.items()):
        print(f"{kind:<10} {verdict:<22} {n:>7,}")
    defects = sum(n for (k, v), n in counts.items() if v not in ("ok", "bad input", "impossible"))
    print(f"defects: {defects}")
    print(f"\nbad-input messages by the place they name\n{'input kind':<10} {'place':<22} {'cases':>7}")
    for (kind, place), n in sorted(places.items()):
        print(f"{kind:<10} {place:<22} {n:>7,}")
    for key, outs in sorted(place_examples.items()):
        print(f"\n-- {key[0]} / {key[1]}")
        for o in outs:
            print(f"  {o.case.what[:120]} · argv {' '.join(o.case.argv)}\n    {o.stderr.strip()[:240]}")
    for key, outs in sorted(examples.items()):
        print(f"\n== {key[0]} / {key[1]}")
        for o in outs:
            last = o.stderr.strip().splitlines()[-1] if o.stderr.strip() else ""
            print(f"  {o.case.what[:160]}\n    argv {' '.join(o.case.argv)} · exit {o.exit_code} · {o.seconds:.1f} s\n    {last[:300]}")
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main())
