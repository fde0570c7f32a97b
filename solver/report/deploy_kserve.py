"""`deploy --emit kserve`: the plan as one KServe LLMInferenceService (serving.kserve.io/
v1alpha1, the llm-d based CRD): the model, the replicas, the parallelism, the pinned vLLM
image running the same `vllm serve` command `deploy` prints, the GPU, CPU and memory
requests and node selection of `--emit k8s`; a disaggregated plan's prefill pool in
spec.prefill, and KServe's managed router (Gateway, HTTPRoute and llm-d's scheduler, which
sends each request to prefill then decode). Field names and the merge over KServe's vLLM
templates: catalogs/engine_flags.yaml kubernetes.kserve, with its sources."""

from __future__ import annotations

from solver.errors import InputError
from solver.report.deploy_k8s import engine_image, gpu_resource, object_name
from solver.report.k8s_pod import cpu_request, memory_request_gib, node_selector
from solver.report.launch import Launch, flag_data

EMIT = "kserve"


def _refuse_unless_servable(dep: Launch) -> None:
    """What the CRD cannot carry as `deploy` plans it, refused with the reason."""
    if dep.engine != "vllm":
        raise InputError("--engine", dep.engine, "KServe's LLMInferenceService runs vLLM (--engine vllm); --emit k8s writes the other engines' pods")
    for launch in (dep, dep.prefill) if dep.prefill is not None else (dep,):
        if launch.nodes_per_replica > 1:
            raise InputError(
                "--emit",
                EMIT,
                f"a replica spans {launch.nodes_per_replica} nodes with Ray (vllm serve --distributed-executor-backend ray); "
                "an LLMInferenceService's multi-node workers run vLLM's data-parallel ranks instead: use --emit k8s (a LeaderWorkerSet)",
            )
        if not launch.model_id or launch.model_id.startswith(("/", ".")):
            raise InputError(
                "--emit",
                EMIT,
                f"the model is a local file or folder ({launch.model_id}); spec.model.uri takes a hf://, s3:// or pvc:// URI: use --emit k8s",
            )


def kserve_args(dep: Launch, port: int) -> tuple[list[str], list[str]]:
    """(command, args) of the container: `vllm serve <model>` as deploy prints it, every
    flag after it unchanged, then the served name and the port KServe's template gives
    (lists are replaced whole in the merge, so they are restated)."""
    argv = dep.argv
    assert argv[:2] == ["vllm", "serve"], argv
    return argv[:3], [*argv[3:], "--served-model-name", dep.model_id, "--port", str(port)]


def _parallelism(dep: Launch) -> dict[str, int | bool]:
    argv = dep.argv
    out: dict[str, int | bool] = {}
    for flag, key in (("--tensor-parallel-size", "tensor"), ("--pipeline-parallel-size", "pipeline"), ("--data-parallel-size", "data")):
        if flag in argv:
            out[key] = int(argv[argv.index(flag) + 1])
    out.setdefault("tensor", 1)
    if "--enable-expert-parallel" in argv:
        out["expert"] = True
    return out


def _workload(dep: Launch, image: str, resource: str, k8s: dict, weights_bytes: float, port: int) -> dict:
    """One pool: replicas, parallelism and the pod (the "main" container KServe's template
    is merged under)."""
    command, args = kserve_args(dep, port)
    argv = dep.argv
    dp_ranks = int(argv[argv.index("--data-parallel-size") + 1]) if "--data-parallel-size" in argv else 1
    cpu = cpu_request(dep, k8s, True, dp_ranks)
    host = {**({"cpu": str(cpu)} if cpu else {}), "memory": f"{memory_request_gib(dep, weights_bytes)}Gi"}
    container = {
        "name": "main",
        "image": image,
        "command": command,
        "args": args,
        "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}}}],
        "resources": {"limits": {resource: dep.gpus_per_node}, "requests": {resource: dep.gpus_per_node, **host}},
    }
    selector = node_selector(dep, k8s)
    pod = {**({"nodeSelector": selector} if selector else {}), "containers": [container]}
    return {"replicas": dep.replicas, "parallelism": _parallelism(dep), "template": pod}


def llm_inference_service(dep: Launch, *, name: str, weights_bytes: float, image: str | None = None) -> dict:
    """The LLMInferenceService of the plan (its decode pool at the top level and its
    prefill pool in spec.prefill when the plan is disaggregated)."""
    _refuse_unless_servable(dep)
    data = flag_data()
    k8s = data["kubernetes"]
    cfg = k8s["kserve"]
    resource = gpu_resource(dep, k8s, EMIT)
    image = engine_image(dep, image, data)
    name = object_name(name)
    spec: dict = {"model": {"uri": f"hf://{dep.model_id}", "name": dep.model_id}}
    if dep.prefill is not None:
        spec.update(_workload(dep, image, resource, k8s, weights_bytes, cfg["decode_port"]))
        spec["prefill"] = _workload(dep.prefill, image, resource, k8s, weights_bytes, cfg["port"])
        dep.notes.append(
            "KServe's router (a Gateway, an HTTPRoute and llm-d's scheduler) sends each request to a prefill pod, then to a decode "
            "pod through llm-d's routing sidecar (port 8000; vLLM listens on 8001 there)"
        )
    else:
        spec.update(_workload(dep, image, resource, k8s, weights_bytes, cfg["port"]))
    spec["router"] = {"route": {}, "gateway": {}, "scheduler": {}}
    return {"apiVersion": cfg["api_version"], "kind": cfg["kind"], "metadata": {"name": name, "labels": {"app": name}}, "spec": spec}
