"""Kubernetes manifests for a deployment: a Deployment when one replica fits one node,
a LeaderWorkerSet (kubernetes-sigs/lws) when a replica spans nodes, each with the
GPU request, a model-cache volume and the engine's health probe, plus the volume
claim and a Service. Resource names and images come from catalogs/engine_flags.yaml;
node selection, CPU and memory requests and the GGUF fetch from report/k8s_pod.py."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Sequence

from solver.errors import InputError
from solver.report.deploy import HEAD, sglang_node_argv
from solver.report.k8s_pod import CACHE_MOUNT, cpu_request, gguf_fetch, gguf_path, memory_request_gib, node_selector, serve_from_file
from solver.report.launch import Launch, flag_data

LWS_API = "leaderworkerset.x-k8s.io/v1"


def object_name(text: str) -> str:
    """An RFC 1123 label (what Kubernetes object names must be)."""
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return s[:50].rstrip("-") or "plan"


def _serve_args(dep: Launch, argv: list[str]) -> list[str]:
    """The engine command listening on every address at the engine's port."""
    return argv + ["--host", "0.0.0.0", "--port", str(dep.port)]


def _in_cache(arg: str) -> str:
    """A local model file (./name.gguf) lives on the model-cache volume in a pod."""
    return f"{CACHE_MOUNT}/{arg[2:]}" if arg.startswith("./") else arg


def to_yaml(docs: list[dict]) -> str:
    """Plain YAML, one document per object, no anchors (kubectl takes them, people misread them)."""
    import yaml

    class _Plain(yaml.SafeDumper):
        def ignore_aliases(self, data: object) -> bool:
            return True

    return yaml.dump_all(docs, Dumper=_Plain, sort_keys=False)


def _shell(argv: list[str]) -> str:
    return " ".join(a if re.fullmatch(r"[\w./:$=,-]+", a) else f"'{a}'" for a in argv).replace(HEAD, "$LWS_LEADER_ADDRESS")


def _env() -> list[dict]:
    return [
        {"name": "HF_HOME", "value": f"{CACHE_MOUNT}/huggingface"},
        {"name": "LLAMA_CACHE", "value": f"{CACHE_MOUNT}/llama.cpp"},
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}}},
    ]


