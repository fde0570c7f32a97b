"""A re-solve checks a candidate against the rules (its TTFT under load derived) only
while it may still be the answer: once a plan meeting every rule is found, a dearer
one is never checked (issue 44: owned-inventory's price of each target derived 18,000
TTFTs, 26 now). `least_admissible` is the filter-then-least it replaces."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from solver.catalog import default_catalog
from solver.explain import refilter
from solver.explain.refilter import Refilter, least_admissible
from solver.optimise.model import PRIMARY, Limits, admissible
from solver.optimise.scenario import scenario_of
from solver.optimise.shapes import build_problem
from solver.spec.solve_spec import load_spec

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _problem(name: str):  # a fresh problem: no figures memoised yet
    spec, _ = load_spec(str(SPECS / name))
    return build_problem(spec, default_catalog(), SPECS)


@dataclass
class _Plan:
    """What `admissible` reads of a candidate, and a count of latency reads."""

    memory_excess: int
    interconnect_excess: int
    cost_cents: int
    gpus: int
    purchase_dollars: int
    tpot: int
    ttft: int
    relaxed: frozenset[str] = frozenset()
    reads: list[str] = field(default_factory=list)

    @property
    def tpot_us(self) -> int:
        self.reads.append("tpot")
        return self.tpot

    @property
    def ttft_us(self) -> int:
        self.reads.append("ttft")
        return self.ttft


def _plans(rng: random.Random, n: int) -> list[_Plan]:
    return [
        _Plan(
            memory_excess=rng.choice([-3, 0, 0, 1]),
            interconnect_excess=rng.choice([0, 0, 0, 1]),
            cost_cents=rng.randint(100, 110),  # few values: ties at the least are common
            gpus=rng.randint(1, 8),
            purchase_dollars=rng.randint(1000, 1010),
            tpot=rng.randint(10, 20),
            ttft=rng.randint(10, 20),
            relaxed=rng.choice([frozenset(), frozenset(), frozenset({"users"})]),
        )
        for _ in range(n)
    ]


@pytest.mark.parametrize("objective", ["min_cost", "min_gpus", "min_purchase", "min_tpot"])
@pytest.mark.parametrize("seed", range(40))
def test_least_admissible_is_every_admissible_plan_at_the_least_objective(objective: str, seed: int) -> None:
    rng = random.Random(seed)
    plans = _plans(rng, rng.randint(0, 30))
    limits = Limits(
        max_tpot_us=rng.choice([None, 15]),
        max_ttft_us=rng.choice([None, 12, 18]),
        max_cost_cents=rng.choice([None, 105]),
        max_purchase_dollars=rng.choice([None, 1005]),
        max_gpus=rng.choice([None, 4]),
    )
    primary = PRIMARY[objective]
    # the definition, by brute force: filter them all, keep those at the least objective
    ok = [c for c in plans if admissible(c, limits)]  # type: ignore[arg-type]
    least = min((primary(c) for c in ok), default=None)  # type: ignore[arg-type]
    expected = [c for c in ok if primary(c) == least]  # type: ignore[arg-type]
    got = least_admissible(plans, limits, primary)  # type: ignore[arg-type]
    assert [id(c) for c in got] == [id(c) for c in expected]


def test_a_plan_dearer_than_an_admissible_one_has_no_latency_read() -> None:
    cheap = _Plan(0, 0, cost_cents=100, gpus=1, purchase_dollars=0, tpot=10, ttft=10)
    dear = _Plan(0, 0, cost_cents=200, gpus=1, purchase_dollars=0, tpot=10, ttft=10)
    assert least_admissible([dear, cheap], Limits(max_tpot_us=20, max_ttft_us=20), PRIMARY["min_cost"]) == [cheap]  # type: ignore[list-item]
    assert dear.reads == [] and cheap.reads == ["tpot", "ttft"]


@pytest.mark.parametrize(
    ("name", "target", "factor"),
    [
        ("owned-inventory.yaml", "context_tokens", 1.5),  # owned GPUs: every candidate re-filtered
        ("owned-inventory.yaml", "max_tpot", 0.9),
        ("budget-capped.yaml", "max_usd_per_hour", 1.1),  # min_tpot: no bound
        ("budget-capped.yaml", "context_tokens", 0.9),
        ("long-prompts-disaggregated.yaml", "context_tokens", 1.1),  # the bound, options built in turn
        ("long-prompts-disaggregated.yaml", "max_ttft", 0.9),
        ("latency-critical-8b-eagle.yaml", "users", 1.5),
    ],
)
def test_once_a_plan_meets_every_rule_no_dearer_one_is_checked(name: str, target: str, factor: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every full check (`admissible` with all the rules) made after an admissible plan
    was found is of a candidate whose objective is at most that plan's: main checked
    every candidate built."""
    p = _problem(name)
    s = scenario_of(p)
    primary = PRIMARY[p.objective]
    best: list[int] = []
    late: list[tuple[int, int]] = []  # (objective checked, best found before it)

    def spy(c, limits, assumed=None):  # type: ignore[no-untyped-def]
        ok = admissible(c, limits, assumed)
        if assumed is None:
            if best and primary(c) > min(best):
                late.append((primary(c), min(best)))
            if ok:
                best.append(primary(c))
        return ok

    monkeypatch.setattr(refilter, "admissible", spy)
    value = s.value(target)
    assert value is not None
    moved = s.with_value(target, max(1, round(value * factor)) if target in ("users", "context_tokens") else value * factor)
    sol = Refilter(p, hints=()).solve(moved)
    assert sol.feasible and best, "the moved spec has a plan, found by the re-filter"
    assert late == []
