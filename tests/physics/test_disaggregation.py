"""Disaggregated serving's own physics: the KV cache a prompt sends from its prefill
replica to its decode replica, and the prefill pool's queue (the machine-repairman
model, by mean-value analysis and in closed form)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.physics.decode import queued_prompt_s
from solver.physics.disaggregation import kv_transfer, link_load_ok, prefill_pool_load, size_prefill_pool

# Llama-3.1-70B: 80 layers, 8 KV heads of 128; a bf16 K and V per head per layer per token.
LLAMA70_KV_PER_TOKEN = 2 * 8 * 128 * 2 * 80  # 327,680 B
# HGX H100/H200: one 400 Gb/s NDR port per GPU = 50 GB/s, 2.5 µs a link (catalogs/platforms.yaml).
IB_BYTES_PER_S = 50e9
IB_LATENCY_S = 2.5e-6


def test_a_prompts_whole_kv_cache_crosses_the_network_each_gpu_its_shard(build_deployment):
    prefill, _, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=4, prompt=8192, output=256)
    decode, _, _ = build_deployment("llama-3.1-70b", "h100-sxm", tp=8, prompt=8192, output=256)
    t = kv_transfer(prefill, decode, 8192)
    assert t is not None
    whole = 8192 * LLAMA70_KV_PER_TOKEN  # 2,684,354,560 B
    assert t.bytes_per_request == pytest.approx(whole)
    assert t.send_bytes_per_gpu == pytest.approx(whole / 4)  # TP 4: 2 of the 8 KV heads per GPU
    assert t.receive_bytes_per_gpu == pytest.approx(whole / 8)
    assert t.link == "infiniband"
    # the busier side (a prefill GPU sends a quarter) at 50 GB/s, GPU → switch → GPU
    assert t.time_s == pytest.approx(whole / 4 / IB_BYTES_PER_S + 2 * IB_LATENCY_S)  # 13.4 ms


def test_an_mla_latent_is_received_whole_by_every_tp_rank(build_deployment):
    # DeepSeek-R1: (512 latent + 64 rope) × 61 layers, FP8 = 35,136 B a token; MLA is not
    # split by head, so each TP 8 rank holds (and receives) all of it.
    prefill, _, _ = build_deployment("deepseek-r1", "h200", tp=8, prompt=4000, output=500, weights="fp8", kv="fp8")
    t = kv_transfer(prefill, prefill, 4000)
    assert t is not None
    assert t.bytes_per_request == pytest.approx(4000 * 35_136)
    assert t.send_bytes_per_gpu == t.receive_bytes_per_gpu == pytest.approx(4000 * 35_136)


def test_no_network_no_transfer(build_deployment):
    single, _, _ = build_deployment("llama-3.1-8b", "rtx-4090", prompt=1000, output=100, platform="single-device")
    h100, _, _ = build_deployment("llama-3.1-8b", "h100-sxm", prompt=1000, output=100)
    assert kv_transfer(single, h100, 1000) is None
    assert kv_transfer(h100, single, 1000) is None


def test_the_pools_links_must_carry_every_prompts_kv():
    # 100 users, each request S + Z = 10 s round the loop with no queue: at most 10 requests
    # per second, 10 GB each = 100 GB/s; one GPU at 50 GB/s cannot carry it, two can.
    load = prefill_pool_load(100, 10, 1.0, 1, 0.01, 900, 0.0, 0.0)
    assert load.service_s + load.delay_s == pytest.approx(10.0)

    class T:
        bytes_per_request = 10e9
        bandwidth_bytes_per_s = 50e9

    assert not link_load_ok(100, load, T(), 1, 8)  # type: ignore[arg-type]
    assert link_load_ok(100, load, T(), 2, 8)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the prefill pool's queue


def test_two_users_on_a_replica_the_machine_repairman_by_hand():
    # S = 1 s a prompt, Z = 9 s away. MVA: R(1) = 1, Q(1) = 1·1/(1 + 9) = 0.1, R(2) = 1.1.
    # Closed form: ρ = 1/9, P0 = 1/(1 + 2ρ + 2ρ²) = 0.80198, X = (1 − P0)/S = 0.19802,
    # R = 2/X − 9 = 1.1. So a second user waits 0.1 s.
    assert queued_prompt_s(1.0, 2, 9.0) == pytest.approx(1.1)
    got = size_prefill_pool(2, 1.0, 1, 9.0, 0.0, 1.1 + 1e-9)
    assert got == (1, 2, pytest.approx(0.1))
    # a target under 1.1 s leaves one user per replica: two replicas
    assert size_prefill_pool(2, 1.0, 1, 9.0, 0.0, 1.09) == (2, 1, 0.0)
    # what follows the prompt (transfer, first step, front end) counts against the target
    assert size_prefill_pool(2, 1.0, 1, 9.0, 0.5, 1.5) == (2, 1, 0.0)  # 1 + 0.5 alone, 1.1 + 0.5 shared
    assert size_prefill_pool(2, 1.0, 1, 9.0, 0.0, 0.9) is None  # not even one prompt fits


def test_without_a_target_a_replica_takes_users_up_to_its_saturation_point():
    # N* = (S + Z) / S = (1 + 9) / 1 = 10 users a replica: 100 users need 10 replicas.
    assert size_prefill_pool(100, 1.0, 1, 9.0, 0.0, None)[:2] == (10, 10)
    assert not prefill_pool_load(100, 10, 1.0, 1, 1.0, 9, 0.0, 0.0).saturated  # Z = 9 output tokens × 1 s
    assert prefill_pool_load(100, 9, 1.0, 1, 1.0, 9, 0.0, 0.0).saturated  # 12 users each
    # a data-parallel-attention replica of 8 ranks prefills 8 prompts at once: S/8 each
    assert size_prefill_pool(100, 8.0, 8, 9.0, 0.0, None)[:2] == (10, 10)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 300),
    st.floats(1e-3, 5.0),
    st.floats(0.0, 60.0),
    st.floats(0.0, 0.5),
    st.floats(0.01, 30.0),
)
def test_the_sizing_is_the_fewest_replicas_whose_closed_form_ttft_meets_the_target(users, service, delay, after, target):
    got = size_prefill_pool(users, service, 1, delay, after, target, 1e-9)  # the oracle's tolerance below

    def ttft(x: int) -> tuple[float, bool]:
        per = math.ceil(users / x)
        wait = max(0.0, queued_prompt_s(service, per, delay) - service)
        return wait + service + after, per * service > service + delay * (1 + 1e-12)

    ok = [x for x in range(1, users + 1) if (lambda t: t[0] <= target * (1 + 1e-9) and not t[1])(ttft(x))]
    if not ok:
        assert got is None or ttft(got[0])[0] <= target * (1 + 1e-6)
        return
    assert got is not None
    x, per, wait = got
    assert x == ok[0] or (x == ok[0] - 1 and ttft(x)[0] <= target * (1 + 1e-6))  # float noise at the boundary only
    assert per == math.ceil(users / x)
    assert wait == pytest.approx(max(0.0, queued_prompt_s(service, per, delay) - service), rel=1e-7, abs=1e-9)
