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
