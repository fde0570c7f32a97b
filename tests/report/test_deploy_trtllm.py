"""`plan-opt deploy` for TensorRT-LLM: `engine: trtllm` emits trtllm-serve (never a vLLM
command), with the plan's split, batch, context and TensorRT-LLM's own memory fraction;
an FP8 KV cache through the LLM API options file the launch writes; what deploy does
not emit for it (several nodes per replica, expert parallelism) refused by name."""

from __future__ import annotations

import json

import pytest
import yaml

from solver.cli.main import main
from solver.errors import InputError
from solver.explain.solve import solve
from solver.report.deploy import emit
from solver.report.launch import check_flags
from tests.solve_helpers import problem_of

TRT_8B = {
    "model": "llama-3.1-8b",
    "engine": "trtllm",
    "workload": {"users": 16, "prompt_tokens": 512, "output_tokens": 256},
    "sla": {"max_tpot": "50ms"},
    "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
}


def _solve(spec: dict):
    return solve(problem_of(spec), explain=False)


def _flag(argv, name):
    return argv[argv.index(name) + 1]


@pytest.mark.parametrize(("weights", "kv"), [("bf16", "bf16"), ("fp8", "fp8"), ("int4-awq", "fp8")])
def test_trtllm_commands_use_only_documented_flags(weights, kv):
    spec = {**TRT_8B, "search": {**TRT_8B["search"], "weights": [weights], "kv_cache": [kv]}}
    assert check_flags(emit(_solve(spec), "trtllm")) == []


def test_a_trtllm_plan_carries_its_split_batch_context_and_memory_rule():
    r = _solve(TRT_8B)
    c = r.solution.candidate
    argv = emit(r, "trtllm").argv
    assert argv[:4] == ["trtllm-serve", "meta-llama/Llama-3.1-8B-Instruct", "--backend", "pytorch"]
    assert _flag(argv, "--max_batch_size") == str(c.batch)
    assert _flag(argv, "--max_seq_len") == "768"  # 512 prompt + 256 output tokens: the whole request
    # trtllm-serve's documented defaults, which catalogs/engines.yaml holds for trtllm:
    # max_num_tokens 8192, KvCacheConfig.free_gpu_memory_fraction 0.9
    assert _flag(argv, "--max_num_tokens") == "8192"
    assert _flag(argv, "--kv_cache_free_gpu_memory_fraction") == "0.9"
    assert "--tp_size" not in argv and "--extra_llm_api_options" not in argv  # one GPU, a 16-bit KV cache


def test_the_launch_fraction_is_the_one_the_plan_was_sized_with():
    # overrides.factors.memory_utilization 0.8 sizes the plan's KV at 0.8 of the free
    # memory; the launch must ask trtllm-serve for the same 0.8, not the catalog's 0.9
    r = _solve({**TRT_8B, "overrides": {"factors": {"memory_utilization": 0.8}}})
    assert _flag(emit(r, "trtllm").argv, "--kv_cache_free_gpu_memory_fraction") == "0.8"


def test_tp_is_passed_and_an_fp8_kv_cache_is_written_to_the_options_file():
    spec = {**TRT_8B, "search": {**TRT_8B["search"], "tp": [2], "kv_cache": ["fp8"]}}
    dep = emit(_solve(spec), "trtllm")
    assert _flag(dep.argv, "--tp_size") == "2"
    path = _flag(dep.argv, "--extra_llm_api_options")
    assert yaml.safe_load(dep.files[path]) == {"kv_cache_config": {"dtype": "fp8"}}  # KvCacheConfig(dtype='fp8')


def test_a_plan_sized_for_another_engine_keeps_trtllm_s_defaults_out():
    r = _solve({**TRT_8B, "engine": "vllm"})
    argv = emit(r, "trtllm").argv
    # vLLM's memory rule sized it: TensorRT-LLM's fraction and token budget are not claimed
    assert "--kv_cache_free_gpu_memory_fraction" not in argv and "--max_num_tokens" not in argv


