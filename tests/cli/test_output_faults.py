"""Where the output goes wrong, not the input: a full disk, a reader that stops early, a
terminal that cannot show every character. One line and a stated exit status, never
"internal error"; and every `--format json` is strict JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from solver.cli.main import ASCII_SUBSTITUTES, EXIT_OUTPUT, JSON_ERRORS, TEXT_ERRORS, main
from solver.errors import EXIT_BAD_INPUT
from solver.report import strict_json

ROOT = Path(__file__).resolve().parents[2]
SPEC = "specs/latency-critical-8b.yaml"
EXE = shutil.which("plan-opt")
CMD = [EXE] if EXE else [sys.executable, "-m", "solver.cli.main"]


def _run(args: list[str], **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CMD, *args], cwd=ROOT, capture_output=kw.pop("capture", True), **kw)  # type: ignore[call-overload]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PLAN_OPT_DEBUG")}
    return {**env, **extra}


def test_the_output_status_is_the_one_for_a_file_that_cannot_be_written():
    assert EXIT_OUTPUT == EXIT_BAD_INPUT == 2


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        ["solve", SPEC, "--no-explain"],  # text, written as it goes
        ["solve", SPEC, "--no-explain", "--format", "json"],
        ["schema"],  # more than a buffer: fails inside the command
        ["list", "models"],  # less than a buffer: fails at the last flush
        ["--version"],  # argparse prints it, then exits
        ["solve", "--help"],
    ],
)
def test_a_full_disk_is_one_line_and_exit_2(args):
    with open("/dev/full", "wb") as full:
        p = subprocess.run([*CMD, *args], cwd=ROOT, stdout=full, stderr=subprocess.PIPE, env=_env())
    err = p.stderr.decode()
    assert p.returncode == EXIT_OUTPUT, err
    assert err.count("\n") == 1 and err.startswith("plan-opt: error: cannot write to standard output:"), err
    assert "No space left on device" in err and "internal error" not in err and "Traceback" not in err


@pytest.mark.parametrize("args", [["schema"], ["solve", SPEC, "--no-explain"], ["--version"]])
def test_a_reader_that_went_away_is_no_fault(args):
    r, w = os.pipe()
    os.close(r)  # nobody reads: every write fails with EPIPE
    try:
        p = subprocess.run([*CMD, *args], cwd=ROOT, stdout=w, stderr=subprocess.PIPE, env=_env())
    finally:
        os.close(w)
    assert p.returncode == 0 and p.stderr == b""


def test_head_takes_the_first_line_and_plan_opt_stays_quiet():
    cmd = " ".join(f"'{c}'" for c in CMD)
    p = subprocess.run(
        ["bash", "-c", f'{cmd} schema | head -1; {cmd} solve {SPEC} --no-explain | head -1; echo "${{PIPESTATUS[0]}}"'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
    )
    lines = p.stdout.splitlines()
    assert lines[0] == "{" and lines[1].startswith("plan-opt solve") and lines[2] == "0"
    assert p.stderr == ""


def test_an_ascii_terminal_gets_legible_text():
    p = _run(["solve", SPEC, "--no-explain"], env=_env(PYTHONIOENCODING="ascii"))
    assert p.returncode == 0, p.stderr
    text = p.stdout.decode("ascii")  # nothing beyond ASCII
    first = text.splitlines()[0]
    assert first.startswith("plan-opt solve - llama-3.1-8b - 32 users x 4,096-token context")
    assert "TTFT <= 150.0 ms, TPOT <= 10.0 ms" in first
    utf8 = _run(["solve", SPEC, "--no-explain"], env=_env(PYTHONIOENCODING="utf-8"))
    assert utf8.stdout.decode().splitlines()[0].startswith("plan-opt solve · llama-3.1-8b")


def test_an_ascii_terminal_gets_the_same_json(cli_once):
    p = _run(["solve", SPEC, "--no-explain", "--format", "json"], env=_env(PYTHONIOENCODING="ascii"))
    assert p.returncode == 0, p.stderr
    faithful, _, _ = cli_once(["solve", SPEC, "--no-explain", "--format", "json"])  # in-process: written to a str, no encoding
    p.stdout.decode("ascii")
    assert json.loads(p.stdout) == json.loads(faithful)  # escapes, not substitutes, inside JSON strings


def test_a_latin1_terminal_keeps_what_it_can_show():
    p = _run(["solve", SPEC, "--no-explain"], env=_env(PYTHONIOENCODING="latin-1"))
    first = p.stdout.decode("latin-1").splitlines()[0]
    assert p.returncode == 0 and "32 users × 4,096" in first and "TTFT <= 150.0 ms" in first


def test_the_error_handlers():
    assert "≤ × — é 😀".encode("ascii", TEXT_ERRORS) == b"<= x - \\xe9 \\U0001f600"
    assert json.loads('"' + "≤ é 😀".encode("ascii", JSON_ERRORS).decode() + '"') == "≤ é 😀"
    assert all(s.isascii() for s in ASCII_SUBSTITUTES.values())


def test_an_input_error_still_exits_2_in_one_line(capsys):
    assert main(["solve", "no-such-spec.yaml"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("plan-opt: error:")


def test_strict_json_writes_unbounded_as_null_and_refuses_nan():
    text = strict_json.dumps({"limit": float("inf"), "floor": -float("inf"), "rows": [1.5, (float("inf"),)], "n": 3})
    assert json.loads(text, parse_constant=lambda c: pytest.fail(c)) == {"limit": None, "floor": None, "rows": [1.5, [None]], "n": 3}
    with pytest.raises(ValueError, match=r"NaN in the report at \$\.rows\[1\]"):
        strict_json.dumps({"rows": [1.0, float("nan")]})


def _strict(text: str) -> object:
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in JSON output"))


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "examples/seed-step1-llama8b-rtx4090.yaml"],
        ["evaluate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--users", "1", "--context", "2", "--prompt", "1"],
        ["fleet", "specs/fleet-split-shapes.yaml"],
        ["fleet", "specs/fleet-split-shapes.yaml", "--budget", "5,10"],
        ["solve", "specs/impossible.yaml", "--no-explain"],
    ],
)
def test_json_outputs_are_strict(argv, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code = main([*argv, "--format", "json"])
    out = capsys.readouterr().out
    assert code in (0, 3)
    _strict(out)


def test_every_report_writes_an_infinite_figure_as_null(monkeypatch):
    from solver.report import evaluation_json, fleet_report, pareto_report, solve_json

    inf = float("inf")
    monkeypatch.setattr(fleet_report, "to_dict", lambda res: {"tco_usd_per_hour": inf})
    monkeypatch.setattr(pareto_report, "to_dict", lambda fronts: {"tpot": {"cut": {"max_cost_usd_per_hour": inf}}})
    monkeypatch.setattr(evaluation_json, "_to_dict", lambda ev: {"verdicts": [{"limit": inf, "margin": -inf}]})
    assert _strict(fleet_report.to_json(object())) == {"tco_usd_per_hour": None}  # type: ignore[arg-type]
    assert _strict(fleet_report.to_json(None, [(5.0, object())])) == [{"max_usd_per_hour": 5.0, "tco_usd_per_hour": None}]  # type: ignore[list-item]
    assert _strict(pareto_report.to_json({})) == {"tpot": {"cut": {"max_cost_usd_per_hour": None}}}
    assert _strict(evaluation_json.to_json(object())) == {"verdicts": [{"limit": None, "margin": None}]}  # type: ignore[arg-type]
    row = solve_json.ConstraintOut(name="max_tpot", label="", value=0.01, limit=inf, unit="s", slack=inf, note="")
    assert _strict(row.model_dump_json()) == {**row.model_dump(), "limit": None, "slack": None}
