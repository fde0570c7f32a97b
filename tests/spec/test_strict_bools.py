"""Every switch of every input takes `true` or `false` only. pydantic's own bool reads
"yes", "off", "true" in quotes, 1 and 0 as switches without a word; each is refused
here naming the field, the value and "true or false", through the parsers, the CLI
(exit 2, one line) and the API (a 422 in the one error shape).

The switches are found two ways that must agree: by walking the pydantic models each
input is validated with, and by the hand-written list below (so a model the walk
misses, or a new switch nobody listed, fails here)."""

from __future__ import annotations

import copy
import re
import types
import typing
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from solver.catalog.calibration import CalibrationFile
from solver.cli.main import main
from solver.errors import EXIT_BAD_INPUT, InputError
from solver.spec.evaluate_input import EvaluateInput, parse_input
from solver.spec.fleet_spec import FleetSpec, load_fleet_spec
from solver.spec.schedule_spec import ScheduleIn
from solver.spec.solve_spec import Spec, load_spec
from solver.spec.sweep_spec import SweepIn, load_sweep

WORKLOAD = {"users": 4, "context_tokens": 4096, "output_tokens": 256}
BASE: dict[str, dict] = {
    "solve": {"model": "llama-3.1-8b", "workload": WORKLOAD},
    "evaluate": {"model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm"}, "workload": WORKLOAD},
    "fleet": {"workloads": [{"name": "chat", "model": "llama-3.1-8b", "workload": WORKLOAD}]},
    "sweep": {"spec": {"model": "llama-3.1-8b", "workload": WORKLOAD}, "axes": {"workload.users": [4, 8]}},
}

# Each input's top model (what its file or request body is validated with).
ROOTS: dict[str, type[BaseModel]] = {
    "solve": Spec,  # also pareto, simulate, deploy, a schedule's solve part, POST /solve, /validate
    "evaluate": EvaluateInput,
    "fleet": FleetSpec,
    "schedule": ScheduleIn,  # a schedule's own fields (its solve part is Spec)
    "sweep": SweepIn,
    "calibration": CalibrationFile,  # --calibration: a file calibrate wrote
}

# By hand, from solver/spec/*.py: every bool field, as its input writes the path.
SWITCHES = {
    ("solve", "search.speculative[0]"),
    ("solve", "search.allow_cross_vendor_kv"),
    ("solve", "pricing.secondary"),
    ("solve", "engine.enable_chunked_prefill"),
    ("solve", "engine.enforce_eager"),
    ("evaluate", "engine.enable_chunked_prefill"),
    ("evaluate", "engine.enforce_eager"),
    ("fleet", "single_shape"),
    ("fleet", "workloads[0].single_shape"),
    ("fleet", "search.speculative[0]"),
    ("fleet", "search.allow_cross_vendor_kv"),
    ("fleet", "pricing.secondary"),
    ("fleet", "engine.enable_chunked_prefill"),
    ("fleet", "engine.enforce_eager"),
    ("sweep", "explain"),
}

REFUSED = ["yes", 1, 0, "true", "false", "off", 1.0]


def _walk(t: object, path: str, depth: int = 0) -> set[str]:
    """The paths below `path` where type `t` holds a bool (lists as [0])."""
    if depth > 12:
        return set()
    if t is bool:
        return {path}
    if isinstance(t, type) and issubclass(t, BaseModel):
        out: set[str] = set()
        for name, f in t.model_fields.items():
            key = f.alias or name
            out |= _walk(f.annotation, f"{path}.{key}" if path else key, depth + 1)
        return out
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is typing.Annotated:
        return _walk(args[0], path, depth + 1)
    if origin in (list, tuple, set, frozenset):
        return set().union(*(_walk(a, f"{path}[0]", depth + 1) for a in args if a is not Ellipsis))
    if origin is dict:
        return _walk(args[1], f"{path}.KEY", depth + 1)
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_walk(a, path, depth + 1) for a in args))
    return set()


def test_the_walk_finds_exactly_the_listed_switches():
    found = {(root, p) for root, model in ROOTS.items() for p in _walk(model, "")}
    assert found == SWITCHES


def test_the_walk_sees_a_bool_wherever_a_model_nests_it():
    class Inner(BaseModel):
        on: bool | None = None

    class Outer(BaseModel):
        items: list[Inner] = []
        by_name: dict[str, typing.Annotated[Inner, "x"]] = {}
        flags: list[bool] = []

    assert _walk(Outer, "") == {"items[0].on", "by_name.KEY.on", "flags[0]"}


def _set(doc: dict, path: str, value: object) -> dict:
    """The document with `value` at `path` ("workloads[0].single_shape", "search.speculative[0]")."""
    doc = copy.deepcopy(doc)
    keys: list[str | int] = []
    for part in path.split("."):
        name, *idx = part.replace("]", "").split("[")
        keys += [name, *(int(i) for i in idx)]
    node: typing.Any = doc
    for k, nxt in zip(keys, keys[1:]):
        if isinstance(k, int):
            node = node[k]
        else:
            node = node.setdefault(k, [] if isinstance(nxt, int) else {})
    last = keys[-1]
    if isinstance(last, int):
        node[last:] = [value]
    else:
        node[last] = value
    return doc


