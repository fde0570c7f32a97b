"""Step 4, the interconnect: the all-reduce algorithm the engine picks (custom
one-shot/two-shot, NVLS, NCCL ring, host-staged ring) over the platform's topology."""

from __future__ import annotations

import dataclasses

import pytest

from solver.catalog.topology import Ring, build_graph, scale_up_domain_size, tp_ring
from solver.physics.decode import estimate_decode
from solver.physics.interconnect import allreduce_algorithm, allreduce_time_s, comm_segments, estimate_comm


def test_ring_allreduce_formula():
    ring = Ring(8, 450e9, 6e-6, ("nvswitch",))
    # 2(t−1)/t × S / B + 2(t−1) × hop latency
    assert allreduce_time_s(1e6, ring) == pytest.approx(2 * 7 / 8 * 1e6 / 450e9 + 14 * 6e-6)
    assert allreduce_time_s(1e6, Ring(1, float("inf"), 0.0, ())) == 0.0


def test_nvswitch_ring_runs_at_nvlink_speed(catalog):
    ring = tp_ring(catalog.platform("hgx-hopper-8gpu"), 8)
    assert ring.bandwidth_bytes_per_s == 450e9  # 900 GB/s bidirectional = 450 per direction
    assert ring.link_kinds == ("nvswitch",)
    assert ring.hop_latency_s == pytest.approx(2e-6)  # GPU → switch → GPU, 1 µs per link


def test_pcie_only_tp_group_runs_at_pcie_speed(catalog, build_deployment):
    # batching: isolated, so the step all-reduces the 16 decode tokens alone (no prompt chunk)
    d, w, _ = build_deployment("llama-3.1-8b", "rtx-4090", tp=2, users=16, context=8192, output=256, workload_extra={"batching": "isolated"})
    assert d.platform.name == "workstation-gen4-4gpu"
    ring = tp_ring(d.platform, 2)
    assert ring.bandwidth_bytes_per_s == 31.5e9 and ring.link_kinds == ("pcie",)
    comm = estimate_comm(d, 16)
    size = 16 * 4096 * 2  # batch × hidden × 2 B
    assert comm.allreduces == 64  # 2 per layer × 32 layers
    # A GeForce card has no PCIe peer access: NCCL's ring goes through host memory.
    # 2(t−1)/t = 1 for t = 2, each byte crosses PCIe twice (2 × S / 31.5 GB/s);
    # 2(t−1) = 2 hops of 20 µs each (the platform's host-staged hop).
    assert comm.algorithm == "NCCL ring via host memory"
    assert comm.tp_time_s == pytest.approx(64 * (2 * size / 31.5e9 + 2 * 20e-6))
    assert estimate_decode(d, w).comm_time_s == pytest.approx(comm.time_s)


def test_bridged_pairs_are_fast_and_the_ring_beyond_them_is_not(catalog):
    plat = catalog.platform("pcie-nvlink-pairs-8gpu")
    assert tp_ring(plat, 2).bandwidth_bytes_per_s == 300e9  # NVLink bridge
    four = tp_ring(plat, 4)
    assert four.bandwidth_bytes_per_s == 63e9 and four.link_kinds == ("pcie",)  # slowest link rules


def test_full_mesh_runs_parallel_rings(catalog):
    ring = tp_ring(catalog.platform("amd-instinct-8gpu"), 8)
    assert ring.parallel_rings == 7
    assert ring.bandwidth_bytes_per_s == 7 * 64e9  # 448 GB/s, the MI300X's aggregate xGMI


@pytest.mark.parametrize("platform, size", [("hgx-hopper-8gpu", 8), ("gb200-nvl72", 72), ("workstation-gen4-4gpu", 4), ("single-device", 1)])
def test_scale_up_domain_is_the_gpus_reachable_without_the_network(catalog, platform, size):
    assert scale_up_domain_size(catalog.platform(platform)) == size


def test_platforms_are_networkx_graphs(catalog):
    g = build_graph(catalog.platform("hgx-hopper-8gpu"), nodes=2)
    gpus = [n for n, kind in g.nodes(data="kind") if kind == "gpu"]
    assert len(gpus) == 16
    assert all(g.degree(gpu) == 2 for gpu in gpus)  # its NVSwitch and the network
    assert sum(1 for *_, so in g.edges(data="scale_out") if so) == 16


