"""A model read from a local config.json: fields mapped, parameters counted from the
architecture. Expected counts are derived by hand below (and agree with the
publishers' headline figures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.catalog.hf_config import model_from_config
from solver.errors import InputError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hf_configs"


def test_llama_3_1_8b_counts_8_03b_parameters():
    m = model_from_config(FIXTURES / "llama-3.1-8b.json")
    # Per layer: q 4096², k and v 4096×1024 each, o 4096², MLP 3 × 4096 × 14336, 2 norms.
    layer = 4096 * 4096 * 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    total = 32 * layer + 2 * 128256 * 4096 + 4096  # untied embedding + LM head, final norm
    assert m.total_params == total == 8_030_261_248
    assert m.active_params == m.total_params
    assert (m.attention, m.num_kv_heads, m.head_dim) == ("gqa", 8, 128)  # head_dim = 4096 / 32


def test_mixtral_routed_experts_and_active_parameters():
    m = model_from_config(FIXTURES / "mixtral-8x7b.json")
    expert = 3 * 4096 * 14336
    assert m.num_experts == 8 and m.experts_per_token == 2
    # The experts a token skips: 6 of 8 per layer.
    assert m.total_params - m.active_params == 32 * 6 * expert
    assert m.routed_expert_params == 32 * 8 * expert == 45_097_156_608
    assert m.total_params / 1e9 == pytest.approx(46.7, abs=0.05)  # Mistral: 46.7B
    assert m.active_params / 1e9 == pytest.approx(12.9, abs=0.05)  # Mistral: 12.9B


def test_deepseek_v3_is_mla_with_671b_parameters():
    m = model_from_config(FIXTURES / "deepseek-v3.json")
    assert m.attention == "mla"
    assert (m.kv_lora_rank, m.qk_rope_head_dim, m.head_dim) == (512, 64, 192)
    assert m.total_params / 1e9 == pytest.approx(671.0, abs=0.1)  # DeepSeek: 671B main model
    # DeepSeek's "37B activated"; their 36.6B excludes the 0.93B input embedding.
    assert (m.active_params - 129280 * 7168) / 1e9 == pytest.approx(36.6, abs=0.05)
    assert (m.dense_layers, m.moe_layers) == (3, 58)  # first_k_dense_replace 3 of 61 layers


def test_gpt_oss_20b_alternates_sliding_and_full_attention():
    m = model_from_config(FIXTURES / "gpt-oss-20b.json")
    assert (m.sliding_window, m.sliding_layers, m.num_layers) == (128, 12, 24)
    assert m.total_params / 1e9 == pytest.approx(20.9, abs=0.05)  # OpenAI: 21B (20.91B)
    # OpenAI's 3.61B active leaves out the input embedding; we count it.
    assert (m.active_params - 201088 * 2880) / 1e9 == pytest.approx(3.61, abs=0.01)


def test_gemma_3_reads_text_config_and_its_five_to_one_pattern():
    m = model_from_config(FIXTURES / "gemma-3-27b.json")
    # sliding_window_pattern 6: layers 6, 12, ... 60 are global: 10 of 62.
    assert (m.sliding_window, m.sliding_layers, m.num_layers) == (1024, 52, 62)
    assert m.tie_word_embeddings  # absent from the file; Gemma's config class default
    assert m.total_params / 1e9 == pytest.approx(27.0, abs=0.05)  # the language model alone


def test_qwen3_moe_counts_3_3b_active():
    m = model_from_config(FIXTURES / "qwen3-30b-a3b.json")
    assert (m.num_experts, m.experts_per_token) == (128, 8)
    assert m.total_params / 1e9 == pytest.approx(30.5, abs=0.05)  # Qwen: 30.5B total
    assert m.active_params / 1e9 == pytest.approx(3.3, abs=0.06)  # Qwen: 3.3B activated


def test_a_directory_with_config_json_is_named_after_it(tmp_path):
    d = tmp_path / "My-Model"
    d.mkdir()
    (d / "config.json").write_text((FIXTURES / "llama-3.1-8b.json").read_text())
    assert model_from_config(d / "config.json").name == "my-model"


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not a readable JSON config"),
        ("[1, 2]", "holds a JSON object"),
        (json.dumps({"hidden_size": 10}), "lacks num_hidden_layers"),
    ],
)
def test_bad_config_files_are_refused_clearly(tmp_path, content, message):
    f = tmp_path / "config.json"
    f.write_text(content)
    with pytest.raises(InputError, match=message):
        model_from_config(f)


def test_missing_config_file():
    with pytest.raises(InputError, match="no such config.json"):
        model_from_config("/nonexistent/config.json")
