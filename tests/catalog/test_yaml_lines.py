"""YAML loading: the limits (size, depth, values, aliases), the YAML 1.2 core schema,
duplicate keys, one-line messages, and the key → line map."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from solver.catalog.yaml_lines import MAX_BYTES, MAX_DEPTH, load_yaml_file, load_yaml_text
from solver.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def _refused(text: str, **limits: int) -> str:
    with pytest.raises(InputError) as exc:
        load_yaml_text(text, source="in.yaml", **limits)
    msg = exc.value.message()
    assert len(msg.splitlines()) == 1 and msg.startswith("in.yaml"), msg
    return msg


def _data(text: str) -> object:
    return load_yaml_text(text)[0]


# -- limits ------------------------------------------------------------------------


def _bomb(levels: int = 9, width: int = 9) -> str:
    text = f"a: &a [{', '.join(['x'] * width)}]\n"
    for i in range(1, levels):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        text += f"{cur}: &{cur} [{', '.join(['*' + prev] * width)}]\n"
    return text + "model: llama-3.1-8b\n"


def test_an_alias_bomb_is_refused_at_once():
    start = time.perf_counter()
    msg = _refused(_bomb())
    assert time.perf_counter() - start < 1.0
    assert msg == "in.yaml:2: yaml: aliases (*name) are not accepted: write the value out in full"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: &x 1\nb: 2\nc: *x\n", 3),  # a scalar
        ("a: &x {k: 1}\nb:\n  c: *x\n", 3),  # a mapping, nested
        ("a: &x [1]\nb:\n  - 1\n  - *x\n", 3),  # a list item: the line the item before it ended
        ("a: &x k\n*x : 1\n", 1),  # a key
    ],
)
def test_any_alias_is_refused(text, line):
    assert _refused(text).startswith(f"in.yaml:{line}: yaml: aliases")


def test_an_anchor_nobody_uses_is_harmless():
    assert _data("a: &x 1\nb: 2\n") == {"a": 1, "b": 2}


def test_nesting_past_the_depth_limit_is_refused():
    ok = "a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    assert load_yaml_text(ok)[0] is not None
    deep = "a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert _refused(deep) == f"in.yaml:1: yaml: nested more than {MAX_DEPTH} levels deep"
    block = "".join(" " * i + "k:\n" for i in range(10))
    assert "nested more than 5 levels deep" in _refused(block, max_depth=5)


@pytest.mark.parametrize("n", [10_000, 100_000])
def test_nesting_far_past_any_limit_is_one_line_not_a_recursion_error(n):
    msg = _refused("[" * n + "]" * n)
    assert "nested" in msg


def test_text_past_the_size_limit_is_refused():
    assert _refused("x: " + "y" * 100, max_bytes=50) == "in.yaml: yaml: over 50 bytes: too large for a plan-opt input"
    # bytes, not characters: 20 two-byte characters are 40 bytes
    assert "over 30 bytes" in _refused("x: " + "é" * 20, max_bytes=30)


def test_a_file_past_the_size_limit_is_refused_naming_it_without_reading_it_all(tmp_path):
    f = tmp_path / "big.yaml"
    f.write_text("x: " + "y" * 5000 + "\n")
    with pytest.raises(InputError) as exc:
        load_yaml_file(f, max_bytes=1000)
    assert str(exc.value) == f"{f}: yaml: over 1,000 bytes: too large for a plan-opt input"
    assert load_yaml_file(f)[0] == {"x": "y" * 5000}


def test_the_default_limits_cover_every_bundled_yaml_file():
    files = [p for d in ("catalogs", "specs", "examples") for p in sorted((ROOT / d).glob("*.yaml"))]
    assert len(files) > 20
    for f in files:
        assert f.stat().st_size * 4 < MAX_BYTES, f"{f} is within a factor 4 of the size limit"
        data, lines = load_yaml_file(f)
        assert isinstance(data, dict) and lines


def test_too_many_values_are_refused():
    text = "a: [" + ", ".join(["1"] * 200) + "]\n"
    assert "more than 100 values" in _refused(text, max_nodes=100)
    assert len(_data(text)["a"]) == 200  # type: ignore[index]


# -- YAML 1.2 core schema ----------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("010", 10),  # YAML 1.1: octal 8
        ("007", 7),
        ("-012", -12),
        ("+5", 5),
        ("0o17", 15),  # 1.2's octal, written as such
        ("0x10", 16),  # 1.2 core keeps hex
        ("1:30", "1:30"),  # 1.1: sexagesimal 90
        ("0b100", "0b100"),  # 1.1: binary 4
        ("1_000", "1_000"),  # 1.1: 1000
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("off", "off"),
        ("Yes", "Yes"),
        ("y", "y"),
        ("true", True),
        ("False", False),
        ("TRUE", True),
        ("1e3", 1000.0),  # 1.1 (PyYAML): the string "1e3"
        ("360.0e9", 360.0e9),
        ("-.5", -0.5),
        ("2024-05-01", "2024-05-01"),  # 1.1: a date
        ("~", None),
        ("null", None),
        ("", None),
        ("'010'", "010"),
        ('"yes"', "yes"),
    ],
)
def test_scalars_follow_the_yaml_1_2_core_schema(written, read):
    assert _data(f"v: {written}\n") == {"v": read}


def test_infinities_and_nan_are_floats():
    data = _data("a: .inf\nb: -.Inf\nc: .nan\n")
    assert isinstance(data, dict)
    assert data["a"] == float("inf") and data["b"] == float("-inf") and data["c"] != data["c"]


@pytest.mark.parametrize(
    ("text", "read"),
    [("!!int 010", 10), ("!!float 10", 10.0), ("!!float 0x10", 16.0), ("!!bool false", False), ("!!str 10", "10")],
)
def test_explicit_core_tags_follow_the_core_schema_too(text, read):
    assert _data(f"v: {text}\n") == {"v": read}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("!!int 1:30", "not an integer"),
        ("!!int 0b100", "not an integer"),
        ("!!bool yes", "not a boolean"),
        ("!!float abc", "not a number"),
        ("!!binary aGk=", "could not determine a constructor"),
        ("!!timestamp 2024-05-01", "could not determine a constructor"),
        ("!!python/object:os.system x", "could not determine a constructor"),
    ],
)
def test_other_tags_and_values_outside_the_core_schema_are_refused(text, problem):
    assert problem in _refused(f"a: 1\nv: {text}\n")


def test_the_merge_key_is_a_plain_key():
    assert _data("a:\n  <<: {b: 1}\n") == {"a": {"<<": {"b": 1}}}


def test_an_integer_too_long_to_print_is_refused():
    assert _refused("v: " + "1" * 5000) == "in.yaml:1: yaml: malformed YAML: integer too long"
    assert _data("v: " + "9" * 400) == {"v": int("9" * 400)}


# -- keys ----------------------------------------------------------------------------


def test_a_duplicate_key_is_refused_with_both_lines():
    text = "model: llama-3.1-8b\nworkload:\n  users: 8\n  context_tokens: 4096\n  users: 16\n"
    assert _refused(text) == "in.yaml:5: yaml: duplicate key workload.users (lines 3 and 5): keep one"
    assert _refused("a: 1\nb: 2\na: 3\n") == "in.yaml:3: yaml: duplicate key a (lines 1 and 3): keep one"
    assert "duplicate key x[1].k (lines 3 and 3)" in _refused("x:\n  - {k: 1}\n  - {k: 1, k: 2}\n")
    assert "duplicate key 10 (lines 1 and 2)" in _refused("010: a\n10: b\n")  # the same integer


def test_the_same_key_in_different_mappings_is_fine():
    assert _data("a: {k: 1}\nb: {k: 2}\n") == {"a": {"k": 1}, "b": {"k": 2}}
    assert _data('1: a\n"1": b\n') == {1: "a", "1": "b"}  # an integer and a string


def test_a_key_that_is_a_list_or_mapping_is_refused():
    assert _refused("a: 1\n[x, y]: 2\n") == "in.yaml:2: yaml: a key must be a plain value, not a list or mapping"
    assert "a key must be a plain value" in _refused("? {a: 1}\n: 2\n")


# -- one-line messages -------------------------------------------------------------


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x7f", "\ufffe"])
def test_a_control_character_gets_one_line_naming_it_and_its_line(char):
    msg = _refused(f"model: llama\nworkload:\n  users: 8{char}\n")
    assert msg == f"in.yaml:3: yaml: malformed YAML: character U+{ord(char):04X} is not allowed (control characters cannot appear in YAML)"


def test_malformed_yaml_is_one_line_with_its_line():
    assert _refused("model: x\nhardware:\n  tp: [1\nworkload: {users: 1}\n").startswith("in.yaml:4: yaml: malformed YAML: ")
    assert _refused("a: 1\n---\nb: 2\n").startswith("in.yaml:2: yaml: malformed YAML: ")
    assert _refused("a:\n\tb: 1\n").startswith("in.yaml:2: yaml: malformed YAML: ")


def test_a_file_that_is_not_utf8_is_one_line(tmp_path):
    f = tmp_path / "latin1.yaml"
    f.write_bytes(b"model: x\nnote: caf\xe9\n")
    with pytest.raises(InputError) as exc:
        load_yaml_file(f)
    # "model: x\n" is 9 bytes, "note: caf" 9 more: 0xe9 is byte 19, on line 2
    assert str(exc.value) == f"{f}:2: byte 19 = 0xe9: not UTF-8 text; save the file as UTF-8"


def test_a_lone_surrogate_is_one_line():
    # what undecodable bytes in a command-line argument become (--set workload.users=$'\\xff')
    assert _refused("a: 1\nb: x\udcff\n") == "in.yaml:2: yaml: not UTF-8 text (character '\\udcff')"


# -- the line map ------------------------------------------------------------------

HAND_WRITTEN = """\
# a comment on line 1
model: llama-3.1-8b
workload:
  users: 8

  context_tokens: 4096
