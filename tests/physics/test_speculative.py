"""Speculative decoding: a draft proposes k tokens, the target verifies them in one step
over k + 1 tokens a sequence, and keeps (1 − α^(k+1)) / (1 − α) of them on average; the
draft's reads and memory are paid beside the target's."""

from __future__ import annotations

import json

import pytest

from solver.errors import InputError
from solver.physics.decode import estimate_decode
from solver.physics.memory import estimate_memory
from solver.physics.prefill import estimate_prefill

UNIT = {"bandwidth_efficiency": 1.0, "compute_efficiency": 0.5, "step_overhead_s": 0, "layer_overhead_s": 0, "sequence_overhead_s": 0}
H, VOCAB, ACTIVE = 4096, 128_256, 8_030_261_248  # Llama-3.1-8B
# The EAGLE head: one layer of the target, (8,030,261,248 − 2 × 128,256 × 4,096) / 32 =
# 218,112,128 parameters, and the 2h → h projection, 2 × 4,096² = 33,554,432: 251,666,560
# in 16-bit = 503,333,120 B stored; a drafted token also reads the shared LM head,
# 128,256 × 4,096 × 2 B = 1,050,673,152 B: 1,554,006,272 B a pass.
HEAD_STORED, HEAD_READ = 503_333_120, 1_554_006_272
HEAD_KV_PER_TOKEN = 2 * 8 * 128 * 2  # one layer: K and V, 8 KV heads × 128, 16-bit


def _with(build_deployment, users, speculative, model="llama-3.1-8b", gpu="h100-sxm", tp=1, weights="bf16"):
    from solver.catalog import default_catalog
    from solver.physics.resolve import resolve
    from solver.spec.evaluate_input import parse_input

    data = {
        "model": model,
        "hardware": {"gpu": gpu, "tp": tp},
        "precision": {"weights": weights, "kv_cache": "bf16"},
        # batching: isolated: the steps and draft passes alone, as the derivations below take them
        "workload": {"users": users, "prompt_tokens": 1000, "output_tokens": 300, "batching": "isolated"},
        "overrides": {"factors": UNIT},
    }
    if speculative is not None:
        data["speculative"] = speculative
    return resolve(parse_input(data), default_catalog())


def test_expected_tokens_per_verification_step():
    # k = 3 at α = 0.7: 1 + 0.7 + 0.49 + 0.343 = 2.533; MTP's k = 1 at α = 0.85: 1.85.
    from solver.physics.deployment import Speculation

    assert Speculation("eagle", 3, 0.7, "", 0, 0, 0, 1, 0).expected_tokens == pytest.approx(2.533)
    assert Speculation("mtp", 1, 0.85, "", 0, 0, 0, 1, 0).expected_tokens == pytest.approx(1.85)


def test_the_eagle_head_is_one_target_layer_and_shares_the_lm_head(build_deployment):
    d, _, _ = _with(build_deployment, 1, {"method": "eagle"})
    s = d.speculation
    assert s.draft_weight_bytes == HEAD_STORED and s.draft_read_bytes == HEAD_READ
    # catalogs/engines.yaml's defaults: k = 3, α_k from vLLM PR #16035's acceptance lengths
    assert s.num_tokens == 3 and s.alphas == (0.568, 0.568, 0.416)
    # 1 + 0.568 + 0.568² + 0.568² × 0.416 = 1 + 0.568 + 0.322624 + 0.134212 = 2.024836
    assert s.expected_tokens == pytest.approx(2.024836)


def test_tpot_is_a_verification_step_and_k_draft_passes_over_the_tokens_kept(build_deployment):
    # Batch 1 at 1,300 tokens of context, bandwidth at its 3.35 TB/s peak, no fixed costs:
    # a draft pass reads the head (1,554,006,272 B) and one layer of KV (4,096 B × 1,300).
    d, w, _ = _with(build_deployment, 1, {"method": "eagle", "acceptance": 0.7})
    dec = estimate_decode(d, w)
    c = dec.coefficients
    draft = 3 * (HEAD_READ + HEAD_KV_PER_TOKEN * 1300) / 3.35e12
    assert c.draft_s(1) == pytest.approx(draft)
    assert dec.tpot_s == pytest.approx((c.verify_step_s(1) + draft) / 2.533, rel=1e-3)
    plain, w0, _ = _with(build_deployment, 1, None)
    base = estimate_decode(plain, w0)
    # at batch 1 the verification step reads what one step reads (4 tokens' FLOPs are noise)
    assert c.verify_step_s(1) == pytest.approx(base.tpot_s, rel=0.02)
    # so the speed-up is 2.533 × base / (base + draft): below the tokens a step yields
    assert base.tpot_s / dec.tpot_s == pytest.approx(2.533 * base.tpot_s / (base.tpot_s + draft), rel=0.02)
    assert 1 < base.tpot_s / dec.tpot_s < 2.533


