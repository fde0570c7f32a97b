"""Issue 45 item 4: manifests a platform team would apply. Every pod selects the nodes
of the GPU product it was planned on (NVIDIA GPU feature discovery's nvidia.com/gpu.product),
runs a pinned image, requests CPU and memory, and a llama.cpp pod's GGUF is fetched by the
manifest itself. Each manifest passes tests/k8s_schema.py's checker."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from solver.cli.main import main
from solver.explain.solve import solve
from solver.report.deploy import emit
from solver.report.deploy_k8s import manifests
from tests.k8s_schema import FLOATING_TAGS, check
from tests.solve_helpers import problem_of

ROOT = Path(__file__).resolve().parents[2]
# nvidia.com/gpu.product as GPU feature discovery writes it (the NVML name, spaces -> "-"),
# each value seen on real nodes (catalogs/engine_flags.yaml kubernetes.gpu_product_source).
GFD = {"h100-sxm": "NVIDIA-H100-80GB-HBM3", "b200": "NVIDIA-B200", "h200": "NVIDIA-H200", "rtx-4090": "NVIDIA-GeForce-RTX-4090"}


def _k8s(capsys, spec: dict | Path, tmp_path: Path, *extra: str) -> list[dict]:
    path = spec if isinstance(spec, Path) else tmp_path / "spec.yaml"
    if not isinstance(spec, Path):
        path.write_text(yaml.safe_dump(spec))
    assert main(["deploy", str(path), "--emit", "k8s", "--format", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def _serves(d: dict) -> bool:
    """A pool's Deployment (its pods hold GPUs), not a P/D plan's router."""
    return any(set(c.get("resources", {}).get("limits", {})) & {"nvidia.com/gpu", "amd.com/gpu"} for c in d["spec"]["template"]["spec"]["containers"])


def _pods(docs: list[dict]) -> list[dict]:
    out = []
    for d in docs:
        if d["kind"] == "Deployment" and _serves(d):
            out.append(d["spec"]["template"]["spec"])
        elif d["kind"] == "LeaderWorkerSet":
            t = d["spec"]["leaderWorkerTemplate"]
            out += [t["leaderTemplate"]["spec"], t["workerTemplate"]["spec"]]
    return out


BUNDLED = sorted(p for p in (ROOT / "specs").glob("*.yaml") if not p.name.startswith(("fleet-", "impossible")) and not p.stem.endswith("-profile"))


@pytest.mark.parametrize("spec", BUNDLED, ids=lambda p: p.stem)
def test_bundled_manifests_are_valid_pinned_and_sized(spec, capsys, tmp_path):
    docs = _k8s(capsys, spec, tmp_path)
    assert all(check(d) == [] for d in docs), [check(d) for d in docs]
    for pod in _pods(docs):
        for c in [*pod["containers"], *pod.get("initContainers", [])]:
            assert ":" in c["image"] and not c["image"].endswith(FLOATING_TAGS), c["image"]
        req = pod["containers"][0]["resources"]["requests"]
        assert req["memory"].endswith("Gi") and int(req["memory"][:-2]) >= 1


def test_disaggregated_pools_land_on_their_own_gpu_products(capsys, tmp_path):
    # The bundled P/D spec: each pool's Deployment selects the product its pool was planned on.
    spec = yaml.safe_load((ROOT / "specs" / "long-prompts-disaggregated.yaml").read_text())
    # the GPUs whose product label is known here: which vendor's pool is cheapest moves
    # with the fitted factors (an AMD pool has no label: the next test)
    spec["search"]["gpus"] = sorted(GFD)
    r = solve(problem_of(spec), explain=False)
    c = r.solution.candidate
    assert c is not None and c.prefill is not None
    want = {"prefill": GFD[c.prefill.shape.device.name], "decode": GFD[c.shape.device.name]}
    docs = _k8s(capsys, spec, tmp_path)
    got = {
        d["metadata"]["name"].rsplit("-", 1)[1]: d["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"]
        for d in docs
        if d["kind"] == "Deployment" and _serves(d)
    }
    assert got == want


def test_a_device_without_a_sourced_label_selects_nothing_and_says_so():
    spec = yaml.safe_load((ROOT / "specs" / "latency-critical-8b.yaml").read_text())
    spec["search"]["gpus"] = ["mi300x"]  # AMD: no GFD product label
    dep = emit(solve(problem_of(spec), explain=False), "vllm")
    docs = manifests(dep, name="x", weights_bytes=16e9)
    assert "nodeSelector" not in _pods(docs)[0] and any("select no GPU product" in n for n in dep.notes)


def _qwen(tp: int, layout: str) -> dict:
    return {
        "model": "qwen3-30b-a3b",
        "workload": {"users": 32, "context_tokens": 8192, "output_tokens": 512},
        "search": {"gpus": ["h100-sxm"], "tp": [tp], "weights": ["bf16"], "kv_cache": ["bf16"], "parallelism": [layout]},
    }


@pytest.mark.parametrize(
    "layout, cpus",
    [
        ("tp_ep", 2 + 4),  # vLLM docs: 1 API server + 1 engine core + 4 GPU workers
        ("dp_ep", 4 + 4 + 4 + 1),  # --data-parallel-size 4: 4 API servers, 4 engine cores, 4 workers, 1 coordinator
    ],
)
def test_vllm_pods_request_the_documented_minimum_of_cores(layout, cpus):
    dep = emit(solve(problem_of(_qwen(4, layout)), explain=False), "vllm")
    req = _pods(manifests(dep, name="x", weights_bytes=61e9))[0]["containers"][0]["resources"]["requests"]
    assert req["cpu"] == str(cpus)
    sg = emit(solve(problem_of(_qwen(4, layout)), explain=False), "sglang")
    assert "cpu" not in _pods(manifests(sg, name="x", weights_bytes=61e9))[0]["containers"][0]["resources"]["requests"]


def test_memory_request_is_the_checkpoint_the_pod_reads(capsys, tmp_path):
    # Llama-3.1-8B planned in fp8 on an H100: vLLM quantises the 16-bit checkpoint at load,
    # so the pod downloads and reads 8.03e9 parameters x 2 bytes = 16.06e9 B = 14.96 GiB -> 15Gi
    # (Meta's model card: 8.03B parameters), not the 8 GB the fp8 weights take on the GPU.
    spec = yaml.safe_load((ROOT / "specs" / "latency-critical-8b.yaml").read_text())
    spec["search"].update(gpus=["h100-sxm"], weights=["fp8"], tp=[1])
    docs = _k8s(capsys, spec, tmp_path)
    pod = _pods(docs)[0]
    assert pod["containers"][0]["resources"]["requests"]["memory"] == f"{math.ceil(8.03e9 * 2 / 2**30)}Gi"
    pvc = next(d for d in docs if d["kind"] == "PersistentVolumeClaim")
    assert pvc["spec"]["resources"]["requests"]["storage"] == "15Gi"


def test_a_replica_over_nodes_requests_each_node_s_share(capsys, tmp_path):
    # Two nodes of 8 GPUs: each pod loads half of the checkpoint (its pipeline stage).
    docs = _k8s(capsys, ROOT / "specs" / "pipeline-405b.yaml", tmp_path)
    storage = int(next(d for d in docs if d["kind"] == "PersistentVolumeClaim")["spec"]["resources"]["requests"]["storage"][:-2])
    leader, worker = _pods(docs)
    for pod in (leader, worker):
        assert abs(int(pod["containers"][0]["resources"]["requests"]["memory"][:-2]) - storage / 2) <= 1
    assert worker["containers"][0]["resources"]["requests"]["cpu"] == "8"  # 8 GPU workers, no API server


def test_llama_cpp_pod_fetches_its_gguf_in_an_init_container(capsys, tmp_path):
    spec = {
        "model": "qwen3-8b",
        "workload": {"users": 4, "context_tokens": 8192, "prompt_tokens": 1024},
        "sla": {"max_tpot": "80ms"},
        "engine": {"name": "llama.cpp", "max_num_seqs": 4},
        "search": {"gpus": ["rtx-4090"], "tp": [1], "weights": ["q4_k_m"], "kv_cache": ["q8_0"]},
    }
    docs = _k8s(capsys, spec, tmp_path)
    assert all(check(d) == [] for d in docs)
    pod = _pods(docs)[0]
    (init,) = pod["initContainers"]
    assert "snapshot_download(repo_id='Qwen/Qwen3-8B-GGUF'" in init["args"][0] and "Q4_K_M" in init["args"][0]
    assert {"name": "model-cache", "mountPath": "/cache"} in init["volumeMounts"]
    serve = pod["containers"][0]["args"][0]
    assert " -m /cache/gguf/Qwen--Qwen3-8B-GGUF-Q4_K_M.gguf " in serve and " -hf " not in serve
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-4090"}


def test_k8s_commands_are_spelled_for_the_pinned_image(capsys, tmp_path):
    # lmsysorg/sglang:v0.5.20 predates no established --attn-dp-size release: the manifest's
    # command keeps `--dp-size N --enable-dp-attention` (issue 45 item 1), the shell command the new one.
    spec = {**_qwen(4, "dp_ep"), "engine": {"name": "sglang"}}
    serve = _pods(_k8s(capsys, spec, tmp_path))[0]["containers"][0]["args"][0]
    assert "--dp-size 4 --enable-dp-attention" in serve and "--attn-dp-size" not in serve
    assert "--attn-dp-size" in emit(solve(problem_of(spec), explain=False), "sglang").argv


def test_checker_catches_bad_selectors_requests_and_names():
    pod = {
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA H100"},  # a space: not a label value
        "initContainers": [{"name": "server", "image": "i"}],
        "containers": [{"name": "server", "image": "i", "resources": {"requests": {"cpu": "three"}}}],
    }
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod}},
    }
    errs = check(obj)
    assert any("nodeSelector" in e for e in errs) and any("names repeated" in e for e in errs) and any("cpu" in e for e in errs)


def test_an_image_given_by_hand_gets_the_current_spelling_said():
    dep = emit(solve(problem_of(_qwen(4, "dp_ep")), explain=False), "sglang")
    docs = manifests(dep, name="x", weights_bytes=61e9, image="registry.example/sglang:v0.4.6")
    assert _pods(docs)[0]["containers"][0]["image"] == "registry.example/sglang:v0.4.6"
    assert any("set engine.version" in n for n in dep.notes)
