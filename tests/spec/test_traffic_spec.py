"""A workload given as a request rate: lengths as numbers or distributions, targets at
percentiles, each mistake refused with the field and what is allowed."""

from __future__ import annotations

import math

import pytest

from solver.errors import InputError
from solver.physics.resolve import targets_of, workload_of
from solver.spec.solve_spec import parse_spec

BASE = {
    "model": "llama-3.1-8b",
    "workload": {"requests_per_s": 20, "prompt_tokens": {"dist": "lognormal", "mean": 1000, "p99": 6000}, "output_tokens": 300},
    "sla": {"ttft": {"p99": "2s"}, "tpot": {"p90": "40ms"}},
}


def _with(workload=None, sla=None):
    return {**BASE, "workload": {**BASE["workload"], **(workload or {})}, "sla": sla if sla is not None else BASE["sla"]}


def _refused(data) -> str:
    with pytest.raises(InputError) as exc:
        parse_spec(data)
    return exc.value.message()


def test_a_rate_spec_reads_as_traffic_with_percentile_targets(catalog):
    spec = parse_spec(BASE)
    w, t = workload_of(spec.workload, spec.sla, engine=catalog.engine(spec.engine.name)), targets_of(spec.sla)
    assert w.traffic is not None and w.traffic.requests_per_s == 20
    assert (w.traffic.prompt.dist, w.traffic.prompt.mean_tokens, w.traffic.prompt.p99_tokens) == ("lognormal", 1000, 6000)
    assert (w.traffic.output.dist, w.traffic.output.mean_tokens) == ("fixed", 300)
    assert (t.max_ttft_s, t.ttft_percentile, t.max_tpot_s, t.tpot_percentile) == (2.0, 99.0, 0.04, 90.0)
    # Little's law at the targets: 20/s × (2 s + 300 × 40 ms) = 280 requests in flight.
    assert w.users == 280
    # The context holds the longest draw: the lognormal's P99.9 prompt (sigma 1.0003:
    # exp(ln 1000 − s²/2 + 3.0902 s) = 13,350) and the 300-token output.
    s = 2.3263478740408408 - math.sqrt(2.3263478740408408**2 - 2 * math.log(6))
    assert spec.workload.context_tokens == math.ceil(math.exp(math.log(1000) - s**2 / 2 + 3.0902 * s)) + 300


@pytest.mark.parametrize(
    "data, words",
    [
        (_with({"users": 10}), "give users (concurrent sequences) or requests_per_s"),
        (_with({"requests_per_s": 0}), "requests_per_s"),
        (_with({"requests_per_s": "fast"}), "requests_per_s"),
        (_with({"prompt_tokens": {"dist": "lognormal", "mean": 1000, "p99": 900}}), "p99 must lie above its mean"),
        (_with({"prompt_tokens": {"dist": "lognormal", "mean": 1000}}), "needs its p99"),
        (_with({"prompt_tokens": {"dist": "uniform", "min": 900, "max": 100}}), "must not exceed max"),
        (_with({"prompt_tokens": {"dist": "zipf", "mean": 10}}), "prompt_tokens"),
        (_with({"arrival": {"process": "poisson", "cv": 2}}), "write process: gamma"),
        (_with(sla={"max_tpot": "40ms"}), "give sla.tpot at a percentile"),
        (_with(sla={"tpot": {"p90": "40ms", "p99": "60ms"}}), "give one percentile"),
        ({**BASE, "workload": {"users": 10, "prompt_tokens": 100, "output_tokens": 10}}, "sla.ttft holds at a percentile"),
        (
            {**BASE, "workload": {"users": 10, "prompt_tokens": {"dist": "exponential", "mean": 100}, "output_tokens": 10}, "sla": {}},
            "needs requests_per_s",
        ),
    ],
)
def test_mistakes_are_refused_with_the_field(data, words):
    assert words in _refused(data)


def test_evaluate_takes_users_not_a_rate():
    from solver.spec.evaluate_input import parse_input

    with pytest.raises(InputError) as exc:
        parse_input({"model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm"}, "workload": BASE["workload"]})
    assert "plan-opt simulate" in exc.value.message()
