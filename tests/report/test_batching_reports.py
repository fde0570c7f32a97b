"""Every report says which batching its TPOT and TTFT assume (issue 41): a line in text, a
field in JSON, in solve, evaluate, pareto, fleet, simulate, sweep and the HTTP API."""

from __future__ import annotations

import json

import pytest

from solver.cli.main import main

WORKLOAD = {"users": 16, "prompt_tokens": 2048, "output_tokens": 256}
SOLVE = {
    "model": "llama-3.1-8b",
    "workload": WORKLOAD,
    "sla": {"max_tpot": "60ms"},
    "search": {"gpus": ["h100-sxm", "l40s"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
}
FLEET = {
    "workloads": [
        {"name": "chat", "model": "llama-3.1-8b", "workload": WORKLOAD, "sla": {"max_tpot": "60ms"}},
        {"name": "batch", "model": "llama-3.1-8b", "workload": {**WORKLOAD, "batching": "isolated"}, "sla": {"max_tpot": "60ms"}},
    ],
    "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
}
RATE = {
    "model": "llama-3.1-8b",
    "workload": {"requests_per_s": 1, "prompt_tokens": 1000, "output_tokens": 100},
    "sla": {"ttft": {"p90": "5s"}},
    "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
}
DEFAULT_LINE = "batching: continuous — prompts prefilled in chunks inside the decode steps"


def _file(tmp_path, name, data):
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    return str(path)


def _run(capsys, argv):
    main(argv)
    return capsys.readouterr().out


def test_solve_names_the_engines_default_and_a_spec_that_asks_otherwise(tmp_path, capsys):
    text = _run(capsys, ["solve", _file(tmp_path, "s", SOLVE), "--no-explain"])
    assert DEFAULT_LINE in text and "vLLM (V1 engine)'s default" in text
    assert json.loads(_run(capsys, ["solve", _file(tmp_path, "s", SOLVE), "--no-explain", "--format", "json"]))["spec"]["batching"] == "continuous"
    iso = {**SOLVE, "workload": {**WORKLOAD, "batching": "isolated"}}
    text = _run(capsys, ["solve", _file(tmp_path, "i", iso), "--no-explain"])
    assert "batching: isolated — " in text and "vLLM (V1 engine) batches continuously by default" in text


def test_evaluate_text_and_json_name_it(tmp_path, capsys):
    argv = ["evaluate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--users", "8", "--prompt", "1024", "--output", "128"]
    text = _run(capsys, argv)
    assert "  batching   continuous — " in text
    assert json.loads(_run(capsys, [*argv, "--format", "json"]))["workload"]["batching"] == "continuous"


def test_pareto_text_and_json_name_it(tmp_path, capsys):
    spec = _file(tmp_path, "p", SOLVE)
    assert DEFAULT_LINE in _run(capsys, ["pareto", spec, "--axes", "tpot"])
    out = json.loads(_run(capsys, ["pareto", spec, "--axes", "tpot", "--format", "json"]))
    assert out["tpot"]["batching"] == "continuous"


def test_fleet_names_each_services_batching(tmp_path, capsys):
    spec = _file(tmp_path, "f", FLEET)
    text = _run(capsys, ["fleet", spec])
    assert "batching: chat continuous; batch isolated" in text
    assert json.loads(_run(capsys, ["fleet", spec, "--format", "json"]))["batching"] == {"chat": "continuous", "batch": "isolated"}


def test_simulate_says_it_batches_continuously(tmp_path, capsys):
    spec = _file(tmp_path, "r", RATE)
    plan = ["--gpu", "h100-sxm", "--tp", "1", "--replicas", "1", "--requests", "200"]
    assert "batching: continuous — " in _run(capsys, ["simulate", spec, *plan])
    assert json.loads(_run(capsys, ["simulate", spec, *plan, "--format", "json"]))["batching"] == "continuous"


def test_a_sweep_row_has_a_batching_column():
    from solver.explain.solve import solve
    from solver.report.sweep_table import PLAN_COLUMNS, row_of
    from tests.solve_helpers import problem_of

    assert "batching" in PLAN_COLUMNS
    assert row_of(solve(problem_of(SOLVE), explain=False))["batching"] == "continuous"


def test_the_http_api_answers_with_the_batching():
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from solver.api.app import Limits, create_app

    client = TestClient(create_app(Limits(concurrency=1)))
    assert client.post("/solve?explain=false", json=SOLVE).json()["spec"]["batching"] == "continuous"
    assert client.post("/pareto?axes=tpot", json=SOLVE).json()["tpot"]["batching"] == "continuous"
    assert client.post("/fleet", json=FLEET).json()["batching"] == {"chat": "continuous", "batch": "isolated"}
    ev = {"model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm"}, "workload": WORKLOAD}
    assert client.post("/evaluate", json=ev).json()["workload"]["batching"] == "continuous"
