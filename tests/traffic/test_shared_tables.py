"""The rate form's simulations share one iteration model per (deployment, workload) and
one request stream per seed (issue 44), so a plan's later runs read tables an earlier
run filled. A run must not depend on what ran before it: the 70B chat's plan shape,
simulated with tables warmed by other seeds, replica counts and a longer draw, gives
every request the same times, to the bit, as the same run on a fresh copy of the
deployment (its own, empty tables) and a stream drawn afresh."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from solver.catalog import default_catalog
from solver.optimise.shapes import build_problem
from solver.physics.iteration import iteration_model
from solver.spec.solve_spec import load_spec
from solver.traffic import verify
from solver.traffic.verify import Settings, simulate_plan

CHAT = Path(__file__).parents[2] / "specs" / "chat-70b-at-20-rps.yaml"


def _times(check: verify.Check) -> list[tuple[float, ...]]:
    sim = check.sim
    per_request = [(r.request.arrival_s, r.replica, r.first_token_s, r.finish_s, r.preemptions) for r in sim.results]
    per_replica = [(s.busy_s, s.iterations, s.preemptions, s.max_queue, s.mean_queue, s.tokens_out) for s in sim.replicas]
    return per_request + per_replica + [(check.ttft_q_s, check.tpot_q_s, check.e2e_q_s, check.goodput)]


def test_a_run_after_others_is_the_run_on_fresh_tables():
    problem = build_problem(load_spec(str(CHAT))[0], default_catalog(), CHAT.parent)
    shape = next(s for s in problem.shapes if s.device.name == "mi300x" and s.deployment.tp == 8)
    d, w, t = shape.deployment, problem.workload, problem.targets
    settings = Settings(requests=800, seed=0)
    # warm: another seed, more replicas, a longer draw of the same seed first
    simulate_plan(d, w, t, 2, dataclasses.replace(settings, seed=1))
    simulate_plan(d, w, t, 3, dataclasses.replace(settings, requests=1500))
    assert iteration_model(d, w).fixed_terms, "the model's table was filled"
    warm = simulate_plan(d, w, t, 2, settings)
    # cold: a copy of the deployment (its own model) and no stream kept
    verify._STREAMS.clear()
    fresh = d.replace()
    assert iteration_model(fresh, w) is not iteration_model(d, w) and not iteration_model(fresh, w).fixed_terms
    cold = simulate_plan(fresh, w, t, 2, settings)
    assert _times(warm) == _times(cold)