def _write(tmp_path: Path, doc: dict) -> Path:
    f = tmp_path / "input.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return f


def _parse(root: str, doc: dict, tmp_path: Path) -> dict:
    """The input read as its command reads it, dumped back to plain data."""
    f = _write(tmp_path, doc)
    if root == "solve":
        return load_spec(f)[0].model_dump(by_alias=True)
    if root == "evaluate":
        return parse_input(doc).model_dump(by_alias=True)
    if root == "fleet":
        return load_fleet_spec(f)[0].model_dump(by_alias=True)
    if root == "sweep":
        return load_sweep(f)[0].model_dump(by_alias=True)
    raise AssertionError(f"no parser here for {root}: add one with a base document")


def _get(data: dict, path: str) -> object:
    node: typing.Any = data
    for part in path.split("."):
        name, *idx = part.replace("]", "").split("[")
        node = node[name]
        for i in idx:
            node = node[int(i)]
    return node


@pytest.mark.parametrize("value", REFUSED, ids=repr)
@pytest.mark.parametrize(("root", "path"), sorted(SWITCHES))
def test_a_switch_that_is_not_true_or_false_is_refused_naming_it(root, path, value, tmp_path):
    with pytest.raises(InputError) as exc:
        _parse(root, _set(BASE[root], path, value), tmp_path)
    assert exc.value.field == path
    assert exc.value.value == value
    assert exc.value.allowed.startswith("must be true or false")
    assert f"{path} = {value}: must be true or false" in str(exc.value)


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize(("root", "path"), sorted(SWITCHES))
def test_true_and_false_are_read_as_written(root, path, value, tmp_path):
    assert _get(_parse(root, _set(BASE[root], path, value), tmp_path), path) is value


def test_yaml_1_1_words_unquoted_are_text_and_refused_while_yaml_1_2_booleans_are_read(tmp_path):
    # The reader is YAML 1.2 core (solver/catalog/yaml_lines.py): yes/no/on/off are text.
    HEAD = "model: llama-3.1-8b\nworkload: {users: 4, context_tokens: 4096, output_tokens: 256}\n"
    f = tmp_path / "s.yaml"
    for word in ("yes", "no", "on", "off", "y", "n"):
        f.write_text(HEAD + f"search:\n  allow_cross_vendor_kv: {word}\n")
        with pytest.raises(InputError) as exc:
            load_spec(f)
        assert (exc.value.field, exc.value.value, exc.value.line) == ("search.allow_cross_vendor_kv", word, 4)
    for word, read in (("true", True), ("True", True), ("TRUE", True), ("false", False), ("False", False)):
        f.write_text(HEAD + f"search:\n  allow_cross_vendor_kv: {word}\n")
        assert load_spec(f)[0].search.allow_cross_vendor_kv is read


def test_a_switch_given_null_or_a_list_is_refused_naming_it():
    from solver.spec.solve_spec import parse_spec

    for value in (None, [True], {"a": 1}):
        with pytest.raises(InputError) as exc:
            parse_spec(_set(BASE["solve"], "search.allow_cross_vendor_kv", value))
        assert exc.value.field == "search.allow_cross_vendor_kv" and "true or false" in exc.value.allowed


# --------------------------------------------------------------------------- CLI

COMMAND = {"solve": ["solve"], "evaluate": ["evaluate"], "fleet": ["fleet"], "sweep": ["sweep"]}


@pytest.mark.parametrize("value", ["yes", 1, 0, "true"], ids=repr)
@pytest.mark.parametrize(("root", "path"), sorted(SWITCHES))
def test_the_cli_refuses_a_switch_in_one_line_naming_the_file_line_field_and_value(root, path, value, tmp_path, capsys):
    f = _write(tmp_path, _set(BASE[root], path, value))
    argv = [*COMMAND[root], str(f)]
    if root == "sweep":
        argv += ["-o", str(tmp_path / "out.csv"), "--quiet"]
    assert main(argv) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert re.search(rf"{re.escape(str(f))}:\d+: {re.escape(path)} = {value}: must be true or false", err), err


def test_a_schedule_refuses_a_switch_of_its_solve_part(tmp_path, capsys):
    doc = {
        "model": "llama-3.1-8b",
        "workload": {"prompt_tokens": 512, "output_tokens": 128},
        "search": {"allow_cross_vendor_kv": "yes"},
        "traffic_profile": {"slot": "1h", "requests_per_s": [1.0, 2.0]},
    }
    f = _write(tmp_path, doc)
    assert main(["schedule", str(f)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "search.allow_cross_vendor_kv = yes: must be true or false" in err


def test_evaluate_set_reads_its_value_as_yaml_and_refuses_a_word(capsys):
    argv = ["evaluate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--users", "4", "--context", "4096"]
    assert main([*argv, "--set", "engine.enforce_eager=on"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "--set engine.enforce_eager (engine.enforce_eager) = on: must be true or false" in err
