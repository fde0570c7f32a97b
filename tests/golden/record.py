"""Record every command's JSON output on every bundled spec and example, the golden
files tests/test_golden_outputs.py holds the code to:

    python tests/golden/record.py        # rewrite tests/golden/*.json

Re-record only in a commit that says why the outputs changed."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from solver.cli.main import main  # noqa: E402


def cases() -> list[tuple[str, list[str]]]:
    """(golden file name, plan-opt argv) for every command on every bundled input."""
    out = []
    specs = sorted(p for p in (ROOT / "specs").glob("*.yaml") if not p.name.startswith("fleet-") and not p.stem.endswith("-profile"))
    profiles = sorted((ROOT / "specs").glob("*-profile.yaml"))
    fleets = sorted((ROOT / "specs").glob("fleet-*.yaml"))
    solves = specs + sorted((ROOT / "examples").glob("solve-*.yaml"))
    evaluates = sorted(p for p in (ROOT / "examples").glob("*.yaml") if not p.name.startswith("solve-"))
    for p in solves:
        out.append((f"solve-{p.stem}", ["solve", str(p.relative_to(ROOT)), "--format", "json"]))
    for p in specs:
        out.append((f"pareto-{p.stem}", ["pareto", str(p.relative_to(ROOT)), "--format", "json"]))
        out.append((f"deploy-{p.stem}", ["deploy", str(p.relative_to(ROOT)), "--format", "json"]))
    for p in fleets:
        out.append((f"fleet-{p.stem}", ["fleet", str(p.relative_to(ROOT)), "--format", "json"]))
    for p in profiles:
        out.append((f"schedule-{p.stem}", ["schedule", str(p.relative_to(ROOT)), "--json"]))
    for p in evaluates:
        out.append((f"evaluate-{p.stem}", ["evaluate", str(p.relative_to(ROOT)), "--format", "json"]))
    return out


def run(argv: list[str]) -> str:
    """The command's standard output and error and exit status, as one text."""
    out, err, code = run_parts(argv)
    return f"{out}{err}exit {code}\n"


def run_parts(argv: list[str]) -> tuple[str, str, int]:
    """The command's standard output, error and exit status, run in-process from the root."""
    import os

    old = os.getcwd()
    os.chdir(ROOT)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(old)
    return out.getvalue(), err.getvalue(), code


if __name__ == "__main__":
    for name, argv in cases():
        (GOLDEN / f"{name}.json").write_text(run(argv))
        print(name)
