"""Every golden number of the seed document (shared/seed/), reproduced from the
seed's own inputs. Where the seed uses its own round figures (8e9 parameters, an
"18 GB" model, "13B active", 378 effective TFLOP/s) the test overrides the catalog
with them, exactly as a user can in a spec."""

from __future__ import annotations

import dataclasses

import pytest

from solver.physics.decode import estimate_decode
from solver.physics.evaluate import evaluate
from solver.physics.memory import estimate_memory
from solver.physics.prefill import estimate_prefill
from solver.physics.weights import weights_bytes
from tests.solve_helpers import NO_FIXED_COSTS

# The seed counts the whole card: no runtime overhead, no driver share, no activation peak.
SEED_NO_OVERHEAD = {"memory_utilization": 1.0, "runtime_overhead_bytes": 0, "reserved_bytes": 0, "activation_peak_scale": 0, "tp_overhead_bytes": 0}
# Nor CUDA graphs' memory (vLLM counts them before sizing the KV cache from v0.21.0):
# an engine run eager captures none.
SEED_EAGER = {"name": "vllm", "enforce_eager": True}
# Nor any fixed cost per forward pass, and a kernel (decode or prefill) is the larger of its read and its math.
SEED_NO_FIXED_COST = {
    "unhidden_share": 0,
    "prefill_unhidden_share": 0,
    **NO_FIXED_COSTS,
    "request_overhead_s": 0,
}

# And runs matmuls at the datasheet's dense peak (× its utilisation), not at the share of
# it a device's measured matmuls reach (catalogs/devices.yaml matmul_share).
SEED_DATASHEET_PEAK = {"matmul_share": {"fp16": 1.0, "bf16": 1.0, "fp8": 1.0}}

# And prefills each prompt and runs each decode step alone (batching: isolated, the seed's
# mode), where the engines' default would mix the prompts' chunks into the steps.
SEED_BATCHING = {"batching": "isolated"}

# And runs a prompt's GEMMs at that utilisation itself, not at the weight format's fitted
# prefill share of it (16-bit 1.33, catalogs/fitted.yaml).
SEED_ONE_UTILISATION = {"compute_share": 1.0}


def test_step1_70b_weights_in_16bit_are_140_gb(catalog):
    # "For a 70-billion parameter model ... in 16-bit precision ... 140 GB": 70e9 × 2 B.
    model = dataclasses.replace(catalog.model("llama-3.1-70b"), total_params=70_000_000_000, active_params=70_000_000_000)
    assert weights_bytes(model, catalog.precision("fp16")) == 140e9


def test_step1_70b_rules_out_two_24gb_cards_but_not_two_a100_80gb(build_deployment):
    # "This immediately rules out dual-GPU 24GB consumer setups ... requiring ... two 80GB A100s."
    over = {"model": {"total_params": 70e9}, "factors": SEED_NO_OVERHEAD}
    d, w, t = build_deployment(
        "llama-3.1-70b", "rtx-4090", tp=2, users=1, context=2048, output=256, overrides=over, workload_extra=SEED_BATCHING, engine=SEED_EAGER
    )
    assert not estimate_memory(d, w).fits  # 70 GB per card > 25.8 GB
    d, w, t = build_deployment(
        "llama-3.1-70b", "a100-80gb", tp=2, users=1, context=2048, output=256, overrides=over, workload_extra=SEED_BATCHING, engine=SEED_EAGER
    )
    mem = estimate_memory(d, w)
    assert mem.weights_bytes == 70e9  # 140 GB split two ways
    assert mem.fits


def _seed_step1(build_deployment, **kw):
    over = {"model": {"total_params": 8e9}, "factors": SEED_NO_OVERHEAD}
    return build_deployment(
        "llama-3.1-8b",
        "rtx-4090",
        users=16,
        context=8192,
        output=256,
        weights="fp16",
        overrides=over,
        workload_extra=SEED_BATCHING,
        engine=SEED_EAGER,
        **kw,
    )


def test_step1_llama8b_kv_cache_is_17_179_869_184_bytes(build_deployment):
    # 2 × 32 × 8 × 128 × 8192 × 2 × 16, the seed's own product.
    d, w, _ = _seed_step1(build_deployment, kv="fp16")
    mem = estimate_memory(d, w)
    assert mem.kv_bytes == 2 * 32 * 8 * 128 * 8192 * 2 * 16 == 17_179_869_184


def test_step1_llama8b_needs_33_1_gb_and_does_not_fit_a_4090(build_deployment):
    d, w, _ = _seed_step1(build_deployment, kv="fp16")
    mem = estimate_memory(d, w)
    # Weights 8e9 × 2 = 16 GB; the seed adds "17.1 GB" (17.18 truncated) for 33.1 GB.
    assert mem.weights_bytes == 16e9
    assert mem.needed_bytes == 16e9 + 17_179_869_184
    assert mem.needed_bytes == pytest.approx(33.1e9, abs=0.1e9)
    # The card: 24,564 MiB as nvidia-smi reports = 25.76 GB ("24 GB", 25.8 GB).
    assert mem.usable_bytes == 24_564 * 2**20
    assert not mem.fits


