"""deploy prints the benchmark that checks its plan: vllm bench serve against one replica
at its share of the spec's load (the users one replica carries, or the rate over the
replicas), with the spec's lengths, saving what calibrate reads."""

from __future__ import annotations

import json
from pathlib import Path

from solver.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def _flag(argv, name):
    return argv[argv.index(name) + 1]


def _deploy(capsys, spec: str) -> dict:
    assert main(["deploy", str(ROOT / "specs" / spec), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _solve(capsys, spec: str) -> dict:
    assert main(["solve", str(ROOT / "specs" / spec), "--format", "json", "--no-explain"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_users_plan_is_checked_one_replica_at_its_batch(capsys):
    out, plan = _deploy(capsys, "chat-llama70b.yaml"), _solve(capsys, "chat-llama70b.yaml")["plan"]
    argv = out["benchmark"]
    assert argv[:3] == ["vllm", "bench", "serve"] and _flag(argv, "--model") == out["model"]
    # specs/chat-llama70b.yaml: 96 users, prompt 2,048 of an 8,192-token context (output 6,144)
    assert (_flag(argv, "--random-input-len"), _flag(argv, "--random-output-len")) == ("2048", "6144")
    assert int(_flag(argv, "--max-concurrency")) * plan["replicas"] >= 96
    assert int(_flag(argv, "--max-concurrency")) == plan["batch_per_replica"]
    assert _flag(argv, "--result-filename") == "plan-check.json" and "--save-result" in argv


def test_a_rate_plan_is_checked_at_the_rate_over_its_replicas(capsys):
    out, plan = _deploy(capsys, "chat-70b-at-20-rps.yaml"), _solve(capsys, "chat-70b-at-20-rps.yaml")["plan"]
    argv = out["benchmark"]
    assert float(_flag(argv, "--request-rate")) * plan["replicas"] == 20  # specs/chat-70b-at-20-rps.yaml: 20 requests/s
    assert "--max-concurrency" not in argv


GUIDELLM_KEYS = {
    # GuideLLM v0.7.3 (tag of 2026-07-31): the option each key goes to, and the fields it may set
    "--backend": {"kind", "target", "model"},  # backends/openai/http.py OpenAIHTTPBackendArgs
    "--profile": {"kind", "rate", "streams"},  # profiles/asynchronous.py (poisson: rate), concurrent.py (streams)
    "--constraint": {"kind", "count"},  # scheduler/constraints/request.py max_requests
    "--data": {"kind", "prompt_tokens", "output_tokens"},  # data/deserializers/synthetic.py synthetic_text
    "--output": {"kind", "path"},  # benchmark/outputs/serialized.py json
}


def _options(argv):
    """`guidellm run --opt kind=T,key=value,...` as {opt: {key: value}}."""
    assert argv[:2] == ["guidellm", "run"] and len(argv) % 2 == 0
    return {argv[i]: dict(kv.split("=", 1) for kv in argv[i + 1].split(",")) for i in range(2, len(argv), 2)}


def test_guidellm_checks_a_rate_plan_as_vllm_bench_does(capsys):
    out = _deploy(capsys, "chat-70b-at-20-rps.yaml")
    g, v = _options(out["benchmark_guidellm"]), out["benchmark"]
    assert {k: set(x) for k, x in g.items()} == {k: GUIDELLM_KEYS[k] - {"streams"} for k in GUIDELLM_KEYS}
    assert g["--profile"] == {"kind": "poisson", "rate": _flag(v, "--request-rate")}  # 20 requests/s over the replicas
    assert g["--constraint"] == {"kind": "max_requests", "count": _flag(v, "--num-prompts")}
    assert g["--data"] == {
        "kind": "synthetic_text",
        "prompt_tokens": _flag(v, "--random-input-len"),
        "output_tokens": _flag(v, "--random-output-len"),
    }
    assert g["--backend"] == {"kind": "openai_http", "target": _flag(v, "--base-url"), "model": out["model"]}
    assert g["--output"] == {"kind": "json", "path": "plan-check-guidellm.json"}


def test_guidellm_checks_a_users_plan_at_the_replica_s_batch(capsys):
    out, plan = _deploy(capsys, "chat-llama70b.yaml"), _solve(capsys, "chat-llama70b.yaml")["plan"]
    g = _options(out["benchmark_guidellm"])
    assert set(g["--profile"]) <= GUIDELLM_KEYS["--profile"] - {"rate"}
    assert g["--profile"] == {"kind": "concurrent", "streams": str(plan["batch_per_replica"])}
    # specs/chat-llama70b.yaml: prompt 2,048 of an 8,192-token context (output 6,144)
    assert (g["--data"]["prompt_tokens"], g["--data"]["output_tokens"]) == ("2048", "6144")


def test_deploy_s_text_prints_the_guidellm_command(capsys):
    assert main(["deploy", str(ROOT / "specs" / "chat-70b-at-20-rps.yaml")]) == 0
    assert "\nguidellm run --backend kind=openai_http,target=http://localhost:" in capsys.readouterr().out
