"""The command line as a user meets it: reports, JSON, and one clear message for
every kind of bad input — never a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from solver.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seed-step1-llama8b-rtx4090.yaml"


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_seed_example_reports_33_gb_against_the_cards_25_8_gb(capsys):
    code, out, err = run(["evaluate", SEED], capsys)
    assert code == 0 and err == ""
    assert "33.18 GB needed of 25.76 GB usable" in out
    assert "17.18 GB (16.00 GiB)" in out  # 17,179,869,184 B
    for step in ("Step 1", "Step 2", "Step 3", "Step 4"):
        assert step in out
    assert out.index("Step 1") < out.index("Step 2") < out.index("Step 3") < out.index("Step 4")
    assert "TP=2" in out and "KV cache to fp8" in out


def test_json_carries_the_same_figures(capsys):
    code, out, _ = run(["evaluate", SEED, "--format", "json"], capsys)
    data = json.loads(out)
    assert data["memory"]["kv_bytes"] == 17_179_869_184
    assert data["memory"]["needed_bytes"] == 16e9 + 17_179_869_184
    assert data["ok"] is False
    memory = next(v for v in data["verdicts"] if v["constraint"] == "memory")
    assert memory["ok"] is False and memory["margin"] < 0
    fp8 = next(r for r in data["remedies"] if r["kv_cache"] == "fp8")
    assert fp8["resolves"] and fp8["memory_needed_bytes"] == 16e9 + 17_179_869_184 / 2


def test_flags_alone_are_enough_and_override_the_file(capsys):
    code, out, _ = run(["evaluate", SEED, "--kv-cache", "fp8", "--format", "json"], capsys)
    assert json.loads(out)["memory"]["kv_bytes"] == 17_179_869_184 / 2
    code, out, _ = run(
        [
            "evaluate",
            "--model",
            "llama-3.1-70b",
            "--gpu",
            "h100-sxm",
            "--tp",
            "4",
            "--users",
            "32",
            "--context",
            "8192",
            "--prompt",
            "2000",
            "--output",
            "512",
            "--max-tpot",
            "50ms",
            "--max-ttft",
            "2s",
        ],
        capsys,
    )
    assert code == 0 and "TP 4 × PP 1" in out and "MEETS" in out


def test_check_exits_3_when_a_constraint_fails(capsys):
    code, _, _ = run(["evaluate", SEED, "--check"], capsys)
    assert code == 3
    code, _, _ = run(["evaluate", SEED, "--check", "--tp", "2"], capsys)
    assert code == 0


def test_set_reaches_any_field(capsys):
    code, out, _ = run(["evaluate", SEED, "--set", "workload.users=9", "--format", "json"], capsys)
    assert json.loads(out)["ok"] is True  # 9 sequences fit (see test_memory)


def _error(argv, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2, (code, out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("plan-opt: error:"), err
    assert "Traceback" not in err
    return lines[0]


def test_unknown_gpu_gets_did_you_mean(capsys):
    msg = _error(["evaluate", SEED, "--gpu", "rtx-4900"], capsys)
    assert "--gpu (hardware.gpu) = rtx-4900" in msg and "did you mean 'rtx-4090'" in msg


def test_unknown_model_gets_did_you_mean(capsys):
    msg = _error(["evaluate", SEED, "--model", "llama-3.1-8"], capsys)
    assert "error: --model = llama-3.1-8:" in msg and "did you mean" in msg


def test_malformed_yaml_names_the_line(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text("model: llama-3.1-8b\nhardware:\n  gpu: rtx-4090\n  tp: [1\nworkload: {users: 1}\n")
    msg = _error(["evaluate", f], capsys)
    assert f"{f}:" in msg and "malformed YAML" in msg
    assert ":5:" in msg or ":4:" in msg


def test_unknown_field_names_its_line(tmp_path, capsys):
    f = tmp_path / "typo.yaml"
    f.write_text(
        "model: llama-3.1-8b\nhardware:\n  gpu: rtx-4090\n  tensor_parallel: 2\nworkload: {users: 1, context_tokens: 100, output_tokens: 10}\n"
    )
    msg = _error(["evaluate", f], capsys)
    assert f"{f}:4:" in msg and "hardware.tensor_parallel" in msg and "unknown field" in msg


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--users", "0"], "workload.users"),
        (["--users", "-5"], "workload.users"),
        (["--tp", "0"], "hardware.tp"),
        (["--context", "1000000000"], "workload.context_tokens"),
        (["--set", "overrides.factors.memory_utilization=1.5"], "overrides.factors.memory_utilization"),
        (["--set", "overrides.gpu.memory_bytes=-24GB"], "overrides.gpu.memory_bytes"),
        (["--max-tpot", "fast"], "sla.max_tpot"),
        (["--count", "3", "--tp", "2"], "hardware"),
        (["--weights", "int3"], "precision"),
        (["--kv-cache", "int4-awq"], "precision.kv_cache"),
        (["--platform", "hgx-hopper-8gpu"], "hardware.platform"),
    ],
)
def test_zero_negative_absurd_and_unknown_values_are_refused(capsys, flags, field):
    msg = _error(["evaluate", SEED, *flags], capsys)
    assert field in msg


def test_missing_file_and_missing_fields(capsys, tmp_path):
    assert "no such file" in _error(["evaluate", tmp_path / "nope.yaml"], capsys)
    assert "missing model" in _error(["evaluate", "--gpu", "h100-sxm"], capsys)


def test_refused_split_is_reported_not_crashed(capsys):
    code, out, _ = run(["evaluate", SEED, "--tp", "3"], capsys)
    assert code == 0 and "NOT POSSIBLE" in out and "32 attention heads" in out


def test_model_from_a_local_config_json(capsys):
    cfg = ROOT / "tests" / "fixtures" / "hf_configs" / "llama-3.1-8b.json"
    code, out, _ = run(["evaluate", SEED, "--model", cfg, "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["memory"]["kv_bytes"] == 17_179_869_184


def test_list_commands(capsys):
    for what in ("devices", "models", "platforms", "precisions"):
        code, out, _ = run(["list", what], capsys)
        assert code == 0 and len(out.splitlines()) > 5


def test_list_engines_names_sglangs_fraction_rule_not_a_fixed_default(capsys):
    # SGLang picks mem_fraction_static itself (server_args.py; 0.835 at TP 1 on an H100 from
    # 0.5.3, 0.88 / 0.87 / 0.85 / 0.81 / 0.79 by TP before): its row must not print 0.88 as the
    # default, and a release line's rule reads as its steps, not as a dataclass's repr
    code, out, _ = run(["list", "engines"], capsys)
    assert code == 0
    sglang = next(line for line in out.splitlines() if line.startswith("sglang "))
    assert "0.88" not in sglang and "--mem-fraction-static" in sglang
    assert "--gpu-memory-utilization 0.9" in out  # vLLM's is one figure
    assert "FractionRule(" not in out and "TpFraction(" not in out
    assert "0.88 from TP 1, 0.87 from TP 2, 0.85 from TP 4, 0.81 from TP 8, 0.79 from TP 16" in out


def test_installed_console_script_never_shows_a_traceback():
    exe = shutil.which("plan-opt") or None
    cmd = [exe] if exe else [sys.executable, "-m", "solver.cli.main"]
    ok = subprocess.run([*cmd, "evaluate", str(SEED)], capture_output=True, text=True)
    assert ok.returncode == 0 and "Step 4" in ok.stdout
    bad = subprocess.run([*cmd, "evaluate", str(SEED), "--gpu", "h1000"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1


def test_engine_profile_sets_the_kv_capacity(capsys):
    # vLLM: 90 % of the card less weights and overhead, in blocks of 16 tokens.
    code, out, _ = run(["evaluate", SEED, "--tp", "2", "--format", "json"], capsys)
    mem = json.loads(out)["memory"]
    assert mem["engine"] == "vllm" and mem["block_size_tokens"] == 16
    per_gpu_token = 131_072 // 2
    budget = 24_564 * 2**20 * 1.0 - 8e9  # the example's utilisation 1.0, no overhead
    assert mem["kv_capacity_blocks"] == int(budget // (16 * per_gpu_token))
    assert mem["kv_capacity_tokens"] == 16 * mem["kv_capacity_blocks"]
    # Sequences of 8,192 tokens the budget holds (the bytes per sequence max_batch divides by):
    # 17,757,220,864 / (8,192 × 65,536 B) = 33.075
    assert mem["max_concurrency"] == pytest.approx(budget / (8192 * per_gpu_token))
    # SGLang: a static fraction for weights and KV, pages of one token; unset, the current line's
    # rule (PR #10975) gives round((81,559 − 13,440) / 81,559, 3) = 0.835 at TP 1 on an H100
    # (reserve 512 + 1.5 × 8,192 + 2 × 256 + 1,024 / 8 MiB), of the memory free before the weights
    # load (less the runtime's 256 MiB).
    code, out, _ = run(
        [
            "evaluate",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100-sxm",
            "--engine",
            "sglang",
            "--users",
            "1",
            "--context",
            "4096",
            "--output",
            "256",
            "--format",
            "json",
        ],
        capsys,
    )
    mem = json.loads(out)["memory"]
    assert mem["engine"] == "sglang" and mem["block_size_tokens"] == 1
    # the runtime sees 434 MiB less than nvidia-smi's 81,559 MiB (the driver's share)
    assert mem["kv_budget_bytes"] == pytest.approx(((81_559 - 434) * 2**20 - 2**28) * 0.835 - 8_030_261_248 * 2)
    assert _error(["evaluate", SEED, "--engine", "vllmm"], capsys).count("did you mean 'vllm'") == 1


@pytest.mark.parametrize("command", ["solve", "pareto", "fleet", "deploy", "evaluate", "calibrate", "schema", "list"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert "usage: plan-opt " + command in capsys.readouterr().out


def test_interconnect_step_names_the_allreduce_algorithm(capsys):
    # Llama-3.1-70B FP8 at TP 8 on H200, one user: 16 KiB all-reduces by vLLM's custom
    # one-shot kernel; a 1,024-token prompt's 16.8 MB ones by NVLS (under vLLM's 64 MiB).
    flags = [
        "evaluate",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h200",
        "--tp",
        "8",
        "--weights",
        "fp8",
        "--users",
        "1",
        "--prompt",
        "1024",
        "--output",
        "256",
    ]
    code, out, _ = run(flags, capsys)
    assert code == 0
    assert "16.4 kB each by custom one-shot" in out and "16.8 MB each by NVLS" in out
    code, out, _ = run(flags + ["--format", "json"], capsys)
    ic = json.loads(out)["interconnect"]
    assert ic["allreduce_algorithm"] == "custom one-shot" and ic["prefill_allreduce_algorithm"] == "NVLS"
    code, out, _ = run([*flags[:6], "1", *flags[7:], "--format", "json"], capsys)
    assert json.loads(out)["interconnect"]["allreduce_algorithm"] is None  # TP 1


def test_evaluate_names_the_unhidden_share_where_a_kernel_has_one(capsys, tmp_path):
    # Llama-3.1-8B at 64 users on an H100: with unhidden_share 0.5 each decode kernel is
    # max(read, math) + 0.5 × min, with prefill_unhidden_share 0.25 the prefill's GEMMs
    # max + 0.25 × min, and the report says so beside the times.
    # batching: isolated, so the step's rows are the ones spelt below (continuous adds a
    # wider "prefill mixed in" row, which widens the label column)
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\n"
        "workload: {users: 64, prompt_tokens: 1024, output_tokens: 256, batching: isolated}\n"
        "overrides: {factors: {unhidden_share: 0.5, prefill_unhidden_share: 0.25}}\n"
    )
    code, out, _ = run(["evaluate", spec], capsys)
    assert code == 0
    assert "GEMMs          max(weights read, matmul FLOPs) + 0.50 unhidden share × min" in out
    assert "GEMMs max(read, linear) + 0.25 unhidden share × min" in out
    code, out, _ = run(["evaluate", SEED], capsys)
    # The defaults: decode's kernels the roofline's max, said as max(...); a prefill's
    # GEMMs their read and their FLOPs one after the other (fitted share 1).
    assert "unhidden share × min" not in out.split("Step 3")[0]
    assert "GEMMs max(read, linear) + 1.00 unhidden share × min" in out
    # llama.cpp's kernels never overlap them: its prefill says so, whatever the share.
    spec.write_text(
        "model: llama-3.1-8b\nhardware: {gpu: rtx-4090}\nprecision: {weights: q4_k_m, kv_cache: fp16}\nengine: llama.cpp\n"
        "workload: {users: 1, prompt_tokens: 512, output_tokens: 10}\noverrides: {factors: {prefill_unhidden_share: 0}}\n"
    )
    code, out, _ = run(["evaluate", spec], capsys)
    assert code == 0 and "GEMMs read + linear, one after the other" in out


def test_evaluate_shows_the_measured_matmul_share_beside_the_peak(capsys, tmp_path):
    # H100 SXM BF16: 989.5 TFLOP/s × 0.803 (794.5 measured) = 794.6 TFLOP/s.
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nprecision: {weights: bf16}\nworkload: {users: 1, prompt_tokens: 1024, output_tokens: 64}\n"
    )
    code, out, _ = run(["evaluate", spec], capsys)
    assert code == 0
    assert "989.5 TFLOP/s bf16 × 0.803 measured matmul share = 794.6 TFLOP/s" in out


def test_a_matmul_share_for_a_dtype_the_gpu_lacks_is_refused(capsys, tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "model: llama-3.1-8b\nhardware: {gpu: a100-80gb}\nworkload: {users: 1, prompt_tokens: 1024, output_tokens: 64}\n"
        "overrides: {gpu: {matmul_share: {fp8: 0.7}}}\n"
    )
    code, _, err = run(["evaluate", spec], capsys)
    assert code == 2
    assert "overrides.gpu.matmul_share.fp8 = 0.7: a100-80gb has no fp8 throughput" in err
    assert "Traceback" not in err
    # The same in a solve spec's per-GPU overrides names that field.
    spec.write_text(
        "model: llama-3.1-8b\nworkload: {users: 4, prompt_tokens: 512, output_tokens: 128}\nsearch: {gpus: [a100-80gb]}\n"
        "overrides: {gpus: {a100-80gb: {matmul_share: {fp8: 0.7}}}}\n"
    )
    code, _, err = run(["solve", spec], capsys)
    assert code == 2
    assert "overrides.gpus.a100-80gb.matmul_share.fp8 = 0.7: a100-80gb has no fp8 throughput" in err


def test_list_devices_shows_the_share_of_peak_measured_matmuls_reach(capsys):
    # MI300X: 668.4 of 1,307.4 TFLOP/s BF16 measured (stas00's MAMF table) = 51 %;
    # an RTX 4090 has no measurement recorded.
    code, out, _ = run(["list", "devices"], capsys)
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "1,307 TFLOP/s      51%" in rows["mi300x"]
    assert "165 TFLOP/s        —" in rows["rtx-4090"]
