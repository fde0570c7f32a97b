"""The prefill options of a disaggregated plan (optimise/disaggregated.py) are read from
the parts of a shape's physics a prompt's service needs (refusals, memory, the prefill
estimate), never its decode steps (issue 44: a moved context re-derived the decode
physics of all 276 prefill shapes of long-prompts-disaggregated, 6 of which it paired).
The options are the undominated ones of the full physics, and the price of a moved
context is still what brute force finds."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from solver.catalog import default_catalog
from solver.explain.refilter import Refilter
from solver.optimise import problem as problem_module
from solver.optimise.disaggregated import prefill_options
from solver.optimise.enumerate import exhaustive, exhaustive_disaggregated
from solver.optimise.scenario import scenario_of
from solver.optimise.shapes import build_problem
from solver.physics.costs import plan_tco
from solver.physics.disaggregation import kv_share_on_gpu
from solver.spec.solve_spec import load_spec
from tests.explain.test_refilter_disaggregated import both_ways  # the same small specs, both ways of serving
from tests.solve_helpers import problem_of

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _problem():  # type: ignore[no-untyped-def]
    spec, _ = load_spec(str(SPECS / "long-prompts-disaggregated.yaml"))
    return build_problem(spec, default_catalog(), SPECS)


def _figures(problem, shape, w) -> tuple[float, ...]:  # type: ignore[no-untyped-def]
    """What the pruning compares, from the shape's whole physics: the prompt's GPU time and
    its share per server (DecodeCoefficients), the KV link's terms, what a replica costs."""
    d = shape.deployment
    dec = problem.physics(shape, w).decode
    link = d.platform.scale_out
    n = shape.gpus_per_replica
    rent = d.device.price.usd_per_gpu_hour if d.device.price else None
    return (
        dec.prefill_gpu_s,
        dec.prefill_gpu_s / max(1, dec.prefill_servers),
        kv_share_on_gpu(d) / link.bandwidth_bytes_per_s,
        1.0 / link.bandwidth_bytes_per_s,
        link.latency_s,
        100 * n * (rent or 0.0),  # a replica's cents per hour, GPUs, purchase dollars, TCO cents per hour
        float(n),
        n * (d.device.purchase_usd or 0.0),
        100 * plan_tco(n, 0, shape.costs, rent)[0],
    )


def _beats(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


@pytest.mark.parametrize("factor", [0.5, 1.5])
def test_a_moved_contexts_prefill_options_derive_no_decode_physics(monkeypatch: pytest.MonkeyPatch, factor: float) -> None:
    p = _problem()
    s = scenario_of(p)
    context = s.value("context_tokens")
    assert context is not None
    w = dataclasses.replace(s.with_value("context_tokens", round(context * factor)).workload, batching="isolated")
    derived: list[int] = []
    real = problem_module._shape_physics

    def counted(shape, workload, *shared):  # type: ignore[no-untyped-def]
        derived.append(shape.index)
        return real(shape, workload, *shared)

    monkeypatch.setattr(problem_module, "_shape_physics", counted)
    options = prefill_options(p, w, p.shapes)
    assert derived == []  # main: 276, one per shape that has a scale-out link and no draft
    monkeypatch.setattr(problem_module, "_shape_physics", real)

    fresh = _problem()  # the whole physics, nothing shared with `p`
    usable = {}
    vendor = {sh.index: sh.deployment.device.vendor for sh in fresh.shapes}  # dominance is judged per vendor (the KV may not cross)
    for sh in fresh.shapes:
        d = sh.deployment
        ph = fresh.physics(sh, w)
        if d.speculation is None and d.platform.scale_out is not None and not ph.refusals and ph.max_batch_memory >= 1:
            usable.setdefault((d.weights.name, d.kv.name), {})[sh.index] = _figures(fresh, sh, w)
    assert set(options) == set(usable)
    for fmt, kept in options.items():
        figures = usable[fmt]
        kept_ix = {o.shape.index for o in kept}
        for o in kept:
            assert o.service_s == figures[o.shape.index][0]
            assert o.service_s / max(1, o.servers) == figures[o.shape.index][1]
            rivals = [f for k, f in figures.items() if vendor[k] == vendor[o.shape.index]]
            assert not any(_beats(f, figures[o.shape.index]) for f in rivals)  # undominated by its vendor's
        for ix, f in figures.items():  # every usable shape left out is beaten by one kept of its vendor
            assert ix in kept_ix or any(_beats(figures[k], f) for k in kept_ix if vendor[k] == vendor[ix]), (fmt, ix)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(both_ways())
def test_each_moved_context_costs_what_brute_force_finds(spec) -> None:  # type: ignore[no-untyped-def]
    p = problem_of(spec)
    again = Refilter(p)
    s = scenario_of(p)
    context = s.value("context_tokens")
    assert context is not None
    for factor in (1.5, 0.5):
        moved = s.with_value("context_tokens", max(1, round(context * factor)))
        got = again.solve(moved)
        oracle = problem_of(spec)  # a fresh problem with the context moved: nothing shared
        oracle.targets, oracle.workload = moved.targets, moved.workload
        agg, dis = exhaustive(oracle), exhaustive_disaggregated(oracle)
        costs = [x for x in (agg.key[0] if agg else None, dis.cost_cents if dis else None) if x is not None]
        if not costs:
            assert not got.feasible, (spec, factor)
            continue
        assert got.feasible and got.chosen is not None, (spec, factor)
        assert got.chosen.cost_cents == min(costs), (spec, factor)
