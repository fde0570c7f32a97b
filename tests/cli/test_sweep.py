"""`plan-opt sweep`: one row per scenario, each the plan `solve` gives that scenario's
spec; the same table serially, in a process pool and on a local Ray instance; an
interrupted sweep resumes, solving only what is missing."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
import yaml

from solver.cli.main import main
from solver.explain.solve import solve
from tests.solve_helpers import problem_of

BASE = {
    "model": "llama-3.1-8b",
    "workload": {"users": 32, "context_tokens": 4096, "prompt_tokens": 1024},
    "sla": {"max_ttft": "1s", "max_tpot": "40ms"},
    "search": {"gpus": ["l40s", "a100-80gb", "h100-sxm"], "tp": [1, 2], "weights": ["bf16", "fp8"], "kv_cache": ["bf16"]},
}
AXES = {"workload.users": [8, 64, 256], "sla.max_tpot": ["20ms", "40ms"]}


def _sweep(tmp_path: Path, *flags: str, name: str = "out.csv", extra: dict | None = None) -> list[dict[str, str]]:
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"spec": BASE, "axes": AXES, **(extra or {})}))
    out = tmp_path / name
    assert main(["sweep", str(grid), "-o", str(out), "--quiet", *flags]) == 0
    with out.open() as f:
        return list(csv.DictReader(f))


def test_each_row_is_the_plan_solve_gives_its_scenario(tmp_path):
    rows = _sweep(tmp_path, "--workers", "1", extra={"scenarios": [{"workload.users": -5}]})
    assert len(rows) == 3 * 2 + 1
    for r in rows[:-1]:
        spec = {**BASE, "workload": {**BASE["workload"], "users": int(r["workload.users"])}, "sla": {**BASE["sla"], "max_tpot": r["sla.max_tpot"]}}
        c = solve(problem_of(spec), explain=False).solution.candidate
        if c is None:
            assert r["status"] == "infeasible" and r["plan"] == ""
            continue
        assert r["status"] == "optimal"
        assert (r["gpu"], int(r["tp"]), int(r["replicas"])) == (c.shape.device.name, c.shape.deployment.tp, c.replicas)
        assert float(r["cost_usd_per_hour"]) == pytest.approx(c.cost_usd_per_hour)
    assert rows[-1]["status"] == "bad input" and "workload.users = -5" in rows[-1]["error"]


def test_the_pool_and_serial_tables_are_the_same_and_a_sweep_resumes(tmp_path, capsys):
    serial = _sweep(tmp_path, "--workers", "1", name="serial.csv")
    pooled = _sweep(tmp_path, "--workers", "2", name="pool.csv")
    assert serial == pooled
    # Interrupted: keep the header and two rows; the rerun solves only the other four.
    out = tmp_path / "pool.csv"
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:3]) + "\n")
    capsys.readouterr()
    again = _sweep(tmp_path, "--workers", "2", name="pool.csv")
    assert "(2 already there, 4 solved)" in capsys.readouterr().err
    assert again == serial


def test_on_a_local_ray_instance_the_table_is_the_pools(tmp_path):
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("ray is missing: the test extra installs it")
        pytest.skip("ray is not installed")
    pooled = _sweep(tmp_path, "--workers", "2", name="pool.csv")
    on_ray = _sweep(tmp_path, "--ray", "local", name="ray.csv")
    assert on_ray == pooled


def test_parquet_and_plot_beside_the_csv(tmp_path):
    pytest.importorskip("pyarrow")
    rows = _sweep(tmp_path, "--workers", "1", "--parquet", str(tmp_path / "t.parquet"), "--plot", str(tmp_path / "c.png"), "--x", "workload.users")
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "t.parquet").to_pylist()
    assert [r["plan"] for r in table] == [r["plan"] or None for r in rows]
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_bad_flags_and_files_are_one_line(tmp_path, capsys):
    grid = tmp_path / "g.yaml"
    grid.write_text(yaml.safe_dump({"spec": BASE, "axes": AXES}))
    assert main(["sweep", str(grid), "-o", str(tmp_path / "o.csv"), "--x", "nope"]) == 2
    assert "--x = nope: one of the sweep's axes" in capsys.readouterr().err
    grid.write_text(yaml.safe_dump({"spec": BASE}))
    assert main(["sweep", str(grid), "-o", str(tmp_path / "o.csv")]) == 2
    assert "nothing to sweep" in capsys.readouterr().err
    assert main(["sweep", str(tmp_path / "missing.yaml"), "-o", str(tmp_path / "o.csv")]) == 2
