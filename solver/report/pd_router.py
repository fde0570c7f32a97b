"""The router in front of a disaggregated plan's two pools: what sends each request to a
prefill server and then to a decode server. Each engine documents its own (vLLM's
vllm-router, SGLang's sglang_router), with its flags in catalogs/engine_flags.yaml; as a
command for hosts, and as Kubernetes objects that find the pools' pods by label."""

from __future__ import annotations

from solver.report.launch import Launch, LaunchStep, flag_data

SGLANG_BOOTSTRAP_PORT = 8998
ROUTER_TOOL = {"vllm": "vllm_router", "sglang": "sglang_router"}


def _base(engine: str) -> list[str]:
    """The router's command and the switch that makes it route prefill then decode."""
    if engine == "vllm":
        return ["vllm-router", "--vllm-pd-disaggregation"]
    return ["python3", "-m", "sglang_router.launch_router", "--pd-disaggregation"]


def router_step(engine: str, port: int) -> LaunchStep:
    """The router on a host of its own, given one prefill and one decode server's address
    ($PREFILL_IP, $DECODE_IP); SGLang's prefill entry carries its bootstrap port."""
    prefill = [f"http://$PREFILL_IP:{port}"] + ([str(SGLANG_BOOTSTRAP_PORT)] if engine == "sglang" else [])
    argv = [*_base(engine), "--prefill", *prefill, "--decode", f"http://$DECODE_IP:{port}", "--host", "0.0.0.0", "--port", "8000"]
    return LaunchStep("router", argv, ROUTER_TOOL[engine])


def router_discovery_argv(dep: Launch, prefill_app: str, decode_app: str) -> list[str]:
    """The router in a pod: the pools' pods found by their app labels in its namespace
    ($POD_NAMESPACE, from the downward API), reached on the engine's port."""
    port = flag_data()["kubernetes"]["pd_router"]["port"]
    return [
        *_base(dep.engine),
        "--service-discovery",
        "--prefill-selector",
        f"app={prefill_app}",
        "--decode-selector",
        f"app={decode_app}",
        "--service-discovery-port",
        str(dep.port),
        "--service-discovery-namespace",
        "$POD_NAMESPACE",
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
    ]


def router_container(engine: str, argv: list[str]) -> dict:
    """The router's container: the router project's published image where the catalog
    names one (run as is: nothing installed at start, Kubernetes itself expands
    $(POD_NAMESPACE)), else its pinned package pip-installed into the pinned python image
    by a shell; either way with the CPU and memory its project's P/D manifests request."""
    import shlex

    cfg = flag_data()["kubernetes"]["pd_router"]
    image = cfg.get("images", {}).get(engine)
    if image is not None:
        run = {"image": image, "command": ["$(POD_NAMESPACE)" if a == "$POD_NAMESPACE" else a for a in argv]}
    else:
        line = " ".join(a if a == "$POD_NAMESPACE" else shlex.quote(a) for a in argv)
        run = {"image": cfg["image"], "command": ["/bin/sh", "-c"], "args": [f"pip install --no-cache-dir {cfg['packages'][engine]} && exec {line}"]}
    resources = cfg["resources"][engine]
    return {
        "name": "router",
        **run,
        "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
        "ports": [{"name": "http", "containerPort": cfg["port"]}],
        "resources": {"requests": dict(resources["requests"]), "limits": dict(resources["limits"])},
    }


def router_manifests(dep: Launch, name: str, prefill_app: str, decode_app: str) -> list[dict]:
    """A ServiceAccount allowed to list and watch pods in its namespace (service discovery
    reads them), the router's Deployment (router_container) and its Service: the one
    address clients use."""
    cfg = flag_data()["kubernetes"]["pd_router"]
    port = cfg["port"]
    labels = {"app": name}
    argv = router_discovery_argv(dep, prefill_app, decode_app)
    meta = {"name": name, "labels": labels}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": meta,
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": meta,
        "subjects": [{"kind": "ServiceAccount", "name": name}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
    }
    container = router_container(dep.engine, argv)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"serviceAccountName": name, "containers": [container]}},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {"selector": labels, "ports": [{"name": "http", "port": port, "targetPort": port}]},
    }
    return [account, role, binding, deployment, service]
