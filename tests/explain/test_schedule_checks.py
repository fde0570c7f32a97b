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
from solver.physics.deployment import LengthDistribution, Traffic
from solver.report.schedule_report import render, to_dict
from solver.spec.schedule_spec import parse_schedule
from solver.traffic.requests import RequestStream
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
        return SimpleNamespace(
            ok=ok, failing=[] if ok else ["max_tpot"], replicas=replicas, seeds=tuple(range(seeds)), sim=SimpleNamespace(results=[])
        )  # no requests: the report's replica load falls back to the screen's

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
    assert "each slot's replicas simulated as solve checks its plan, at its rate or a higher one" in render(r)
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


def test_a_pass_at_a_higher_rate_on_as_many_replicas_stands_for_a_lower_rate(monkeypatch):
    """Two slots on the same replicas (the screen's count at 12/s for both: a profile of 11
    and 12 requests/s where the screen sizes both alike): the check at 12/s, run first (the
    most load per replica), covers 11/s, which is never simulated yet is marked simulated;
    a threshold that passes everything makes the plan the screen's."""
    ss = parse_schedule(schedule_spec_of([11.0, 12.0], tiers=["on_demand"]))
    catalog = default_catalog()
    problem = build_problem(ss.spec, catalog)
    calls: list[tuple] = []
    monkeypatch.setattr(traffic, "_simulate", _verdict(lambda i, rate: 0, calls))
    r = plan_schedule(ss, problem, catalog)
    assert r.schedule is not None and r.checks is not None
    o = r.horizon.options[r.schedule.option]
    if o.need[0] != o.need[1]:  # the screen sized them apart: nothing to cover (not this spec's case)
        raise AssertionError(f"the screen gave {o.need}: pick rates it sizes alike")
    assert [row.simulated for row in r.slots] == [True, True]
    assert {(rate, seeds) for i, rate, n, seeds in calls if i == o.index} == {(12.0, 1), (12.0, 5)}


def test_a_lower_rate_draws_the_same_requests_each_arriving_later_by_the_ratio():
    """The ground of the covering rule: a seed's stream at rate r/2 is its stream at r with
    every arrival time doubled and every length kept (lengths and gaps are separate
    streams; a gap is the seed's exponential draw over the rate)."""
    lengths = LengthDistribution("lognormal", 300.0, 1, 8000, 1500.0)
    for cv in (1.0, 2.0):  # Poisson, and a gamma renewal process (its scale is over the rate too)
        fast = RequestStream(Traffic(8.0, lengths, lengths, arrival_cv=cv), seed=3).first(200)
        slow = RequestStream(Traffic(4.0, lengths, lengths, arrival_cv=cv), seed=3).first(200)
        assert [(q.prompt_tokens, q.output_tokens) for q in slow] == [(q.prompt_tokens, q.output_tokens) for q in fast]
        assert all(abs(s.arrival_s - 2 * f.arrival_s) <= 1e-9 * max(1.0, s.arrival_s) for s, f in zip(slow, fast, strict=True))


def test_a_shapes_screen_is_derived_once_for_every_rate_of_a_profile():
    """The screen (iteration cost, scheduler limits, sustainable rate) reads no offered
    rate, so a profile's 3 and 12 requests/s share each shape's one screen, and the
    candidates at each rate are those derived afresh on a problem that saw no other rate."""
    import dataclasses

    from solver.optimise.traffic_candidates import screened

    ss, catalog, problem = _setup()
    w = problem.workload
    assert w.traffic is not None
    at = {r: dataclasses.replace(w, traffic=dataclasses.replace(w.traffic, requests_per_s=r)) for r in RATES}
    shape = next(sh for sh in problem.shapes if problem.physics(sh, w).valid and problem.physics(sh, w).decode is not None)
    assert screened(problem, shape, at[3.0], problem.targets) is screened(problem, shape, at[12.0], problem.targets)
    both = {r: {i: (c.replicas, c.batch) for i, c in at_rate(problem, r).items()} for r in RATES}
    for r in RATES:
        _, _, fresh = _setup()
        assert {i: (c.replicas, c.batch) for i, c in at_rate(fresh, r).items()} == both[r]
