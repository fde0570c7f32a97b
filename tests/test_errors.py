"""InputError's message: one line whatever its parts hold, values shown escaped and cut."""

from __future__ import annotations

import pytest

from solver.errors import MAX_VALUE_CHARS, InputError, printable, shorten


def test_a_plain_message_reads_as_before():
    assert InputError("gpu", "rtx-4900", "unknown GPU").message() == "gpu = rtx-4900: unknown GPU"
    assert InputError("tp", 3, "must divide the heads", source="s.yaml", line=7).message() == "s.yaml:7: tp = 3: must divide the heads"
    assert InputError("workload", None, "required field is missing", source="s.yaml").message() == "s.yaml: workload: required field is missing"
    assert InputError("x", [1, 2], "no").message() == "x = [1, 2]: no"
    assert InputError("x", "é∞ 中", "fine").message() == "x = é∞ 中: fine"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("a\nb", "a\\nb"),
        ("\x00\x07", "\\x00\\x07"),
        ("tab\there", "tab\\there"),
        ("cr\rlf", "cr\\rlf"),
        ("ls\u2028ps\u2029nel\x85", "ls\\u2028ps\\u2029nel\\x85"),
        ("vt\x0bff\x0cfs\x1c", "vt\\x0bff\\x0cfs\\x1c"),
        ("\u202eevil", "\\u202eevil"),  # a bidi override
    ],
)
def test_control_characters_in_a_value_are_escaped(value, shown):
    msg = InputError("model", value, "unknown model").message()
    assert msg == f"model = {shown}: unknown model"
    assert len(msg.splitlines()) == 1


def test_every_part_of_a_message_stays_on_one_line():
    e = InputError("a\nb", "v\n", "line one\nline two\r\n", source="dir\n/f.yaml", line=3)
    msg = e.message()
    assert msg == "dir\\n/f.yaml:3: a\\nb = v\\n: line one\\nline two\\r\\n"
    assert len(msg.splitlines()) == 1 and str(e) == msg


def test_a_long_value_is_cut_with_an_ellipsis():
    msg = InputError("x", "y" * 100_000, "unknown field").message()
    assert msg == "x = " + "y" * (MAX_VALUE_CHARS - 1) + "…: unknown field"
    exact = "z" * MAX_VALUE_CHARS
    assert InputError("x", exact, "ok").message() == f"x = {exact}: ok"


def test_a_long_value_with_control_characters_is_cut_after_escaping():
    shown = InputError("x", "\x00" * 1000, "no").message().removeprefix("x = ").removesuffix(": no")
    assert len(shown) == MAX_VALUE_CHARS and shown.endswith("…") and shown.startswith("\\x00\\x00")


def test_a_long_repr_is_cut_too():
    msg = InputError("x", list(range(10_000)), "too many").message()
    assert len(msg) < 2 * MAX_VALUE_CHARS and "…" in msg


def test_an_integer_too_long_to_print_is_described():
    msg = InputError("users", 10**5000, "too large").message()
    assert msg == "users = <an integer of about 5,001 digits>: too large"


def test_a_hostile_field_name_and_reason_are_cut():
    msg = InputError("k" * 100_000, None, "r" * 100_000).message()
    assert len(msg) < 1300 and msg.count("…") == 2


def test_relabel_and_located_keep_one_line():
    e = InputError("precision", "fp\n8", "unknown")
    assert e.relabel("search.weights[1]").message() == "search.weights[1] = fp\\n8: unknown"
    located = e.relabel("search.weights[1]").located({("search", "weights", 1): 4}, "s.yaml")
    assert located.message() == "s.yaml:4: search.weights[1] = fp\\n8: unknown"


def test_printable_and_shorten():
    assert printable("plain text, ∞") == "plain text, ∞"
    assert printable("a\x00b\u00a0c") == "a\\x00b\\xa0c"
    assert shorten("abc", 3) == "abc" and shorten("abcd", 3) == "ab…"
