"""A weight format's decode share per backend (issue 42 item 3): Metal's 4-bit GGUF
kernels reach a smaller share of 16-bit speed than the share fitted on CUDA."""

from __future__ import annotations

import pytest

from solver.physics.decode import estimate_decode
from tests.solve_helpers import NO_FIXED_COSTS

NO_EFF = {"factors": {"bandwidth_efficiency": 1.0, "compute_efficiency": 1.0, **NO_FIXED_COSTS}}
# Llama-3.1-8B untied: a step reads every parameter but the input embedding table
# (128,256 × 4,096 = 525,336,576), 7,504,924,672 values; GGUF Q4_0 stores them at
# 18 bytes per 32 values (16 of nibbles, an FP16 scale) = 0.5625 B.
Q4_0_BYTES = 7_504_924_672 * 18 / 32


def _share_from_discussion_4167(tg_quant: float, tg_f16: float, quant_gib: float) -> float:
    """The sourced share: llama.cpp discussion #4167's M1 Max 32-core row (LLaMA-2 7B,
    tg128 t/s) over its F16, each step less the held per-layer cost (32 layers × 20 µs),
    bytes from llama-bench's sizes (F16 12.55 GiB)."""
    fixed = 32 * 20e-6
    return (quant_gib / (1 / tg_quant - fixed)) / (12.55 / (1 / tg_f16 - fixed))


def test_the_metal_shares_are_the_ones_discussion_4167_gives(catalog):
    # Q4_0 61.19 t/s, F16 23.03 t/s, Q4_0 3.56 GiB: 226.7 / 293.3 = 0.773;
    # Q8_0 40.2 t/s, 6.67 GiB: 275.2 / 293.3 = 0.938.
    q4 = _share_from_discussion_4167(61.19, 23.03, 3.56)
    q8 = _share_from_discussion_4167(40.2, 23.03, 6.67)
    assert q4 == pytest.approx(0.773, abs=5e-4)
    assert q8 == pytest.approx(0.938, abs=5e-4)
    assert catalog.precision("q4_0", "weights").bandwidth_share_on("Apple", "lpddr") == pytest.approx(q4, abs=1e-3)
    assert catalog.precision("q4_k_m", "weights").bandwidth_share_on("Apple", "lpddr") == pytest.approx(q4, abs=1e-3)
    assert catalog.precision("q8_0", "weights").bandwidth_share_on("Apple", "lpddr") == pytest.approx(q8, abs=1e-3)


def test_a_backend_without_its_own_share_keeps_the_formats(catalog):
    q4 = catalog.precision("q4_0", "weights")
    assert q4.bandwidth_share_on("NVIDIA", "gddr") == q4.bandwidth_share
    assert q4.bandwidth_share_on("AMD", "hbm") == q4.bandwidth_share


def test_q4_0_on_metal_reads_at_metals_share(build_deployment):
    # M2 Ultra, 800 GB/s, efficiency 1: 4,221,520,128 B / (800e9 × 0.773) = 6.826 ms.
    d, w, _ = build_deployment(
        "llama-3.1-8b", "m2-ultra", users=1, prompt=1, output=1, weights="q4_0", kv="fp16", engine="llama.cpp", overrides=NO_EFF
    )
    dec = estimate_decode(d, w)
    assert dec.weight_bytes_read == pytest.approx(Q4_0_BYTES)
    assert dec.weights_time_s == pytest.approx(Q4_0_BYTES / (800e9 * 0.773)) == pytest.approx(6.826e-3, rel=1e-3)


def test_q4_0_on_cuda_reads_at_the_formats_fitted_share(build_deployment, catalog):
    # RTX 4090, 1,008 GB/s: the same bytes at the format's share (fitted on the fit split).
    d, w, _ = build_deployment(
        "llama-3.1-8b", "rtx-4090", users=1, prompt=1, output=1, weights="q4_0", kv="fp16", engine="llama.cpp", overrides=NO_EFF
    )
    share = catalog.precision("q4_0", "weights").bandwidth_share
    assert share != 0.773
    assert estimate_decode(d, w).weights_time_s == pytest.approx(Q4_0_BYTES / (1008e9 * share))


def test_a_users_share_holds_on_every_backend(build_deployment):
    # overrides.precision.bandwidth_share 0.9 replaces Metal's 0.773 too: 4,221,520,128 B
    # / (800e9 × 0.9) = 5.863 ms.
    over = {**NO_EFF, "precision": {"bandwidth_share": 0.9}}
    d, w, _ = build_deployment("llama-3.1-8b", "m2-ultra", users=1, prompt=1, output=1, weights="q4_0", kv="fp16", engine="llama.cpp", overrides=over)
    assert estimate_decode(d, w).weights_time_s == pytest.approx(Q4_0_BYTES / (800e9 * 0.9)) == pytest.approx(5.863e-3, rel=1e-3)
