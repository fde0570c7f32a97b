"""`vllm bench serve --save-result` JSON read without restating what it holds: the model
is its model_id, the weight format that checkpoint's; a run at a request rate counts
its requests in flight by Little's law, not as every request at once."""

from __future__ import annotations

import json

import pytest

from solver.errors import InputError
from solver.spec.measurements import read_vllm_bench

RUN = {"completed": 100, "total_input_tokens": 102400, "total_output_tokens": 12800, "mean_ttft_ms": 120.5, "mean_tpot_ms": 14.2}


def _file(tmp_path, **fields):
    f = tmp_path / "bench.json"
    f.write_text(json.dumps({**RUN, **fields}))
    return f


def test_the_model_and_its_weights_come_from_the_file(tmp_path):
    # catalogs/models.yaml publishes meta-llama/Llama-3.1-405B-Instruct-FP8 as fp8
    f = _file(tmp_path, model_id="meta-llama/Llama-3.1-405B-Instruct-FP8", max_concurrency=8)
    (m,) = read_vllm_bench(f, model=None, gpu="h100-sxm", tp=8, weights=None, kv_cache="bf16")
    assert (m.model, m.weights, m.batch) == ("meta-llama/Llama-3.1-405B-Instruct-FP8", "fp8", 8)
    (m,) = read_vllm_bench(f, model="llama-3.1-405b", gpu="h100-sxm", tp=8, weights="bf16", kv_cache="bf16")
    assert (m.model, m.weights) == ("llama-3.1-405b", "bf16")  # what is given wins


def test_a_16_bit_repository_is_read_as_16_bit_and_a_file_without_a_model_is_refused(tmp_path):
    (m,) = read_vllm_bench(
        _file(tmp_path, model_id="meta-llama/Llama-3.1-8B-Instruct", max_concurrency=4),
        model=None,
        gpu="h100-sxm",
        tp=1,
        weights=None,
        kv_cache="bf16",
    )
    assert m.weights == "bf16"
    with pytest.raises(InputError, match="give --model"):
        read_vllm_bench(_file(tmp_path, max_concurrency=4), model=None, gpu="h100-sxm", tp=1, weights=None, kv_cache="bf16")


def test_a_rate_run_counts_its_requests_in_flight_by_little_s_law(tmp_path):
    # 2.5 requests/s completed, 6.4 s each on average: 16 in flight (was: all 100 at once)
    f = _file(tmp_path, model_id="meta-llama/Llama-3.1-8B-Instruct", request_throughput=2.5, mean_e2el_ms=6400.0)
    (m,) = read_vllm_bench(f, model=None, gpu="h100-sxm", tp=1, weights=None, kv_cache="bf16")
    assert m.batch == 16
    with pytest.raises(InputError, match="request_throughput"):
        read_vllm_bench(_file(tmp_path, model_id="x/y"), model=None, gpu="h100-sxm", tp=1, weights=None, kv_cache="bf16")


def test_a_pipelined_run_counts_every_stage_s_gpus(tmp_path):
    f = _file(tmp_path, model_id="meta-llama/Llama-3.1-405B-Instruct", max_concurrency=16)
    (m,) = read_vllm_bench(f, model=None, gpu="h100-sxm", tp=8, pp=2, weights=None, kv_cache="bf16")
    assert (m.tp, m.pp, m.count) == (8, 2, 16)  # TP 8 × PP 2: 16 GPUs


def test_calibrate_refuses_a_degree_out_of_range_naming_the_flag(tmp_path, capsys):
    from solver.cli.main import main

    f = _file(tmp_path, model_id="meta-llama/Llama-3.1-8B-Instruct", max_concurrency=4)
    assert main(["calibrate", str(f), "--gpu", "h100-sxm", "--pp", "0", "-o", str(tmp_path / "c.yaml")]) == 2
    assert "--pp = 0" in capsys.readouterr().err