def test_the_spec_s_engine_picks_the_command(tmp_path, capsys):
    spec = tmp_path / "trt.yaml"
    spec.write_text(json.dumps({**TRT_8B, "search": {**TRT_8B["search"], "kv_cache": ["fp8"]}}))
    assert main(["deploy", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "trtllm-serve " in out and "vllm serve" not in out
    assert "cat > ./extra-llm-api-config.yml <<'EOF'\nkv_cache_config:\n  dtype: fp8\nEOF\n" in out
    assert main(["deploy", str(spec), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine"] == "trtllm" and data["files"] == {"./extra-llm-api-config.yml": "kv_cache_config:\n  dtype: fp8\n"}


def test_k8s_writes_the_options_file_before_serving(tmp_path, capsys):
    from tests.k8s_schema import check

    spec = tmp_path / "trt.yaml"
    spec.write_text(json.dumps({**TRT_8B, "search": {**TRT_8B["search"], "kv_cache": ["fp8"]}}))
    assert main(["deploy", str(spec), "--emit", "k8s", "--format", "json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert [check(doc) for doc in docs] == [[] for _ in docs]
    server = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert server["image"].startswith("nvcr.io/nvidia/tensorrt-llm/release:")
    write, serve = server["args"][0].split(" && ")
    assert write == "printf '%s\\n' kv_cache_config: '  dtype: fp8' > /cache/extra-llm-api-config.yml"
    assert serve.startswith("trtllm-serve ") and "--extra_llm_api_options /cache/extra-llm-api-config.yml" in serve


def test_what_deploy_does_not_emit_for_trtllm_is_refused_by_name():
    r405 = _solve(
        {
            "model": "llama-3.1-405b",
            "engine": "trtllm",
            "workload": {"users": 8, "context_tokens": 8192, "prompt_tokens": 1024},
            "sla": {"max_tpot": "200ms"},
            "search": {"gpus": ["h100-sxm"], "tp": [8], "pp": [2], "weights": ["bf16"], "kv_cache": ["bf16"]},
        }
    )
    with pytest.raises(InputError, match="MPI"):  # 16 GPUs: two 8-GPU nodes per replica
        emit(r405, "trtllm")


def test_expert_parallel_and_a_draft_go_to_trtllm_s_options():
    moe = _solve(
        {
            "model": "qwen3-30b-a3b",
            "engine": "trtllm",
            "workload": {"users": 16, "context_tokens": 4096, "prompt_tokens": 1024},
            "sla": {"max_tpot": "100ms"},
            "search": {"gpus": ["h100-sxm"], "tp": [2], "weights": ["bf16"], "kv_cache": ["bf16"], "parallelism": ["dp_ep"]},
        }
    )
    dep = emit(moe, "trtllm")
    assert _flag(dep.argv, "--tp_size") == "2" and _flag(dep.argv, "--ep_size") == "2"  # the experts over both GPUs
    assert yaml.safe_load(dep.files[_flag(dep.argv, "--extra_llm_api_options")]) == {"enable_attention_dp": True}
    assert check_flags(dep) == []
    eagle = _solve(
        {
            **TRT_8B,
            "speculative": {"method": "eagle3", "draft_checkpoint": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_tokens": 3},
            "search": {**TRT_8B["search"], "speculative": [True]},
        }
    )
    dep = emit(eagle, "trtllm")
    options = yaml.safe_load(dep.files[_flag(dep.argv, "--extra_llm_api_options")])
    # Eagle3DecodingConfig: decoding_type 'Eagle3', max_draft_len, speculative_model
    assert options == {
        "speculative_config": {"decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}
    }


def test_an_engine_without_a_backend_for_the_plan_s_gpus_is_refused():
    r = _solve({**TRT_8B, "engine": "vllm", "search": {**TRT_8B["search"], "gpus": ["mi300x"]}})
    assert r.solution.candidate.shape.device.vendor == "AMD"
    with pytest.raises(InputError, match="no backend for AMD devices"):  # catalogs/engines.yaml trtllm runs_on: [NVIDIA]
        emit(r, "trtllm")
    assert check_flags(emit(r, "vllm")) == []