def test_pipeline_across_nodes_pays_the_network(build_deployment):
    # Llama-3.1-405B, TP=8 × PP=2 on HGX H100: the two stages sit on two nodes.
    d, w, _ = build_deployment("llama-3.1-405b", "h100-sxm", tp=8, pp=2, users=1, prompt=1, output=1, weights="fp8")
    comm = estimate_comm(d, 1)
    # Each rank sends its 1/8 of batch × hidden × 2 B over 400 Gb/s InfiniBand,
    # through the network switch: two links of 2.5 µs.
    hop = 1 * 16384 * 2 / 8 / 50e9 + 2 * 2.5e-6
    assert comm.pp_time_s == pytest.approx(hop)


def test_ring_answers_are_cached_on_disk_and_equal_to_a_fresh_computation(catalog, tmp_path, monkeypatch):
    import solver.catalog.topology as topo

    monkeypatch.setenv("PLAN_OPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(topo, "_loaded", None)
    plat = catalog.platform("pcie-nvlink-pairs-8gpu")
    fresh = topo._compute_ring(plat, 4)
    topo.tp_ring.cache_clear()
    first = topo.tp_ring(plat, 4)
    assert first == fresh
    assert list(tmp_path.glob("topology-*.json"))
    monkeypatch.setattr(topo, "_loaded", None)  # a new process: read back from disk
    topo.tp_ring.cache_clear()
    assert topo.tp_ring(plat, 4) == fresh
    # A changed platform is a different key, never a stale answer.
    faster = dataclasses.replace(plat, host=dataclasses.replace(plat.host, bandwidth_bytes_per_s=126e9))
    assert topo.tp_ring(faster, 4).bandwidth_bytes_per_s == 126e9


# --------------------------------------------------------------------------- algorithms


def _tp8_70b(build_deployment, gpu="h200"):
    # batching: isolated: the figures below are the decode step alone, no prompt chunk in it
    d, w, _ = build_deployment("llama-3.1-70b", gpu, tp=8, users=1, prompt=1024, output=256, weights="fp8", workload_extra={"batching": "isolated"})
    return d, w


KiB, MiB = 1024, 1024 * 1024


def test_small_decode_message_on_nvswitch_is_a_custom_one_shot(build_deployment):
    d, _ = _tp8_70b(build_deployment)
    # batch 1: 1 × 8192 × 2 B = 16 KiB < 256 KiB, TP 8 on NVSwitch → vLLM's one-stage kernel:
    # 7.2 µs + (t−1)·S / B = 7.2 µs + 7 × 16384 B / 450 GB/s = 7.2 + 0.2549 = 7.4549 µs.
    a = allreduce_algorithm(d, 16 * KiB)
    assert a.name == "custom one-shot"
    assert a.time_s(16 * KiB) == pytest.approx(7.2e-6 + 7 * 16384 / 450e9)
    assert a.time_s(16 * KiB) == pytest.approx(7.4549e-6, rel=1e-4)
    comm = estimate_comm(d, 1)
    assert comm.algorithm == "custom one-shot"
    # 80 layers × 2 = 160 all-reduces × 7.4549 µs = 1.1928 ms per decode step.
    assert comm.tp_time_s == pytest.approx(1.1928e-3, rel=1e-4)


def test_above_the_custom_limit_hopper_tp8_goes_to_nvls(build_deployment):
    d, _ = _tp8_70b(build_deployment)
    # 256 KiB is vLLM's custom-all-reduce limit at TP 8 on SM 9.0: NVLS from there,
    # 8.6 µs + S / 214 GB/s; at 1 MiB: 8.6 + 1048576 / 214e9 s = 8.6 + 4.8999 = 13.4999 µs.
    assert allreduce_algorithm(d, 256 * KiB - 16).name == "custom one-shot"
    a = allreduce_algorithm(d, 1 * MiB)
    assert a.name == "NVLS"
    assert a.time_s(1 * MiB) == pytest.approx(13.4999e-6, rel=1e-4)
    # Beyond vLLM's 64 MiB symmetric-memory limit NCCL decides, taking the faster: at
    # 128 MiB its ring, 14 × 2 µs + 1.75 × 134217728 / 450e9 = 28 + 521.96 = 549.96 µs,
    # beats NVLS, 8.6 + 134217728 / 214e9 = 8.6 + 627.2 = 635.8 µs.
    big = allreduce_algorithm(d, 128 * MiB)
    assert big.name == "NCCL ring"
    assert big.time_s(128 * MiB) == pytest.approx(28e-6 + 1.75 * 134217728 / 450e9)
    assert big.time_s(128 * MiB) == pytest.approx(549.96e-6, rel=1e-4)


def test_without_nvls_tp8_switches_from_one_shot_to_two_shot_then_ring(build_deployment):
    d, _, _ = build_deployment("llama-3.1-70b", "a100-80gb", tp=8, users=1, prompt=1024, output=256)
    # A100 HGX: one-shot below 256 KiB, two-shot up to vLLM's 8 MiB buffer, then NCCL's ring.
    one = allreduce_algorithm(d, 128 * KiB)
    # 14 µs + 7 × 131072 / 300 GB/s = 14 + 3.0583 = 17.0583 µs
    assert one.name == "custom one-shot" and one.time_s(128 * KiB) == pytest.approx(17.0583e-6, rel=1e-4)
    two = allreduce_algorithm(d, 1 * MiB)
    # 20 µs + 2·7/8 × 1048576 / 300 GB/s = 20 + 6.1167 = 26.1167 µs
    assert two.name == "custom two-shot" and two.time_s(1 * MiB) == pytest.approx(26.1167e-6, rel=1e-4)
    ring = allreduce_algorithm(d, 8 * MiB)
    # 14 hops × 2 µs + 1.75 × 8388608 / 300 GB/s = 28 + 48.934 = 76.934 µs
    assert ring.name == "NCCL ring" and ring.time_s(8 * MiB) == pytest.approx(76.934e-6, rel=1e-4)
    assert ring.time_s(8 * MiB) == pytest.approx(allreduce_time_s(8 * MiB, tp_ring(d.platform, 8)))


def test_tp4_one_shot_runs_up_to_512_kib(build_deployment):
    d, _, _ = build_deployment("llama-3.1-70b", "a100-80gb", tp=4, users=1, prompt=1024, output=256)
    # World size ≤ 4: one-shot below 512 KiB (csrc/custom_all_reduce.cuh).
    # 384 KiB: 14 µs + 3 × 393216 / 300 GB/s = 14 + 3.9322 = 17.9322 µs
    a = allreduce_algorithm(d, 384 * KiB)
    assert a.name == "custom one-shot" and a.time_s(384 * KiB) == pytest.approx(17.9322e-6, rel=1e-4)
    assert allreduce_algorithm(d, 512 * KiB).name == "custom two-shot"


def test_two_pcie_gpus_with_p2p_use_the_custom_kernel_four_do_not(build_deployment):
    d2, _, _ = build_deployment("llama-3.1-8b", "l40s", tp=2, users=1, prompt=512, output=64)
    assert d2.device.pcie_p2p and d2.platform.name == "pcie-gen4-8gpu"
    # World size 2 is always one-shot: 23.2 µs + 1 × 8192 B / 31.5 GB/s = 23.2 + 0.2601 = 23.4601 µs
    a = allreduce_algorithm(d2, 8192)
    assert a.name == "custom one-shot" and a.time_s(8192) == pytest.approx(23.4601e-6, rel=1e-4)
    d4, _, _ = build_deployment("llama-3.1-8b", "l40s", tp=4, users=1, prompt=512, output=64)
    # More than two PCIe-only GPUs: NCCL's ring, 6 hops × 10 µs + 1.5 × 8192 / 31.5e9 = 60.39 µs
    r = allreduce_algorithm(d4, 8192)
    assert r.name == "NCCL ring" and r.time_s(8192) == pytest.approx(60.3901e-6, rel=1e-4)


def test_geforce_without_p2p_goes_through_host_memory(build_deployment, catalog):
    assert not catalog.device("rtx-4090").pcie_p2p and catalog.device("rtx-4090").pcie_p2p_source
    d, _, _ = build_deployment("llama-3.1-8b", "rtx-4090", tp=4, users=1, prompt=512, output=64)
    # 4 GPUs, PCIe Gen4 31.5 GB/s, host-staged hop 20 µs:
    # 2(t−1) × 20 µs + 2(t−1)/t × 2 crossings × S / B = 120 µs + 3 × 1 MiB / 31.5e9 = 120 + 99.864 µs
    a = allreduce_algorithm(d, 1 * MiB)
    assert a.name == "NCCL ring via host memory"
    assert a.time_s(1 * MiB) == pytest.approx(219.864e-6, rel=1e-4)
    # The 3090's NVLink bridge gives it peer access: a custom one-shot over the bridge,
    # 14 µs + 1 × 1 MiB / 56.25 GB/s = 14 + 18.641 = 32.641 µs.
    b, _, _ = build_deployment("llama-3.1-8b", "rtx-3090", tp=2, users=1, prompt=512, output=64)
    assert b.platform.name == "workstation-nvlink-pair"
    one = allreduce_algorithm(b, 1 * MiB)
    assert one.name == "custom one-shot" and one.time_s(1 * MiB) == pytest.approx(32.641e-6, rel=1e-4)


def test_decode_pieces_follow_the_algorithm_and_match_estimate_comm(build_deployment):
    d, w = _tp8_70b(build_deployment)
    segs = comm_segments(d)
    assert [s.algorithm for s in segs] == ["custom one-shot", "NVLS", "NCCL ring"]
    # 256 KiB / 16 KiB per token = 16 tokens; 64 MiB / 16 KiB = 4096 tokens.
    assert segs[0].upto_tokens == 16 and segs[1].upto_tokens == 4096
    from solver.physics.decode import decode_coefficients

    c = decode_coefficients(d, 1280, w)
    # Each piece is what estimate_comm gives, except that where a faster algorithm takes
    # over the step keeps the time fewer tokens cost (it must not shrink as the batch grows).
    for tokens in (0, 1, 8, 15):
        assert c.comm_time_s(tokens, 0) == pytest.approx(estimate_comm(d, tokens).time_s), tokens
    for tokens in (16, 64, 1000, 4096, 8192):
        assert c.comm_time_s(tokens, 0) >= estimate_comm(d, tokens).time_s - 1e-15, tokens
    times = [c.comm_time_s(t, 0) for t in range(0, 9000, 7)]
    assert all(b >= a for a, b in zip(times, times[1:]))
    # The old two-point line (at 0 and 1 token) is exact below 16 tokens.
    line = c.comm_fixed_s + 8 * c.comm_per_sequence_s
    assert line == pytest.approx(estimate_comm(d, 8).time_s)


def test_tp8_decode_share_of_allreduce_fell(build_deployment):
    # Llama-3.1-70B FP8 on 8 × H200: 160 all-reduces per step. Ring: 28.06 µs each
    # (14 hops × 2 µs + 1.75 × 16 KiB / 450 GB/s) = 4.49 ms of a 6.87 ms step (65 %);
    # custom one-shot: 7.455 µs each = 1.19 ms of a 3.57 ms step (33 %).
    d, w = _tp8_70b(build_deployment)
    dec = estimate_decode(d, w)
    assert dec.comm_time_s == pytest.approx(1.1928e-3, rel=1e-3)
    assert dec.comm_time_s / dec.tpot_s < 0.37


def test_tp4_all_reduces_are_near_the_measured_kernels_and_do_not_grow_with_the_group(build_deployment):
    # Issue 42 item 4 asked whether a small message's all-reduce grows with the group.
    # SGLang PR #2904 (H100, vLLM's custom kernel, no CUDA graph): 4 KiB at TP 2/4/8 took
    # 8.8 / 8.5 / 9.3 µs — flat, so the model keeps one fixed cost per call. Modelled, a
    # batch-1 decode message of 16 KiB: TP 2 7.2 + 16384 / 450e9 = 7.236 µs, TP 8
    # 7.2 + 7 × 16384 / 450e9 = 7.455 µs (0.22 µs apart; measured 0.8 µs apart).
    def one_shot(tp: int) -> float:
        d, _, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=tp, users=1, prompt=1, output=1)
        a = allreduce_algorithm(d, 16 * KiB)
        assert a is not None and a.name == "custom one-shot"
        return a.time_s(16 * KiB)

    assert one_shot(2) == pytest.approx(7.236e-6, rel=1e-3)
    assert one_shot(8) == pytest.approx(7.455e-6, rel=1e-3)
    assert one_shot(8) - one_shot(2) < 1e-6
    # A 128-token prompt at TP 4 (128 × 8192 × 2 B = 2 MiB, above the one-shot's 512 KiB)
    # runs the two-shot kernel, whose bytes move at its own measured rate, not the link's:
    # vLLM PR #24532's H100 TP 4 table climbs 7.41 µs per MiB (ca_2stage 17 / 18 / 25 / 26
    # / 35 / 42 µs at 0.5 / 1 / 1.5 / 2 / 3 / 4 MiB, least squares), 1.5 MiB a GPU per MiB:
    # 1.5 × 1048576 / 7.41e-6 = 212.3 GB/s. 13.1 + 1.5 × 2097152 / 212.3e9 = 13.1 + 14.817
    # = 27.917 µs (table 26 µs; at the link's 450 GB/s it was 20.09, 23 % short), so the
    # 160 all-reduces of a 70B prompt are 4.47 ms, not 3.21.
    d, _, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=4, users=1, prompt=128, output=1)
    a = allreduce_algorithm(d, 2 * MiB)
    assert a is not None and a.name == "custom two-shot"
    assert a.time_s(2 * MiB) == pytest.approx(27.917e-6, rel=1e-3)
    assert abs(a.time_s(2 * MiB) - 26e-6) < 0.1 * 26e-6
    # and at 4 MiB: 13.1 + 1.5 × 4194304 / 212.3e9 = 13.1 + 29.635 = 42.73 µs (table 42)
    assert a.time_s(4 * MiB) == pytest.approx(42.73e-6, rel=1e-3)
    assert estimate_comm(d, 128).tp_time_s == pytest.approx(160 * 27.917e-6, rel=1e-3)


