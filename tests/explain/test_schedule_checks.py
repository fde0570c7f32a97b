"""The schedule's slots checked as solve checks its plan (explain/schedule_checks.py):
here the simulation is replaced by a verdict with a known threshold, so the replicas
the loop must end at are derived by hand from solve's correction rule."""

from __future__ import annotations

from types import SimpleNamespace

import solver.explain.schedule_checks as schedule_checks
import solver.explain.traffic as traffic
from solver.catalog import default_catalog
from solver.explain.schedule import plan_schedule
from solver.optimise.horizon_inputs import at_rate
from solver.optimise.shapes import build_problem
from solver.report.schedule_report import render, to_dict
from solver.spec.schedule_spec import parse_schedule
from tests.solve_helpers import schedule_spec_of

RATES = [3.0, 12.0]


def _setup():
    ss = parse_schedule(schedule_spec_of(RATES, tiers=["on_demand"]))
    catalog = default_catalog()
    problem = build_problem(ss.spec, catalog)
    return ss, catalog, problem


def _verdict(threshold, calls):
    """A stand-in for solve's simulation: a plan passes iff it has at least
    threshold(shape, rate) replicas; None once the budget is spent."""

    def verdict(problem, s, shape, replicas, seeds=5):
        if traffic.budget_spent(problem):  # as the simulation it stands for
            return None
        rate = s.workload.traffic.requests_per_s
        calls.append((shape.index, rate, replicas, seeds))
        ok = replicas >= threshold(shape.index, rate)
        return SimpleNamespace(ok=ok, failing=[] if ok else ["max_tpot"], replicas=replicas, seeds=tuple(range(seeds)))

    return verdict


def test_a_refused_slot_gets_solves_correction_and_the_others_keep_the_screens_count(monkeypatch):
    """Every shape needs 2 replicas more than its screen at 12 requests/s and passes at
    its screen's count at 3. solve's correction steps by ⌈0.1 n⌉ = 1 (n ≤ 10) from the
    refused count, the first that passes on one seed being the floor, then verified on
    every seed: so the chosen shape ends at screen + 2 at 12/s (two steps), screen at 3/s,
    after exactly one refusal of it at 12/s, and both slots are marked simulated."""
    ss, catalog, problem = _setup()
    screen = {rate: {i: c.replicas for i, c in at_rate(problem, rate).items()} for rate in RATES}
    calls: list[tuple] = []
    monkeypatch.setattr(traffic, "_simulate", _verdict(lambda i, rate: screen[rate][i] + (2 if rate == 12.0 else 0), calls))
    r = plan_schedule(ss, problem, catalog)
    assert r.schedule is not None and r.checks is not None
    o = r.horizon.options[r.schedule.option]
    assert o.need == (screen[3.0][o.index], screen[12.0][o.index] + 2)
    assert r.schedule.on_demand == o.need
    assert [(label, n, rate) for label, n, rate, _ in r.checks.rejected if label == o.label] == [(o.label, screen[12.0][o.index], 12.0)]
    assert [row.simulated for row in r.slots] == [True, True]
    # the plan's slots were held to every seed at the count it prints
    assert (o.index, 12.0, o.need[1], 5) in calls and (o.index, 3.0, o.need[0], 5) in calls
    assert "each slot's replicas simulated at its rate" in render(r)
    assert [row["simulated"] for row in to_dict(r)["per_slot"]] == [True, True]


def test_a_shape_refused_too_often_at_one_rate_is_dropped(monkeypatch):
    """A shape no replica count serves at 12/s (every check there misses) is refused,
    MAX_CORRECTIONS_PER_SHAPE at most, then dropped: the plan is another shape."""
    ss, catalog, problem = _setup()
    monkeypatch.setattr(traffic, "_simulate", _verdict(lambda i, rate: 0, []))
    first = plan_schedule(ss, problem, catalog)  # the screen's pick, every check passing
    assert first.schedule is not None
    never = first.horizon.options[first.schedule.option].index
    ss, catalog, problem = _setup()
    calls: list[tuple] = []
    monkeypatch.setattr(traffic, "_simulate", _verdict(lambda i, rate: 10**6 if (i, rate) == (never, 12.0) else 0, calls))
    r = plan_schedule(ss, problem, catalog)
    assert r.schedule is not None
    assert r.horizon.options[r.schedule.option].index != never
    assert all(o.index != never for o in r.horizon.options)
    assert 1 <= sum(1 for i, rate, _, seeds in calls if (i, rate) == (never, 12.0) and seeds == 5) <= traffic.MAX_CORRECTIONS_PER_SHAPE


def test_a_slot_whose_budget_is_spent_is_named_as_the_screens(monkeypatch):
    """With the schedule's simulation budget at 0, no check runs: every slot keeps the
    screen's count and the report names each as sized by the screen alone."""
    ss, catalog, problem = _setup()
    calls: list[tuple] = []
    monkeypatch.setattr(traffic, "_simulate", _verdict(lambda i, rate: 0, calls))
    monkeypatch.setattr(schedule_checks, "MAX_SCHEDULE_SIMULATED_REQUESTS", 0)
    r = plan_schedule(ss, problem, catalog)
    assert r.schedule is not None
    assert [row.simulated for row in r.slots] == [False, False]
    assert [c for c in calls if c[1] in RATES and c[1] != problem.workload.traffic.requests_per_s] == []
    assert "sized by the screen alone (the simulation budget ran out): 00:00, 01:00" in render(r)
