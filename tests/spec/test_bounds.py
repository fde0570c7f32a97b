"""Every number of every input is checked at the edge, once: finite, of the right
sign, within its stated range, and never a boolean. A refusal names the spec path,
the value and the allowed range; a value at a bound is accepted. The expected
messages below are written out by hand from the ranges in spec/fields.py,
spec/solve_spec.py, spec/fleet_spec.py and catalog/factors.py."""

from __future__ import annotations

import copy
import math

import pytest
import yaml

from solver.cli.main import main
from solver.errors import InputError
from solver.spec.evaluate_input import parse_input
from solver.spec.fleet_spec import FleetSpec
from solver.spec.solve_spec import parse_spec

SOLVE = {"model": "llama-3.1-8b", "workload": {"users": 4, "context_tokens": 4096, "output_tokens": 256}}
EVALUATE = {"model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm"}, "workload": {"users": 4, "context_tokens": 4096, "output_tokens": 256}}
FLEET = {
    "workloads": [
        {
            "name": "chat",
            "model": "llama-3.1-8b",
            "workload": {"users": 4, "context_tokens": 4096, "output_tokens": 256},
            "mix": [{"share": 1.0, "context_tokens": 2048, "output_tokens": 128}],
        }
    ]
}

USERS = "must be a whole number from 1 to 10,000,000"
TOKENS = "must be a whole number from 1 to 10,000,000"
LATENCY = "must be a time from 1 µs to 1 h"
FRACTION = "must be a number from 0.01 to 1"
BYTES = "must be a whole number from 0 to 1e15 bytes (1,000 TB)"
MEMORY = "must be a number from 1 MB to 1,000 TB (1e6 to 1e15 bytes)"
BANDWIDTH = "must be a number from 1 GB/s to 1,000 TB/s (1e9 to 1e15 bytes/s)"
FLOPS = "must be a number from 1 GFLOP/s to 1 EFLOP/s (1e9 to 1e18 FLOP/s)"
PARAMS = "must be a number from 1e6 to 1e13 (a million to ten trillion)"
DEGREES = "degrees must be between 1 and 1024"
OWNED = "must be a whole number from 0 to 100,000"


def _with(doc: dict, path: str, value: object) -> dict:
    """The document with `value` at the dotted `path` ("workloads.0.priority")."""
    doc = copy.deepcopy(doc)
    node: object = doc
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node.setdefault(k, {})  # type: ignore[index,union-attr]
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value  # type: ignore[index]
    return doc


def _refusal(parse, doc: dict) -> InputError:
    with pytest.raises(InputError) as exc:
        parse(doc)
    return exc.value


