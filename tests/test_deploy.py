"""`plan-opt deploy`: the command that serves a plan uses only flags (and values) the
engine documents, and carries the plan's split, context and memory settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.cli import main
from solver.deploy import check_flags, emit
from solver.solve import solve
from tests.solve_helpers import problem_of

ROOT = Path(__file__).resolve().parent.parent


def _plan(**search):
    spec = {"model": "llama-3.1-70b", "workload": {"users": 32, "context_tokens": 8192, "output_tokens": 512},
            "sla": {"max_tpot": "40ms"}, "search": {"gpus": ["h100-sxm"], **search}}
    return solve(problem_of(spec), explain=False)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("weights, kv", [("bf16", "bf16"), ("fp8", "fp8"), ("int4-awq", "fp8")])
def test_commands_use_only_documented_flags(engine, weights, kv):
    dep = emit(_plan(weights=[weights], kv_cache=[kv]), engine)
    assert check_flags(dep) == []


def test_vllm_command_carries_the_plan():
    r = _plan(weights=["fp8"], kv_cache=["fp8"])
    c = r.solution.candidate
    argv = emit(r, "vllm").argv
    assert argv[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-70B"]
    assert argv[argv.index("--max-model-len") + 1] == "8192"
    assert argv[argv.index("--kv-cache-dtype") + 1] == "fp8"
    assert argv[argv.index("--max-num-seqs") + 1] == str(c.batch)
    if c.shape.deployment.tp > 1:
        assert argv[argv.index("--tensor-parallel-size") + 1] == str(c.shape.deployment.tp)


def test_check_flags_catches_a_bad_flag():
    dep = emit(_plan(weights=["bf16"], kv_cache=["bf16"]), "vllm")
    dep.argv += ["--tensor-paralel-size", "2", "--kv-cache-dtype", "int4"]
    bad = check_flags(dep)
    assert any("unknown flag --tensor-paralel-size" in b for b in bad) and any("int4" in b for b in bad)


def test_cli_deploy(capsys):
    assert main(["deploy", str(ROOT / "specs" / "chat-llama70b.yaml"), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["command"][:2] == ["vllm", "serve"] and data["replicas"] >= 1
    assert main(["deploy", str(ROOT / "specs" / "impossible.yaml")]) == 3
