"""An EAGLE-3 head's cost from its config.json, as vLLM builds it
(vllm/model_executor/models/llama_eagle3.py): one decoder layer whose QKV projection
reads 2h inputs, its own LM head over draft_vocab_size rows, and the fc (3h → h) once a
round on the first draft pass, replicated on every TP rank."""

from __future__ import annotations

import pytest

from solver.physics.decode import estimate_decode
from solver.physics.memory import estimate_memory
from tests.physics.test_speculative import _with

# Llama-3.1-8B: hidden 4,096, 32 query heads and 8 KV heads of 128, vocabulary 128,256.
# Its layer: (8,030,261,248 − 2 × 128,256 × 4,096) / 32 = 218,112,128 parameters.
LAYER = 218_112_128
# the head's QKV reads [embedding, hidden] side by side: 4,096 more inputs to
# (32 + 2 × 8) × 128 = 6,144 outputs: 25,165,824 parameters beyond the target's layer
QKV_EXTRA = 4_096 * 6_144
# its LM head: draft_vocab_size 32,000 rows of 4,096 (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B)
DRAFT_HEAD = 32_000 * 4_096
FC = 3 * 4_096 * 4_096  # 50,331,648
# 16-bit: a drafted token reads (218,112,128 + 25,165,824 + 131,072,000) × 2 = 748,699,904 B;
# the head stores that and the fc, (374,349,952 + 50,331,648) × 2 = 849,363,200 B (810 MiB)
PER_TOKEN_READ = 748_699_904
STORED = 849_363_200
FC_BYTES = 100_663_296
KV_PER_TOKEN = 2 * 8 * 128 * 2  # one layer of K and V in 16-bit


def test_the_head_s_bytes_come_from_its_config():
    assert (LAYER + QKV_EXTRA + DRAFT_HEAD) * 2 == PER_TOKEN_READ
    assert (LAYER + QKV_EXTRA + DRAFT_HEAD + FC) * 2 == STORED
    d, _, _ = _with(None, 1, {"method": "eagle3"})
    s = d.speculation
    assert s.draft_read_bytes == PER_TOKEN_READ
    assert s.draft_weight_bytes == STORED
    assert s.draft_round_read_bytes == FC_BYTES
    assert s.draft_active_params == LAYER + QKV_EXTRA + DRAFT_HEAD


def test_a_round_is_k_passes_and_the_fc_once():
    # batch 1 at 1,300 tokens of context, 3.35 TB/s at full efficiency, no fixed costs:
    # 3 passes of the head's read and its layer's KV, and the fc read once
    d, w, _ = _with(None, 1, {"method": "eagle3", "num_tokens": 3})
    c = estimate_decode(d, w).coefficients
    expected = (3 * (PER_TOKEN_READ + KV_PER_TOKEN * 1300) + FC_BYTES) / 3.35e12
    assert c.draft_s(1) == pytest.approx(expected)
    # five drafted tokens: two more passes, still one fc
    d5, w5, _ = _with(None, 1, {"method": "eagle3", "num_tokens": 5})
    c5 = estimate_decode(d5, w5).coefficients
    assert c5.draft_s(1) - c.draft_s(1) == pytest.approx(2 * (PER_TOKEN_READ + KV_PER_TOKEN * 1300) / 3.35e12)


def test_under_tp_the_layer_and_head_split_and_the_fc_does_not():
    d, w, _ = _with(None, 8, {"method": "eagle3"}, tp=2)
    c = estimate_decode(d, w).coefficients
    assert c.draft_read_bytes == PER_TOKEN_READ / 2
    assert c.draft_round_read_bytes == FC_BYTES  # ReplicatedLinear: whole on each rank
    assert c.draft_round_flops_per_sequence == 2 * FC


def test_the_head_takes_its_stored_bytes_beside_the_target():
    d, w, _ = _with(None, 8, {"method": "eagle3"})
    d0, w0, _ = _with(None, 8, None)
    assert estimate_memory(d, w).weights_bytes - estimate_memory(d0, w0).weights_bytes == STORED


def test_under_tp_memory_holds_the_fc_whole_on_each_rank_as_decode_reads_it():
    # TP 2: the layer and the 32,000-row head halve, 748,699,904 / 2 = 374,349,952 B a rank;
    # the replicated fc stays 100,663,296 B: 475,013,248 B a rank (STORED / 2 = 424,681,600 before)
    d, w, _ = _with(None, 8, {"method": "eagle3"}, tp=2)
    d0, w0, _ = _with(None, 8, None, tp=2)
    assert estimate_memory(d, w).weights_bytes - estimate_memory(d0, w0).weights_bytes == PER_TOKEN_READ / 2 + FC_BYTES == 475_013_248


def test_the_prompt_runs_the_fc_over_every_token_too():
    # vLLM's EagleProposer fuses every prompt token's three hidden states (the fc) before the
    # layer: 2 × (374,349,952 + 50,331,648) × 1,000 = 849,363,200,000 FLOPs (the fc left out before)
    from solver.physics.prefill import estimate_prefill

    d, w, _ = _with(None, 1, {"method": "eagle3"})
    assert estimate_prefill(d, w).draft_flops == 2 * (LAYER + QKV_EXTRA + DRAFT_HEAD + FC) * 1000 == 849_363_200_000
    # under TP 2 the layer and head split over the group's rate and the replicated fc does not:
    # each rank's time is (374,349,952 / 2 + 50,331,648) × 2,000 FLOPs at one GPU's usable rate
    d2, w2, _ = _with(None, 1, {"method": "eagle3"}, tp=2)
    p2 = estimate_prefill(d2, w2)
    one_gpu = p2.matmul_flops_per_s * p2.compute_efficiency
    assert p2.draft_time_s == pytest.approx(((LAYER + QKV_EXTRA + DRAFT_HEAD) / 2 + FC) * 2000 / one_gpu)


def test_an_eagle_head_still_shares_the_target_s_whole_lm_head():
    # EAGLE (1, 2) keeps the target's 128,256-row LM head and its 2h → h fc on every pass
    d, _, _ = _with(None, 1, {"method": "eagle"})
    assert d.speculation.draft_read_bytes == (LAYER + 2 * 4_096 * 4_096 + 128_256 * 4_096) * 2
    assert d.speculation.draft_round_read_bytes == 0
