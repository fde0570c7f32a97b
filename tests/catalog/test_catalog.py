"""The catalog as a specification: what it must hold, in which units, with sources."""

from __future__ import annotations

import pytest

from solver.catalog import load_catalog
from solver.errors import InputError
from solver.units import GiB

SEED_DEVICES = ["rtx-3060-12gb", "rtx-3090", "rtx-4090", "a100-80gb", "h100-pcie", "h100-sxm", "m2-ultra-192gb"]
REQUIRED_DEVICES = SEED_DEVICES + [
    "h200",
    "b200",
    "l40s",
    "l4",
    "a10g",
    "mi300x",
    "mi325x",
    "gaudi3",
    "tpu-v5e",
    "tpu-v6e",
    "m3-ultra-512gb",
    "rtx-5090",
]
REQUIRED_MODELS = [
    "llama-3.1-8b",
    "llama-3.1-70b",
    "qwen2.5-32b",
    "mixtral-8x7b",
    "llama-3.1-405b",
    "qwen3-32b",
    "qwen3-235b-a22b",
    "deepseek-v3",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "gemma-2-9b",
    "gemma-3-27b",
]


def test_at_least_25_devices_including_every_named_one(catalog):
    assert len(catalog.devices) >= 25
    for name in REQUIRED_DEVICES:
        catalog.device(name)


def test_at_least_20_models_including_every_named_one(catalog):
    assert len(catalog.models) >= 20
    for name in REQUIRED_MODELS:
        catalog.model(name)


def test_every_entry_cites_a_source_and_a_date(catalog):
    for group in (catalog.devices, catalog.models, catalog.platforms, catalog.precisions):
        for entry in group:
            assert entry.source.strip() and entry.as_of.year >= 2023, entry.name
    for d in catalog.devices:
        if d.price:
            assert d.price.source and d.price.provider and d.price.as_of.year >= 2024, d.name


def test_memory_is_what_the_device_reports_not_the_marketing_figure(catalog):
    # nvidia-smi: an "80 GB" H100 shows 81,559 MiB; a "24 GB" RTX 4090 shows 24,564 MiB.
    assert catalog.device("h100-sxm").memory_bytes == 81_559 * 2**20
    assert catalog.device("rtx-4090").memory_bytes == 24_564 * 2**20
    for d in catalog.devices:
        assert 4 * GiB <= d.memory_bytes <= 1024 * GiB, d.name


def test_tensor_figures_are_dense(catalog):
    # Datasheets print sparse figures twice the dense ones. Dense values, by hand from
    # NVIDIA's datasheets ("with sparsity" halved): H100 SXM 989.5, H100 PCIe 756, A100 312.
    assert catalog.device("h100-sxm").dense_flops_per_s["fp16"] == 989.5e12  # 1,979 / 2
    assert catalog.device("h100-pcie").dense_flops_per_s["fp16"] == 756e12
    assert catalog.device("a100-80gb").dense_flops_per_s["bf16"] == 312e12
    assert catalog.device("b200").dense_flops_per_s["fp4"] == 9000e12  # 18 PFLOPS with sparsity / 2
    for d in catalog.devices:
        f = d.dense_flops_per_s
        sixteen = f.get("fp16") or f.get("bf16")
        assert sixteen, d.name
        if "fp8" in f:  # FP8 runs at most twice the 16-bit rate
            assert f["fp8"] <= 2.05 * sixteen, d.name
        if "fp4" in f:  # FP4 runs 4x the 16-bit rate (8x a GeForce's FP32-accumulate rate)
            assert f["fp4"] <= 8.2 * sixteen, d.name
        # Arithmetic intensity of the ridge point: tens to hundreds of FLOP per byte.
        assert 10 <= sixteen / d.memory_bandwidth_bytes_per_s <= 700, d.name


def test_units_are_si(catalog):
    for d in catalog.devices:
        # 50 GB/s .. 20 TB/s: the base M1 (LPDDR4X-4266, 128-bit) is 68.25 GB/s
        assert 5e10 <= d.memory_bandwidth_bytes_per_s <= 2e13, d.name
        for v in d.dense_flops_per_s.values():
            assert 1e12 <= v <= 5e16, d.name
    for p in catalog.platforms:
        for link in (p.scale_up, p.host, p.scale_out):
            if link:
                assert 1e9 <= link.bandwidth_bytes_per_s <= 2e12 and link.latency_s < 1e-3, p.name


