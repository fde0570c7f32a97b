"""Acceptance by drafted position, method and model family (catalogs/engines.yaml
`speculative`), and what a draft pass costs at batch and under TP."""

from __future__ import annotations

import pytest

from solver.physics.decode import estimate_decode
from solver.physics.deployment import Speculation, accepted_tokens, position_alphas
from tests.physics.test_speculative import _with


def test_accepted_tokens_is_one_plus_the_sum_of_the_running_products():
    # α = [0.8, 0.6]: 1 + 0.8 + 0.8 × 0.6 = 1 + 0.8 + 0.48 = 2.28
    assert accepted_tokens((0.8, 0.6)) == pytest.approx(2.28)
    # a constant α is the geometric series: k = 3 at 0.7, (1 − 0.7⁴) / 0.3 = 2.533
    assert accepted_tokens((0.7, 0.7, 0.7)) == pytest.approx((1 - 0.7**4) / 0.3)
    assert accepted_tokens(()) == 1.0  # nothing drafted: the target's own token


def test_positions_past_the_list_keep_its_last_alpha():
    # MTP's [0.85, 0.495] drafted 4 deep: 1 + 0.85 + 0.42075 + 0.20827125 + 0.10309427 = 2.58211552
    assert position_alphas((0.85, 0.495), 4) == (0.85, 0.495, 0.495, 0.495)
    s = Speculation("mtp", 4, 0.85, "", 0, 0, 0, 1, 0, acceptance_by_position=(0.85, 0.495))
    assert s.expected_tokens == pytest.approx(2.58211552)
    assert position_alphas((0.85, 0.495), 1) == (0.85,)


@pytest.mark.parametrize(
    ("model", "published_length"),
    # vLLM PR #32030 (2026-01-09), EAGLE-3 heads on mt-bench, 3 drafted tokens: mean acceptance
    # lengths 2.60 (Llama-3.1-8B), 2.26 (Qwen3-8B), 2.56 (gpt-oss-20b), printed beside per-position
    # rates that the catalog turns into α_k; the α_k give back the printed lengths
    [("llama-3.1-8b", 2.60), ("qwen3-8b", 2.26), ("gpt-oss-20b", 2.56)],
)
def test_each_family_s_eagle3_head_gives_back_its_published_acceptance_length(model, published_length):
    from solver.catalog import default_catalog

    alphas = default_catalog().speculative_methods["eagle3"].acceptance_for(model)
    assert len(alphas) == 3
    assert accepted_tokens(alphas) == pytest.approx(published_length, abs=0.015)


def test_a_model_no_head_names_takes_the_method_s_default():
    from solver.catalog import default_catalog

    eagle3 = default_catalog().speculative_methods["eagle3"]
    assert eagle3.acceptance_for("mistral-7b") == eagle3.acceptance
    assert eagle3.acceptance_for("qwen3-8b") != eagle3.acceptance


def test_the_user_s_alpha_stands_at_every_position():
    d, _, _ = _with(None, 1, {"method": "eagle3", "num_tokens": 4, "acceptance": 0.5})
    # 1 + 0.5 + 0.25 + 0.125 + 0.0625 = 1.9375
    assert d.speculation.alphas == (0.5,) * 4 and d.speculation.expected_tokens == pytest.approx(1.9375)


def test_mtp_past_the_module_s_one_trained_depth_keeps_fewer_tokens():
    # DeepSeek-R1 ships one MTP module: depth 1 at 0.85 (DeepSeek-V3 report), reused deeper at 0.495
    d, _, _ = _with(None, 1, {"method": "mtp", "num_tokens": 3}, model="deepseek-r1", gpu="h200", tp=8, weights="fp8")
    # 1 + 0.85 + 0.85 × 0.495 + 0.85 × 0.495² = 1 + 0.85 + 0.42075 + 0.20827125 = 2.47902125
    assert d.speculation.expected_tokens == pytest.approx(2.47902125)


def test_a_draft_pass_turns_compute_bound_at_a_large_batch():
    # Llama-3.1-8B's EAGLE head: 251,666,560 parameters and the 128,256 × 4,096 LM head,
    # 777,003,136 in all: 1,554,006,272 FLOPs a drafted token. On an H100 (989.5 TFLOP/s
    # dense BF16 × its 0.803 matmul share = 794.6 TFLOP/s) at compute efficiency 0.5 that
    # is 3.91 µs a sequence: 512 sequences take 2.00 ms a pass, more than the head's read
    # (1,554,006,272 B / 3.35 TB/s = 0.464 ms); before, a pass was its read alone.
    d, w, _ = _with(None, 512, {"method": "eagle", "acceptance": 0.7})
    c = estimate_decode(d, w, 512).coefficients
    flops = 2 * (251_666_560 + 128_256 * 4_096)
    assert c.draft_flops_per_sequence == flops
    per_pass_compute = 512 * flops / (c.matmul_flops_per_s * c.compute_efficiency)
    assert per_pass_compute == pytest.approx(512 * 1_554_006_272 / (989.5e12 * 0.803 * 0.5), rel=1e-3)
    assert per_pass_compute > 4 * 1_554_006_272 / 3.35e12
    kv = 512 * c.draft_kv_bytes_per_sequence / (c.bandwidth_bytes_per_s * c.bandwidth_efficiency * c.attention_bandwidth_share)
    assert c.draft_s(512) >= 3 * (per_pass_compute + kv) * (1 - 1e-9)


def test_under_tp_a_draft_pass_pays_its_layers_share_of_the_all_reduces():
    # the EAGLE head is one layer beside Llama-3.1-8B's 32: 1/32 of a step's all-reduces a pass
    d, w, _ = _with(None, 8, {"method": "eagle", "acceptance": 0.7}, tp=2)
    c = estimate_decode(d, w).coefficients
    assert c.comm_fixed_s > 0
    assert c.draft_comm_fixed_s == pytest.approx(c.comm_fixed_s / 32)
    assert c.draft_comm_per_sequence_s == pytest.approx(c.comm_per_sequence_s / 32)
    d1, w1, _ = _with(None, 8, {"method": "eagle", "acceptance": 0.7}, tp=1)
    assert estimate_decode(d1, w1).coefficients.draft_comm_fixed_s == 0
