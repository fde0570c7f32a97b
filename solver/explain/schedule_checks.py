"""Each slot's replicas as `plan-opt solve` would print them: simulated, not screened.

solve checks the plan its screen chose by simulation and corrects it (explain/traffic.py);
a schedule sized by the screen alone gave another answer to the same question (at 20
requests/s a shape solve's simulation refuses). So the horizon is solved lazily, as
solve is: the chosen shape's replicas are simulated at every distinct rate of the
profile by solve's own check (`plan_verdict`), the tightest first (the most load per
replica: the likeliest to miss); where one misses, that (shape, rate)'s need is raised
by solve's own correction (`corrected_floor`), or the shape dropped after
MAX_CORRECTIONS_PER_SHAPE refusals there, and the horizon is solved again, until the
chosen shape passes at every rate. Verdicts are cached on the problem by (shape,
replicas, seeds, settings, workload, targets), so a re-solve re-runs none.

Each distinct rate is charged the simulation budget one solve at that rate has
(explain/traffic.py): a profile of one slot gets exactly solve's answer, and a slot
whose budget is spent is left to the screen and named so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from solver.explain.traffic import MAX_CORRECTIONS_PER_SHAPE, MAX_SIMULATED_REQUESTS, corrected_floor, plan_verdict
from solver.optimise.horizon import Horizon, Option, Schedule, solve_horizon
from solver.optimise.problem import Problem, Shape
from solver.optimise.scenario import Scenario, scenario_of
from solver.traffic.verify import SEEDS, Check

T = TypeVar("T")

MAX_SCHEDULE_SIMULATED_REQUESTS = 10 * MAX_SIMULATED_REQUESTS
"""The requests one schedule may simulate over all its rates (ten solves' budget, some
50 s here): a bound in work, not seconds, as solve's (a week of hourly slots has up to
168 rates). specs/daily-chat-profile.yaml draws 1.27 million; past it, a rate's check
finds its budget spent and its slots are left to the screen, and named so."""


def mean_e2e_s(check: Check) -> float:
    """A request's mean time in the replica in the check's simulation (its first seed's run)."""
    results = check.sim.results
    return sum(r.e2e_s for r in results) / len(results)


@dataclass
class SlotChecks:
    """What the simulations showed so far, per (shape index, rate), over every solve of
    one command (the plan and each re-solved alternative share it)."""

    problem: Problem
    rates_per_s: tuple[float, ...]
    """Each slot's rate (Profile.rates_per_s)."""
    floors: dict[tuple[int, float], int] = field(default_factory=dict)
    """The fewest replicas solve's correction found (0: the shape is dropped)."""
    refusals: dict[tuple[int, float], int] = field(default_factory=dict)
    passed: dict[tuple[int, float], Check] = field(default_factory=dict)
    """The check each (shape, rate) passed, at the replicas it passed with."""
    rejected: list[tuple[str, int, float, list[str]]] = field(default_factory=list)
    """Each refusal: the shape, its replicas, the rate and the targets missed."""
    spent: dict[float, tuple[int, int, float]] = field(default_factory=dict)
    """Each rate's simulations, requests and seconds, against solve's budget."""
    budget_out: set[float] = field(default_factory=set)
    """Rates whose budget ran out before the chosen shape passed there."""
    first_passed: set[tuple[int, float, int]] = field(default_factory=set)
    """(shape, rate, replicas) that passed on the spec's seed."""
    _scenarios: dict[float, Scenario] = field(default_factory=dict)
    _models: dict[tuple[object, ...], tuple[Schedule, bool] | None] = field(default_factory=dict)
    """Each shape's horizon model solved, by its figures: a re-solve after one shape's
    correction solves that shape's model alone again."""

    def scenario(self, rate_per_s: float) -> Scenario:
        """solve's scenario with the workload at this rate (one object a rate, so its
        request streams and verdicts are drawn once)."""
        got = self._scenarios.get(rate_per_s)
        if got is None:
            s = scenario_of(self.problem)
            w = s.workload
            assert w.traffic is not None
            wr = dataclasses.replace(w, traffic=dataclasses.replace(w.traffic, requests_per_s=rate_per_s))
            got = self._scenarios[rate_per_s] = dataclasses.replace(s, workload=wr)
        return got

    def corrected(self, h: Horizon) -> Horizon:
        """`h` with every need raised to its simulated floor; a shape dropped at any rate out."""
        rates = self.rates_per_s
        out = []
        for o in h.options:
            if any(self.floors.get((o.index, r)) == 0 for r in rates):
                continue
            need = tuple(max(n, self.floors.get((o.index, r), 0)) for n, r in zip(o.need, rates, strict=True))
            out.append(dataclasses.replace(o, need=need))
        return dataclasses.replace(h, options=tuple(out))

    def simulated(self, o: Option, t: int) -> bool:
        """Whether slot t's need of `o` passed its simulation, at its rate or at a higher
        rate on as many replicas (`covered`), else the screen alone set it."""
        return self.covered(o.index, self.rates_per_s[t], o.need[t], self.passed_rates(o.index, o.need[t]))

    def most_loaded(self, index: int) -> Check | None:
        """Of shape `index`'s checks that passed on every seed, the one whose replicas each
        carried the most requests/s (then the most in the system, λ·W): the verified load
        the schedule's counts rest on, which its autoscaler's target reads
        (explain/schedule_replay.replica_capacity). None where none passed (the budget
        spent before any: the screen alone sized the counts)."""
        passed = [c for (i, _), c in self.passed.items() if i == index and c.sim.results]
        return max(passed, key=lambda c: (c.requests_per_s / c.replicas, c.requests_per_s / c.replicas * mean_e2e_s(c)), default=None)

    def passed_rates(self, index: int, replicas: int) -> list[float]:
        """The rates at which shape `index` on `replicas` replicas passed on every seed."""
        return [r for (i, r), c in self.passed.items() if i == index and c.replicas == replicas]

    @staticmethod
    def covered(index: int, rate_per_s: float, replicas: int, passed_rates: list[float]) -> bool:
        """A check passed at a rate at least this one on the same replicas stands for it:
        a seed's requests at a lower rate are the same requests (lengths from their own
        stream), each arriving later by the ratio of the rates (traffic/requests.py: a gap
        is the seed's draw over the rate), so each replica has no more work at any moment
        (the rule tests/explain/test_schedule_checks.py checks on the simulator)."""
        return any(r >= rate_per_s for r in passed_rates)

    def _charged(self, rate_per_s: float, run: Callable[[], T]) -> T:
        """`run` against this rate's own budget (spent, as solve's is, once the schedule's
        MAX_SCHEDULE_SIMULATED_REQUESTS are), the problem's counters kept as they were."""
        p = self.problem
        kept = (p.simulations, p.simulated_requests, p.simulation_s)
        runs, requests, seconds = self.spent.get(rate_per_s, (0, 0, 0.0))
        over = sum(v[1] for v in self.spent.values()) >= MAX_SCHEDULE_SIMULATED_REQUESTS
        p.simulations, p.simulated_requests, p.simulation_s = runs, MAX_SIMULATED_REQUESTS if over else requests, seconds
        try:
            return run()
        finally:
            if not over:
                self.spent[rate_per_s] = (p.simulations, p.simulated_requests, p.simulation_s)
            p.simulations, p.simulated_requests, p.simulation_s = kept

    def _refuse(self, o: Option, rate_per_s: float, replicas: int, check: Check) -> None:
        """solve's correction of a refused plan, for this rate: the floor raised, or the
        shape dropped after MAX_CORRECTIONS_PER_SHAPE refusals here."""
        key = (o.index, rate_per_s)
        self.rejected.append((o.label, replicas, rate_per_s, check.failing))
        shape = self._shape(o)
        floor = self._charged(rate_per_s, lambda: corrected_floor(self.problem, self.scenario(rate_per_s), shape, replicas))
        self.refusals[key] = self.refusals.get(key, 0) + 1
        self.floors[key] = 0 if self.refusals[key] >= MAX_CORRECTIONS_PER_SHAPE else floor

    def _shape(self, o: Option) -> Shape:
        return next(sh for sh in self.problem.shapes if sh.index == o.index)

    def _verdict(self, o: Option, rate_per_s: float, replicas: int, seeds: int) -> Check | None:
        shape = self._shape(o)
        check = self._charged(rate_per_s, lambda: plan_verdict(self.problem, self.scenario(rate_per_s), shape, replicas, seeds))
        if check is None:
            self.budget_out.add(rate_per_s)
        return check

    def _refused(self, o: Option, seeds: int) -> bool:
        """Whether `o` was refused at some rate (its needs then raised there). The spec's
        seed first at every rate, the tightest first (the most load per replica): a miss
        there is the whole verdict's (verify_plan stops at the first run that misses), so
        a shape that misses anywhere is refused before any seed after the first is run
        (the pass on the first is not run again); then the other seeds, rate by rate.
        Each refusal is corrected and the horizon re-solved at once, as solve does. A rate
        a pass at a higher rate on as many replicas covers (`covered`) is not run: the
        highest rate of each replica count comes first."""
        needs = dict(zip(self.rates_per_s, o.need, strict=True))
        order = sorted(needs, key=lambda r: (-r / needs[r], -r))
        todo = [r for r in order if not self.covered(o.index, r, needs[r], self.passed_rates(o.index, needs[r]))]
        first = [(r, n) for (i, r, n) in self.first_passed if i == o.index]
        for rate in todo:
            if self.covered(o.index, rate, needs[rate], [r for r, n in first if n == needs[rate]]):
                continue
            check = self._verdict(o, rate, needs[rate], 1)
            if check is not None and check.ok:
                self.first_passed.add((o.index, rate, needs[rate]))
                first.append((rate, needs[rate]))
            elif check is not None:
                self._refuse(o, rate, needs[rate], check)
                return True
        if seeds == 1:
            return False
        for rate in todo:
            if self.covered(o.index, rate, needs[rate], self.passed_rates(o.index, needs[rate])):
                continue
            check = self._verdict(o, rate, needs[rate], seeds)
            if check is not None and check.ok:
                self.passed[(o.index, rate)] = check
            elif check is not None:
                self._refuse(o, rate, needs[rate], check)
                return True
        return False

    def solve(self, h: Horizon, time_limit_s: float, seeds: int = SEEDS) -> tuple[Schedule | None, Horizon]:
        """The cheapest schedule whose shape passes its simulation on `seeds` seeds at
        every rate (each round refuses a (shape, rate), at most MAX_CORRECTIONS_PER_SHAPE
        times before the shape is dropped, so it ends), and the horizon its `option`
        indexes."""
        while True:
            hc = self.corrected(h)
            s = solve_horizon(hc, time_limit_s, self._models)
            if s is None or not self._refused(hc.options[s.option], seeds):
                return s, hc
