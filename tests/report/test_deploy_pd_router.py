"""Issue 45 item 4: a disaggregated plan's launch includes the router the engine documents
for prefill/decode serving (vLLM's vllm-router, SGLang's sglang_router): as a command,
and in --emit k8s as a Deployment that finds both pools' pods by label, with the RBAC
its service discovery needs. Flags are checked against catalogs/engine_flags.yaml."""

from __future__ import annotations

import io
import json
import shlex
from contextlib import redirect_stderr, redirect_stdout
from functools import cache
from pathlib import Path

import pytest
import yaml

from solver.cli.main import main
from tests.k8s_schema import check
from tests.report.pd_spec import nvidia_pd_spec

ROOT = Path(__file__).resolve().parents[2]
SPEC = nvidia_pd_spec()
FLAGS = yaml.safe_load((ROOT / "catalogs" / "engine_flags.yaml").read_text())["engines"]
ROUTER = {"vllm": "vllm_router", "sglang": "sglang_router"}


@cache
def _run(engine: str, *extra: str) -> object:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert main(["deploy", str(SPEC), "--engine", engine, "--format", "json", *extra]) == 0, err.getvalue()
    return json.loads(out.getvalue())


def _flags_known(argv: list[str], tool: str) -> None:
    table = FLAGS[tool]["flags"]
    assert [a for a in argv if a.startswith("--") and a not in table] == []


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_commands_name_the_engines_pd_router(engine):
    out = _run(engine)
    router = out["router"]
    assert router is not None
    head = {"vllm": ["vllm-router", "--vllm-pd-disaggregation"], "sglang": ["python3", "-m", "sglang_router.launch_router", "--pd-disaggregation"]}
    assert router[: len(head[engine])] == head[engine]
    _flags_known(router, ROUTER[engine])
    # It reaches each pool on the port its engine listens on.
    port = FLAGS[engine]["port"]
    assert router[router.index("--prefill") + 1] == f"http://$PREFILL_IP:{port}"
    assert router[router.index("--decode") + 1] == f"http://$DECODE_IP:{port}"
    if engine == "sglang":  # the prefill entry carries the prefill servers' bootstrap port
        pre = out["prefill"]["command"]
        assert router[router.index("--prefill") + 2] == pre[pre.index("--disaggregation-bootstrap-port") + 1]