def test_models_are_self_consistent(catalog):
    published_b = {"llama-3.1-70b": 70.6, "llama-3.1-405b": 405.9, "deepseek-v3": 671.0, "qwen3-235b-a22b": 235.1, "mixtral-8x7b": 46.7}
    for name, billions in published_b.items():
        assert catalog.model(name).total_params / 1e9 == pytest.approx(billions, abs=0.1)
    for m in catalog.models:
        assert m.active_params <= m.total_params
        if m.is_moe:
            assert 0 < m.routed_expert_params < m.total_params, m.name


def test_every_device_platform_and_format_resolves(catalog):
    for d in catalog.devices:
        for p in d.platforms:
            catalog.platform(p)
        assert set(d.weight_formats) <= set(catalog.precisions.entries)


def test_names_fold_case_punctuation_and_aliases(catalog):
    assert catalog.device("RTX 4090").name == "rtx-4090"
    assert catalog.model("meta-llama/Meta-Llama-3.1-8B-Instruct").name == "llama-3.1-8b"


def test_unknown_names_get_a_did_you_mean(catalog):
    with pytest.raises(InputError) as exc:
        catalog.device("rtx-4900")
    assert "did you mean" in str(exc.value) and "rtx-4090" in str(exc.value)
    with pytest.raises(InputError) as exc:
        catalog.model("lama-3.1-8b")
    assert "llama-3.1-8b" in str(exc.value)


def test_a_catalog_with_a_sparse_field_or_missing_source_is_refused(tmp_path, catalog):
    from solver.catalog import catalog_dir

    for f in catalog_dir().glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    text = (tmp_path / "devices.yaml").read_text().replace('    source: "NVIDIA Ada', '    fp16_sparse_flops: 1\n    source: "NVIDIA Ada', 1)
    (tmp_path / "devices.yaml").write_text(text)
    with pytest.raises(InputError, match="unknown field"):
        load_catalog(tmp_path)


# ----------------------------------------------------------------- llama.cpp devices and GGUF k-quants

LLAMA_CPP_DEVICES = [
    "rtx-3070",
    "rtx-3080",
    "rtx-3080-ti",
    "rtx-3090-ti",
    "rtx-4070-ti",
    "rtx-4080",
    "rtx-4090-laptop",
    "rtx-4080-laptop",
    "m1-pro",
    "m1-max",
    "m1-ultra",
    "m2-pro",
    "m2-max",
    "m3-pro",
    "m3-max",
    "m4-max",
    "rx-7900-xtx",
    "mi100",
    "mi210",
]


def test_the_llama_cpp_devices_are_there_and_run_gguf(catalog):
    for name in LLAMA_CPP_DEVICES:
        d = catalog.device(name)
        assert d.name == name
        assert {"q4_k_m", "q5_k_m", "q6_k", "q8_0", "q4_0"} <= set(d.weight_formats), name
        if d.vendor == "Apple" or name.endswith("-laptop"):  # one device per machine
            assert d.platforms == ("single-device",), name


def _block_bits(p) -> float:
    """Bits per value of a precision's base block, from its catalog fields."""
    return p.bits + 8 * (p.scale_bytes_per_group + p.zero_bytes_per_group) / p.group_size


def test_gguf_k_quant_blocks_have_their_ggml_sizes(catalog):
    # ggml-common.h, by hand, for one 256-value super-block:
    #   block_q4_K = d (FP16, 2 B) + dmin (FP16, 2 B) + 12 B of 6-bit scales/mins + 256 x 4/8 = 128 B
    #              = 144 B -> 144 x 8 / 256 = 4.5 bits
    #   block_q5_K = 2 + 2 + 12 + qh 256/8 = 32 + qs 128 = 176 B -> 5.5 bits
    #   block_q6_K = ql 256 x 4/8 = 128 + qh 256 x 2/8 = 64 + 16 int8 scales + d 2 = 210 B -> 6.5625 bits
    for name, block_bytes, bits in (("q4_k_m", 2 + 2 + 12 + 128, 4.5), ("q5_k_m", 2 + 2 + 12 + 32 + 128, 5.5), ("q6_k", 128 + 64 + 16 + 2, 6.5625)):
        assert block_bytes * 8 / 256 == bits
        p = catalog.precision(name)
        assert p.group_size == 256 and _block_bits(p) == pytest.approx(bits, abs=1e-12), name
    # Q6_K is one block type throughout the file, so its storage cost is the block's.
    assert catalog.precision("q6_k").bytes_per_value == 210 / 256