# (spec path, bad value, the range the message names). The path is also the
# field the message names, with list indices written [i].
SOLVE_BAD = [
    ("workload.users", 0, USERS),
    ("workload.users", 10_000_001, USERS),
    ("workload.users", True, USERS),
    ("workload.users", 4.5, USERS),
    ("workload.users", math.nan, USERS),
    ("workload.users", math.inf, USERS),
    ("workload.users", 1e308, USERS),
    ("workload.users", 2**63, USERS),
    ("workload.users", "many", USERS),
    ("workload.context_tokens", 10_000_001, TOKENS),
    ("workload.output_tokens", 0, TOKENS),
    ("workload.kv_fill", 0, "must be a number from 0.001 to 1"),
    ("workload.kv_fill", 1.01, "must be a number from 0.001 to 1"),
    ("workload.kv_fill", math.nan, "must be a number from 0.001 to 1"),
    ("sla.max_tpot", "0.5us", LATENCY),
    ("sla.max_tpot", "2h", LATENCY),
    ("sla.max_tpot", "-5ms", LATENCY),
    ("sla.max_tpot", math.nan, LATENCY),
    ("sla.max_tpot", "1e999", LATENCY),
    ("sla.max_ttft", 0, LATENCY),
    ("sla.max_ttft", False, LATENCY),
    ("search.max_gpus", 0, "must be a whole number from 1 to 100,000"),
    ("search.max_gpus", 100_001, "must be a whole number from 1 to 100,000"),
    ("budget.max_usd_per_hour", 0, "must be a number from $0.01 to $1e9 per hour"),
    ("budget.max_usd_per_hour", 1.1e9, "must be a number from $0.01 to $1e9 per hour"),
    ("budget.max_usd_per_hour", math.inf, "must be a number from $0.01 to $1e9 per hour"),
    ("budget.max_purchase_usd", 0.5, "must be a number from $1 to $1e12"),
    ("budget.max_purchase_usd", 1e13, "must be a number from $1 to $1e12"),
    ("ownership.life_years", 0, "must be a number from 0.1 to 30 years"),
    ("ownership.life_years", 31, "must be a number from 0.1 to 30 years"),
    ("ownership.utilisation", 0, FRACTION),
    ("ownership.pue", 0.9, "must be a number from 1 to 5"),
    ("ownership.usd_per_kwh", -1, "must be a number from $0 to $10 per kWh"),
    ("ownership.hosting_usd_per_kw_month", 100_001, "must be a number from $0 to $100,000 per kW-month"),
    ("inventory.h100-sxm", -1, OWNED),
    ("inventory.h100-sxm", 100_001, OWNED),
    ("inventory.h100-sxm", True, OWNED),
    ("overrides.gpus.h100-sxm.price_usd_per_gpu_hour", 0, "must be a number from $0.001 to $1,000 per GPU-hour"),
    ("overrides.gpus.h100-sxm.price_usd_per_gpu_hour", math.nan, "must be a number from $0.001 to $1,000 per GPU-hour"),
    ("overrides.gpus.h100-sxm.purchase_usd", 1e8, "must be a number from $1 to $10,000,000"),
    ("overrides.gpus.h100-sxm.memory_bytes", 0, MEMORY),
    ("overrides.gpus.h100-sxm.memory_bytes", "2000TB", MEMORY),
    ("overrides.gpus.h100-sxm.memory_bytes", math.inf, MEMORY),
    ("overrides.gpus.h100-sxm.memory_bandwidth_bytes_per_s", 1e-300, BANDWIDTH),
    ("overrides.gpus.h100-sxm.memory_bandwidth_bytes_per_s", "2000TB/s", BANDWIDTH),
    ("overrides.gpus.h100-sxm.dense_flops_per_s.bf16", 0, FLOPS),
    ("overrides.gpus.h100-sxm.dense_flops_per_s.bf16", 1e19, FLOPS),
    ("overrides.gpus.h100-sxm.factors.bandwidth_efficiency", 1e-300, FRACTION),
    ("overrides.factors.bandwidth_efficiency", 0, FRACTION),
    ("overrides.factors.bandwidth_efficiency", 1e-300, FRACTION),
    ("overrides.factors.bandwidth_efficiency", 1.01, FRACTION),
    ("overrides.factors.bandwidth_efficiency", math.nan, FRACTION),
    ("overrides.factors.bandwidth_efficiency", True, FRACTION),
    ("overrides.factors.compute_efficiency", 0.001, FRACTION),
    ("overrides.factors.memory_utilization", 1.5, FRACTION),
    ("overrides.factors.step_overhead_s", -1, "must be a time from 0 to 1 s"),
    ("overrides.factors.step_overhead_s", "2s", "must be a time from 0 to 1 s"),
    ("overrides.factors.step_overhead_s", math.inf, "must be a time from 0 to 1 s"),
    ("overrides.factors.layer_overhead_s", "11ms", "must be a time from 0 to 10 ms"),
    ("overrides.factors.sequence_overhead_s", 1, "must be a time from 0 to 10 ms"),
    ("overrides.factors.expert_layer_overhead_s", -1e-9, "must be a time from 0 to 10 ms"),
    ("overrides.factors.prefill_expert_overhead_s", 0.011, "must be a time from 0 to 10 ms"),
    ("overrides.factors.runtime_overhead_bytes", -1, BYTES),
    ("overrides.factors.runtime_overhead_bytes", 1e16, BYTES),
    ("overrides.factors.reserved_bytes", 0.5, BYTES),
    ("overrides.factors.tp_overhead_bytes", math.inf, BYTES),
    ("overrides.factors.activation_peak_scale", 11, "must be a number from 0 to 10"),
    ("overrides.model.total_params", 0, PARAMS),
    ("overrides.model.total_params", 1e14, PARAMS),
    ("overrides.model.active_params", math.inf, PARAMS),
    ("overrides.model.weights_bytes", 0, MEMORY),
    ("engine.max_num_seqs", 0, "must be a whole number from 1 to 1,000,000"),
    ("engine.max_num_seqs", 1_000_001, "must be a whole number from 1 to 1,000,000"),
    ("engine.max_num_batched_tokens", 0, TOKENS),
    ("engine.max_model_len", 10_000_001, TOKENS),
    ("engine.gpu_memory_utilization", 0, FRACTION),
    ("solver.time_limit_s", 0, "must be a number from 0.1 to 3,600 s"),
    ("solver.time_limit_s", 3601, "must be a number from 0.1 to 3,600 s"),
    ("pareto.max_cost_ratio", 0.5, "must be a number from 1 to 1,000,000"),
    ("workload.shared_prefix_tokens", -1, "must be a whole number from 0 to 10,000,000"),
    ("workload.shared_prefix_tokens", 2.5, "must be a whole number from 0 to 10,000,000"),
    ("workload.prefix_hit_rate", 1.5, "must be a number from 0 to 1"),
    ("workload.prefix_hit_rate", math.nan, "must be a number from 0 to 1"),
]


