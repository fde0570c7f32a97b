"""Every command's JSON on every bundled spec and example is what tests/golden/ holds,
byte for byte: a move or a refactor changes no answer. An intended change re-records
them (`python tests/golden/record.py`) in a commit that says why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN))

import record  # noqa: E402

CASES = record.cases()


def test_every_bundled_input_has_its_golden_file():
    assert {f"{name}.json" for name, _ in CASES} == {p.name for p in GOLDEN.glob("*.json")}
    assert len(CASES) >= 40


@pytest.mark.parametrize(("name", "argv"), CASES, ids=[name for name, _ in CASES])
def test_output_is_byte_identical_to_the_golden_file(name, argv, cli_once):
    out, err, code = cli_once(argv)  # the run tests/cli/test_cli_solve.py reads too
    assert f"{out}{err}exit {code}\n" == (GOLDEN / f"{name}.json").read_text()
