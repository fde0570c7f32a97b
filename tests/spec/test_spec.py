"""The spec as a user writes it: defaults, units, and one clear message per mistake."""

from __future__ import annotations

import json

import pytest

from solver.cli.main import main
from solver.errors import InputError
from solver.spec.solve_spec import Spec, parse_spec, spec_json_schema
from tests.solve_helpers import problem_of

MINIMAL = {"model": "llama-3.1-8b", "workload": {"users": 4, "context_tokens": 4096, "output_tokens": 256}}


def test_defaults_are_the_documented_ones():
    s = parse_spec(MINIMAL)
    assert s.objective == "min_cost"
    assert s.search.gpus == ["all"] and s.search.tp == [1, 2, 4, 8] and s.search.pp == [1]
    assert s.workload.kv_fill == 1.0 and s.workload.prompt_tokens == 4096 - 256
    assert s.sla.max_ttft is None and s.budget.max_usd_per_hour is None


def test_sla_units():
    s = parse_spec({**MINIMAL, "sla": {"max_ttft": "0.5s", "max_tpot": "50ms"}})
    assert (s.sla.max_ttft, s.sla.max_tpot) == (0.5, 0.05)


def test_gpu_families_and_all_expand_in_catalog_order(catalog):
    p = problem_of({**MINIMAL, "search": {"gpus": ["hopper"]}})
    assert [d.name for d in p.devices] == [d.name for d in catalog.devices if d.family == "hopper"]
    assert len(problem_of({**MINIMAL, "search": {"gpus": ["all"]}}).devices) == len(catalog.devices)


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"search": {"tp": [0]}}, "search.tp"),
        ({"search": {"gpus": []}}, "search.gpus"),
        ({"objective": "cheapest"}, "objective"),
        ({"inventory": {"h100-sxm": -1}}, "inventory"),
        ({"budget": {"max_usd_per_hour": 0}}, "budget.max_usd_per_hour"),
        ({"sla": {"max_tpot": "-5ms"}}, "sla.max_tpot"),
        ({"workload": {"users": 0, "context_tokens": 10, "output_tokens": 1}}, "workload.users"),
        ({"searhc": {}}, "searhc"),
    ],
)
def test_mistakes_name_the_field(patch, field):
    with pytest.raises(InputError) as exc:
        parse_spec({**MINIMAL, **patch})
    assert exc.value.field.startswith(field)


def test_unknown_gpu_in_search_gets_did_you_mean():
    with pytest.raises(InputError) as exc:
        problem_of({**MINIMAL, "search": {"gpus": ["h100-sxn"]}})
    assert exc.value.field == "search.gpus[0]" and "h100-sxm" in str(exc.value)


def test_schema_is_printed_and_kept_in_specs(capsys):
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == spec_json_schema()
    assert set(printed["properties"]) == set(Spec.model_fields)
    from pathlib import Path

    kept = json.loads((Path(__file__).parents[2] / "specs" / "spec.schema.json").read_text())
    assert kept == printed, "specs/spec.schema.json is stale: run `plan-opt schema > specs/spec.schema.json`"
    assert main(["schema", "--result"]) == 0
    result = json.loads(capsys.readouterr().out)
    kept = json.loads((Path(__file__).parents[2] / "specs" / "result.schema.json").read_text())
    assert kept == result, "specs/result.schema.json is stale: run `plan-opt schema --result > specs/result.schema.json`"


def test_spec_error_in_a_file_names_the_line(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text("model: llama-3.1-8b\nworkload:\n  users: 4\n  context_tokens: 4096\n  output_tokens: 256\nsearch:\n  tp: [1, 3000]\n")
    assert main(["solve", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}:7:" in err and "search.tp" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("search", "field"),
    [
        ({"kv_cache": ["bf16", "int4-awq"]}, "search.kv_cache[1]"),  # a weight format where a KV format goes
        ({"kv_cache": ["bf16", "fp7"]}, "search.kv_cache[1]"),  # no such format
        ({"weights": ["bf16", "int3"]}, "search.weights[1]"),
        ({"min_weights_quality": "int3"}, "search.min_weights_quality"),
    ],
)
def test_a_catalog_lookup_error_names_the_spec_path_and_line(tmp_path, capsys, search, field):
    import yaml

    from solver.cli.main import main

    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"model": "llama-3.1-8b", "workload": {"users": 4, "context_tokens": 2048, "output_tokens": 256}, "search": search}))
    assert main(["solve", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}:" in err and f" {field} = " in err