def test_q4_k_m_llama_3_8b_weights_match_the_published_file_size(catalog):
    from solver.physics.weights import weights_bytes

    m = catalog.model("llama-3.1-8b")  # every tensor shape equals Llama-3-8B's
    # Hand derivation of the Q4_K_M mix (llama_model_quantize): output.weight and, in the 16 of
    # 32 layers use_more_bits picks (0-3, 28-31, and 6, 9, ..., 27), attn_v (4096 x 1024) and
    # ffn_down (14336 x 4096) as Q6_K (210 B / 256); every other matrix Q4_K (144 B / 256);
    # the 65 norm vectors (4096 each) F32.
    h, kv, ffn, vocab, layers = 4096, 8 * 128, 14336, 128256, 32
    norms = (2 * layers + 1) * h
    q6 = vocab * h + 16 * (h * kv + h * ffn)  # 525,336,576 + 16 x 62,914,560 = 1,531,969,536
    q4 = m.total_params - norms - q6  # 6,498,025,472
    assert q6 == 1_531_969_536 and q4 == 6_498_025_472
    by_hand = q6 * 210 / 256 + q4 * 144 / 256 + norms * 4  # 4,912,898,048 bytes
    assert by_hand == 4_912_898_048
    ours = weights_bytes(m, catalog.precision("q4_k_m"))
    assert ours == pytest.approx(by_hand, rel=1e-4)
    # Published: bartowski's Llama-3-8B Q4_K_M GGUF is 4.92 GB (LLaMA3-iterative-DPO-final-GGUF
    # model card); llama.cpp's tools/quantize/README.md lists Llama-3.1-8B Q4_K_M at 4.58 GiB.
    assert ours == pytest.approx(4.92e9, rel=0.01)
    assert ours == pytest.approx(4.58 * 2**30, rel=0.01)
    # The same model card: Q5_K_M 5.73 GB, Q6_K 6.59 GB; its Q8_0 8.54 GB checks the existing q8_0.
    for name, published in (("q5_k_m", 5.73e9), ("q6_k", 6.59e9), ("q8_0", 8.54e9)):
        assert weights_bytes(m, catalog.precision(name)) == pytest.approx(published, rel=0.01), name


def test_new_devices_match_their_spec_sheets(catalog):
    # RTX 3090 Ti: 24 GB GDDR6X on 384 bits at 21 Gbps -> 21e9 x 384 / 8 = 1,008 GB/s;
    # nvidia-smi shows 24,564 MiB (as the 4090's 24 GB does).
    d = catalog.device("rtx-3090-ti")
    assert d.memory_bandwidth_bytes_per_s == 21e9 * 384 / 8 == 1.008e12
    assert d.memory_bytes == 24_564 * 2**20
    assert d.dense_flops_per_s["fp16"] == 320e12 / 4  # "320 Tensor-TFLOPs" = sparse, FP16 accumulate
    # MI210: 64 GB HBM2e, 4,096 bits at 3.2 Gbps -> 1,638.4 GB/s ("1.6 TB/s"); rocm-smi shows
    # 64 GiB less the 16 MiB the driver reserves.
    d = catalog.device("mi210")
    assert d.memory_bandwidth_bytes_per_s == pytest.approx(3.2e9 * 4096 / 8)
    assert d.memory_bytes == 64 * 2**30 - 16 * 2**20
    # Apple bins: the entries are the top ones (M3 Max 40-core 400 GB/s, not the 30-core's 300;
    # M4 Max 546, not 410; M3 Pro 150, below M1/M2 Pro's 200).
    assert catalog.device("m3-max").memory_bandwidth_bytes_per_s == 400e9
    assert catalog.device("m4-max").memory_bandwidth_bytes_per_s == 546e9
    assert catalog.device("m3-pro").memory_bandwidth_bytes_per_s == 150e9
    assert catalog.device("m2-pro").memory_bandwidth_bytes_per_s == 200e9


# ----------------------------------------------------------------- more devices and models


