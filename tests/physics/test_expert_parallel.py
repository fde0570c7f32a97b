"""Data-parallel attention with expert-parallel MoE layers (parallelism dp_ep): each of
the g GPUs runs attention and the dense layers whole for its own sequences and holds
1/g of the routed experts; an all-to-all per MoE layer carries the tokens to their
experts and back."""

from __future__ import annotations

import pytest

from solver.errors import InputError
from solver.physics.decode import estimate_decode
from solver.physics.interconnect import all_to_all
from solver.physics.memory import estimate_memory
from solver.physics.prefill import estimate_prefill
from solver.physics.validity import check
from solver.physics.weights import group_weights_bytes, per_gpu_weights_bytes

KV_PER_TOKEN = (512 + 64) * 61  # DeepSeek-R1's MLA latent and rope key, 61 layers, FP8: 35,136 B


def _ds(build_deployment, parallelism, users=256):
    return (
        build_deployment("deepseek-r1", "h200", tp=8, users=users, prompt=1000, output=1000, weights="fp8", kv="fp8", overrides={})
        if parallelism == "tp"
        else _dp(users)
    )


def _dp(users=256, model="deepseek-r1", tp=8):
    from solver.catalog import default_catalog
    from solver.physics.resolve import resolve
    from solver.spec.evaluate_input import parse_input

    data = {
        "model": model,
        "hardware": {"gpu": "h200", "tp": tp, "parallelism": "dp_ep"},
        "precision": {"weights": "fp8", "kv_cache": "fp8"},
        "workload": {"users": users, "prompt_tokens": 1000, "output_tokens": 1000},
    }
    return resolve(parse_input(data), default_catalog())


def test_each_gpu_holds_the_dense_layers_whole_and_an_eighth_of_the_experts(build_deployment):
    d, w, _ = _dp()
    groups = group_weights_bytes(d.model, d.weights)
    experts = groups["experts"]
    rest = sum(groups.values()) - experts
    assert per_gpu_weights_bytes(d) == pytest.approx(rest + experts / 8)
    t, _, _ = _ds(build_deployment, "tp")
    assert per_gpu_weights_bytes(d) > per_gpu_weights_bytes(t)


def test_the_mla_latent_is_not_replicated_each_gpu_holds_its_own_sequences(build_deployment):
    # 256 sequences × 2,000 tokens × 35,136 B: at TP 8 every rank holds all of it (MLA),
    # under data-parallel attention each GPU its 32 sequences.
    d, w, _ = _dp()
    t, wt, _ = _ds(build_deployment, "tp")
    assert estimate_memory(t, wt).kv_bytes == pytest.approx(256 * 2000 * KV_PER_TOKEN)
    assert estimate_memory(d, w).kv_bytes == pytest.approx(256 * 2000 * KV_PER_TOKEN / 8)
    assert estimate_memory(d, w).max_batch > 4 * estimate_memory(t, wt).max_batch


def test_the_all_to_all_carries_each_token_to_its_experts_and_back():
    # Per MoE layer a dispatch and a combine; each GPU sends its 1/8 of the tokens to 8
    # experts, 7/8 of them elsewhere, 7,168 × 2 B each: per replica token
    # 8 × 7168 × 2 × (7/8) / 8 = 12,544 B per GPU per call, × 2 calls × 58 MoE layers.
    d, _, _ = _dp()
    fixed, per_token = all_to_all(d)
    ring_bw = 12_544 * 2 * 58 / per_token
    assert 100e9 < ring_bw < 1000e9  # one NVLink 4 GPU's bandwidth per direction
    assert fixed > 0
    assert estimate_decode(d, _dp()[1]).comm.algorithm == "all-to-all"


def test_a_prompt_runs_its_dense_part_on_one_gpu(build_deployment):
    # Data-parallel attention prefills a prompt on its own rank: the dense layers and
    # attention at one GPU's rate, the experts over all eight — slower alone than TP 8.
    d, w, _ = _dp(users=1)
    t, wt, _ = build_deployment("deepseek-r1", "h200", tp=8, users=1, prompt=1000, output=1000, weights="fp8", kv="fp8")
    assert estimate_prefill(d, w).ttft_s > estimate_prefill(t, wt).ttft_s


