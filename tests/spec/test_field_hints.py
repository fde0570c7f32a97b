"""A misspelled field is answered with the nearest field allowed at that place and
where that kind of file's fields are listed; a latency written without its unit is read
in seconds only up to 1 s (`max_tpot: 50` meant 50 ms or 50 s: the user says which)."""

from __future__ import annotations

import pytest

from solver.errors import InputError
from solver.spec.evaluate_input import parse_input
from solver.spec.solve_spec import parse_spec

BASE = {"model": "llama-3.1-8b", "workload": {"users": 16, "prompt_tokens": 512, "output_tokens": 256}, "search": {"gpus": ["h100-sxm"]}}


def _refusal(data: dict, parse=parse_spec) -> InputError:
    with pytest.raises(InputError) as e:
        parse(data)
    return e.value


@pytest.mark.parametrize(
    ("section", "typo", "meant"),
    [
        ("sla", "max_ttfft", "max_ttft"),  # a letter doubled
        ("sla", "max_tpt", "max_tpot"),  # a letter dropped
        ("workload", "user", "users"),
        ("workload", "promt_tokens", "prompt_tokens"),
        ("search", "gpu", "gpus"),
    ],
)
def test_a_misspelled_field_gets_the_nearest_one_at_its_place(section, typo, meant):
    data = {**BASE, section: {**BASE.get(section, {}), typo: 1}}
    e = _refusal(data)
    assert e.field == f"{section}.{typo}"
    assert f"did you mean {meant}?" in e.allowed
    assert "plan-opt schema" in e.allowed  # the command that prints a solve spec's fields


def test_a_misspelled_top_level_field_and_one_in_a_percentile_target():
    assert "did you mean workload?" in _refusal({**BASE, "wokload": {}}).allowed
    e = _refusal({**BASE, "workload": {"requests_per_s": 2, "prompt_tokens": 512, "output_tokens": 256}, "sla": {"ttft": {"pp99": "1s"}}})
    assert e.field == "sla.ttft.pp99" and "did you mean p99?" in e.allowed


def test_a_name_near_nothing_gets_no_guess():
    e = _refusal({**BASE, "sla": {"zzzzzz": 1}})
    assert "did you mean" not in e.allowed and "unknown field" in e.allowed


def test_an_evaluate_input_names_evaluate():
    e = _refusal({"model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm", "tp": 1}, "workload": {"usres": 4}}, parse_input)
    assert "did you mean users?" in e.allowed and "plan-opt evaluate --help" in e.allowed


@pytest.mark.parametrize("value", [50, 50.0, "50", 1.5, "2"])
def test_a_latency_above_one_without_a_unit_is_refused(value):
    e = _refusal({**BASE, "sla": {"max_tpot": value}})
    assert e.field == "sla.max_tpot"
    assert "without a unit" in e.allowed and "ms" in e.allowed


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (0.05, 0.05),  # a plain number at most 1 is seconds, as documented
        (1, 1.0),
        ("50ms", 0.050),
        ("50s", 50.0),  # with its unit any latency in range is read
        ("2 s", 2.0),
    ],
)
def test_a_latency_with_its_unit_or_at_most_one_second_is_read(value, seconds):
    spec = parse_spec({**BASE, "sla": {"max_tpot": value}})
    assert spec.sla.max_tpot == pytest.approx(seconds)


def test_the_rule_holds_for_percentile_targets_too():
    data = {**BASE, "workload": {"requests_per_s": 2, "prompt_tokens": 512, "output_tokens": 256}, "sla": {"ttft": {"p99": 500}}}
    assert "without a unit" in _refusal(data).allowed


def test_a_misspelled_required_field_gets_the_guess_not_only_missing():
    # `modle:` is both "model missing" and "modle unknown": the unknown one names model.
    data = {k: v for k, v in BASE.items() if k != "model"} | {"modle": "llama-3.1-8b"}
    e = _refusal(data)
    assert e.field == "modle" and "did you mean model?" in e.allowed
    e = _refusal({"model": "llama-3.1-8b", "wrkload": BASE["workload"]})
    assert e.field == "wrkload" and "did you mean workload?" in e.allowed
    assert "required field is missing" in _refusal({"workload": BASE["workload"]}).allowed  # nothing near: missing


SCHEDULE = {
    "model": "llama-3.1-8b",
    "workload": {"prompt_tokens": 512, "output_tokens": 256},
    "sla": {"ttft": {"p99": "2s"}, "tpot": {"p90": "50ms"}},
    "search": {"gpus": ["h100-sxm"]},
    "traffic_profile": {"slot": "1h", "requests_per_s": [1.0, 2.0]},
}


def _schedule_refusal(data: dict) -> InputError:
    from solver.spec.schedule_spec import parse_schedule

    with pytest.raises(InputError) as e:
        parse_schedule(data)
    return e.value


@pytest.mark.parametrize(
    ("edit", "field", "meant"),
    [
        ({"min_replica": 2}, "min_replica", "min_replicas"),  # a schedule field, not a solve one
        ({"tier": ["spot"]}, "tier", "tiers"),
        ({"traffic_profile": {"slto": "1h", "requests_per_s": [1.0]}}, "traffic_profile.slto", "slot"),
        ({"sla": {"ttft": {"p99": "2s"}, "tpto": {"p90": "50ms"}}}, "sla.tpto", "tpot"),
    ],
)
def test_a_schedule_spec_s_misspelling_names_schedule(edit, field, meant):
    e = _schedule_refusal({**SCHEDULE, **edit})
    assert e.field == field and f"did you mean {meant}?" in e.allowed
    assert "plan-opt schedule" in e.allowed  # the command whose spec it is, not solve's list
