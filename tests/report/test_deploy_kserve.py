"""Issue 45 item 4: `deploy --emit kserve` writes one KServe LLMInferenceService that
validates against the published schema (tests/fixtures/kserve, its source and date in
the file), carries the plan (GPUs, TP, model, pinned image) and runs the very command
`deploy` prints; what the CRD cannot carry is refused by name (exit 2)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from functools import cache
from pathlib import Path

import jsonschema
import pytest
import yaml

from solver.cli.main import main
from tests.report.pd_spec import nvidia_pd_spec

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "kserve" / "llminferenceservice-v1alpha1.schema.json").read_text())
# The pinned vLLM image for NVIDIA GPUs (catalogs/engine_flags.yaml engines.vllm.image, read here, not from the code).
VLLM_IMAGE = yaml.safe_load((ROOT / "catalogs" / "engine_flags.yaml").read_text())["engines"]["vllm"]["image"]["NVIDIA"]


@cache
def _run(spec: str, *extra: str) -> tuple[int, str, str]:
    """deploy on a bundled spec (the P/D one held to NVIDIA GPUs: tests/report/pd_spec.py)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = main(
                ["deploy", str(nvidia_pd_spec() if spec == "long-prompts-disaggregated.yaml" else ROOT / "specs" / spec), "--format", "json", *extra]
            )
        except SystemExit as e:  # argparse: an unknown --emit choice
            rc = int(e.code or 0)
    return rc, out.getvalue(), err.getvalue()


def _isvc(spec: str) -> dict:
    rc, out, err = _run(spec, "--emit", "kserve")
    assert rc == 0, err
    (doc,) = json.loads(out)
    return doc


def _launch(spec: str) -> dict:
    rc, out, err = _run(spec)
    assert rc == 0, err
    return json.loads(out)


@pytest.mark.parametrize("spec", ["long-prompts-disaggregated.yaml", "chat-llama70b.yaml"])
def test_the_service_validates_against_the_published_schema(spec):
    jsonschema.validate(_isvc(spec), SCHEMA)


def test_the_schema_subset_rejects_what_the_crd_rejects():
    # The fixture is a real check: a misspelled field, a missing model URI and a zero TP fail.
    good = _isvc("chat-llama70b.yaml")
    for bad in (
        {**good, "spec": {**good["spec"], "replica": 2}},
        {**good, "spec": {**good["spec"], "model": {"name": "x"}}},
        {**good, "spec": {**good["spec"], "parallelism": {"tensor": 0}}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)


def _argv(container: dict) -> list[str]:
    """command + args less what KServe's template needs restated (served name, port)."""
    args = container["args"]
    assert args[-4:-2] == ["--served-model-name", container["command"][2]] and args[-2] == "--port"
    return container["command"] + args[:-4]


def test_a_disaggregated_plan_is_one_service_with_both_pools_and_the_commands_deploy_prints():
    isvc, launch = _isvc("long-prompts-disaggregated.yaml"), _launch("long-prompts-disaggregated.yaml")
    spec = isvc["spec"]
    decode, prefill = spec["template"]["containers"][0], spec["prefill"]["template"]["containers"][0]
    # One truth: the containers run exactly the argv `deploy --format json` prints for each pool.
    assert _argv(decode) == launch["command"]
    assert _argv(prefill) == launch["prefill"]["command"]
    # The model and the image: the Hub id deploy serves, as KServe's hf:// URI; the pinned image.
    assert spec["model"] == {"uri": f"hf://{launch['model']}", "name": launch["model"]}
    assert decode["image"] == prefill["image"] == VLLM_IMAGE
    # GPUs, replicas and TP per pool as the launch counts them (gpus_per_replica = TP x PP, one node here).
    for workload, pool in ((spec, launch), (spec["prefill"], launch["prefill"])):
        c = workload["template"]["containers"][0]
        assert c["resources"]["limits"]["nvidia.com/gpu"] == pool["gpus_per_replica"]
        assert workload["replicas"] == pool["replicas"]
        tp = int(pool["command"][pool["command"].index("--tensor-parallel-size") + 1]) if "--tensor-parallel-size" in pool["command"] else 1
        assert workload["parallelism"]["tensor"] == tp and tp * workload["parallelism"].get("pipeline", 1) == pool["gpus_per_replica"]
    # Ports of KServe's templates (config/llmisvc): prefill vLLM on 8000; decode vLLM on 8001
    # behind llm-d's routing sidecar on 8000.
    assert decode["args"][-1] == "8001" and prefill["args"][-1] == "8000"
    # The router: KServe's managed Gateway, HTTPRoute and llm-d scheduler (P/D aware).
    assert spec["router"] == {"route": {}, "gateway": {}, "scheduler": {}}
    # Each pool selects the GPU product it was planned on, as --emit k8s does.
    assert spec["template"]["nodeSelector"] != spec["prefill"]["template"]["nodeSelector"]


def test_a_single_pool_plan_has_no_prefill_section_and_serves_on_8000():
    isvc, launch = _isvc("chat-llama70b.yaml"), _launch("chat-llama70b.yaml")
    c = isvc["spec"]["template"]["containers"][0]
    assert "prefill" not in isvc["spec"] and _argv(c) == launch["command"] and c["args"][-1] == "8000"
    assert isvc["spec"]["replicas"] == launch["replicas"]


@pytest.mark.parametrize(
    ("spec", "extra", "words"),
    [
        ("chat-llama70b.yaml", ("--engine", "sglang"), ["--engine", "vllm"]),
        ("pipeline-405b.yaml", (), ["--emit", "kserve", "--emit k8s"]),
    ],
)
def test_what_the_crd_cannot_carry_is_refused_by_name(spec, extra, words):
    rc, out, err = _run(spec, "--emit", "kserve", *extra)
    assert rc == 2 and out == "" and "Traceback" not in err
    assert all(w in err for w in words), err
