"""Issue 41, item 9: what solve offers under an engine is what that engine runs. Each
rule is in the catalog with its source (catalogs/engines.yaml, models.yaml), read by
the split rules (physics/validity.py) and by deploy alike; a refused shape says why."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from solver.catalog import default_catalog
from solver.errors import InputError
from solver.explain.solve import solve
from solver.physics.validity import check
from solver.report.deploy import ENGINES, emit
from solver.report.launch import flag_table
from tests.solve_helpers import problem_of


def _reasons(problem):
    """Every (kind, reason) the split rules give, per shape label."""
    return {s.label: check(s.deployment, problem.workload) for s in problem.shapes}


def _spec(model, gpu, tp, weights, kv, engine="vllm", **more):
    return {
        "model": model,
        "workload": {"users": 8, "context_tokens": 8192, "prompt_tokens": 1024},
        "sla": {"max_tpot": "200ms"},
        "engine": engine,
        "search": {"gpus": [gpu], "tp": tp, "weights": weights, "kv_cache": kv},
        **more,
    }


def test_llama_cpp_is_offered_no_awq_and_says_why():
    # llama.cpp reads GGUF files only: no AWQ kernels (llama.cpp README; catalogs/engines.yaml).
    # On main solve planned int4-awq under llama.cpp, which deploy then refused.
    p = problem_of(_spec("llama-3.1-8b", "rtx-4090", [1], ["int4-awq"], ["fp16"], engine="llama.cpp"))
    r = solve(p, explain=False)
    assert r.solution.candidate is None
    (why,) = _reasons(p).values()
    assert any(k == "format" and "cannot run int4-awq" in t and "GGUF files only" in t for k, t in why)
    # the same plan under vLLM is offered, and vLLM's deploy takes it
    ok = solve(problem_of(_spec("llama-3.1-8b", "rtx-4090", [1], ["int4-awq"], ["fp16"])), explain=False)
    assert ok.solution.candidate is not None
    assert emit(ok, "vllm").argv[:2] == ["vllm", "serve"]


def test_llama_cpp_is_offered_no_fp8_kv_cache():
    # llama-server's -ctk/-ctv take f32, f16, bf16, q8_0, q4_0, ... but no fp8.
    p = problem_of(_spec("llama-3.1-8b", "h100-sxm", [1], ["q4_k_m"], ["fp8"], engine="llama.cpp"))
    (why,) = _reasons(p).values()
    assert any(k == "format" and "fp8 KV cache" in t for k, t in why)


def test_gpt_oss_120b_splits_at_tp_4_and_8_under_vllm():
    # gpt-oss-120b's experts: 2,880 columns in MXFP4 blocks of 32. TP 4 leaves 720 = 22.5
    # blocks per GPU, TP 8 leaves 360 = 11.25: vLLM's MXFP4 MoE pads each GPU's slice up to
    # its kernel's block (mxfp4.py), and the vLLM recipes serve it at TP 1, 2, 4 and 8.
    p = problem_of(_spec("gpt-oss-120b", "h100-sxm", [1, 2, 4, 8], ["mxfp4"], ["bf16"]))
    why = _reasons(p)
    for tp in (4, 8):
        (label,) = [k for k in why if f" TP{tp} " in k]
        assert why[label] == [], (label, why[label])


def test_an_unpadded_group_split_is_still_refused():
    # the padding is the engine's, for MXFP4 experts only: INT4-AWQ's groups of 128 in
    # Qwen2.5-14B's dense MLP (13,824 / 8 = 1,728 = 13.5 groups) stay refused.
    p = problem_of(_spec("qwen2.5-14b", "h100-sxm", [8], ["int4-awq"], ["bf16"]))
    (why,) = _reasons(p).values()
    assert any("group size 128" in t for _, t in why)


def test_qwen3_235b_fp8_checkpoint_is_not_split_at_tp_8():
    # Qwen/Qwen3-235B-A22B-FP8: weight_block_size [128, 128]; its experts' 1,536 columns
    # split at TP 8 into 192 = 1.5 blocks (vLLM: "not divisible by weight quantization
    # block_n = 128"); at TP 4 into 384 = 3 blocks.
    spec = _spec("qwen3-235b-a22b", "h200", [4, 8], ["fp8"], ["fp8"])
    p = problem_of(spec)
    why = _reasons(p)
    (tp8,) = [why[k] for k in why if " TP8 " in k]
    (tp4,) = [why[k] for k in why if " TP4 " in k]
    assert any("192 expert MLP columns" in t and "128×128 blocks of Qwen/Qwen3-235B-A22B-FP8" in t for _, t in tp8)
    assert tp4 == []
    r = solve(p, explain=False)
    assert r.solution.chosen.shape.deployment.tp == 4
    # expert parallelism keeps each expert whole (1,536 = 12 blocks): TP 8 with EP is offered
    ep = problem_of({**spec, "search": {**spec["search"], "tp": [8], "parallelism": ["tp_ep"]}})
    assert all(r == [] for label, r in _reasons(ep).items() if "EP8" in label)
    # TensorRT-LLM pads FP8 experts (PR #16198) and its perf overview ran this model at TP 8
    trt = problem_of({**spec, "engine": "trtllm"})
    assert all(r == [] for r in _reasons(trt).values())


def test_owned_gpus_count_only_in_whole_replicas():
    # 4 owned H100s and TP-8 replicas: the owned four are no part of a TP-8 group, so one
    # replica rents all 8 (on main it rented 4 and used the 4 owned).
    spec = _spec("llama-3.1-70b", "h100-sxm", [8], ["bf16"], ["bf16"], inventory={"h100-sxm": 4})
    spec["objective"] = "min_cost"
    r = solve(problem_of(spec), explain=False)
    c = r.solution.chosen
    price = c.shape.device.price.usd_per_gpu_hour
    assert c.shape.gpus_per_replica == 8
    assert c.rented == c.gpus == 8 * c.replicas
    assert c.cost_usd_per_hour == pytest.approx(8 * c.replicas * price)
    # 8 owned: the same replica is wholly owned, and rents nothing
    spec["inventory"] = {"h100-sxm": 8}
    c8 = solve(problem_of(spec), explain=False).solution.chosen
    assert c8.rented == 8 * (c8.replicas - 1)


def test_an_eagle3_head_launches_as_eagle3():
    spec = _spec(
        "llama-3.1-8b",
        "h100-sxm",
        [1],
        ["bf16"],
        ["bf16"],
        speculative={"method": "eagle3", "draft_checkpoint": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"},
    )
    r = solve(problem_of(spec), explain=False)
    argv = emit(r, "vllm").argv
    assert '"method":"eagle3"' in argv[argv.index("--speculative-config") + 1]
    sg = emit(r, "sglang").argv
    assert sg[sg.index("--speculative-algorithm") + 1] == "EAGLE3"


def test_an_eagle3_checkpoint_under_method_eagle_is_refused():
    spec = _spec(
        "llama-3.1-8b",
        "h100-sxm",
        [1],
        ["bf16"],
        ["bf16"],
        speculative={"method": "eagle", "draft_checkpoint": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"},
    )
    with pytest.raises(InputError, match="method: eagle3"):
        problem_of(spec)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llama.cpp", "trtllm"])
def test_deploy_and_solve_read_one_list(engine):
    # the formats deploy knows how to pass (catalogs/engine_flags.yaml) are exactly the
    # ones the engine runs (catalogs/engines.yaml), which solve's split rules read
    e = default_catalog().engine(engine)
    table = flag_table()[engine]
    assert set(table["weights"]) == set(e.weight_formats)
    assert set(table["kv_cache"]) == set(e.kv_formats)
    assert e.single_node == (table["multi_node"] is None)


# --------------------------------------------------------------------------- solve offers what deploy emits

ROOT = Path(__file__).resolve().parents[2]
SOLVE_SPECS = sorted(p for p in (ROOT / "specs").glob("*.yaml") if "model" in yaml.safe_load(p.read_text()) and not p.stem.endswith("-profile"))


def _offered(problem):
    """The shapes solve may choose: those the split rules refuse nothing."""
    return [s for s in problem.shapes if not check(s.deployment, problem.workload)]


def _as_result(problem, shape):
    """One replica of the shape as a solve result, the parts deploy reads."""
    c = SimpleNamespace(shape=shape, replicas=1, batch=1, traffic=None, prefill=None)
    return SimpleNamespace(solution=SimpleNamespace(candidate=c, chosen=c), problem=problem)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", SOLVE_SPECS, ids=lambda p: p.stem)
def test_every_shape_solve_offers_under_an_engine_is_one_its_deploy_emits(path, engine):
    raw = yaml.safe_load(path.read_text())
    raw["engine"] = engine
    if raw.get("search", {}).get("serving") == ["disaggregated"] and engine == "llama.cpp":
        pytest.skip("solve refuses the spec: llama.cpp has no prefill/decode split")
    try:
        problem = problem_of(raw)
    except InputError as exc:  # refused whole under this engine (a draft it lacks): nothing offered
        assert "speculative" in exc.field or "engine" in exc.field, exc
        return
    refused = []
    for shape in _offered(problem):
        try:
            emit(_as_result(problem, shape), engine)
        except InputError as exc:
            # the one gap deploy names: a TensorRT-LLM replica over several nodes is an MPI
            # job it does not emit (catalogs/engine_flags.yaml trtllm multi_node_source)
            if not (engine == "trtllm" and shape.deployment.tp * shape.deployment.pp > shape.deployment.platform.gpus_per_node):
                refused.append(f"{shape.label}: {exc}")
    assert refused == []
