"""A weight format's decode share per backend (issue 42 item 3): Metal's 4-bit GGUF
kernels reach a smaller share of 16-bit speed than the share fitted on CUDA."""

from __future__ import annotations

import pytest

from solver.physics.decode import estimate_decode
from solver.physics.prefill import estimate_prefill
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
    assert catalog.precision("q8_0", "weights").bandwidth_share_on("Apple", "lpddr") == pytest.approx(q8, abs=1e-3)


def _share_from_a_triple(q4_8b: float, q4_70b: float, f16_8b: float) -> tuple[float, float]:
    """Q4_K_M's Metal decode share and the cost per layer from one machine's tg512 t/s of
    8B Q4_K_M, 70B Q4_K_M and 8B F16 (one build): each step = bytes × X + layers × L, X the
    ms a GB at the format's rate. Bytes a step reads (all but the input embedding): 8B F16
    7,504,924,672 × 2; 8B Q4_K_M 4,912,898,048 less its Q4_K token_embd 525,336,576 × 144 /
    256; 70B Q4_K_M 43.1 GB less 1,050,673,152 × 144 / 256."""
    f16, q8b = 7_504_924_672 * 2 / 1e9, (4_912_898_048 - 525_336_576 * 144 / 256) / 1e9
    q70b = 43.1 - 1_050_673_152 * 144 / 256 / 1e9
    a, b, f = 1e3 / q4_8b, 1e3 / q4_70b, 1e3 / f16_8b
    x = (b - 80 / 32 * a) / (q70b - 80 / 32 * q8b)
    layer_ms = (a - q8b * x) / 32
    return (1 / x) / (f16 / (f - 32 * layer_ms)), layer_ms


def test_q4_k_m_s_metal_share_is_the_median_of_the_fit_halfs_same_build_triples(catalog):
    # XiongjieDai's Llama-3 tg512 t/s (May 2024): M2 Ultra 78.81, 12.48, F16 36.9; M3 Max
    # 48.97, 7.65, 22.04; M1 Max 35.73, 4.34, 18.75. Shares 0.922, 0.954, 0.634 (costs per
    # layer 0.171, 0.267, 0.127 ms): the median is 0.922.
    got = [_share_from_a_triple(78.81, 12.48, 36.9), _share_from_a_triple(48.97, 7.65, 22.04), _share_from_a_triple(35.73, 4.34, 18.75)]
    assert [round(s, 3) for s, _ in got] == [0.922, 0.954, 0.634]
    assert [round(ms, 3) for _, ms in got] == [0.171, 0.267, 0.127]
    median = sorted(s for s, _ in got)[1]
    assert catalog.precision("q4_k_m", "weights").bandwidth_share_on("Apple", "lpddr") == pytest.approx(median, abs=1e-3)


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


# --------------------------------------------------------------------------- prefill on Metal
# llama.cpp's Metal kernel_mul_mm runs a GGUF format's prompt matmuls in the same half
# template as F16 after dequantising each tile (ggml-metal.metal): the format's prefill
# share there is the 16-bit formats' times the dequantising's cost, not the share fitted
# on CUDA's integer MMQ kernels.


def test_the_metal_prefill_ratio_is_the_fit_halfs_same_build_pairs(catalog):
    # XiongjieDai's Llama-3 pp512 tables (May 2024, one build per machine), Q4_K_M t/s over
    # F16 t/s: M2 Ultra 8B 994.04 / 1175.4 = 0.8457, 70B 118.79 / 147.58 = 0.8049, M1 Max 8B
    # 408.23 / 517.34 = 0.7891, M3 Max 8B 693.32 / 769.84 = 0.9006; the median of four is
    # the mean of the middle two, (0.8049 + 0.8457) / 2 = 0.8253.
    ratios = sorted([994.04 / 1175.4, 118.79 / 147.58, 408.23 / 517.34, 693.32 / 769.84])
    median = (ratios[1] + ratios[2]) / 2
    assert median == pytest.approx(0.8253, abs=5e-4)
    for fmt in ("q4_k_m", "q4_0", "q8_0", "q6_k", "q5_k_m"):
        assert catalog.precision(fmt, "weights").compute_share_by_memory == {"apple.lpddr": pytest.approx(median, abs=1e-3)}