def _by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_manifests_route_through_a_router_that_finds_both_pools(engine):
    docs = _run(engine, "--emit", "k8s")
    assert all(check(d) == [] for d in docs), [check(d) for d in docs]
    deployments = {d["metadata"]["name"]: d for d in _by_kind(docs, "Deployment")}
    (router_name,) = [n for n in deployments if n.endswith("-router")]
    pod = deployments[router_name]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    argv = _router_argv(c)
    _flags_known(argv, ROUTER[engine])
    # The selectors pick exactly the pods of the prefill and the decode pool.
    pools = {n.rsplit("-", 1)[1]: d for n, d in deployments.items() if n != router_name}
    assert set(pools) == {"prefill", "decode"}
    for role in ("prefill", "decode"):
        key, _, value = argv[argv.index(f"--{role}-selector") + 1].partition("=")
        assert pools[role]["spec"]["template"]["metadata"]["labels"][key] == value
        server = pools[role]["spec"]["template"]["spec"]["containers"][0]
        assert int(argv[argv.index("--service-discovery-port") + 1]) in [p["containerPort"] for p in server["ports"]]
    # Discovery lists and watches pods: the pod runs as an account a Role allows that, in its namespace.
    (account,), (role,), (binding,) = (_by_kind(docs, k) for k in ("ServiceAccount", "Role", "RoleBinding"))
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    assert {"list", "watch"} <= set(role["rules"][0]["verbs"]) and role["rules"][0]["resources"] == ["pods"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"] and binding["subjects"][0]["name"] == account["metadata"]["name"]
    assert argv[argv.index("--service-discovery-namespace") + 1] == "$POD_NAMESPACE"
    assert c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    # The router's image is pinned (and, where it is pip-installed, its package too).
    assert ":" in c["image"] and not c["image"].endswith(":latest")
    if c["command"][0] == "/bin/sh":
        assert "==" in c["args"][0].split(" && ")[0]
    # One Service in front of the router pods, on the router's port.
    svc = {s["metadata"]["name"]: s for s in _by_kind(docs, "Service")}[router_name]
    assert svc["spec"]["selector"] == deployments[router_name]["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["ports"][0]["targetPort"] == int(argv[argv.index("--port") + 1]) == c["ports"][0]["containerPort"]


def _router_argv(c: dict) -> list[str]:
    """The router's own argv, from a published image's command or from the shell line
    that pip-installs it first; the namespace as the shell would read it."""
    if c["command"][0] == "/bin/sh":
        return shlex.split(c["args"][0].split(" && exec ", 1)[1])
    return ["$POD_NAMESPACE" if a == "$(POD_NAMESPACE)" else a for a in c["command"]]


def _router_container(engine: str) -> dict:
    docs = _run(engine, "--emit", "k8s")
    (router,) = [d for d in _by_kind(docs, "Deployment") if d["metadata"]["name"].endswith("-router")]
    (c,) = router["spec"]["template"]["spec"]["containers"]
    return c


# Each router project's own P/D manifest for its router pod: vllm-project/router
# scripts/k8s/pd_disagg/router-deployment.yaml (commit e0c942d4), sgl-project/rbg
# examples/inference/pd-disagg-standalone.yaml (commit 24f81595): both request 2 CPUs and
# 4 GiB, limited to 4 CPUs and 8 GiB.
PUBLISHED_ROUTER_RESOURCES = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_router_pod_requests_the_cpu_and_memory_its_project_publishes(engine):
    c = _router_container(engine)
    assert c["resources"] == PUBLISHED_ROUTER_RESOURCES
    catalog = yaml.safe_load((ROOT / "catalogs" / "engine_flags.yaml").read_text())["kubernetes"]["pd_router"]
    assert c["resources"] == catalog["resources"][engine]  # from the catalog entry, not from code
    assert "resources_source" in catalog and "as_of_resources" in catalog


def test_a_router_with_a_published_image_runs_it_and_installs_nothing_at_start():
    """SGLang's router is published as an image: the pod runs it, with no pip (no network
    needed at start); Kubernetes expands $(POD_NAMESPACE) in the command itself. vLLM's
    router has no release image (catalogs/engine_flags.yaml says why): pip-installed, pinned."""
    c = _router_container("sglang")
    assert c["image"] == "lmsysorg/sgl-model-gateway:v0.3.2"  # sglang-router 0.3.2's image tag
    assert "args" not in c and not any("pip" in a for a in c["command"])
    assert c["command"][:3] == ["python3", "-m", "sglang_router.launch_router"]  # the image's ENTRYPOINT, spelled out
    assert "$(POD_NAMESPACE)" in c["command"]
    v = _router_container("vllm")
    assert v["command"] == ["/bin/sh", "-c"] and v["args"][0].startswith("pip install --no-cache-dir vllm-router==0.1.17 && exec ")


def test_sglang_prefill_pods_announce_their_bootstrap_port_to_the_router():
    docs = _run("sglang", "--emit", "k8s")
    pre = {d["metadata"]["name"]: d for d in _by_kind(docs, "Deployment")}
    (prefill,) = [d for n, d in pre.items() if n.endswith("-prefill")]
    (decode,) = [d for n, d in pre.items() if n.endswith("-decode")]
    cmd = prefill["spec"]["template"]["spec"]["containers"][0]["args"][0].split()
    port = cmd[cmd.index("--disaggregation-bootstrap-port") + 1]
    # SGLang's router discovery reads the prefill pod's sglang.ai/bootstrap-port annotation.
    assert prefill["spec"]["template"]["metadata"]["annotations"] == {"sglang.ai/bootstrap-port": port}
    assert "annotations" not in decode["spec"]["template"]["metadata"]