@pytest.mark.parametrize(
    ("path", "value", "allowed"),
    [
        ("num_tokens", 0, "must be a whole number from 1 to 16"),
        ("num_tokens", 17, "must be a whole number from 1 to 16"),
        ("acceptance", 1.0, "must be a number from 0.01 to 0.99"),
        ("acceptance", -0.1, "must be a number from 0.01 to 0.99"),
    ],
)
def test_a_speculative_section_out_of_range_is_refused_naming_the_field(path, value, allowed):
    err = _refusal(parse_spec, {**SOLVE, "speculative": {"method": "eagle", path: value}})
    assert str(err) == f"speculative.{path} = {value!r}: {allowed}"


def test_a_section_given_as_a_number_is_refused_as_a_mapping():
    err = _refusal(parse_spec, {**SOLVE, "speculative": 3})
    assert str(err) == "speculative = 3: must be a section of `key: value` lines (a mapping)"


@pytest.mark.parametrize(("path", "value", "allowed"), SOLVE_BAD, ids=[f"{p}={v!r}" for p, v, _ in SOLVE_BAD])
def test_a_solve_spec_number_out_of_range_is_refused_naming_path_value_and_range(path, value, allowed):
    err = _refusal(parse_spec, _with(SOLVE, path, value))
    shown = value if isinstance(value, str) else repr(value)
    assert str(err) == f"{path} = {shown}: {allowed}"


@pytest.mark.parametrize("value", [[0], [1, 1025], [True], [2.5], [math.nan], ["x"]])
@pytest.mark.parametrize("path", ["search.tp", "search.pp"])
def test_a_degree_out_of_range_is_refused_naming_the_list(path, value):
    err = _refusal(parse_spec, _with(SOLVE, path, value))
    assert err.field == path and DEGREES in str(err)


EVALUATE_BAD = [
    ("hardware.count", 0, "must be a whole number from 1 to 100,000"),
    ("hardware.count", 100_001, "must be a whole number from 1 to 100,000"),
    ("hardware.tp", 1025, "must be a whole number from 1 to 1,024"),
    ("hardware.pp", True, "must be a whole number from 1 to 1,024"),
    ("overrides.precision.bandwidth_share", 0, "must be a number from 0.01 to 1.5"),
    ("overrides.precision.compute_share", 1.6, "must be a number from 0.01 to 1.5"),
    ("overrides.gpu.memory_bytes", 1e308, MEMORY),
    ("overrides.gpu.dense_flops_per_s.fp8", math.nan, FLOPS),
    ("overrides.factors.bandwidth_efficiency", 1e-300, FRACTION),
    ("overrides.model.total_params", -1, PARAMS),
    ("workload.users", 0, USERS),
    ("sla.max_tpot", 1e308, LATENCY),
]


@pytest.mark.parametrize(("path", "value", "allowed"), EVALUATE_BAD, ids=[f"{p}={v!r}" for p, v, _ in EVALUATE_BAD])
def test_an_evaluate_input_number_out_of_range_is_refused(path, value, allowed):
    err = _refusal(parse_input, _with(EVALUATE, path, value))
    assert str(err) == f"{path} = {value!r}: {allowed}"


FLEET_BAD = [
    ("workloads.0.priority", 0, "workloads[0].priority", "must be a number from 0.001 to 1,000"),
    ("workloads.0.priority", 1001, "workloads[0].priority", "must be a number from 0.001 to 1,000"),
    ("workloads.0.mix.0.share", 0, "workloads[0].mix[0].share", "must be a number from 0.001 to 1"),
    ("workloads.0.mix.0.context_tokens", 10**8, "workloads[0].mix[0].context_tokens", TOKENS),
    ("workloads.0.workload.users", math.inf, "workloads[0].workload.users", USERS),
    ("workloads.0.overrides.total_params", 1e300, "workloads[0].overrides.total_params", PARAMS),
    ("quota.h100-sxm", -1, "quota.h100-sxm", OWNED),
    ("inventory.h100-sxm", 1e6, "inventory.h100-sxm", OWNED),
    ("overrides.factors.compute_efficiency", 0, "overrides.factors.compute_efficiency", FRACTION),
]


