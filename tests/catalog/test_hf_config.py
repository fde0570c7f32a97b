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
    # every TP rank holds q_a_proj 7168 × 1536, kv_a_proj_with_mqa 7168 × (512 + 64) a
    # layer and the router 7168 × 256 a MoE layer whole (issue 42)
    assert m.q_lora_rank == 1536
    assert m.replicated_params == 61 * 7168 * (1536 + 512 + 64) + 58 * 7168 * 256


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


def test_missing_config_file():
    with pytest.raises(InputError, match="no such config.json"):
        model_from_config("/nonexistent/config.json")


# --------------------------------------------------------------------------- damaged files

# A small dense config, written one key a line (indent 2), so that key i of the
# dict below sits on line i + 2 and a key added to it on line 9.
BASE = {
    "model_type": "llama",  # line 2
    "num_hidden_layers": 2,  # line 3
    "hidden_size": 64,  # line 4
    "num_attention_heads": 4,  # line 5
    "num_key_value_heads": 2,  # line 6
    "intermediate_size": 128,  # line 7
    "vocab_size": 1000,  # line 8
}


def _write(tmp_path: Path, cfg: dict) -> Path:
    f = tmp_path / "config.json"
    f.write_text(json.dumps(cfg, indent=2))
    return f


def test_the_small_base_config_is_a_model(tmp_path):
    m = model_from_config(_write(tmp_path, BASE))
    # Per layer: q and o 64 × 4 × 16, k and v 64 × 2 × 16, MLP 3 × 64 × 128, 2 norms of 64.
    layer = 2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128 + 2 * 64
    assert m.total_params == 2 * layer + 2 * 1000 * 64 + 64 == 202_048
    assert (m.attention, m.head_dim, m.max_context_tokens) == ("gqa", 16, 4096)


MLA = {"kv_lora_rank": 16, "qk_rope_head_dim": 8, "v_head_dim": 16}
MOE = {"num_local_experts": 8, "num_experts_per_tok": 2}


@pytest.mark.parametrize(
    "change, message",
    [
        # Wrong types, each at its own line.
        ({"model_type": 7}, "config.json:2: model_type = 7: must be a string"),
        ({"intermediate_size": {}}, "config.json:7: intermediate_size = {}: must be a whole number"),
        ({"hidden_size": "64"}, 'config.json:4: hidden_size = "64": must be a whole number'),
        ({"hidden_size": 64.0}, "config.json:4: hidden_size = 64.0: must be a whole number"),
        ({"hidden_size": True}, "config.json:4: hidden_size = true: must be a whole number"),
        ({"hidden_size": [[[64]]]}, "config.json:4: hidden_size = [[[64]]]: must be a whole number"),
        ({"tie_word_embeddings": "yes"}, 'config.json:9: tie_word_embeddings = "yes": must be true or false'),
        ({"sliding_window": 8, "layer_types": ["sliding_attention", 1]}, "config.json:10: layer_types[1] = 1: must be a string"),
        ({"layer_types": "sliding_attention"}, 'config.json:9: layer_types = "sliding_attention": must be a list'),
        # Nested objects: their keys are free, their type is not.
        ({"rope_scaling": 7}, "config.json:9: rope_scaling = 7: must be a JSON object"),
        ({"quantization_config": []}, "config.json:9: quantization_config = []: must be a JSON object"),
        ({"rope_scaling": {"factor": "x", "anything": [1]}}, None),
        ({"text_config": 7}, "config.json:9: text_config = 7: must be a JSON object"),
        ({"text_config": {"num_hidden_layers": 0}}, "config.json:10: text_config.num_hidden_layers = 0: must be ≥ 1"),
        # Counts: at least one, at most a stated bound.
        ({"num_hidden_layers": 0}, "config.json:3: num_hidden_layers = 0: must be ≥ 1"),
        ({"num_attention_heads": 0}, "config.json:5: num_attention_heads = 0: must be ≥ 1"),
        ({"num_key_value_heads": -1}, "config.json:6: num_key_value_heads = -1: must be ≥ 1"),
        ({"num_hidden_layers": 1001}, "config.json:3: num_hidden_layers = 1001: must be ≤ 1,000 (the deepest"),
        ({"hidden_size": 100_001}, "config.json:4: hidden_size = 100001: must be ≤ 100,000"),
        ({"vocab_size": 10**30}, f"config.json:8: vocab_size = {10**30}: must be ≤ 10,000,000"),
        ({"max_position_embeddings": 0}, "config.json:9: max_position_embeddings = 0: must be ≥ 1"),
        ({"sliding_window": 8, "sliding_window_pattern": 0}, "config.json:10: sliding_window_pattern = 0: must be ≥ 1"),
        ({**MOE, "num_local_experts": 100_001}, "config.json:9: num_local_experts = 100001: must be ≤ 100,000"),
        # Checks across fields, said against the key to change.
        ({"num_key_value_heads": 3}, "config.json:6: num_key_value_heads = 3: must divide num_attention_heads (4)"),
        ({"num_attention_heads": 128, "num_key_value_heads": 128}, "config.json:5: num_attention_heads = 128: must not exceed hidden_size (64)"),
        ({**MLA}, "config.json:9: qk_nope_head_dim: required when kv_lora_rank is set"),  # absent: at kv_lora_rank (line 9)
        ({**MOE, "num_experts_per_tok": None}, "config.json:10: num_experts_per_tok: an MoE model (num_local_experts 8) routes each token to 1 to 7"),
        ({**MOE, "num_experts_per_tok": 8}, "config.json:10: num_experts_per_tok = 8: must be fewer than the experts (num_local_experts 8)"),
        ({**MOE, "num_local_experts": 1, "num_experts_per_tok": 1}, "config.json:9: num_local_experts = 1: must be 0 (a dense model) or ≥ 2"),
        ({**MOE, "first_k_dense_replace": 2}, "config.json:11: first_k_dense_replace = 2: must be below num_hidden_layers (2)"),
        # Heads of 25,000: q and o 100,000 × 4 × 25,000 each, k and v half that, so
        # attention 3 × 10^10 a layer, the MLP 3 × 10^5 × 10^6, norms 2 × 10^5; plus
        # 2 × 1,000 × 10^5 embeddings and the final norm.
        (
            {"num_hidden_layers": 1000, "hidden_size": 100_000, "intermediate_size": 1_000_000},
            "config.json: the parameters these fields count = 330,000,400,100,000: must be ≤ 100,000,000,000,000",
        ),
        # A long value is cut: 1,001 × 16 characters, 1,000 separators of 2, and the brackets.
        (
            {"layer_types": ["full_attention"] * 1001},
            'config.json:9: layer_types = ["full_attention", "full_atten…", "full_attention"] (18,018 characters): must hold at most 1,000 entries',
        ),
        ({"vocab_size": None}, "config.json:1: vocab_size: required"),
        ({"text_config": {"vocab_size": None}}, "config.json:1: text_config.vocab_size: required"),
        ({**MLA, "qk_nope_head_dim": 16}, None),  # complete MLA dimensions are a model
        ({"_name_or_path": "a\nb"}, 'config.json:9: _name_or_path = "a\\nb": must be printable text'),
    ],
)
def test_a_damaged_field_is_one_error_naming_file_line_and_key(tmp_path, change, message):
    f = _write(tmp_path, {**BASE, **change})
    if message is None:
        model_from_config(f)
        return
    with pytest.raises(InputError) as err:
        model_from_config(f)
    text = str(err.value)
    assert "\n" not in text
    assert f"{tmp_path}/{message}" in text, text