def test_llama_2_13b_params_from_its_config(catalog):
    # config.json: 40 layers, hidden 5120, 40 heads (MHA, head_dim 128), intermediate 13824,
    # vocab 32000, untied head, RMSNorm without bias. Per layer: Q, K, V, O = 4 x 5120^2
    # = 104,857,600; gate, up, down = 3 x 5120 x 13824 = 212,336,640; two norms 2 x 5120 = 10,240
    # -> 317,204,480 x 40 = 12,688,179,200; embeddings + LM head 2 x 32000 x 5120 = 327,680,000;
    # final norm 5,120.
    by_hand = 40 * (4 * 5120**2 + 3 * 5120 * 13824 + 2 * 5120) + 2 * 32000 * 5120 + 5120
    assert by_hand == 12_688_179_200 + 327_680_000 + 5_120 == 13_015_864_320
    assert catalog.model("llama-2-13b").total_params == by_hand
    # Hugging Face's safetensors count, 13,015,866,880, adds 40 x 64 stored rotary buffers.
    assert by_hand + 40 * 64 == 13_015_866_880


def test_codellama_7b_params_from_its_config(catalog):
    # config.json: llama-2-7b's shape (32 layers, hidden 4096, 32 heads MHA, intermediate 11008)
    # with vocab 32016: 16 more rows in each of the embedding and the untied LM head.
    # Per layer 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 = 67,108,864 + 135,266,304 + 8,192
    # = 202,383,360 -> x 32 = 6,476,267,520; 2 x 32016 x 4096 = 262,275,072; final norm 4,096.
    by_hand = 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32016 * 4096 + 4096
    assert by_hand == 6_476_267_520 + 262_275_072 + 4_096 == 6_738_546_688
    assert catalog.model("codellama-7b").total_params == by_hand
    assert by_hand - catalog.model("llama-2-7b").total_params == 2 * 16 * 4096


def test_falcon_180b_params_from_its_config(catalog):
    # config.json: 80 layers, hidden 14848, 232 query heads and 8 KV groups of head_dim 64, no
    # biases in the linears, vocab 65024, untied head. Per layer: fused QKV 14848 x (232 + 2 x 8)
    # x 64 = 235,667,456; dense 14848^2 = 220,463,104; MLP of TWO matrices (h -> 4h, 4h -> h,
    # GELU) 2 x 14848 x 59392 = 1,763,704,832; ln_attn and ln_mlp, weight + bias, 4 x 14848
    # = 59,392 -> 2,219,894,784 x 80 = 177,591,582,720; embeddings + LM head 2 x 65024 x 14848
    # = 1,930,952,704; ln_f 2 x 14848 = 29,696.
    h = 14848
    per_layer = h * (232 + 2 * 8) * 64 + h * h + 2 * h * (4 * h) + 4 * h
    assert per_layer == 235_667_456 + 220_463_104 + 1_763_704_832 + 59_392 == 2_219_894_784
    by_hand = 80 * per_layer + 2 * 65024 * h + 2 * h
    assert by_hand == 177_591_582_720 + 1_930_952_704 + 29_696 == 179_522_565_120
    m = catalog.model("falcon-180b")
    assert m.total_params == by_hand and m.intermediate_size == 4 * h
    assert round(by_hand / 1e9, 1) == 179.5  # the published figure (= Hugging Face's safetensors.total)
    # A gated three-matrix MLP of the same width would overcount by 80 x 14848 x 59392.
    assert by_hand + 80 * h * 4 * h == 250_070_758_400


NEW_DEVICE_ALIASES = {
    "rtx-a6000": "rtx-a6000-48gb",
    "a40": "a40-48gb",
    "rtx-4000-ada": "rtx-4000-ada-20gb",
    "rtx-5000-ada": "rtx-5000-ada-32gb",
    "m1": "apple-m1",
    "m3": "apple-m3",
    "m4": "apple-m4",
    "rx-6800-xt": "radeon-rx-6800-xt",
    "rx-6700-xt": "radeon-rx-6700-xt",
    "rx-9070-xt": "radeon-rx-9070-xt",
}


def test_each_new_device_resolves_by_its_alias(catalog):
    for name, alias in NEW_DEVICE_ALIASES.items():
        assert alias in catalog.device(name).aliases, name
        assert catalog.device(alias).name == name, alias
        assert catalog.device(alias.upper().replace("-", " ")).name == name, alias  # case and punctuation fold


def test_a_matmul_share_needs_its_source_and_a_dtype_the_device_lists(catalog):
    import dataclasses

    import pytest

    h100 = catalog.device("h100-sxm")
    with pytest.raises(ValueError, match="matmul_share needs matmul_source"):
        dataclasses.replace(h100, matmul_source=None)
    with pytest.raises(ValueError, match="fp4, which dense_flops_per_s does not list"):
        dataclasses.replace(h100, matmul_share={"fp4": 0.5})
