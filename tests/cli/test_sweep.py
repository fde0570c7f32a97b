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


def test_an_edited_base_spec_solves_every_row_again(tmp_path, capsys):
    first = _sweep(tmp_path, "--workers", "1")
    capsys.readouterr()
    global BASE
    kept = BASE
    try:  # the same settings on another base: none of the old rows is this scenario
        BASE = {**kept, "search": {**kept["search"], "gpus": ["l40s"]}}
        again = _sweep(tmp_path, "--workers", "1")
    finally:
        BASE = kept
    assert "(0 already there, 6 solved, 6 rows of other scenarios dropped (an edited base spec or grid))" in capsys.readouterr().err
    assert {r["gpu"] for r in again if r["gpu"]} <= {"l40s"} and [r["id"] for r in again] != [r["id"] for r in first]


def test_the_tco_column_is_the_tco_solve_reports(tmp_path, capsys):
    import json

    rows = _sweep(tmp_path, "--workers", "1")
    capsys.readouterr()
    for r in rows:
        if not r["plan"]:
            continue
        spec = {**BASE, "workload": {**BASE["workload"], "users": int(r["workload.users"])}, "sla": {**BASE["sla"], "max_tpot": r["sla.max_tpot"]}}
        path = tmp_path / "one.yaml"
        path.write_text(yaml.safe_dump(spec))
        assert main(["solve", str(path), "--format", "json", "--no-explain"]) == 0
        plan = json.loads(capsys.readouterr().out)["plan"]
        # min_cost rents what it does not own: its TCO is the rent (was the cheaper of renting and buying)
        assert float(r["tco_usd_per_hour"]) == pytest.approx(plan["tco_usd_per_hour"]) == pytest.approx(plan["cost_usd_per_hour"])


def test_under_min_tco_the_cost_and_tco_columns_are_what_solve_reports(tmp_path, capsys):
    # min_tco buys where buying is cheaper: solve then reports $0.00/hour rent and the TCO;
    # the sweep's cost column printed the list rent of the bought GPUs (its --plot drew it).
    import json

    spec = {**BASE, "objective": "min_tco"}
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"spec": spec, "axes": {"workload.users": [8, 64]}}))
    assert main(["sweep", str(grid), "-o", str(tmp_path / "t.csv"), "--quiet", "--workers", "1"]) == 0
    with (tmp_path / "t.csv").open() as f:
        rows = list(csv.DictReader(f))
    capsys.readouterr()
    for r in rows:
        path = tmp_path / "one.yaml"
        path.write_text(yaml.safe_dump({**spec, "workload": {**BASE["workload"], "users": int(r["workload.users"])}}))
        assert main(["solve", str(path), "--format", "json", "--no-explain"]) == 0
        plan = json.loads(capsys.readouterr().out)["plan"]
        assert float(r["cost_usd_per_hour"]) == pytest.approx(plan["cost_usd_per_hour"])
        assert float(r["tco_usd_per_hour"]) == pytest.approx(plan["tco_usd_per_hour"])
    assert any(float(r["cost_usd_per_hour"]) == 0.0 for r in rows)  # a bought plan: the case that differed


def test_parquet_columns_are_typed(tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    _sweep(tmp_path, "--workers", "1", "--parquet", str(tmp_path / "t.parquet"))
    schema = pq.read_schema(tmp_path / "t.parquet")
    types = {name: str(schema.field(name).type) for name in ("scenario", "workload.users", "sla.max_tpot", "tp", "cost_usd_per_hour", "plan")}
    assert types == {
        "scenario": "int64",
        "workload.users": "int64",
        "sla.max_tpot": "string",  # "20ms": a quantity with its unit stays as written
        "tp": "int64",
        "cost_usd_per_hour": "double",
        "plan": "string",
    }


def test_parquet_columns_keep_their_type_when_no_row_fills_them(tmp_path):
    # Every scenario infeasible (a 1 ms TPOT no GPU reaches) and none an error: the plan
    # and error columns are all empty, yet a reader concatenating sweeps needs one schema.
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"spec": {**BASE, "sla": {"max_ttft": "1s", "max_tpot": "1ms"}}, "axes": {"workload.users": [8, 64]}}))
    assert main(["sweep", str(grid), "-o", str(tmp_path / "t.csv"), "--quiet", "--workers", "1", "--parquet", str(tmp_path / "t.parquet")]) == 0
    table = pq.read_table(tmp_path / "t.parquet")
    assert set(table.column("status").to_pylist()) == {"infeasible"}
    types = {name: str(table.schema.field(name).type) for name in ("tp", "replicas", "cost_usd_per_hour", "tpot_s", "gpu", "error")}
    assert types == {"tp": "int64", "replicas": "int64", "cost_usd_per_hour": "double", "tpot_s": "double", "gpu": "string", "error": "string"}


def test_an_interrupted_sweep_keeps_its_rows_and_says_how_to_resume(tmp_path, capsys, monkeypatch):
    from solver.cli import sweep

    real = sweep.solve_row
    calls = {"n": 0}

    def stop_at_the_fifth(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "solve_row", stop_at_the_fifth)
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"spec": BASE, "axes": AXES}))
    out = tmp_path / "out.csv"
    assert main(["sweep", str(grid), "-o", str(out), "--quiet", "--workers", "1"]) == 130
    err = capsys.readouterr().err
    assert "interrupted: 4 of 6 scenarios are in" in err and f"plan-opt sweep {grid} -o {out}" in err
    with out.open() as f:
        assert len(list(csv.DictReader(f))) == 4
    monkeypatch.setattr(sweep, "solve_row", real)
    assert main(["sweep", str(grid), "-o", str(out), "--quiet", "--workers", "1"]) == 0
    assert "(4 already there, 2 solved)" in capsys.readouterr().err


def test_the_plot_draws_a_series_per_setting_of_the_other_axes(tmp_path):
    pytest.importorskip("matplotlib")
    from solver.report.sweep_table import plot

    rows = [
        {"workload.users": u, "sla.max_tpot": t, "cost_usd_per_hour": c}
        for u, t, c in [(8, "20ms", 1), (64, "20ms", 2), (8, "40ms", 0.5), (64, "40ms", 1)]
    ]
    fig = plot(rows, "workload.users", ["workload.users", "sla.max_tpot"])
    ax = fig.axes[0]
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["sla.max_tpot=20ms", "sla.max_tpot=40ms"]
    assert [list(line.get_ydata()) for line in ax.get_lines()] == [[1.0, 2.0], [0.5, 1.0]]