@pytest.mark.parametrize(
    "content, message",
    [
        (b"{not json", "config.json:1: not valid JSON: Expecting property name"),
        (b"", "config.json:1: not valid JSON: Expecting value"),
        (b"[1, 2]", "config.json:1: JSON: the file holds a list; a config.json holds one JSON object"),
        (b'"llama"', "config.json:1: JSON: the file holds a string"),
        (b'{"hidden_size":\n NaN}', "config.json:2: NaN: not a finite number"),
        (b'{\n"a": 1,\n"b": -Infinity}', "config.json:3: -Infinity: not a finite number"),
        (b'{"a": 1e999}', "config.json:1: 1e999: not a finite number"),
        # `{"a": "caf` is ten bytes; é in Latin-1 is the eleventh.
        (b'{"a": "caf\xe9"}', "config.json:1: byte 11 = 0xe9: not UTF-8"),
        (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "config.json: JSON: nested too deeply"),
        (b'{"a":\n' + b"9" * 5000 + b"}", "config.json:2: JSON: a number has thousands of digits"),
    ],
)
def test_a_damaged_file_is_one_error_naming_it(tmp_path, content, message):
    f = tmp_path / "config.json"
    f.write_bytes(content)
    with pytest.raises(InputError) as err:
        model_from_config(f)
    assert "\n" not in str(err.value)
    assert f"{tmp_path}/{message}" in str(err.value)


def test_a_byte_order_mark_is_read_past(tmp_path):
    f = tmp_path / "config.json"
    f.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "llama-3.1-8b.json").read_bytes())
    assert model_from_config(f).total_params == 8_030_261_248


@pytest.mark.parametrize(
    "where, message",
    [
        ("missing/config.json", "no such config.json file"),
        ("folder", "is a folder, not a config.json file"),
        ("file/config.json", "a part of this path before its end is a file, not a folder"),
        ("x" * 300 + "/config.json", "the path (or a name in it) is too long for the file system"),
        ("x/" * 600_000 + "config.json", "the path (or a name in it) is too long for the file system"),
        ("a\x00b", "the path holds a character no file name can (NUL)"),
    ],
)
def test_an_unreadable_path_is_one_error(tmp_path, where, message):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("{}")
    with pytest.raises(InputError) as err:
        model_from_config(tmp_path / where)
    text = str(err.value)
    assert "\n" not in text and len(text) < 400
    assert text.startswith("model = ") and text.endswith(message)
