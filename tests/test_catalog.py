"""The catalog as a specification: what it must hold, in which units, with sources."""

from __future__ import annotations

import pytest

from solver.catalog import load_catalog
from solver.errors import InputError
from solver.units import GiB

SEED_DEVICES = ["rtx-3060-12gb", "rtx-3090", "rtx-4090", "a100-80gb", "h100-pcie", "h100-sxm", "m2-ultra-192gb"]
REQUIRED_DEVICES = SEED_DEVICES + [
    "h200", "b200", "l40s", "l4", "a10g", "mi300x", "mi325x", "gaudi3", "tpu-v5e", "tpu-v6e", "m3-ultra-512gb", "rtx-5090",
]
REQUIRED_MODELS = [
    "llama-3.1-8b", "llama-3.1-70b", "qwen2.5-32b", "mixtral-8x7b", "llama-3.1-405b", "qwen3-32b", "qwen3-235b-a22b",
    "deepseek-v3", "gpt-oss-20b", "gpt-oss-120b", "gemma-2-9b", "gemma-3-27b",
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
        assert 1e11 <= d.memory_bandwidth_bytes_per_s <= 2e13, d.name  # 100 GB/s .. 20 TB/s
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
    text = (tmp_path / "devices.yaml").read_text().replace("    source: \"NVIDIA Ada", "    fp16_sparse_flops: 1\n    source: \"NVIDIA Ada", 1)
    (tmp_path / "devices.yaml").write_text(text)
    with pytest.raises(InputError, match="unknown field"):
        load_catalog(tmp_path)
