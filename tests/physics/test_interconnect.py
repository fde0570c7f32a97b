"""Step 4, the interconnect: ring all-reduce over the platform's topology graph."""

from __future__ import annotations

import dataclasses

import pytest

from solver.physics.decode import estimate_decode
from solver.physics.interconnect import allreduce_time_s, estimate_comm
from solver.topology import Ring, build_graph, scale_up_domain_size, tp_ring


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
    d, w, _ = build_deployment("llama-3.1-8b", "rtx-4090", tp=2, users=16, context=8192, output=256)
    assert d.platform.name == "workstation-gen4-4gpu"
    ring = tp_ring(d.platform, 2)
    assert ring.bandwidth_bytes_per_s == 31.5e9 and ring.link_kinds == ("pcie",)
    comm = estimate_comm(d, 16)
    size = 16 * 4096 * 2  # batch × hidden × 2 B
    assert comm.allreduces == 64  # 2 per layer × 32 layers
    # 2(t−1)/t = 1 for t = 2; 2(t−1) = 2 hops of GPU → PCIe switch → GPU at 5 µs per link.
    assert comm.tp_time_s == pytest.approx(64 * (size / 31.5e9 + 2 * 10e-6))
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


@pytest.mark.parametrize(
    "platform, size", [("hgx-hopper-8gpu", 8), ("gb200-nvl72", 72), ("workstation-gen4-4gpu", 4), ("single-device", 1)]
)
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
    import solver.topology as topo

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
