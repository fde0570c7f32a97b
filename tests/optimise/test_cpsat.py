"""cp_model imported without pandas (solver/optimise/cpsat.py): a solve's process never
loads pandas or pyarrow, a later `import pandas` is the real one, and a release that
reads more of pandas at import still solves, by the plain import.

Each case runs in a fresh interpreter: what is in `sys.modules` is the point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# min x subject to x >= 3 over 0..10: the optimum is 3, by hand.
SOLVE_SMALL = """
m = cp_model.CpModel()
x = m.new_int_var(0, 10, "x")
m.add(x >= 3)
m.minimize(x)
s = cp_model.CpSolver()
optimum = s.value(x) if s.solve(m) == cp_model.OPTIMAL else None
"""
REPORT = """
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"pandas", "pyarrow"})
print(json.dumps({"loaded": loaded, "optimum": globals().get("optimum"), "extra": globals().get("extra")}))
"""


def _run(body: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", "import json, sys\n" + body + REPORT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return out


def test_a_whole_solve_with_its_explanation_never_loads_pandas_or_pyarrow() -> None:
    got = _run(
        "import contextlib, io\n"
        "from solver.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as text:\n"
        "    code = main(['solve', 'specs/latency-critical-8b.yaml', '--format', 'json'])\n"
        "extra = [code, json.loads(text.getvalue())['status']]\n"
    )
    assert got["extra"] == [0, "optimal"]
    assert got["loaded"] == []


def test_cp_model_solves_and_a_later_import_pandas_is_the_real_one() -> None:
    got = _run(
        "from solver.optimise.cpsat import cp_model\n" + SOLVE_SMALL + "assert 'pandas' not in sys.modules\n"
        "import pandas\n"
        "extra = [int(pandas.Series([1, 2, 3]).sum()), pandas.__file__ is not None]\n"
    )
    assert got["optimum"] == 3
    assert got["extra"] == [6, True]  # 1 + 2 + 3, by a real pandas loaded from its files


def test_a_release_that_reads_more_of_pandas_falls_back_to_the_plain_import() -> None:
    # A stand-in without Index and Series: cp_model's import fails on it, as it would on
    # a release that read a name the stand-in lacks; the plain import then runs.
    got = _run(
        "from solver.optimise.cpsat import import_cp_model\ncp_model = import_cp_model(pandas_names=())\n"
        + SOLVE_SMALL
        + "extra = cp_model.pd.__file__ is not None\n"
    )
    assert got["optimum"] == 3
    assert "pandas" in got["loaded"]  # the real one, loaded by the plain import
    assert got["extra"] is True  # cp_model holds the real pandas, not the stand-in


def test_pandas_already_loaded_is_left_as_it_is() -> None:
    got = _run("import pandas\nfrom solver.optimise.cpsat import cp_model\n" + SOLVE_SMALL + "extra = cp_model.pd is pandas\n")
    assert got["optimum"] == 3
    assert got["extra"] is True


def test_the_stand_in_says_why_when_its_pandas_api_is_called() -> None:
    got = _run(
        "from solver.optimise.cpsat import cp_model\n"
        "try:\n"
        "    cp_model.pd.Series([1])\n"
        "    extra = 'made'\n"
        "except TypeError as exc:\n"
        "    extra = str(exc)\n"
    )
    assert "without pandas" in str(got["extra"])
