"""`plan-opt deploy`: the command that serves a plan uses only flags (and values) the
engine documents, and carries the plan's split, context and memory settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.cli.main import main
from solver.errors import InputError
from solver.explain.solve import solve
from solver.report.deploy import emit
from solver.report.launch import check_flags
from tests.solve_helpers import problem_of

ROOT = Path(__file__).resolve().parents[2]


def _plan(**search):
    spec = {
        "model": "llama-3.1-70b",
        "workload": {"users": 32, "context_tokens": 8192, "output_tokens": 512},
        "sla": {"max_tpot": "40ms"},
        "search": {"gpus": ["h100-sxm"], **search},
    }
    return solve(problem_of(spec), explain=False)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("weights, kv", [("bf16", "bf16"), ("fp8", "fp8"), ("int4-awq", "fp8")])
def test_commands_use_only_documented_flags(engine, weights, kv):
    dep = emit(_plan(weights=[weights], kv_cache=[kv]), engine)
    assert check_flags(dep) == []


def test_vllm_command_carries_the_plan():
    r = _plan(weights=["fp8"], kv_cache=["fp8"])
    c = r.solution.candidate
    argv = emit(r, "vllm").argv
    # the instruct checkpoint serves by default (catalogs/models.yaml `published`)
    assert argv[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct"]
    assert argv[argv.index("--max-model-len") + 1] == "8192"
    assert argv[argv.index("--kv-cache-dtype") + 1] == "fp8"
    assert argv[argv.index("--max-num-seqs") + 1] == str(c.batch)
    if c.shape.deployment.tp > 1:
        assert argv[argv.index("--tensor-parallel-size") + 1] == str(c.shape.deployment.tp)


def test_check_flags_catches_a_bad_flag():
    dep = emit(_plan(weights=["bf16"], kv_cache=["bf16"]), "vllm")
    dep.argv += ["--tensor-paralel-size", "2", "--kv-cache-dtype", "int4"]
    bad = check_flags(dep)
    assert any("unknown flag --tensor-paralel-size" in b for b in bad) and any("int4" in b for b in bad)


def test_cli_deploy(capsys):
    assert main(["deploy", str(ROOT / "specs" / "chat-llama70b.yaml"), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["command"][:2] == ["vllm", "serve"] and data["replicas"] >= 1
    assert main(["deploy", str(ROOT / "specs" / "impossible.yaml")]) == 3


# --------------------------------------------------------------------------- llama.cpp (issue 9, item 9)


def _solve(spec: dict):
    return solve(problem_of(spec), explain=False)


LLAMA_CPP_8B = {
    "model": "llama-3.1-8b",
    "workload": {"users": 4, "context_tokens": 8192, "prompt_tokens": 1024},
    "sla": {"max_tpot": "80ms"},
    "engine": {"name": "llama.cpp", "max_num_seqs": 4},
    "search": {"gpus": ["rtx-4090"], "tp": [1], "weights": ["q4_0"], "kv_cache": ["q8_0"]},
}


def _flag(argv, name):
    return argv[argv.index(name) + 1]


def test_llama_cpp_plan_runs_llama_server(tmp_path, capsys):
    spec = tmp_path / "llcpp.yaml"
    spec.write_text(json.dumps(LLAMA_CPP_8B))
    assert main(["deploy", str(spec), "--format", "json"]) == 0  # the spec's engine, not vllm
    argv = json.loads(capsys.readouterr().out)["command"]
    assert argv[0] == "llama-server"
    assert _flag(argv, "-ngl") == "33"  # Llama-3.1-8B: 32 layers + the output layer, all on the GPU
    assert _flag(argv, "-np") == "4"  # 4 users, max_num_seqs 4: one replica, 4 slots
    assert _flag(argv, "-c") == "32768"  # each slot gets c / np tokens: 8,192 x 4
    assert _flag(argv, "-ctk") == _flag(argv, "-ctv") == "q8_0"
    assert _flag(argv, "-fa") == "on"  # a quantised V cache needs flash attention
    assert _flag(argv, "-m").endswith(".gguf")  # no published Q4_0 GGUF of Llama-3.1-8B: a local file


def test_engine_llama_cpp_is_accepted(tmp_path, capsys):
    spec = tmp_path / "llcpp.yaml"
    spec.write_text(json.dumps(LLAMA_CPP_8B))
    assert main(["deploy", str(spec), "--engine", "llama.cpp"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("llama-server ")


def test_llama_cpp_splits_over_its_gpus_as_planned():
    spec = {
        "model": "llama-3.1-70b",
        "workload": {"users": 1, "context_tokens": 4096, "prompt_tokens": 1024},
        "sla": {"max_tpot": "200ms"},
        "engine": {"name": "llama.cpp", "split_mode": "row"},
        "search": {"gpus": ["rtx-4090"], "tp": [2], "weights": ["q4_k_m"], "kv_cache": ["q8_0"]},
    }
    dep = emit(_solve(spec), "llama.cpp")
    assert dep.gpus_per_replica == 2 and _flag(dep.argv, "-sm") == "row"
    assert _flag(dep.argv, "-ngl") == "81"  # 80 layers + output
    assert check_flags(dep) == []


def test_llama_cpp_serves_a_published_gguf():
    spec = {
        "model": "gpt-oss-20b",
        "workload": {"users": 1, "context_tokens": 8192, "prompt_tokens": 1024},
        "sla": {"max_tpot": "100ms"},
        "engine": "llama.cpp",
        "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["mxfp4"], "kv_cache": ["fp16"]},
    }
    dep = emit(_solve(spec), "llama.cpp")
    assert _flag(dep.argv, "-hf") == "ggml-org/gpt-oss-20b-GGUF:MXFP4"
    assert _flag(dep.argv, "-ctk") == "f16" and "-fa" not in dep.argv
    assert check_flags(dep) == []


def test_an_engine_is_refused_only_what_it_cannot_run():
    r = _solve(LLAMA_CPP_8B)
    with pytest.raises(InputError, match="q8_0"):  # vLLM has no q8_0 KV cache
        emit(r, "vllm")
    # planned for vLLM (solve under llama.cpp no longer offers FP8 weights at all)
    fp8 = {**LLAMA_CPP_8B, "engine": "vllm", "search": {**LLAMA_CPP_8B["search"], "gpus": ["h100-sxm"], "weights": ["fp8"], "kv_cache": ["fp16"]}}
    with pytest.raises(InputError, match="fp8"):  # llama.cpp has no FP8 weight kernels
        emit(_solve(fp8), "llama.cpp")
    gguf_on_vllm = {**LLAMA_CPP_8B, "search": {**LLAMA_CPP_8B["search"], "kv_cache": ["fp16"]}}
    dep = emit(_solve(gguf_on_vllm), "vllm")  # vLLM reads a single GGUF file (experimental), with a tokenizer
    assert dep.argv[2].endswith(".gguf") and _flag(dep.argv, "--tokenizer") == "meta-llama/Llama-3.1-8B-Instruct"
    assert check_flags(dep) == []


# --------------------------------------------------------------------------- published checkpoints (item 10)


def _one(model, gpu, weights, kv, tp=8, users=16, context=8192, tpot="200ms"):
    return _solve(
        {
            "model": model,
            "workload": {"users": users, "context_tokens": context, "prompt_tokens": 1024},
            "sla": {"max_tpot": tpot},
            "search": {"gpus": [gpu], "tp": [tp], "weights": [weights], "kv_cache": [kv]},
        }
    )


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_deepseek_r1_serves_its_fp8_checkpoint_without_quantising(engine):
    dep = emit(_one("deepseek-r1", "h200", "fp8", "bf16"), engine)
    assert "deepseek-ai/DeepSeek-R1" in dep.argv and "--quantization" not in dep.argv
    assert dep.checkpoint.format == "fp8" and not any("dynamic" in n for n in dep.notes)


def test_405b_serves_the_instruct_checkpoint_and_meta_s_fp8():
    bf16 = _solve({**json.loads(json.dumps(_spec_405b()))})
    assert emit(bf16, "vllm").argv[2] == "meta-llama/Llama-3.1-405B-Instruct"
    assert emit(bf16, "vllm", variant="base").argv[2] == "meta-llama/Llama-3.1-405B"
    fp8 = emit(_one("llama-3.1-405b", "h200", "fp8", "fp8"), "vllm")
    assert fp8.argv[2] == "meta-llama/Llama-3.1-405B-Instruct-FP8" and "--quantization" not in fp8.argv


def test_the_checkpoint_the_spec_names_is_the_one_served():
    spec = {
        "model": "llama-3.1-405b",
        "workload": {"users": 16, "context_tokens": 8192, "prompt_tokens": 1024},
        "sla": {"max_tpot": "200ms"},
        "search": {"gpus": ["h200"], "tp": [8], "weights": ["fp8"], "kv_cache": ["fp8"]},
        "overrides": {"model": {"checkpoint": "nvidia/Llama-3.1-405B-Instruct-FP8"}},
    }
    dep = emit(_solve(spec), "vllm")
    assert dep.argv[2] == "nvidia/Llama-3.1-405B-Instruct-FP8" and "--quantization" not in dep.argv
    # naming Meta's base FP8 checkpoint serves it, and the note says it was named, not
    # that no instruct one is published (Meta publishes one)
    spec["overrides"]["model"]["checkpoint"] = "meta-llama/Llama-3.1-405B-FP8"
    dep = emit(_solve(spec), "vllm")
    assert dep.argv[2] == "meta-llama/Llama-3.1-405B-FP8"
    assert any("overrides.model.checkpoint names (base)" in n for n in dep.notes)
    assert not any("no instruct" in n for n in dep.notes)


def test_runtime_fp8_only_when_no_fp8_checkpoint_is_published():
    dep = emit(_plan(weights=["fp8"], kv_cache=["fp8"]), "vllm")  # Meta publishes no FP8 70B
    assert dep.argv[2] == "meta-llama/Llama-3.1-70B-Instruct" and _flag(dep.argv, "--quantization") == "fp8"


def test_a_published_awq_checkpoint_needs_no_quantization_flag():
    dep = emit(_one("qwen2.5-7b", "l40s", "int4-awq", "fp16", tp=1, users=4), "vllm")
    assert dep.argv[2] == "Qwen/Qwen2.5-7B-Instruct-AWQ" and "--quantization" not in dep.argv


def test_catalog_refuses_a_published_checkpoint_in_an_unknown_format(tmp_path):
    import shutil

    from solver.catalog import catalog_dir, load_catalog

    for f in catalog_dir().glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    models = tmp_path / "models.yaml"
    models.write_text(
        models.read_text().replace(
            'format: fp8, weight_block_size: 128, variant: instruct, as_of: 2026-12-02,\n         source: "Hugging Face deepseek-ai/DeepSeek-R1 ',
            'format: fp9, weight_block_size: 128, variant: instruct, as_of: 2026-12-02,\n         source: "Hugging Face deepseek-ai/DeepSeek-R1 ',
        )
    )
    with pytest.raises(InputError, match="fp9"):
        load_catalog(tmp_path, use_cache=False)


def test_catalog_refuses_a_layout_naming_a_checkpoint_it_does_not_publish(tmp_path):
    import shutil

    from solver.catalog import catalog_dir, load_catalog

    for f in catalog_dir().glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    models = tmp_path / "models.yaml"
    text = models.read_text()
    assert "hf_ids: [meta-llama/Llama-3.1-405B-Instruct-FP8," in text
    models.write_text(text.replace("hf_ids: [meta-llama/Llama-3.1-405B-Instruct-FP8,", "hf_ids: [meta-llama/Llama-3.1-405B-Instrukt-FP8,"))
    with pytest.raises(InputError, match="Instrukt"):
        load_catalog(tmp_path, use_cache=False)


# --------------------------------------------------------------------------- multi-node and Kubernetes (item 11)


def _spec_405b() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "specs" / "pipeline-405b.yaml").read_text())


def test_two_node_vllm_plan_launches_a_ray_cluster_then_serves():
    r = _solve(_spec_405b())
    d = r.solution.candidate.shape.deployment
    assert (d.tp, d.pp) == (8, 2)  # the spec's documented plan
    dep = emit(r, "vllm")
    assert dep.nodes_per_replica == 2 and dep.gpus_per_node == 8  # 16 GPUs on 8-GPU HGX nodes
    assert [(s.node, s.argv[:3]) for s in dep.steps] == [
        ("head", ["ray", "start", "--head"]),
        ("worker 1", ["ray", "start", "--address"]),
        ("head", ["vllm", "serve", "meta-llama/Llama-3.1-405B-Instruct"]),
    ]
    serve = dep.steps[-1].argv
    assert _flag(serve, "--tensor-parallel-size") == "8" and _flag(serve, "--pipeline-parallel-size") == "2"
    assert _flag(serve, "--distributed-executor-backend") == "ray"
    assert _flag(dep.steps[1].argv, "--address") == "$HEAD_IP:6379"
    assert check_flags(dep) == []


def test_two_node_sglang_plan_runs_on_every_node_with_its_rank():
    dep = emit(_solve(_spec_405b()), "sglang")
    assert [_flag(s.argv, "--node-rank") for s in dep.steps] == ["0", "1"]
    for s in dep.steps:
        assert _flag(s.argv, "--nnodes") == "2" and _flag(s.argv, "--dist-init-addr") == "$HEAD_IP:5000"
        assert _flag(s.argv, "--tp-size") == "8" and _flag(s.argv, "--pp-size") == "2"
    assert check_flags(dep) == []


def test_k8s_multi_node_replica_is_a_leader_worker_set():
    from solver.report.deploy_k8s import manifests
    from tests.k8s_schema import check

    r = _solve(_spec_405b())
    docs = manifests(emit(r, "vllm"), name="llama-405b", weights_bytes=811e9)
    assert [check(doc) for doc in docs] == [[], [], []]
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    lwt = lws["spec"]["leaderWorkerTemplate"]
    assert lws["spec"]["replicas"] == 1 and lwt["size"] == 2  # one replica of two nodes
    leader = lwt["leaderTemplate"]["spec"]["containers"][0]
    worker = lwt["workerTemplate"]["spec"]["containers"][0]
    assert leader["resources"]["limits"] == {"nvidia.com/gpu": 8} == worker["resources"]["limits"]
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    # vllm serve starts once the Ray cluster holds both nodes: 2 × 8 = 16 GPUs.
    assert leader["args"][0].startswith("ray start --head --port 6379 && until ray status | grep -q '/16.0 GPU'; do sleep 5; done && vllm serve ")
    assert worker["args"] == ["ray start --address $LWS_LEADER_ADDRESS:6379 --block"]
    assert {"name": "model-cache", "mountPath": "/cache"} in leader["volumeMounts"]
    pvc = next(d for d in docs if d["kind"] == "PersistentVolumeClaim")
    assert pvc["spec"]["resources"]["requests"]["storage"] == "756Gi"  # ceil(811e9 / 2**30) = ceil(755.3)


def test_k8s_single_node_replicas_are_a_deployment_with_the_vendor_s_gpu(capsys, tmp_path):
    import yaml

    from tests.k8s_schema import check

    spec = yaml.safe_load((ROOT / "specs" / "latency-critical-8b.yaml").read_text())
    spec["search"]["gpus"] = ["mi300x"]  # an AMD plan: its GPU resource is amd.com/gpu
    path = tmp_path / "amd.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert main(["deploy", str(path), "--emit", "k8s"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert all(check(d) == [] for d in docs)
    dep = next(d for d in docs if d["kind"] == "Deployment")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert c["resources"]["limits"] == {"amd.com/gpu": 1}  # the plan: 1 x Instinct MI300X
    assert c["image"].startswith("rocm/vllm:") and not c["image"].endswith(":latest")  # pinned (issue 45 item 4)


def test_k8s_checker_names_what_is_wrong():
    from tests.k8s_schema import check

    bad = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {
            "selector": {"matchLabels": {"app": "a"}},
            "template": {
                "metadata": {"labels": {"app": "b"}},
                "spec": {
                    "containers": [
                        {
                            "name": "s",
                            "image": "i",
                            "resources": {"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 1}},
                            "volumeMounts": [{"name": "cache", "mountPath": "/c"}],
                            "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                        }
                    ]
                },
            },
        },
    }
    errs = check(bad)
    assert any("selector" in e for e in errs)
    assert any("request must equal its limit" in e for e in errs)
    assert any("cache is not a volume" in e for e in errs)
    assert any("8000 is not a containerPort" in e for e in errs)


def test_a_plan_that_counts_on_the_prefix_cache_turns_it_on():
    # vLLM V1 caches prefixes by default; the command says so since the plan relies on it,
    # and every flag stays one of the documented ones.
    spec = {
        "model": "llama-3.1-8b",
        "workload": {"users": 8, "prompt_tokens": 4096, "output_tokens": 256, "shared_prefix_tokens": 3072},
        "search": {"gpus": ["h100-sxm"], "weights": ["bf16"], "kv_cache": ["bf16"]},
    }
    r = solve(problem_of(spec), explain=False)
    dep = emit(r, "vllm")
    assert "--enable-prefix-caching" in dep.argv and check_flags(dep) == []
    assert "--enable-prefix-caching" not in emit(_plan(weights=["fp8"], kv_cache=["fp8"]), "vllm").argv


@pytest.mark.parametrize("layout", ["tp_ep", "dp_ep"])
def test_expert_parallel_plans_launch_with_their_layout(layout):
    # Qwen3-30B-A3B on 4 × H100, the experts split over the GPUs: vLLM --enable-expert-parallel
    # beside --tensor-parallel-size (tp_ep) or --data-parallel-size (dp_ep); SGLang --ep-size
    # beside --tp-size (and --attn-dp-size with DP attention: issue 45 item 1).
    spec = {
        "model": "qwen3-30b-a3b",
        "workload": {"users": 32, "context_tokens": 8192, "output_tokens": 512},
        "search": {"gpus": ["h100-sxm"], "tp": [4], "weights": ["bf16"], "kv_cache": ["bf16"], "parallelism": [layout]},
    }
    r = solve(problem_of(spec), explain=False)
    assert r.solution.chosen.shape.deployment.parallelism == layout
    v, s = emit(r, "vllm"), emit(r, "sglang")
    assert check_flags(v) == [] and check_flags(s) == []
    assert "--enable-expert-parallel" in v.argv
    assert ("--tensor-parallel-size" in v.argv) == (layout == "tp_ep") and ("--data-parallel-size" in v.argv) == (layout == "dp_ep")
    assert s.argv[s.argv.index("--ep-size") + 1] == "4" and s.argv[s.argv.index("--tp-size") + 1] == "4"
    assert ("--attn-dp-size" in s.argv) == (layout == "dp_ep") and "--enable-dp-attention" not in s.argv
    with pytest.raises(InputError, match="expert parallelism"):
        emit(r, "llama.cpp")