def test_mi300x_two_shot_moves_its_bytes_at_the_measured_rate_not_the_mesh_aggregate(build_deployment):
    # pytorch/FBGEMM issue #4072, MI300X, 8 ranks, bf16 two-shot: 29.2 / 38.4 / 52.7 / 75.6 µs
    # at 1.5667 / 2.6112 / 4.3510 / 7.2499 MB. Least squares by hand: mean x 3.9447 MB,
    # mean y 48.977 µs; Σ(x−x̄)(y−ȳ) = 150.700, Σ(x−x̄)² = 18.523 MB², slope 8.136 µs per MB.
    # Each GPU moves 2(t−1)/t = 1.75 bytes per message byte: 1.75 / 8.136e-12 = 215 GB/s
    # (the seven xGMI links' aggregate, 7 × 64 = 448 GB/s, is not what the kernel reaches).
    d, _, _ = build_deployment("llama-3.1-70b", "mi300x", tp=8, users=64, prompt=128, output=128, weights="fp8")
    # Batch 64 of Llama-70B: 64 × 8192 × 2 B = 1 MiB, above the one-shot's 256 KiB at TP 8.
    a = allreduce_algorithm(d, 1 * MiB)
    assert a is not None and a.name == "custom two-shot"
    # 12.1 µs + 1.75 × 1048576 / 215e9 = 12.1 + 8.535 = 20.635 µs (at 448 GB/s: 16.196)
    assert a.time_s(1 * MiB) == pytest.approx(20.635e-6, rel=1e-3)
    # Against the table's 38.4 µs at 2.6112 MB: 12.1 + 1.75 × 2.6112e6 / 215e9 = 33.35 µs,
    # within 15 % (at the aggregate 448 GB/s it was 22.30 µs, 42 % short).
    assert abs(a.time_s(2.6112e6) - 38.4e-6) < 0.15 * 38.4e-6
    assert a.time_s(2.6112e6) == pytest.approx(33.354e-6, rel=1e-3)