def _fleet(doc: dict) -> FleetSpec:
    from pydantic import ValidationError

    try:
        return FleetSpec.model_validate(doc)
    except ValidationError as exc:
        raise InputError.from_validation(exc) from None


@pytest.mark.parametrize(("path", "value", "field", "allowed"), FLEET_BAD, ids=[f"{p}={v!r}" for p, v, _, _ in FLEET_BAD])
def test_a_fleet_number_out_of_range_is_refused(path, value, field, allowed):
    err = _refusal(_fleet, _with(FLEET, path, value))
    assert str(err) == f"{field} = {value!r}: {allowed}"


# (spec path, a value at a bound, the value the spec then holds).
SOLVE_AT_BOUND = [
    ("workload.users", 10_000_000, 10_000_000),
    ("workload.users", 1, 1),
    ("workload.users", 8.0, 8),
    ("workload.context_tokens", 10_000_000, 10_000_000),
    ("workload.kv_fill", 0.001, 0.001),
    ("workload.kv_fill", 1, 1.0),
    ("sla.max_tpot", "1us", 1e-6),
    ("sla.max_tpot", "1h", 3600.0),
    ("sla.max_ttft", "3600s", 3600.0),
    ("sla.max_ttft", 1, 1.0),  # a plain number is seconds up to 1 (tests/spec/test_field_hints.py)
    ("search.max_gpus", 100_000, 100_000),
    ("budget.max_usd_per_hour", 0.01, 0.01),
    ("budget.max_usd_per_hour", 1e9, 1e9),
    ("budget.max_purchase_usd", 1e12, 1e12),
    ("ownership.life_years", 30, 30.0),
    ("ownership.pue", 1, 1.0),
    ("ownership.usd_per_kwh", 0, 0.0),
    ("inventory.h100-sxm", 0, 0),
    ("inventory.h100-sxm", 100_000, 100_000),
    ("overrides.gpus.h100-sxm.price_usd_per_gpu_hour", 1000, 1000.0),
    ("overrides.gpus.h100-sxm.purchase_usd", 1, 1.0),
    ("overrides.gpus.h100-sxm.memory_bytes", "1000TB", 1e15),
    ("overrides.gpus.h100-sxm.memory_bytes", "1MB", 1e6),
    ("overrides.gpus.h100-sxm.memory_bandwidth_bytes_per_s", "1GB/s", 1e9),
    ("overrides.gpus.h100-sxm.dense_flops_per_s.bf16", 1e18, 1e18),
    ("overrides.factors.bandwidth_efficiency", 0.01, 0.01),
    ("overrides.factors.bandwidth_efficiency", 1, 1.0),
    ("overrides.factors.memory_utilization", 1, 1.0),
    ("overrides.factors.step_overhead_s", "1s", 1.0),
    ("overrides.factors.layer_overhead_s", "10ms", 0.01),
    ("overrides.factors.sequence_overhead_s", 0, 0.0),
    ("overrides.factors.runtime_overhead_bytes", "2GiB", 2 * 2**30),
    ("overrides.factors.reserved_bytes", 10**15, 10**15),
    ("overrides.factors.activation_peak_scale", 10, 10.0),
    ("overrides.model.total_params", 1e13, 1e13),
    ("overrides.model.weights_bytes", 1e15, 1e15),
    ("engine.max_num_seqs", 1_000_000, 1_000_000),
    ("engine.max_model_len", 10_000_000, 10_000_000),
    ("engine.gpu_memory_utilization", 0.01, 0.01),
    ("solver.time_limit_s", 0.1, 0.1),
    ("solver.time_limit_s", 3600, 3600.0),
    ("pareto.max_cost_ratio", 1e6, 1e6),
]


@pytest.mark.parametrize(("path", "value", "held"), SOLVE_AT_BOUND, ids=[f"{p}={v!r}" for p, v, _ in SOLVE_AT_BOUND])
def test_a_value_at_a_bound_is_accepted(path, value, held):
    spec = parse_spec(_with(SOLVE, path, value))
    node: object = spec
    for k in path.split("."):
        node = node[k] if isinstance(node, dict) else getattr(node, k)
    assert node == held and type(node) is type(held)


def test_degrees_at_the_bounds_are_accepted():
    assert parse_spec(_with(SOLVE, "search.tp", [1024, 1, 2.0])).search.tp == [1, 2, 1024]


