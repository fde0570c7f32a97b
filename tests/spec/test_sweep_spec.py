"""A sweep file: axes combined every way (or zipped), further scenarios after them, each
scenario's settings applied to a copy of the base spec, and bad sweeps refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from solver.spec.sweep_spec import SweepIn, count, scenario_id, scenarios, with_settings


def test_axes_combine_every_way_then_the_listed_scenarios():
    s = SweepIn.model_validate({"spec": {"model": "m"}, "axes": {"a": [1, 2], "b.c": ["x", "y", "z"]}, "scenarios": [{"a": 9}]})
    got = scenarios(s)
    assert count(s) == 2 * 3 + 1 == len(got)
    assert got[:3] == [{"a": 1, "b.c": "x"}, {"a": 1, "b.c": "y"}, {"a": 1, "b.c": "z"}]
    assert got[-1] == {"a": 9}


def test_zip_takes_the_ith_of_each_axis():
    s = SweepIn.model_validate({"spec": {"model": "m"}, "axes": {"a": [1, 2], "b": [3, 4]}, "combine": "zip"})
    assert scenarios(s) == [{"a": 1, "b": 3}, {"a": 2, "b": 4}]
    with pytest.raises(ValidationError, match="one length"):
        SweepIn.model_validate({"spec": {"model": "m"}, "axes": {"a": [1, 2], "b": [3]}, "combine": "zip"})


def test_settings_go_into_a_copy_of_the_base_at_their_dotted_paths():
    base = {"model": "m", "sla": {"max_ttft": "1s"}}
    got = with_settings(base, {"sla.max_tpot": "30ms", "workload.users": 8})
    assert got == {"model": "m", "sla": {"max_ttft": "1s", "max_tpot": "30ms"}, "workload": {"users": 8}}
    assert base == {"model": "m", "sla": {"max_ttft": "1s"}}  # untouched
    assert scenario_id({"a": 1, "b": 2}) == scenario_id({"b": 2, "a": 1}) != scenario_id({"a": 2, "b": 2})
    # the whole scenario: the same settings on an edited base, or explained, are another
    base = {"model": "llama-3.1-8b", "search": {"gpus": ["h100-sxm"]}}
    edited = {"model": "llama-3.1-8b", "search": {"gpus": ["l40s"]}}
    one = {"workload.users": 8}
    assert scenario_id(with_settings(base, one)) != scenario_id(with_settings(edited, one))
    assert scenario_id(with_settings(base, one)) != scenario_id(with_settings(base, one), explain=True)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"axes": {"a": [1]}}, "base spec"),
        ({"spec": {}, "base": "x.yaml", "axes": {"a": [1]}}, "one of them"),
        ({"spec": {}}, "nothing to sweep"),
        ({"spec": {}, "axes": {"a": []}}, "at least one value"),
        ({"spec": {}, "axes": {"a..b": [1]}}, "dotted spec field"),
        ({"spec": {}, "axes": {f"k{i}": list(range(10)) for i in range(7)}}, "at most 1,000,000"),
    ],
)
def test_a_bad_sweep_is_refused(data, match):
    with pytest.raises(ValidationError, match=match):
        SweepIn.model_validate(data)