def test_the_gain_shrinks_as_batching_makes_the_step_compute_bound(build_deployment):
    gains = []
    # Llama-3.1-8B on an H100 at 50 % utilisation: from 64 users the verification step's
    # 4 tokens a sequence make its matmuls (2 × 8.03 B × 256 tokens = 4.1 TFLOP, 8.3 ms)
    # outweigh its weight read (4.5 ms).
    for users in (1, 64, 128):
        d, w, _ = _with(build_deployment, users, {"method": "eagle", "acceptance": 0.7})
        d0, w0, _ = _with(build_deployment, users, None)
        gains.append(estimate_decode(d0, w0).tpot_s / estimate_decode(d, w).tpot_s)
    assert 2.533 > gains[0] > gains[1] > gains[2] > 1


def test_the_draft_takes_memory_beside_the_target(build_deployment):
    d, w, _ = _with(build_deployment, 8, {"method": "eagle"})
    d0, w0, _ = _with(build_deployment, 8, None)
    m, m0 = estimate_memory(d, w), estimate_memory(d0, w0)
    assert m.weights_bytes - m0.weights_bytes == HEAD_STORED
    assert m.kv_bytes - m0.kv_bytes == pytest.approx(8 * HEAD_KV_PER_TOKEN * 1300)
    # ...and prefills the prompt too: 2 × its active parameters × 1,000 tokens
    assert estimate_prefill(d, w).draft_flops == 2 * (251_666_560 + VOCAB * H) * 1000


def test_a_draft_model_must_share_the_tokenizer_and_be_smaller(build_deployment):
    d, _, _ = _with(build_deployment, 1, {"method": "draft_model", "draft_model": "llama-3.2-1b"})
    assert d.speculation.draft_layers == 16 and d.speculation.num_tokens == 4
    with pytest.raises(InputError, match="tokenizer"):
        _with(build_deployment, 1, {"method": "draft_model", "draft_model": "qwen2.5-7b"})
    with pytest.raises(InputError, match="smaller"):
        _with(build_deployment, 1, {"method": "draft_model", "draft_model": "llama-3.1-70b"})


def test_mtp_needs_a_model_that_ships_its_module():
    with pytest.raises(InputError, match="no multi-token-prediction module"):
        _with(None, 1, {"method": "mtp"})
    d, w, _ = _with(None, 8, {"method": "mtp"}, model="deepseek-r1", gpu="h200", tp=8, weights="fp8")
    assert d.speculation.num_tokens == 1 and d.speculation.expected_tokens == pytest.approx(1.85)
    assert d.speculation.draft_weight_bytes == 11_500_000_000  # one byte a parameter in FP8


def test_a_rate_workload_refuses_speculation_in_one_line():
    from solver.spec.solve_spec import parse_spec

    with pytest.raises(InputError, match="speculative"):
        parse_spec(
            {
                "model": "llama-3.1-8b",
                "workload": {"requests_per_s": 5, "prompt_tokens": 500, "output_tokens": 200},
                "sla": {"tpot": {"p90": "20ms"}},
                "speculative": {"method": "eagle"},
            }
        )


def test_deploy_passes_the_draft_the_plan_counts_on():
    from solver.explain.solve import solve
    from solver.report.deploy import emit
    from solver.report.launch import check_flags
    from tests.solve_helpers import problem_of

    spec = {
        "model": "llama-3.1-8b",
        "workload": {"users": 4, "prompt_tokens": 1000, "output_tokens": 300},
        "speculative": {"method": "eagle", "draft_checkpoint": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"},
        "search": {"gpus": ["h100-sxm"], "weights": ["bf16"], "kv_cache": ["bf16"]},
    }
    r = solve(problem_of(spec), explain=False)
    vllm = emit(r, "vllm")
    config = json.loads(vllm.argv[vllm.argv.index("--speculative-config") + 1])
    assert config == {"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}
    assert "'{" in vllm.command  # quoted for the shell
    sglang = emit(r, "sglang")
    assert sglang.argv[sglang.argv.index("--speculative-num-draft-tokens") + 1] == "4"
    assert check_flags(vllm) == [] and check_flags(sglang) == []
    del spec["speculative"]["draft_checkpoint"]
    with pytest.raises(InputError, match="draft_checkpoint"):
        emit(solve(problem_of(spec), explain=False), "vllm")


def test_the_search_plans_with_and_without_the_draft_and_takes_the_better():
    # specs/latency-critical-8b-eagle.yaml: TPOT ≤ 5 ms for 32 users. Searched both ways
    # (search.speculative's default), the plan drafts; forbidden to, it costs more.
    from pathlib import Path

    import yaml

    from solver.explain.solve import solve
    from tests.solve_helpers import problem_of

    spec = yaml.safe_load((Path(__file__).resolve().parents[2] / "specs" / "latency-critical-8b-eagle.yaml").read_text())
    both = solve(problem_of(spec), explain=False)
    spec["search"]["speculative"] = [False]
    without = solve(problem_of(spec), explain=False)
    c, u = both.solution.candidate, without.solution.candidate
    assert c.shape.deployment.speculation is not None and "+eagle" in c.shape.label
    assert u.shape.deployment.speculation is None
    assert c.cost_usd_per_hour < u.cost_usd_per_hour
