"""Each command's process imports what that command uses (issue 44, cold start): the
parser of the command it runs, not every command's module; no CP-SAT where nothing is
solved. Each case runs in a fresh interpreter: what is in `sys.modules` is the point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND_MODULES = {
    f"solver.cli.{m}" for m in ("solve", "simulate", "pareto", "fleet", "sweep", "deploy", "evaluate", "calibrate", "schema", "listing", "serve")
}


def _loaded_after(argv: list[str]) -> tuple[int, set[str]]:
    probe = (
        "import contextlib, io, json, sys\n"
        "from solver.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({argv!r})\n"
        "print(json.dumps([code, sorted(sys.modules)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    code, modules = json.loads(done.stdout.splitlines()[-1])
    return code, set(modules)


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_evaluate_imports_its_own_command_and_no_solver() -> None:
    code, modules = _loaded_after(["evaluate", "examples/seed-step1-llama8b-rtx4090.yaml"])
    assert code == 0
    assert modules & COMMAND_MODULES == {"solver.cli.evaluate"}
    assert not {"ortools", "pandas", "pyarrow"} & _tops(modules)
    assert not {m for m in modules if m.startswith(("solver.optimise", "solver.explain"))}


def test_simulate_of_a_plan_given_whole_imports_no_solver() -> None:
    flags = ["--gpu", "h100-sxm", "--tp", "4", "--weights", "fp8", "--kv-cache", "bf16", "--replicas", "3", "--requests", "100", "--one-seed"]
    code, modules = _loaded_after(["simulate", "specs/chat-70b-at-20-rps.yaml", *flags])
    assert code in (0, 3)  # the verdict is the simulation's; here only what was imported
    assert modules & COMMAND_MODULES == {"solver.cli.simulate"}
    assert not {"ortools", "pandas", "pyarrow"} & _tops(modules)
    assert "solver.explain.solve" not in modules


def test_solve_without_an_inventory_imports_no_fleet_model_and_as_json_no_text_report() -> None:
    """The mixed plan (explain/mixed.py) puts the workload to the fleet model only when the
    spec owns GPUs: a solve without an inventory loads none of it; the text report is
    loaded only for text."""
    code, modules = _loaded_after(["solve", "specs/latency-critical-8b.yaml", "--format", "json"])
    assert code == 0
    assert not {m for m in modules if "fleet" in m}
    assert "solver.report.solve_text" not in modules
    assert "ortools.sat.python.cp_model" in modules and not {"pandas", "pyarrow"} & _tops(modules)


def test_a_solve_of_a_catalog_model_builds_no_config_json_validator() -> None:
    """catalog/hf_config_schema's two models are built on the first config.json read
    (defer_build): a solve of a catalog model never reads one."""
    probe = (
        "import contextlib, io\n"
        "from solver.cli.main import main\n"
        "from solver.catalog.hf_config_schema import ConfigFields, TopLevel\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['solve', 'specs/latency-critical-8b.yaml', '--no-explain'])\n"
        "print(code, ConfigFields.__pydantic_complete__, TopLevel.__pydantic_complete__)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "False", "False"]


def test_a_users_solve_imports_no_traffic_module_and_no_calibration() -> None:
    """A spec in users (no request rate) is neither screened nor simulated, and without
    --calibration no calibration file is read: its process loads no `solver.traffic`
    module, nor explain/traffic.py, nor catalog/calibration.py (each was imported for an
    annotation or a branch a users solve never takes). Text and JSON both."""
    for fmt in ("text", "json"):
        code, modules = _loaded_after(["solve", "specs/latency-critical-8b.yaml", "--format", fmt])
        assert code == 0
        assert not {m for m in modules if m == "solver.traffic" or m.startswith("solver.traffic.")}, fmt
        assert not {"solver.explain.traffic", "solver.catalog.calibration"} & modules, fmt


def test_a_rate_solve_still_loads_the_traffic_modules_it_runs() -> None:
    code, modules = _loaded_after(["solve", "specs/chat-70b-at-20-rps.yaml", "--format", "json", "--no-explain"])
    assert code in (0, 3)
    assert {"solver.traffic.screen", "solver.traffic.simulate", "solver.explain.traffic"} <= modules
