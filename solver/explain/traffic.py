"""Under traffic, the plan the screen chose is simulated before it is reported; a plan
the simulation refuses gets more replicas, the fewest that pass (or, when none of a
few more do, its shape is dropped), and the model is solved again, until the chosen
plan passes its simulation. The cheapest plan reported is then the cheapest among the
screened plans with every simulated correction applied."""

from __future__ import annotations

import math

from solver.explain.records import SolveResult
from solver.optimise.model import Solution
from solver.optimise.problem import Problem
from solver.optimise.scenario import Scenario, solve_scenario
from solver.traffic.verify import Check, Settings, simulate_plan

MAX_ROUNDS = 6
"""Plans simulated and refused before the search gives up (each adds a floor)."""
MAX_EXTRA_TRIES = 8
"""Replica counts tried above a refused plan's before its shape is dropped."""


def settings_of(problem: Problem) -> Settings:
    sim = problem.spec.simulation
    return Settings(sim.requests, sim.seed, sim.routing)


def verified(problem: Problem, s: Scenario, sol: Solution, result: SolveResult) -> Solution:
    settings = settings_of(problem)
    for _ in range(MAX_ROUNDS):
        if not sol.feasible:
            return sol
        c = sol.chosen
        d = c.shape.deployment
        check = simulate_plan(d, s.workload, s.targets, c.replicas, settings)
        if check.ok:
            result.traffic_check = check
            return sol
        result.traffic_rejected.append((c.shape.label, c.replicas, check.failing))
        floor = 0
        step = max(1, math.ceil(c.replicas * 0.1))
        r = c.replicas
        for _ in range(MAX_EXTRA_TRIES):
            r += step
            more: Check = simulate_plan(d, s.workload, s.targets, r, settings)
            if more.ok:
                floor = r
                break
        problem.replica_floor[c.shape.index] = floor
        sol = solve_scenario(problem, s)
    if sol.feasible:  # out of rounds: report the last plan with its (failing) simulation
        c = sol.chosen
        result.traffic_check = simulate_plan(c.shape.deployment, s.workload, s.targets, c.replicas, settings)
    return sol
