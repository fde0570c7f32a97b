"""`plan-opt solve` from the command line: every shipped spec solves (or, the
impossible one, explains), the JSON is deterministic, formats and exit codes hold."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from solver.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted(p for p in (ROOT / "specs").glob("*.yaml") if not p.name.startswith("fleet-") and not p.stem.endswith("-profile"))
FLEETS = sorted((ROOT / "specs").glob("fleet-*.yaml"))


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
def test_every_shipped_spec_solves_or_explains(spec, cli_once):
    # the argv of the golden file's run (tests/test_golden_outputs.py): one solve, read by both
    out, err, code = cli_once(["solve", str(spec.relative_to(ROOT)), "--format", "json"])
    data = json.loads(out)
    if spec.name.startswith("impossible"):
        assert code == 3 and data["plan"] is None
        assert data["conflict"] or data["runners_up"], "an impossible spec must say why"
        assert all(r["nearest"] is not None or r["note"] for r in data["relaxations"])
    else:
        assert code == 0, err
        assert data["status"] == "optimal" and data["proven_optimal"]
        assert data["plan"]["gpus"] >= 1 and data["constraints"]


def test_json_is_byte_identical_across_runs(cli_once):
    # two processes, each with its own string-hash seed: a fresh one and this one (whose run
    # the golden file's test reads too)
    argv = ["solve", "specs/chat-llama70b.yaml", "--format", "json"]
    fresh = subprocess.run([sys.executable, "-m", "solver.cli.main", *argv], capture_output=True, text=True, cwd=ROOT)
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout == cli_once(argv)[0]


def test_text_and_markdown_reports(capsys):
    spec = ROOT / "specs" / "chat-llama70b.yaml"
    code, out, _ = run(["solve", spec], capsys)
    assert code == 0
    for section in ("Plan", "Constraints at the plan", "What decided it", "The price of each target", "Runners-up"):
        assert section in out
    code, md, _ = run(["solve", spec, "--format", "markdown"], capsys)
    assert md.startswith("# plan-opt solve") and "| constraint | value | limit | slack | note |" in md


def test_no_explain_and_time_limit(capsys):
    spec = ROOT / "specs" / "chat-llama70b.yaml"
    code, out, _ = run(["solve", spec, "--no-explain", "--time-limit", "5", "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["sensitivity"] == [] and data["runners_up"] == []
    code, _, err = run(["solve", spec, "--time-limit", "0"], capsys)
    assert code == 2 and "--time-limit" in err


def test_missing_spec_file(capsys):
    code, _, err = run(["solve", "nope.yaml"], capsys)
    assert code == 2 and "no such file" in err


@pytest.mark.parametrize("fleet", FLEETS, ids=lambda p: p.name)
def test_every_shipped_fleet_solves(fleet, capsys, cli_once):
    out, err, code = cli_once(["fleet", str(fleet.relative_to(ROOT)), "--format", "json"])  # the golden file's run
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "optimal"
    if data["objective"] == "min_cost":
        assert data["served"] == data["demand"]
    else:
        assert all(data["served"][k] <= d for k, d in data["demand"].items())
        assert any("budget" in b for b in data["binds"]) or data["served"] == data["demand"]
    code, out, _ = run(["fleet", fleet, "--budget", "5,50"], capsys)
    assert code == 0 and "budget sweep" in out
    code, _, err = run(["fleet", fleet, "--budget", "ten"], capsys)
    assert code == 2 and "--budget" in err


def test_a_plan_the_validator_refuses_is_not_printed(capsys, monkeypatch):
    """README, exit codes: 4 is "the validator refused the plan about to be printed";
    the plan must then not reach standard output, where a reader (or a script reading
    the JSON) would act on it. The refusal is forced here so that the CLI's rule is
    tested apart from any one optimiser bug."""
    import solver.explain.solve as solve_module
    from solver.explain.validate import Violation

    monkeypatch.delenv("PLAN_OPT_STRICT", raising=False)
    monkeypatch.setattr(solve_module, "validate", lambda *a, **k: [Violation("inventory", "forced refusal")])
    for fmt in ("json", "text"):
        code, out, err = run(["solve", ROOT / "specs" / "owned-inventory.yaml", "--no-explain", "--format", fmt], capsys)
        assert code == 4
        assert out == ""
        assert "the plan breaks inventory: forced refusal" in err