sla: {max_tpot: 50ms,
      max_ttft: 2s}
search:
  gpus:
    - h100-sxm
    - l40s
  tp: [1, 2,
       4]
  nested:
    - name: a
      values:
        - 1
        - {x: 1}
"""


def test_the_line_map_names_every_key_and_item():
    data, lines = load_yaml_text(HAND_WRITTEN)
    assert isinstance(data, dict) and data["search"]["nested"][0]["values"] == [1, {"x": 1}]
    assert lines == {
        ("model",): 2,
        ("workload",): 3,
        ("workload", "users"): 4,
        ("workload", "context_tokens"): 6,
        ("sla",): 7,
        ("sla", "max_tpot"): 7,
        ("sla", "max_ttft"): 8,
        ("search",): 9,
        ("search", "gpus"): 10,
        ("search", "gpus", 0): 11,
        ("search", "gpus", 1): 12,
        ("search", "tp"): 13,
        ("search", "tp", 0): 13,
        ("search", "tp", 1): 13,
        ("search", "tp", 2): 14,
        ("search", "nested"): 15,
        ("search", "nested", 0): 16,
        ("search", "nested", 0, "name"): 16,
        ("search", "nested", 0, "values"): 17,
        ("search", "nested", 0, "values", 0): 18,
        ("search", "nested", 0, "values", 1): 19,
        ("search", "nested", 0, "values", 1, "x"): 19,
    }


def test_a_crlf_file_reads_as_its_lf_twin(tmp_path):
    f = tmp_path / "crlf.yaml"
    f.write_bytes(HAND_WRITTEN.replace("\n", "\r\n").encode())
    assert load_yaml_file(f) == load_yaml_text(HAND_WRITTEN)


def test_an_empty_document_is_none():
    assert load_yaml_text("") == (None, {})
    assert load_yaml_text("# only a comment\n") == (None, {})


def test_a_spec_value_yaml_1_1_would_have_changed_fails_its_own_type_check(tmp_path):
    from solver.spec.solve_spec import load_spec

    text = (ROOT / "specs" / "latency-critical-8b.yaml").read_text()
    assert "users: " in text
    f = tmp_path / "spec.yaml"
    f.write_text(text.replace("users: ", "users: 1:", 1))
    with pytest.raises(InputError) as exc:
        load_spec(f)
    msg = str(exc.value)
    assert len(msg.splitlines()) == 1 and msg.startswith(f"{f}:") and "users" in msg