def test_dp_ep_needs_routed_experts_it_can_divide():
    d, w, _ = _dp(model="llama-3.1-70b")
    assert any("has none" in why for _, why in check(d, w))
    d, w, _ = _dp(tp=6)
    assert any("does not divide the model's 256 routed experts" in why for _, why in check(d, w))


def test_the_solver_takes_dp_ep_where_it_is_cheaper_and_deploy_says_how():
    # 512 users at 8k context on DeepSeek-R1: TP 8 replicates the MLA latent on every
    # GPU, so data-parallel attention holds the users in fewer GPUs.
    from solver.explain.solve import solve
    from solver.report.deploy import emit
    from solver.report.launch import check_flags
    from tests.solve_helpers import problem_of

    spec = {
        "model": "deepseek-r1",
        "workload": {"users": 512, "context_tokens": 8192, "prompt_tokens": 4096},
        "sla": {"max_tpot": "60ms", "max_ttft": "3s"},
        "search": {"gpus": ["h200"], "weights": ["fp8"], "kv_cache": ["fp8"], "parallelism": ["tp", "dp_ep"]},
    }
    both = solve(problem_of(spec), explain=False)
    spec["search"]["parallelism"] = ["tp"]
    tp_only = solve(problem_of(spec), explain=False)
    c, t = both.solution.candidate, tp_only.solution.candidate
    assert c.shape.deployment.dp_ep and "DP8-EP8" in c.shape.label
    assert c.cost_usd_per_hour < t.cost_usd_per_hour
    vllm = emit(both, "vllm")
    assert vllm.argv[vllm.argv.index("--data-parallel-size") + 1] == "8" and "--enable-expert-parallel" in vllm.argv
    assert "--tensor-parallel-size" not in vllm.argv
    assert vllm.argv[vllm.argv.index("--max-num-seqs") + 1] == str(-(-c.batch // 8))  # per data-parallel rank
    sglang = emit(both, "sglang")
    # current SGLang: --attn-dp-size 8 (PR #41818 deprecates --dp-size 8 --enable-dp-attention; issue 45 item 1)
    assert sglang.argv[sglang.argv.index("--attn-dp-size") + 1] == "8" and check_flags(vllm) == [] and check_flags(sglang) == []
    with pytest.raises(InputError):
        from solver.spec.solve_spec import parse_spec

        parse_spec({**spec, "search": {**spec["search"], "parallelism": ["ep"]}})


def _dp_imbalanced(imbalance):
    from solver.catalog import default_catalog
    from solver.physics.resolve import resolve
    from solver.spec.evaluate_input import parse_input

    data = {
        "model": "deepseek-r1",
        "hardware": {"gpu": "h200", "tp": 8, "parallelism": "dp_ep"},
        "precision": {"weights": "fp8", "kv_cache": "fp8"},
        "workload": {"users": 256, "prompt_tokens": 1000, "output_tokens": 1000},
        "overrides": {"factors": {"expert_load_imbalance": imbalance}},
    }
    return resolve(parse_input(data), default_catalog())


def test_an_uneven_expert_load_slows_the_busiest_gpu_by_its_factor():
    # 1.5: the busiest GPU gets 1.5 × the mean of the routed tokens. Its experts' FLOPs and
    # its all-to-all bytes grow by 1.5; the dense layers and attention do not.
    from solver.physics.decode import decode_coefficients
    from solver.physics.kernels import routed_active_params

    even, w, _ = _dp_imbalanced(1.0)
    busy, _, _ = _dp_imbalanced(1.5)
    fixed0, per0 = all_to_all(even)
    fixed1, per1 = all_to_all(busy)
    assert fixed1 == pytest.approx(fixed0) and per1 == pytest.approx(1.5 * per0)
    p0, p1 = estimate_prefill(even, w), estimate_prefill(busy, w)
    assert p1.expert_time_s == pytest.approx(1.5 * p0.expert_time_s)
    assert p1.linear_time_s - p0.linear_time_s == pytest.approx(0.5 * p0.expert_time_s)
    m = even.model
    d0, d1 = decode_coefficients(even, 2000), decode_coefficients(busy, 2000)
    assert d0.linear_flops_per_sequence == pytest.approx(2 * m.active_params / 8)
    assert d1.linear_flops_per_sequence - d0.linear_flops_per_sequence == pytest.approx(2 * 0.5 * routed_active_params(m) / 8)


def test_the_imbalance_is_expert_parallelisms_alone(build_deployment):
    # Under TP every expert is split over every GPU: no GPU is busier than another.
    even, w, _ = build_deployment("deepseek-r1", "h200", tp=8, prompt=1000, output=1000, weights="fp8", kv="fp8")
    busy, _, _ = build_deployment(
        "deepseek-r1", "h200", tp=8, prompt=1000, output=1000, weights="fp8", kv="fp8", overrides={"factors": {"expert_load_imbalance": 2.0}}
    )
    assert estimate_prefill(busy, w).gpu_time_s == pytest.approx(estimate_prefill(even, w).gpu_time_s)
    assert estimate_decode(busy, w).tpot_s == pytest.approx(estimate_decode(even, w).tpot_s)


def _tp_ep(imbalance=1.0, parallelism="tp_ep", model="deepseek-r1"):
    from solver.catalog import default_catalog
    from solver.physics.resolve import resolve
    from solver.spec.evaluate_input import parse_input

    data = {
        "model": model,
        "hardware": {"gpu": "h200", "tp": 8, "parallelism": parallelism},
        "precision": {"weights": "fp8", "kv_cache": "fp8"},
        "workload": {"users": 64, "prompt_tokens": 1000, "output_tokens": 1000},
        "overrides": {"factors": {"expert_load_imbalance": imbalance}},
    }
    return resolve(parse_input(data), default_catalog())


def test_tp_attention_with_expert_parallel_experts_reads_and_reduces_as_tp():
    # tp_ep: attention and the dense layers split as TP, each GPU holding 1/8 of the
    # experts whole instead of 1/8 of each: the same bytes per GPU, the same KV (MLA's
    # latent on every rank), the same two all-reduces a layer. Balanced, a prompt of
    # 1,000 tokens (every expert hit: 1 − (31/32)^1000 ≈ 1) runs as TP's; a decode step
    # reads the busiest GPU's experts (test_the_step_reads_the_busiest_gpus_experts).
    from solver.physics.decode import estimate_decode

    ep, w, _ = _tp_ep()
    tp, _, _ = _tp_ep(parallelism="tp")
    assert per_gpu_weights_bytes(ep) == pytest.approx(per_gpu_weights_bytes(tp))
    assert estimate_memory(ep, w).kv_bytes == pytest.approx(estimate_memory(tp, w).kv_bytes)
    assert estimate_decode(ep, w).comm_time_s == pytest.approx(estimate_decode(tp, w).comm_time_s)
    assert estimate_decode(ep, w).tpot_s > estimate_decode(tp, w).tpot_s
    assert estimate_prefill(ep, w).ttft_s == pytest.approx(estimate_prefill(tp, w).ttft_s)
    assert all_to_all(ep) == (0.0, 0.0)  # no dispatch: the MoE output is all-reduced, as TP's
    # The busiest GPU's experts set the pace once the load is uneven: 1.5 × their FLOPs.
    busy, _, _ = _tp_ep(1.5)
    assert estimate_prefill(busy, w).expert_time_s == pytest.approx(1.5 * estimate_prefill(ep, w).expert_time_s)


def test_tp_ep_is_for_mixture_of_experts_models_with_experts_to_split():
    d, w, _ = _tp_ep()
    assert not [r for r in check(d, w) if r[0] == "split"]
    dense, w70, _ = _tp_ep(model="llama-3.1-70b")
    assert any("splits routed experts" in r for _, r in check(dense, w70))


def _binomial_expected_max(n: int, q: float, g: int) -> float:
    """E[max of g independent Binomial(n, q)] from the order statistic's tail,
    Σ_{m=0}^{n−1} P(max > m) = Σ (1 − F(m)^g), with F from math.comb."""
    import math

    total = 0.0
    for m in range(n):
        cdf = sum(math.comb(n, j) * q**j * (1 - q) ** (n - j) for j in range(m + 1))
        total += 1 - cdf**g
    return total


def test_the_busiest_gpus_share_of_its_experts_by_hand():
    from solver.physics.kernels import busiest_expert_share, expert_hit_fraction

    # E = 8 experts, k = 2, one token, g = 2 GPUs of n = 4: each expert hit with q = 1/4.
    # Binomial(4, 1/4) CDF: F(0) = 81/256, F(1) = 189/256, F(2) = 243/256, F(3) = 255/256;
    # E[max of 2] = 4 − (81² + 189² + 243² + 255²)/256² = 4 − 166,356/65,536 = 1.461609,
    # of n = 4 experts: 0.365402 (the mean is 1 expert, 0.25). The exact deal (the token's
    # two experts distinct) gives 1 + P(both on one GPU) = 1 + 2·C(4,2)/C(8,2) = 1.428571:
    # taking the experts as independent overstates the busiest GPU by 2.3 % here.
    assert busiest_expert_share(8, 2, 1, 2) == pytest.approx(1.461609 / 4, rel=1e-6)
    # one group (TP) is the mean; every expert hit leaves no busiest GPU
    assert busiest_expert_share(256, 8, 5, 1) == pytest.approx(expert_hit_fraction(256, 8, 5))
    assert busiest_expert_share(256, 8, 10_000, 8) == pytest.approx(1.0)
    # DeepSeek-R1 (E = 256, k = 8) over g = 8 GPUs of 32 experts, one token: q = 1/32
    share = busiest_expert_share(256, 8, 1, 8)
    assert share == pytest.approx(_binomial_expected_max(32, 1 / 32, 8) / 32, rel=1e-9)
    assert 2.3 < share * 32 < 2.7  # about 2.5 experts on the busiest GPU against 1 on the mean


def test_the_busiest_gpu_against_a_dealt_deck():
    # The independence approximation against the exact deal, by simulation (seeded):
    # one token's 8 distinct experts of 256, dealt 32 to each of 8 GPUs; the busiest
    # GPU's count, averaged (2.57 over 20,000 deals). Independence lets the token's hits
    # number other than 8 (and a pair land on one GPU less often): within 3 %.
    import random

    from solver.physics.kernels import busiest_expert_share

    rng = random.Random(0)
    draws = 20_000
    total = 0
    for _ in range(draws):
        counts = [0] * 8
        for e in rng.sample(range(256), 8):
            counts[e // 32] += 1
        total += max(counts)
    exact = total / draws
    model = busiest_expert_share(256, 8, 1, 8) * 32
    assert model == pytest.approx(exact, rel=0.03)


def test_the_step_reads_the_busiest_gpus_experts():
    # tp_ep at 64 users: the routed bytes a step reads are each GPU's experts times the
    # busiest GPU's share, 1/8 of the experts each; TP reads the mean share q.
    from solver.physics.decode import decode_coefficients
    from solver.physics.kernels import expert_hit_fraction

    ep, _, _ = _tp_ep()
    tp, _, _ = _tp_ep(parallelism="tp")
    c_ep, c_tp = decode_coefficients(ep, 2000), decode_coefficients(tp, 2000)
    assert c_ep.routed_weight_bytes == pytest.approx(c_tp.routed_weight_bytes)
    q = expert_hit_fraction(256, 8, 64)
    assert c_tp.weight_bytes(64) == pytest.approx(c_tp.dense_weight_bytes + c_tp.routed_weight_bytes * q)
    busiest = _binomial_expected_max(32, q, 8) / 32
    assert c_ep.weight_bytes(64) == pytest.approx(c_ep.dense_weight_bytes + c_ep.routed_weight_bytes * busiest, rel=1e-9)
    assert busiest > q
