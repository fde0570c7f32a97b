"""A name the catalog does not know is refused where the user wrote it: the file and
line for a value read from a file (a spec, a fleet file, an evaluate input, a
measurement CSV), the flag for a value given on the command line."""

from __future__ import annotations

from pathlib import Path

from solver.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def _error(argv, capsys) -> str:
    code = main([str(a) for a in argv])
    _, err = capsys.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_an_unknown_device_in_an_evaluate_file_names_its_line(tmp_path, capsys):
    f = tmp_path / "e.yaml"
    f.write_text("model: llama-3.1-8b\nhardware:\n  gpu: h99\nworkload: {users: 4, context_tokens: 2048, prompt_tokens: 512}\n")
    assert f"error: {f}:3: hardware.gpu = h99: unknown device" in _error(["evaluate", f], capsys)


def test_the_same_name_from_a_flag_names_the_flag_not_a_line(tmp_path, capsys):
    f = tmp_path / "e.yaml"
    f.write_text("model: llama-3.1-8b\nhardware:\n  gpu: h100-sxm\nworkload: {users: 4, context_tokens: 2048, prompt_tokens: 512}\n")
    msg = _error(["evaluate", f, "--gpu", "h99"], capsys)
    assert "error: --gpu (hardware.gpu) = h99: unknown device" in msg and str(f) not in msg


def test_an_unknown_precision_names_the_precision_field(tmp_path, capsys):
    f = tmp_path / "e.yaml"
    f.write_text(
        "model: llama-3.1-8b\nprecision: {weights: bf17}\nhardware: {gpu: h100-sxm}\nworkload: {users: 4, context_tokens: 2048, prompt_tokens: 512}\n"
    )
    assert f"error: {f}:2: precision.weights = bf17: unknown precision" in _error(["evaluate", f], capsys)


def test_an_unknown_model_in_a_fleet_names_its_workload_and_line(tmp_path, capsys):
    text = (ROOT / "specs" / "fleet-three-services.yaml").read_text()
    lines = text.splitlines()
    n = next(i for i, line in enumerate(lines) if line.strip().startswith("model:"))  # the first workload's model
    lines[n] = lines[n].split("model:")[0] + "model: llama-9q"
    f = tmp_path / "fleet.yaml"
    f.write_text("\n".join(lines) + "\n")
    assert f"error: {f}:{n + 1}: workloads[0].model = llama-9q: unknown model" in _error(["fleet", f], capsys)


def test_an_unknown_device_in_a_measurement_csv_names_its_row_line(tmp_path, capsys):
    f = tmp_path / "m.csv"
    f.write_text(
        "model,gpu,tp,weights,kv_cache,batch,prompt_tokens,output_tokens,tpot_ms\n"
        "llama-3.1-8b,h100-sxm,1,bf16,bf16,1,100,100,7\n"
        "llama-3.1-8b,h99,1,bf16,bf16,1,100,100,7\n"
    )
    msg = _error(["calibrate", f, "-o", tmp_path / "cal.yaml"], capsys)
    assert f"error: {f}:3: gpu = h99: unknown device" in msg


def test_a_bad_cell_in_a_measurement_csv_names_its_line_and_column(tmp_path, capsys):
    f = tmp_path / "m.csv"
    f.write_text("model,gpu,tp,weights,kv_cache,batch,prompt_tokens,output_tokens,tpot_ms\nllama-3.1-8b,h100-sxm,1,bf16,bf16,1,100,100,fast\n")
    assert f"error: {f}:2: tpot_ms = fast: not a number" in _error(["calibrate", f, "-o", tmp_path / "cal.yaml"], capsys)
