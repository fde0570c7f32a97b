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
    argv = shlex.split(c["args"][0].split(" && exec ", 1)[1])
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
    # The router's image is pinned and its package too.
    assert ":" in c["image"] and "==" in c["args"][0].split(" && ")[0]
    # One Service in front of the router pods, on the router's port.
    svc = {s["metadata"]["name"]: s for s in _by_kind(docs, "Service")}[router_name]
    assert svc["spec"]["selector"] == deployments[router_name]["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["ports"][0]["targetPort"] == int(argv[argv.index("--port") + 1]) == c["ports"][0]["containerPort"]


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