def test_step1_fp8_kv_cache_halves_to_8_5_gb_and_fits(build_deployment):
    d, w, _ = _seed_step1(build_deployment, kv="fp8")
    mem = estimate_memory(d, w)
    assert mem.kv_bytes == 17_179_869_184 / 2  # "reducing cache size to 8.5 GB"
    assert mem.kv_bytes == pytest.approx(8.5e9, abs=0.1e9)
    assert mem.fits


def test_step1_tp2_fits(build_deployment):
    d, w, _ = _seed_step1(build_deployment, kv="fp16", tp=2)
    mem = estimate_memory(d, w)
    assert mem.needed_bytes == (16e9 + 17_179_869_184) / 2
    assert mem.fits


def test_step1_remedies_name_tp2_and_fp8_kv(build_deployment, catalog):
    d, w, t = _seed_step1(build_deployment, kv="fp16")
    ev = evaluate(d, w, t, precisions=catalog.precisions.entries)
    actions = {r.action.split(":")[0]: r for r in ev.remedies}
    tp = next(r for r in ev.remedies if r.action.startswith("shard with tensor parallelism"))
    kv = next(r for r in ev.remedies if r.action.startswith("quantize the KV cache"))
    assert tp.evaluation.deployment.tp == 2 and tp.resolves
    assert kv.evaluation.deployment.kv.name == "fp8" and kv.resolves
    assert any(a.startswith("lower the batch") for a in actions)


@pytest.mark.parametrize("bandwidth, tokens_per_s", [(800e9, 44.4), (936e9, 52.0)])
def test_step2_18gb_model_decodes_at_seed_rates(build_deployment, bandwidth, tokens_per_s):
    # 800 GB/s / 18 GB = 44.4 tok/s (M2 Ultra); 936 / 18 = 52.0 (RTX 3090). Batch 1,
    # theoretical bandwidth (efficiency 1), the seed's "18 GB" model size.
    over = {
        "model": {"weights_bytes": "18GB"},
        "gpu": {"memory_bandwidth_bytes_per_s": bandwidth},
        "factors": {"bandwidth_efficiency": 1.0, **SEED_NO_FIXED_COST},
        "precision": {"bandwidth_share": 1.0},  # every byte read at full bandwidth, whatever the format
    }
    d, w, _ = build_deployment(
        "qwen2.5-32b",
        "m2-ultra-192gb",
        users=1,
        prompt=1,
        output=1,
        weights="int4-awq" if False else "q4_0",
        kv="fp16",
        overrides=over,
        workload_extra=SEED_BATCHING,
    )
    dec = estimate_decode(d, w)
    assert dec.weights_time_s == pytest.approx(18e9 / bandwidth)
    assert 1 / dec.weights_time_s == pytest.approx(tokens_per_s, abs=0.05)
    # With two tokens of context the KV read adds well under 0.1 %.
    assert dec.tokens_per_s_per_user == pytest.approx(tokens_per_s, abs=0.05)


def test_step3_mixtral_prefill_on_h100_pcie_takes_0_28_s(build_deployment):
    # 2 × 13e9 × 4096 = 106.4 TFLOP; 756 TFLOP/s × 0.5 = 378 effective; 0.28 s.
    # The seed's 756 TFLOP/s is the datasheet peak: its matmuls run at the whole of it.
    over = {
        "model": {"active_params": 13e9},
        "gpu": SEED_DATASHEET_PEAK,
        "factors": {"compute_efficiency": 0.5, **SEED_NO_FIXED_COST},
        "precision": SEED_ONE_UTILISATION,
    }
    d, w, _ = build_deployment("mixtral-8x7b", "h100-pcie", users=1, prompt=4096, output=1, overrides=over, workload_extra=SEED_BATCHING)
    pre = estimate_prefill(d, w)
    assert pre.linear_flops == 2 * 13e9 * 4096 == pytest.approx(106.4e12, rel=1e-3)
    assert pre.effective_flops_per_s == 378e12
    assert pre.linear_time_s == pytest.approx(0.28, abs=0.005)
    # The attention term the seed leaves out adds about 4 % for a 4k prompt.
    assert 0.03 < pre.attention_time_s / pre.linear_time_s < 0.06


def test_step3_rtx3060_at_6_5_effective_tflops_takes_over_16_s(build_deployment):
    over = {
        "model": {"active_params": 13e9, "weights_bytes": "26GB"},
        "gpu": {"dense_flops_per_s": {"fp16": "13TFLOP/s", "bf16": "13TFLOP/s"}},
        "factors": {"compute_efficiency": 0.5, **SEED_NO_FIXED_COST},
        "precision": SEED_ONE_UTILISATION,
    }
    d, w, _ = build_deployment("mixtral-8x7b", "rtx-3060-12gb", users=1, prompt=4096, output=1, overrides=over, workload_extra=SEED_BATCHING)
    pre = estimate_prefill(d, w)
    assert pre.effective_flops_per_s == 6.5e12
    assert pre.linear_time_s == pytest.approx(106.496e12 / 6.5e12)
    assert pre.linear_time_s > 16
