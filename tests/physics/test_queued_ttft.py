"""TTFT under a users load: each user's prompt waits for the prompts of the replica's
other users (a closed loop: a user sends its next request when its last one ends), so
the idle-replica prefill is the one-user case only."""

from __future__ import annotations

import pytest

from solver.physics.decode import estimate_decode
from solver.physics.prefill import estimate_prefill
from solver.physics.prompt_queue import prompt_service_from_queued_s, queued_prompt_s


def exact_mva_s(service_s: float, users: int, delay_s: float) -> float:
    """Exact mean value analysis (Reiser–Lavenberg) of one FCFS queue and a delay:
    R(n) = S·(1 + Q(n − 1)), X(n) = n / (R(n) + Z), Q(n) = X(n)·R(n)."""
    q = 0.0
    r = service_s
    for n in range(1, users + 1):
        r = service_s * (1 + q)
        q = n / (r + delay_s) * r
    return r


def test_one_user_never_queues_behind_itself():
    assert queued_prompt_s(0.25, 1, 10.0) == pytest.approx(0.25)


def test_two_users_by_hand():
    # Machine repairman, N = 2, S = 0.1 s, Z = 1 s (ρ = 0.1): P0 = 1 / (1 + 2ρ + 2ρ²)
    # = 1 / 1.22, X = (1 − P0) / S = 1.80328 per s, R = N / X − Z = 0.10909 s: a
    # prompt sometimes waits for the other user's.
    assert queued_prompt_s(0.1, 2, 1.0) == pytest.approx(0.109091, rel=1e-5)


def test_a_saturated_replica_queues_every_other_users_prompt():
    # 100 users whose prompts take 0.1 s each and who spend 1 s decoding: the prompts need
    # 10 s per round against 1.1 s of thinking, so R = N·S − Z = 9 s (P0 ≈ 0).
    assert queued_prompt_s(0.1, 100, 1.0) == pytest.approx(9.0, rel=1e-9)


@pytest.mark.parametrize("users", [2, 8, 32, 40, 64, 128, 1000])
def test_equal_to_the_mean_value_analysis_recursion(users):
    s, z = 0.05, 2.0
    assert queued_prompt_s(s, users, z) == pytest.approx(exact_mva_s(s, users, z), rel=1e-9)


@pytest.mark.parametrize(("users", "s", "z"), [(5000, 0.05, 2.0), (5000, 1e-3, 20.0), (20000, 1e-4, 10.0)])
def test_a_long_queue_past_the_recursion_is_still_the_mean_value_analysis(users, s, z):
    # Past LONG_QUEUE users the sum is taken by running products (numpy), not the
    # recursion: saturated (the first) and lightly loaded (the others) alike.
    assert queued_prompt_s(s, users, z) == pytest.approx(exact_mva_s(s, users, z), rel=1e-8)


def test_the_inverse_gives_back_the_service():
    for users in (1, 4, 64):
        r = queued_prompt_s(0.08, users, 3.0)
        assert prompt_service_from_queued_s(r, users, 3.0) == pytest.approx(0.08)


def test_more_users_wait_longer_and_one_user_sees_the_idle_prefill(build_deployment):
    # Llama-3.1-8B on one H100, 2,000-token prompts and 300-token answers.
    over = {"factors": {"request_overhead_s": 0}}
    # batching: isolated: each prompt one pass of its own (S = the idle prefill), as derived below
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, prompt=2000, output=300, overrides=over, workload_extra={"batching": "isolated"})
    idle = estimate_prefill(d, w).ttft_s
    assert estimate_decode(d, w).ttft_under_load_s == pytest.approx(idle)
    loads = [estimate_decode(d, w, batch=b).ttft_under_load_s for b in (1, 16, 64, 256)]
    assert loads == sorted(loads) and loads[-1] > 2 * idle
    # at 256 users the prompts take 256 × S against Z = 299 steps: the replica is saturated
    dec = estimate_decode(d, w, batch=256)
    c = dec.coefficients
    assert 256 * idle > c.delay_s(256)
    assert dec.ttft_under_load_s == pytest.approx(256 * idle - c.delay_s(256), rel=0.05)
