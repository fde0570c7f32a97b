"""Disaggregated serving in the optimiser: CP-SAT's cheapest pair of pools against brute
force, never dearer than aggregated serving when both are allowed, and the cases where
each way wins for a reason known in advance."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.errors import InputError
from solver.explain.solve import solve
from solver.explain.validate import validate
from solver.optimise.enumerate import exhaustive, exhaustive_disaggregated
from solver.report.deploy import emit
from solver.report.launch import check_flags
from solver.report.solve_json import to_output
from tests.solve_helpers import problem_of


@st.composite
def small_specs(draw, serving):
    prompt = draw(st.sampled_from([512, 2048, 8192]))
    ttft = draw(st.sampled_from([None, "1s", "3s", "10s"]))
    spec = {
        "model": draw(st.sampled_from(["llama-3.1-8b", "qwen2.5-7b", "mixtral-8x7b"])),
        "workload": {
            "users": draw(st.integers(1, 24)),
            "prompt_tokens": prompt,
            "output_tokens": draw(st.sampled_from([64, 256, 1024])),
            "batching": draw(st.sampled_from(["isolated", "continuous"])),
        },
        "sla": {k: v for k, v in (("max_ttft", ttft), ("max_tpot", draw(st.sampled_from([None, "20ms", "50ms"])))) if v},
        "search": {
            "gpus": draw(st.lists(st.sampled_from(["l40s", "a100-80gb", "h100-sxm", "mi300x"]), min_size=1, max_size=2, unique=True)),
            "tp": draw(st.lists(st.sampled_from([1, 2]), min_size=1, max_size=2, unique=True)),
            "weights": draw(st.lists(st.sampled_from(["bf16", "fp8"]), min_size=1, max_size=2, unique=True)),
            "kv_cache": ["bf16"],
            "serving": serving,
            "allow_cross_vendor_kv": draw(st.booleans()),  # mi300x is AMD, the others NVIDIA
        },
    }
    return spec


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(["disaggregated"]))
def test_the_cheapest_pair_of_pools_equals_brute_force(spec):
    problem = problem_of(spec)
    r = solve(problem, explain=False)
    got = r.solution
    want = exhaustive_disaggregated(problem)
    if want is None:
        assert not got.feasible, spec
        return
    assert got.feasible and got.status == "optimal", spec
    c = r.optimum  # CP-SAT's (the plan printed may be within 1 % of it, for headroom)
    assert c.prefill is not None
    assert c.cost_cents == want.cost_cents, (spec, c.prefill.shape.label, c.prefill.replicas, c.shape.label, c.replicas, want)
    assert validate(problem, c) == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(["aggregated", "disaggregated"]))
def test_with_both_ways_allowed_the_plan_is_never_dearer_than_either(spec):
    problem = problem_of(spec)
    r = solve(problem, explain=False)
    got = r.solution
    agg, dis = exhaustive(problem), exhaustive_disaggregated(problem)
    if agg is None and dis is None:
        assert not got.feasible, spec
        return
    assert got.feasible, spec
    best = min(x for x in (agg.key[0] if agg else None, dis.cost_cents if dis else None) if x is not None)
    assert r.optimum.cost_cents == best, spec
    assert got.chosen.cost_cents <= best * 1.01 + 1, spec  # within HEADROOM_TOLERANCE of it


# --------------------------------------------------------------------------- which way wins, and why

LONG_PROMPTS = {
    # 8k-token prompts, 512-token answers, under continuous batching: on an aggregated
    # replica every decode step carries its users' prompt chunks (8192/512 = 16 prompt
    # tokens per sequence per step), so a tight TPOT leaves few users per replica.
    "model": "llama-3.1-70b",
    "workload": {"users": 128, "prompt_tokens": 8192, "output_tokens": 512, "batching": "continuous"},
    "sla": {"max_ttft": "3s", "max_tpot": "20ms"},
    "search": {"gpus": ["h100-sxm", "h200"], "weights": ["fp8"], "kv_cache": ["fp8"], "serving": ["aggregated", "disaggregated"]},
}


def test_long_prompts_under_a_tight_tpot_split_the_pools():
    problem = problem_of(LONG_PROMPTS)
    r = solve(problem)
    c = r.solution.chosen
    assert c.serving == "disaggregated"
    assert r.serving is not None and r.serving.chosen == "disaggregated"
    assert r.serving.aggregated_objective is not None and r.serving.disaggregated_objective is not None
    assert r.serving.disaggregated_objective < r.serving.aggregated_objective
    # The decode replica's step is decode alone: no prompt tokens mixed in.
    dec = c.decode
    assert dec.prefill_tokens_per_sequence == 0
    # ... whereas the same shape aggregated carries 16 prompt tokens per sequence per step
    mixed = problem.physics(c.shape, problem.workload).decode
    assert mixed.prefill_tokens_per_sequence == pytest.approx(8192 / 512)
    assert mixed.tpot_s(c.batch) > c.tpot_s
    assert "disaggregated wins" in r.serving.reason
    # the plan's GPUs are both pools', its TTFT the prefill pool's
    pool = c.prefill
    assert c.gpus == c.replicas * c.shape.gpus_per_replica + pool.replicas * pool.shape.gpus_per_replica
    assert c.ttft_s <= 3.0
    out = to_output(r)
    assert out.plan.serving == "disaggregated" and out.plan.prefill_pool.replicas == pool.replicas
    assert out.plan.ttft_s == pytest.approx(c.ttft_s)


def test_short_prompts_and_a_loose_target_stay_aggregated():
    # 256-token prompts, isolated batching: a decode step carries no prompt work, and a
    # second pool only adds GPUs.
    spec = {
        "model": "llama-3.1-8b",
        "workload": {"users": 32, "prompt_tokens": 256, "output_tokens": 512},
        "sla": {"max_ttft": "2s", "max_tpot": "50ms"},
        "search": {"gpus": ["l40s"], "weights": ["bf16"], "kv_cache": ["bf16"], "serving": ["aggregated", "disaggregated"]},
    }
    r = solve(problem_of(spec))
    assert r.solution.chosen.serving == "aggregated"
    assert r.serving is not None and r.serving.chosen == "aggregated"
    assert r.serving.reason.startswith("aggregated wins")


def test_deploy_emits_both_pools_with_their_roles_and_kv_transfer():
    r = solve(problem_of(LONG_PROMPTS), explain=False)
    for engine in ("vllm", "sglang"):
        dep = emit(r, engine)
        assert dep.prefill is not None and dep.prefill.role == "prefill" and dep.role == "decode"
        assert dep.prefill.replicas == r.solution.chosen.prefill.replicas and dep.replicas == r.solution.chosen.replicas
        assert check_flags(dep) == []
        if engine == "vllm":
            assert "--kv-transfer-config" in dep.argv and "--kv-transfer-config" in dep.prefill.argv
        else:
            assert dep.argv[dep.argv.index("--disaggregation-mode") + 1] == "decode"
            assert dep.prefill.argv[dep.prefill.argv.index("--disaggregation-mode") + 1] == "prefill"
            assert dep.router is not None and "--pd-disaggregation" in dep.router.argv
    with pytest.raises(InputError, match="vllm and sglang"):
        emit(r, "llama.cpp")


def test_the_spec_refuses_what_disaggregation_cannot_plan():
    with pytest.raises(InputError, match="simulator does not run two pools"):
        problem_of({**LONG_PROMPTS, "workload": {"requests_per_s": 2, "prompt_tokens": 8192, "output_tokens": 512}, "sla": {"ttft": {"p99": "3s"}}})
    with pytest.raises(InputError, match="llama.cpp has no prefill/decode split"):
        problem_of({**LONG_PROMPTS, "engine": "llama.cpp", "search": {**LONG_PROMPTS["search"], "gpus": ["rtx-4090"], "serving": ["disaggregated"]}})


def test_a_plan_of_two_pools_costs_each_pools_gpus_at_their_devices_price():
    # Cost and TCO are summed device by device: a prefill pool on one GPU type and a
    # decode pool on another each rent at their own price (no GPUs owned here).
    problem = problem_of({**LONG_PROMPTS, "search": {**LONG_PROMPTS["search"], "serving": ["disaggregated"]}})
    c = solve(problem, explain=False).solution.chosen
    want = sum(n * shape.device.price.usd_per_gpu_hour for shape, n in c.pools)
    assert c.cost_usd_per_hour == pytest.approx(want)
    tco, bought, rented = c.acquisition("rent")
    assert tco == pytest.approx(want) and bought == 0 and rented == c.gpus
    assert to_output(solve(problem, explain=False)).plan.gpus_rented == c.gpus


def test_more_decode_replicas_can_be_what_meets_the_ttft_target():
    # Found by the brute-force search (exhaustive_disaggregated): at 36 users of 8,192-token
    # prompts the cheapest pairing that meets TTFT ≤ 0.95 s has 2 decode replicas (0.944
    # s; one replica's pairing takes 0.956 s), not the one replica at the largest batch that holds them all. A decode pool's
    # first step is in the TTFT, so under a TTFT target the decode pools are offered at
    # every batch, not at the largest alone.
    spec = {
        "model": "llama-3.1-8b",
        "workload": {"users": 36, "prompt_tokens": 8192, "output_tokens": 64, "batching": "isolated"},
        "sla": {"max_ttft": "0.95s"},
        "search": {"gpus": ["l40s", "a100-80gb"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"], "serving": ["disaggregated"]},
    }
    problem = problem_of(spec)
    want = exhaustive_disaggregated(problem)
    assert want is not None and want.decode_replicas == 2
    got = solve(problem, explain=False).solution
    assert got.feasible and got.chosen.cost_cents == want.cost_cents and got.chosen.replicas == 2