def test_the_derived_context_is_held_to_the_same_range():
    doc = _with(SOLVE, "workload", {"users": 1, "prompt_tokens": 9_000_000, "output_tokens": 2_000_000})
    err = _refusal(parse_spec, doc)
    assert err.field == "workload" and "at most 10,000,000" in str(err)


def test_the_schema_states_the_ranges():
    from solver.spec.solve_spec import spec_json_schema

    defs = spec_json_schema()["$defs"]
    users = defs["WorkloadIn"]["properties"]["users"]  # users or requests_per_s: optional
    assert (users["anyOf"][0]["minimum"], users["anyOf"][0]["maximum"]) == (1, 10_000_000) and "1 to 10,000,000" in users["description"]
    eff = defs["FactorsIn"]["properties"]["bandwidth_efficiency"]["anyOf"][0]
    assert (eff["minimum"], eff["maximum"]) == (0.01, 1)


def test_a_refusal_in_a_file_names_its_line(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(_with(SOLVE, "overrides.factors.bandwidth_efficiency", 1e-300), sort_keys=False))
    assert main(["solve", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{f}:" in err and "overrides.factors.bandwidth_efficiency = 1e-300: must be a number from 0.01 to 1" in err


# ----------------------------------------------------------------- format names


def test_format_names_are_stripped_and_spelled_as_the_catalog_spells_them():
    s = parse_spec(_with(SOLVE, "search", {"weights": [" bf16", "FP8\n", "awq"], "kv_cache": ["fp8\n"], "min_weights_quality": " Int4-AWQ "}))
    assert s.search.weights == ["bf16", "fp8", "int4-awq"]
    assert s.search.kv_cache == ["fp8"] and s.search.min_weights_quality == "int4-awq"
    e = parse_input(_with(EVALUATE, "precision", {"weights": " BF16", "kv_cache": "fp8\n"}))
    assert (e.precision.weights, e.precision.kv_cache) == ("bf16", "fp8")


@pytest.mark.parametrize("weights", [[" bf16"], ["fp8\n"], ["AWQ"]])
def test_a_format_name_with_stray_whitespace_or_an_alias_gets_a_valid_plan(tmp_path, capsys, weights):
    doc = _with(SOLVE, "search", {"gpus": ["h100-sxm"], "tp": [1], "weights": weights, "kv_cache": ["fp8\n"]})
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(doc))
    assert main(["solve", str(f), "--no-explain"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("name", ["", "  ", "bf\x0016"])
def test_an_empty_or_unprintable_name_is_refused(name):
    err = _refusal(parse_spec, _with(SOLVE, "search.weights", [name]))
    assert err.field == "search.weights[0]"


def test_an_unknown_format_still_gets_its_did_you_mean_at_its_path():
    from tests.solve_helpers import problem_of

    with pytest.raises(InputError) as exc:
        problem_of(_with(SOLVE, "search.weights", ["bf16", " fp9 "]))
    assert exc.value.field == "search.weights[1]" and exc.value.value == "fp9"


# ------------------------------------------------------------ model parameters


def test_active_params_on_a_dense_model_is_refused_clearly():
    from tests.solve_helpers import problem_of

    with pytest.raises(InputError) as exc:
        problem_of(_with(SOLVE, "overrides.model", {"active_params": 2e9}))
    assert exc.value.field == "overrides.model.active_params" and "dense model" in str(exc.value) and "total_params" in str(exc.value)


def test_active_params_equal_to_the_total_on_a_dense_model_is_harmless(catalog):
    from solver.physics.resolve import resolve_model
    from solver.spec.fields import ModelOverrides

    m = resolve_model("llama-3.1-8b", ModelOverrides(total_params=8e9, active_params=8e9), catalog, None)
    assert m.total_params == m.active_params == 8_000_000_000
    dense = resolve_model("llama-3.1-8b", ModelOverrides(total_params=7e9), catalog, None)
    assert dense.total_params == dense.active_params == 7_000_000_000


@pytest.mark.parametrize(
    ("overrides", "field"),
    [({"active_params": 1e12}, "overrides.model.active_params"), ({"total_params": 1e9}, "overrides.model.total_params")],
)
def test_an_moe_model_keeps_fewer_active_than_total_parameters(catalog, overrides, field):
    from solver.physics.resolve import resolve_model
    from solver.spec.fields import ModelOverrides

    moe = next(m for m in catalog.models if m.is_moe)
    with pytest.raises(InputError) as exc:
        resolve_model(moe.name, ModelOverrides(**overrides), catalog, None)
    assert exc.value.field == field and "mixture of experts" in str(exc.value)