def test_q4_k_m_prefills_on_metal_at_the_16_bit_share_times_the_ratio(build_deployment, catalog):
    # M2 Ultra (27.2e12 FP16), utilisation 0.5: F16 at 0.5 x s16, Q4_K_M at 0.5 x s16 x
    # 0.825, s16 the 16-bit formats' fitted prefill share; the same 512-token prompt's
    # GEMMs take 1 / 0.825 = 1.212 times as long in Q4_K_M.
    over = {"factors": {"compute_efficiency": 0.5}}
    s16 = catalog.precision("fp16", "weights").compute_share
    f16, _, _ = build_deployment(
        "llama-3.1-8b", "m2-ultra", users=1, prompt=512, output=1, weights="fp16", kv="fp16", engine="llama.cpp", overrides=over
    )
    q4, w, _ = build_deployment(
        "llama-3.1-8b", "m2-ultra", users=1, prompt=512, output=1, weights="q4_k_m", kv="fp16", engine="llama.cpp", overrides=over
    )
    pf, pq = estimate_prefill(f16, w), estimate_prefill(q4, w)
    assert pf.compute_efficiency == pytest.approx(min(1.0, 0.5 * s16))
    assert pq.compute_efficiency == pytest.approx(0.5 * s16 * 0.825)
    assert pq.linear_time_s / pf.linear_time_s == pytest.approx(1 / 0.825, rel=1e-6)


def test_q4_k_m_prefills_on_cuda_at_the_formats_fitted_share(build_deployment, catalog):
    # RTX 4090: no backend ratio, so the format's own fitted compute_share.
    over = {"factors": {"compute_efficiency": 0.5}}
    q4, w, _ = build_deployment(
        "llama-3.1-8b", "rtx-4090", users=1, prompt=512, output=1, weights="q4_k_m", kv="fp16", engine="llama.cpp", overrides=over
    )
    share = catalog.precision("q4_k_m", "weights").compute_share
    assert estimate_prefill(q4, w).compute_efficiency == pytest.approx(0.5 * share)


def test_a_users_compute_share_holds_on_metal(build_deployment):
    # overrides.precision.compute_share 0.9 replaces Metal's 16-bit share x 0.825: 0.5 x 0.9.
    over = {"factors": {"compute_efficiency": 0.5}, "precision": {"compute_share": 0.9}}
    q4, w, _ = build_deployment(
        "llama-3.1-8b", "m2-ultra", users=1, prompt=512, output=1, weights="q4_k_m", kv="fp16", engine="llama.cpp", overrides=over
    )
    assert estimate_prefill(q4, w).compute_efficiency == pytest.approx(0.45)


def test_solve_and_evaluate_price_a_metal_q4_prompt_alike(catalog):
    """solve's shapes (optimise/shapes.py) and evaluate's deployment (physics/resolve.py)
    read the prefill share in the one place, at use: before, only resolve applied Metal's
    16-bit share × 0.825, and solve priced the same Q4_K_M prompt at CUDA's fitted share."""
    from solver.physics.resolve import resolve
    from solver.spec.evaluate_input import parse_input
    from tests.solve_helpers import problem_of

    workload = {"users": 1, "prompt_tokens": 512, "output_tokens": 16}
    d_eval, w, _ = resolve(
        parse_input(
            {
                "model": "llama-3.1-8b",
                "engine": "llama.cpp",
                "hardware": {"gpu": "m2-ultra-192gb"},
                "precision": {"weights": "q4_k_m", "kv_cache": "fp16"},
                "workload": workload,
            }
        ),
        catalog,
    )
    problem = problem_of(
        {
            "model": "llama-3.1-8b",
            "engine": "llama.cpp",
            "workload": workload,
            "sla": {"max_tpot": "1s"},
            "search": {"gpus": ["m2-ultra-192gb"], "weights": ["q4_k_m"], "kv_cache": ["fp16"], "tp": [1]},
            "overrides": {"gpus": {"m2-ultra-192gb": {"price_usd_per_gpu_hour": 1.0}}},
        }
    )
    (shape,) = problem.shapes
    s16 = catalog.precision("fp16", "weights").compute_share
    expected = min(1.0, d_eval.factors.compute_efficiency * s16 * 0.825)
    assert estimate_prefill(d_eval, w).compute_efficiency == pytest.approx(expected, rel=2e-3)
    assert estimate_prefill(shape.deployment, w).compute_efficiency == pytest.approx(expected, rel=2e-3)