def test_mi300x_two_shot_rate_is_per_group_size_and_tp4_is_not_faster_than_its_links(build_deployment):
    # vLLM PR #19744, MI300X TP 4, vLLM's custom all-reduce: 14.65 / 22.91 / 36.64 / 63.86 /
    # 118.31 / 230.48 µs at 0.5 / 1 / 2 / 4 / 8 / 16 MiB. Least squares by hand: mean x
    # 5.25 MiB, mean y 81.142 µs; Σ(x−x̄)(y−ȳ) = 2,437.15, Σ(x−x̄)² = 175.875 MiB²: 13.857 µs
    # per MiB; 1.5 bytes a GPU per message byte: 1.5 × 1048576 / 13.857e-6 = 113.5 GB/s,
    # far under the three xGMI links' 192 GB/s (the rate at TP 4 before this figure).
    d, _, _ = build_deployment("llama-3.1-70b", "mi300x", tp=4, users=128, prompt=128, output=128, weights="fp8")
    a = allreduce_algorithm(d, 4 * MiB)
    assert a is not None and a.name == "custom two-shot"
    # 12.1 µs + 1.5 × 4194304 / 113.5e9 = 12.1 + 55.43 = 67.53 µs (table 63.86)
    assert a.time_s(4 * MiB) == pytest.approx(67.53e-6, rel=1e-3)
    assert abs(a.time_s(4 * MiB) - 63.86e-6) < 0.1 * 63.86e-6
    # at TP 8 the same platform's own figure (FBGEMM #4072): 12.1 + 1.75 × 4194304 / 215e9
    d8, _, _ = build_deployment("llama-3.1-70b", "mi300x", tp=8, users=128, prompt=128, output=128, weights="fp8")
    a8 = allreduce_algorithm(d8, 4 * MiB)
    assert a8 is not None and a8.time_s(4 * MiB) == pytest.approx(12.1e-6 + 1.75 * 4194304 / 215e9, rel=1e-6)
