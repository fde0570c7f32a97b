"""Every file a command writes (cli/outputs.py): a regular file or a new name is replaced
whole, a device or FIFO is written as a stream and never read or replaced, a link is
written through and stays a link, and an output that cannot be written, or is one of
the command's inputs, is one line naming the flag (exit 2) before any work is done."""

from __future__ import annotations

import csv
import io
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from solver.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
BASE = {
    "model": "llama-3.1-8b",
    "workload": {"users": 32, "context_tokens": 4096, "prompt_tokens": 1024},
    "sla": {"max_ttft": "1s", "max_tpot": "40ms"},
    "search": {"gpus": ["l40s", "h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
}
USERS = [8, 64]


def _grid(tmp_path: Path, base_file: bool = False, users: list[int] = USERS) -> Path:
    grid = tmp_path / "grid.yaml"
    if base_file:
        (tmp_path / "base.yaml").write_text(yaml.safe_dump(BASE))
        grid.write_text(yaml.safe_dump({"base": "base.yaml", "axes": {"workload.users": users}}))
    else:
        grid.write_text(yaml.safe_dump({"spec": BASE, "axes": {"workload.users": users}}))
    return grid


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """In a process of its own: a FIFO that blocks it cannot block the suite."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "solver.cli", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def _one_line(err: str, flag: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"plan-opt: error: {flag} = "), err
    return lines[0]


# 1. what a write may do to what is there, from os.stat alone


def _mode(kind: int) -> os.stat_result:
    return os.stat_result((kind | 0o644, 0, 0, 1, 0, 0, 0, 0, 0, 0))


def test_only_a_regular_file_or_nothing_is_replaced():
    from solver.cli.outputs import FILE, NEW, STREAM, kind_of

    assert kind_of(None) == NEW
    assert kind_of(_mode(stat.S_IFREG)) == FILE
    assert kind_of(os.stat("/dev/null")) == STREAM  # stat only: the device is not touched
    assert kind_of(_mode(stat.S_IFCHR)) == STREAM
    assert kind_of(_mode(stat.S_IFIFO)) == STREAM
    for refused in (stat.S_IFDIR, stat.S_IFBLK, stat.S_IFSOCK):
        assert kind_of(_mode(refused)) not in (NEW, FILE, STREAM)


def test_a_character_device_is_written_as_a_stream_and_stays_a_device():
    from solver.cli import outputs

    target = outputs.check("/dev/null", "--output")
    assert target.kind == outputs.STREAM and str(target.path) == "/dev/null"
    outputs.write_text(target, "a,b\n1,2\n")  # a stream: no rename, no temporary file in /dev
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert outputs.read_back(target, 10) is None  # never read


# 1, 2. a FIFO is streamed to (its reader gets the table) and never read to resume


def test_sweep_into_a_fifo_streams_the_table_and_never_reads_it(tmp_path):
    fifo = tmp_path / "table.fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    run = _cli("sweep", str(_grid(tmp_path)), "-o", str(fifo), "--workers", "1", "--quiet", timeout=60)
    reader.join(timeout=30)
    assert run.returncode == 0, run.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO, not a regular file renamed over it
    rows = list(csv.DictReader(io.StringIO(got[0])))
    assert [int(r["workload.users"]) for r in rows] == USERS  # one row per scenario, in order


def test_a_fifo_without_a_reader_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "nobody.fifo"
    os.mkfifo(fifo)
    run = _cli("sweep", str(_grid(tmp_path)), "-o", str(fifo), "--quiet", timeout=60)
    assert run.returncode == 2
    assert "no reader" in _one_line(run.stderr, "--output")


# 1. a link is written through, and stays a link


def test_a_link_is_written_through_and_stays_a_link(tmp_path):
    real = tmp_path / "real.csv"
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert main(["sweep", str(_grid(tmp_path)), "-o", str(link), "--workers", "1", "--quiet"]) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert len(list(csv.DictReader(real.open()))) == len(USERS)


def test_a_link_to_nothing_is_refused(tmp_path, capsys):
    link = tmp_path / "dangling.csv"
    link.symlink_to(tmp_path / "nowhere" / "t.csv")
    assert main(["sweep", str(_grid(tmp_path)), "-o", str(link), "--quiet"]) == 2
    assert "link to nothing" in _one_line(capsys.readouterr().err, "--output")
    assert link.is_symlink()


def test_a_replaced_file_keeps_its_permissions(tmp_path):
    out = tmp_path / "t.csv"
    assert main(["sweep", str(_grid(tmp_path)), "-o", str(out), "--workers", "1", "--quiet"]) == 0
    out.chmod(0o640)
    out.write_text(out.read_text().splitlines()[0] + "\n")  # the header only: every scenario solved again
    assert main(["sweep", str(_grid(tmp_path)), "-o", str(out), "--workers", "1", "--quiet"]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# 2. resume only from a bounded regular file that is a sweep table


def test_a_file_that_is_not_a_sweep_table_is_refused_and_kept(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\nnot a table\n")
    assert main(["sweep", str(_grid(tmp_path)), "-o", str(notes), "--quiet"]) == 2
    assert "not a sweep table" in _one_line(capsys.readouterr().err, "--output")
    assert notes.read_text() == "my notes\nnot a table\n"


def test_a_table_past_the_bound_is_refused_unread(tmp_path, capsys):
    from solver.report.sweep_table import MAX_TABLE_BYTES

    assert MAX_TABLE_BYTES == 512 * 2**20  # the bound the README and --help state
    big = tmp_path / "big.csv"
    with big.open("wb") as f:
        f.truncate(MAX_TABLE_BYTES + 1)  # sparse: no disk, no memory
    assert main(["sweep", str(_grid(tmp_path)), "-o", str(big), "--quiet"]) == 2
    assert f"{MAX_TABLE_BYTES:,}" in _one_line(capsys.readouterr().err, "--output")


# 3. bounded in time, and never over an input


@pytest.mark.parametrize("which", ["grid.yaml", "base.yaml", "link-to-grid", "hardlink-to-base"])
def test_an_output_that_is_an_input_is_refused(tmp_path, capsys, which):
    grid = _grid(tmp_path, base_file=True)
    (tmp_path / "link-to-grid").symlink_to(grid)
    os.link(tmp_path / "base.yaml", tmp_path / "hardlink-to-base")
    before = {p.name: p.read_bytes() for p in (grid, tmp_path / "base.yaml")}
    assert main(["sweep", str(grid), "-o", str(tmp_path / which), "--quiet"]) == 2
    assert "one of the command's inputs" in _one_line(capsys.readouterr().err, "--output")
    assert {p.name: p.read_bytes() for p in (grid, tmp_path / "base.yaml")} == before


def test_calibrate_never_writes_over_its_measurements(tmp_path, capsys):
    m = tmp_path / "m.csv"
    m.write_bytes((ROOT / "tests" / "fuzz" / "seeds" / "measurements.csv").read_bytes())
    before = m.read_bytes()
    assert main(["calibrate", str(m), "-o", str(m)]) == 2
    assert "one of the command's inputs" in _one_line(capsys.readouterr().err, "--output")
    assert m.read_bytes() == before


def test_the_estimate_is_said_and_a_sweep_past_the_bound_refused(tmp_path, capsys):
    from solver.cli.sweep import MEASURE_N

    out = tmp_path / "t.csv"
    users = [8, 16, 32, 64, 128]
    assert len(users) > MEASURE_N  # some left after the timed ones
    assert main(["sweep", str(_grid(tmp_path, users=users)), "-o", str(out), "--workers", "1", "--quiet"]) == 0
    assert f"{len(users) - MEASURE_N} scenarios left" in capsys.readouterr().err  # said before the rest start
    out.unlink()
    assert main(["sweep", str(_grid(tmp_path, users=users)), "-o", str(out), "--workers", "1", "--max-hours", "1e-9", "--quiet"]) == 2
    assert "raise --max-hours" in _one_line(capsys.readouterr().err, "--max-hours")
    assert not out.exists()
    assert main(["sweep", str(_grid(tmp_path)), "-o", str(out), "--max-hours", "0"]) == 2


def test_the_estimate_divides_the_work_among_the_processes_that_run_at_once(monkeypatch):
    from solver.cli.sweep import estimate_s

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert estimate_s(0.5, 100, 1) == pytest.approx(50.0)  # 100 × 0.5 s, one after another
    assert estimate_s(0.5, 100, 4) == pytest.approx(12.5)  # 100 × 0.5 s / 4
    assert estimate_s(0.5, 100, 64) == pytest.approx(6.25)  # no more at once than the 8 CPUs
    assert estimate_s(0.5, 2, 4) == pytest.approx(0.5)  # 2 scenarios: 2 at once, 0.5 s


# 4. an output that cannot be written: one line, exit 2, before any work


@pytest.mark.parametrize(
    ("flag", "name"),
    [("--parquet", "missing/t.parquet"), ("--parquet", "."), ("--parquet", "dir"), ("--plot", "missing/c.png"), ("--plot", "."), ("--plot", "c.txt")],
)
def test_sweep_refuses_an_unwritable_output_before_solving(tmp_path, capsys, monkeypatch, flag, name):
    (tmp_path / "dir").mkdir()
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "t.csv"
    assert main(["sweep", str(_grid(tmp_path)), "-o", str(out), flag, name, "--quiet"]) == 2
    _one_line(capsys.readouterr().err, flag)
    assert not out.exists()  # nothing solved, nothing written


def test_two_outputs_of_one_file_are_refused(tmp_path, capsys):
    out = tmp_path / "t.csv"
    assert main(["sweep", str(_grid(tmp_path)), "-o", str(out), "--parquet", str(out), "--quiet"]) == 2
    assert "same file as --output" in _one_line(capsys.readouterr().err, "--parquet")


@pytest.mark.parametrize("name", ["missing/p.png", ".", "p.txt"])
@pytest.mark.parametrize("command", [["pareto", "specs/chat-llama70b.yaml"], ["simulate", "specs/chat-70b-at-20-rps.yaml"]])
def test_pareto_and_simulate_refuse_an_unwritable_plot_before_solving(capsys, command, name):
    spec = str(ROOT / command[1])
    assert main([command[0], spec, "--plot", name]) == 2
    out = capsys.readouterr()
    _one_line(out.err, "--plot")
    assert out.out == ""  # no report: refused before the solve


@pytest.mark.parametrize("name", ["missing/cal.yaml", ".", "dir"])
def test_calibrate_refuses_an_unwritable_output_before_fitting(tmp_path, capsys, monkeypatch, name):
    (tmp_path / "dir").mkdir()
    monkeypatch.chdir(tmp_path)
    m = ROOT / "tests" / "fuzz" / "seeds" / "measurements.csv"
    assert main(["calibrate", str(m), "-o", name]) == 2
    out = capsys.readouterr()
    _one_line(out.err, "--output")
    assert out.out == ""  # no fit printed: refused before fitting


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through a read-only mode")
def test_a_read_only_folder_is_refused(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert main(["sweep", str(_grid(tmp_path)), "-o", str(ro / "t.csv"), "--quiet"]) == 2
        assert "not writable" in _one_line(capsys.readouterr().err, "--output")
    finally:
        ro.chmod(0o755)


# 5. a lengths file's first line: too long for the csv module, or JSON Lines not an object


def _rate_spec(tmp_path: Path, lengths: str) -> str:
    spec = {
        "model": "llama-3.1-8b",
        "workload": {"requests_per_s": 5, "lengths_file": lengths},
        "sla": {"ttft": {"p99": "2s"}, "tpot": {"p90": "50ms"}},
        "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    return str(tmp_path / "spec.yaml")


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("log.csv", "p" * 131_073 + ",output_tokens\n1,2\n", "CSV header: not readable"),  # one cell past the csv module's 131,072
        ("log.csv", '"' + "q" * 200_000 + '"\n1,2\n', "CSV header: not readable"),
        ("log.jsonl", '[1, 2]\n{"prompt_tokens": 1, "output_tokens": 2}\n', "each line must be an object"),
        ("log.jsonl", '"x"\n', "each line must be an object"),
        ("log.txt", "[" + "1," * 70_000 + "1]\n", "each line must be an object"),
    ],
)
def test_a_lengths_file_with_a_bad_first_line_is_one_line(tmp_path, capsys, name, text, said):
    (tmp_path / name).write_text(text)
    assert main(["solve", "--no-explain", _rate_spec(tmp_path, name)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and f"{name}:1:" in err, err
