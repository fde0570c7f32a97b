"""A model given as a config.json deploys from where its weights are: the Hub id the
config names (`_name_or_path` as owner/name), else the folder holding the config — never
a lower-cased folder name an engine would look up on the Hub — and the note says which."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from solver.catalog.hf_config import hub_id
from solver.explain.solve import solve
from solver.report.deploy import emit
from tests.solve_helpers import problem_of

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs" / "qwen3-30b-a3b.json"


def _deploy(config: Path, engine: str = "vllm"):
    spec = {
        "model": str(config),
        "workload": {"users": 8, "prompt_tokens": 512, "output_tokens": 256},
        "sla": {"max_tpot": "50ms"},
        "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
    }
    return emit(solve(problem_of(spec), explain=False), engine)


def test_a_config_saved_in_a_folder_serves_that_folder(tmp_path):
    folder = tmp_path / "Qwen3-30B-A3B"
    folder.mkdir()
    shutil.copy(FIXTURE, folder / "config.json")
    for engine, at in (("vllm", 2), ("sglang", 4), ("trtllm", 1)):
        dep = _deploy(folder / "config.json", engine)
        assert dep.argv[at] == str(folder.resolve()) == dep.model_id, engine  # the path, case kept
        assert any("the folder of the config.json given" in n for n in dep.notes)


def test_a_config_naming_its_hub_repository_serves_that_repository(tmp_path):
    data = json.loads(FIXTURE.read_text())
    data["_name_or_path"] = "Qwen/Qwen3-30B-A3B"
    (tmp_path / "config.json").write_text(json.dumps(data))
    dep = _deploy(tmp_path / "config.json")
    assert dep.argv[2] == "Qwen/Qwen3-30B-A3B"
    assert any("the Hub repository the config.json given names" in n for n in dep.notes)


@pytest.mark.parametrize(
    ("name_or_path", "hub"),
    [
        ("Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B"),
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
        ("/data/models/qwen3", None),  # a local path the config was saved from
        ("./qwen3", None),
        ("qwen3", None),  # no owner: not a repository id
        ("", None),
        (None, None),
    ],
)
def test_only_an_owner_slash_name_is_read_as_a_hub_id(name_or_path, hub):
    assert hub_id(name_or_path) == hub


def test_k8s_says_a_local_folder_must_be_mounted(tmp_path):
    from solver.report.deploy_k8s import manifests

    shutil.copy(FIXTURE, tmp_path / "config.json")
    dep = _deploy(tmp_path / "config.json")
    manifests(dep, name="qwen", weights_bytes=61e9)
    assert any("mount it into the pod" in n for n in dep.notes)