def _container(dep: Launch, image: str, resource: str, command: Sequence[list[str] | str], probes: bool, host: dict[str, str] | None = None) -> dict:
    """`command`: argv lists (quoted for the shell) or shell lines (kept as written);
    `host`: the CPU and memory requests (GPUs are requested whole, limits equal requests)."""
    c: dict = {
        "name": "server" if probes else "worker",
        "image": image,
        "command": ["/bin/sh", "-c"],
        "args": [" && ".join(a if isinstance(a, str) else _shell(a) for a in command)],
        "env": _env(),
        "resources": {"limits": {resource: dep.gpus_per_node}, "requests": {resource: dep.gpus_per_node, **(host or {})}},
        "volumeMounts": [{"name": "model-cache", "mountPath": CACHE_MOUNT}, {"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if probes:
        get = {"httpGet": {"path": dep.health_path, "port": dep.port}}
        c["ports"] = [{"name": "http", "containerPort": dep.port}]
        # Loading weights takes minutes: the startup probe allows 30 min before liveness counts.
        c["startupProbe"] = {**get, "periodSeconds": 10, "failureThreshold": 180}
        c["readinessProbe"] = {**get, "periodSeconds": 10}
        c["livenessProbe"] = {**get, "periodSeconds": 30, "failureThreshold": 3}
    return c


def _annotations(dep: Launch, k8s: dict) -> dict:
    """An SGLang prefill pod tells the router its KV bootstrap port (the annotation its
    service discovery reads)."""
    if dep.engine != "sglang" or dep.role != "prefill":
        return {}
    from solver.report.pd_router import SGLANG_BOOTSTRAP_PORT

    return {"annotations": {k8s["pd_router"]["bootstrap_port_annotation"]: str(SGLANG_BOOTSTRAP_PORT)}}


def _pod(containers: list[dict], claim: str, selector: dict[str, str], init: dict | None = None) -> dict:
    return {
        **({"nodeSelector": selector} if selector else {}),
        **({"initContainers": [init]} if init else {}),
        "containers": containers,
        "volumes": [
            {"name": "model-cache", "persistentVolumeClaim": {"claimName": claim}},
            {"name": "dshm", "emptyDir": {"medium": "Memory"}},
        ],
    }


def engine_image(dep: Launch, image: str | None, data: dict) -> str:
    """The image asked for, else the engine's pinned image for the GPU vendor (a note
    where the spec names another release than the image's)."""
    if image is not None and dep.engine_version is None:
        dep.notes.append(f"the commands are spelled for the current {dep.engine} release: if {image} is an older one, set engine.version in the spec")
    if image is None:
        table = data["engines"][dep.engine]
        image, pinned = table.get("image", {}).get(dep.vendor), table.get("image_version", {}).get(dep.vendor)
        if image is None:
            raise InputError("--image", None, f"no {dep.engine} image for {dep.vendor} GPUs in the catalog; pass --image IMAGE")
        if dep.engine_version is not None and pinned is not None and dep.engine_version != pinned:
            dep.notes.append(
                f"the commands are spelled for {dep.engine} {dep.engine_version} (the spec's engine.version) but the image is "
                f"{image} ({pinned}): pass --image with that release's image"
            )
    return image


def gpu_resource(dep: Launch, k8s: dict, emit: str = "k8s") -> str:
    """The extended resource the device plugin of the plan's GPU vendor advertises."""
    resource = k8s["gpu_resource"].get(dep.vendor)
    if resource is None:
        raise InputError(
            "--emit",
            emit,
            f"no Kubernetes GPU resource for {dep.vendor} devices in catalogs/engine_flags.yaml (has {', '.join(k8s['gpu_resource'])})",
        )
    return resource


def manifests(dep: Launch, *, name: str, weights_bytes: float, image: str | None = None) -> list[dict]:
    data = flag_data()
    k8s = data["kubernetes"]
    resource = gpu_resource(dep, k8s)
    image = engine_image(dep, image, data)
    name = object_name(name)
    claim = f"{name}-model-cache"
    if dep.model_id.startswith("/"):  # a local folder (a config.json given): not on the pod's volumes
        dep.notes.append(
            f"{dep.model_id} is a folder on this machine: mount it into the pod at the same path (the manifests mount only the model cache)"
        )
    labels = {"app": name}
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim, "labels": labels},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": f"{math.ceil(weights_bytes / 2**30)}Gi"}}},
    }
    serve_node = [s for s in dep.steps if s.tool == dep.engine and s.node in ("node", "head")][-1]
    gguf = gguf_path(dep)
    serve = _serve_args(dep, [_in_cache(a) for a in (serve_from_file(serve_node.argv, gguf) if gguf else serve_node.argv)])
    selector = node_selector(dep, k8s)
    init = gguf_fetch(dep, k8s, _env())
    argv = serve_node.argv
    dp_ranks = int(argv[argv.index("--data-parallel-size") + 1]) if "--data-parallel-size" in argv else 1

    def host(head: bool) -> dict[str, str]:
        cpu = cpu_request(dep, k8s, head, dp_ranks)
        return {**({"cpu": str(cpu)} if cpu else {}), "memory": f"{memory_request_gib(dep, weights_bytes)}Gi"}

    written = [  # the files the command reads, written first on the model-cache volume
        "printf '%s\\n' " + " ".join(shlex.quote(line) for line in text.rstrip("\n").split("\n")) + f" > {_in_cache(path)}"
        for path, text in dep.files.items()
    ]
    if dep.nodes_per_replica == 1:
        workload = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "replicas": dep.replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels, **_annotations(dep, k8s)},
                    "spec": _pod([_container(dep, image, resource, [*written, serve], True, host(True))], claim, selector, init),
                },
            },
        }
        selector = labels
    else:
        head: list[list[str] | str] = [*written, *(s.argv for s in dep.steps if s.node == "head" and s.tool != dep.engine)]
        if dep.engine == "vllm":  # vllm serve needs every worker's GPUs in the Ray cluster first
            head.append(f"until ray status | grep -q '/{dep.gpus_per_replica}.0 GPU'; do sleep 5; done")
        head.append(serve)
        if dep.engine == "sglang":  # one worker template: the rank is the pod's index in its group
            worker = [sglang_node_argv(dep, "$LWS_WORKER_INDEX")]
        else:
            worker = [s.argv for s in dep.steps if s.node == "worker 1"]
        leader_labels = {**labels, "role": "leader"}
        workload = {
            "apiVersion": LWS_API,
            "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "replicas": dep.replicas,
                "leaderWorkerTemplate": {
                    "size": dep.nodes_per_replica,
                    "restartPolicy": "RecreateGroupOnPodRestart",
                    "leaderTemplate": {
                        "metadata": {"labels": leader_labels, **_annotations(dep, k8s)},
                        "spec": _pod([_container(dep, image, resource, head, True, host(True))], claim, selector),
                    },
                    "workerTemplate": {
                        "metadata": {"labels": labels},
                        "spec": _pod([_container(dep, image, resource, worker, False, host(False))], claim, selector),
                    },
                },
            },
        }
        selector = leader_labels
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {"selector": selector, "ports": [{"name": "http", "port": dep.port, "targetPort": dep.port}]},
    }
    return [pvc, workload, service]
