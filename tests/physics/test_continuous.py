"""Continuous batching: arriving prompts are prefilled inside the decode steps, so TPOT
carries their compute and TTFT waits for chunks of the step's token budget."""

from __future__ import annotations

import pytest

from solver.physics.decode import estimate_decode, queued_prompt_s

N = 8_030_261_248  # Llama-3.1-8B parameters


def test_each_step_carries_prompt_tokens_in_proportion(build_deployment):
    # 32 users, each request a 1,024-token prompt over 256 output steps: every step mixes
    # in 32 × 1024 / 256 = 128 prompt tokens beside the 32 decode tokens.
    # iso pinned: the engine's default (continuous) would already mix the prompts in
    d, w, _ = build_deployment(
        "llama-3.1-8b",
        "h100-sxm",
        users=32,
        prompt=1024,
        output=256,
        overrides={"factors": {"compute_efficiency": 0.5}},
        workload_extra={"batching": "isolated"},
    )
    iso = estimate_decode(d, w)
    import dataclasses

    cont = estimate_decode(d, dataclasses.replace(w, batching="continuous"))
    assert cont.prefill_tokens == 128
    # Prefill FLOPs per prompt token: linear 2N plus causal attention averaged over the
    # prompt, 4 × 32 heads × 128 × 32 layers × (1024 · 1025 / 2) / 1024.
    per_prompt_token = 2 * N + 4 * 32 * 128 * 32 * (1024 * 1025 / 2) / 1024
    assert cont.flops == pytest.approx(iso.flops + 128 * per_prompt_token)
    assert cont.compute_time_s == pytest.approx(cont.flops / (989.5e12 * 0.803 * 0.5))  # the H100's measured matmul share
    assert cont.tpot_s >= iso.tpot_s


def test_ttft_under_load_is_chunks_of_the_step_budget(build_deployment):
    import dataclasses

    # vLLM's 8,192-token step budget less 32 decoding sequences leaves 8,160 prompt
    # tokens per step: a 20,000-token prompt takes two full chunks and 3,680 tokens of a
    # third step, whose rest goes to the next queued prompt: 20000 / 8160 chunks' steps.
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=32, prompt=20_000, output=256)
    cont = estimate_decode(d, dataclasses.replace(w, batching="continuous"))
    c = cont.coefficients
    assert c.prefill_budget_tokens == 8192
    own = 20_000 / 8160 * c.step_s(32, 8160)
    assert own > c.prefill_gpu_s  # slower than the prompt alone on an idle replica
    assert c.prompt_service_s(32) == pytest.approx(own)
    # behind the other 31 users' prompts (closed loop): each takes 20,000 / 8,160 of a
    # step's budget from the others (prompts share a step's chunk), so the wait is the
    # queue's at that share less its own; then its own steps, and the front end once
    front = d.factors.request_overhead_s
    delay = 255 * c.tpot_s(32) + front
    share = 20_000 / 8160 * c.step_s(32, 8160)
    wait = queued_prompt_s(share, 32, delay) - share
    assert cont.ttft_under_load_s == pytest.approx(wait + own + front)
    # More users leave less room per step: TTFT grows with the load.
    more = estimate_decode(d.replace(), dataclasses.replace(w, users=2000, batching="continuous"), batch=2000)
    assert more.ttft_under_load_s > cont.ttft_under_load_s


def test_the_mean_step_mixes_steps_with_a_prompt_chunk_and_steps_without(build_deployment):
    import dataclasses

    # 4 users, each request an 8,192-token prompt over 512 output steps: on average a step
    # carries 4 × 8192 / 512 = 64 prompt tokens — but prompts arrive whole, in chunks of
    # what vLLM's 8,192-token budget leaves beside the 4 decoders (8,188 tokens). So a
    # share 64 / 8188 of the steps carry a chunk and the rest none: the mean step is the
    # mix of those two, not the step at 64 tokens (whose FLOPs hide under the weight read).
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=4, prompt=8192, output=512)
    c = estimate_decode(d, dataclasses.replace(w, batching="continuous")).coefficients
    assert c.prefill_budget_tokens == 8192
    assert c.chunk_mix(4) == (pytest.approx(64 / 8188), 8188)
    f = 64 / 8188
    assert c.step_s(4) == pytest.approx((1 - f) * c.step_s(4, 0) + f * c.step_s(4, 8188))
    assert c.step_s(4) > c.step_s(4, 64)  # a chunk's matmuls are compute-bound, 64 tokens' are not
    # Past a chunk a step on average (here 600 users: 9,600 prompt tokens a step) every
    # step carries prompt tokens: the step at the mean.
    assert c.chunk_mix(600) is None
    assert c.step_s(600) == pytest.approx(c.step_s(600, 600 * 16))


def test_a_moe_prompts_chunks_carry_its_expert_setup_and_the_decoders_steps_do_not(build_deployment):
    import dataclasses

    # DeepSeek-R1 at TP 8, 10 µs an expert: a 20,000-token prompt in the 8,192-token budget
    # less 4 decoders, 20000 / 8188 chunks, each reaching all 58 × 256 experts
    # (1 − (31/32)^8188 rounds to 1): 20000 / 8188 × 148.48 ms more in the prompt's time; the mean
    # decode step, which the fit half's batched TPOTs show no such cost in, is unchanged.
    def coefficients(setup):
        over = {"factors": {"prefill_expert_overhead_s": setup}}
        d, w, _ = build_deployment("deepseek-r1", "h200", users=4, prompt=20_000, output=256, tp=8, weights="fp8", overrides=over)
        return estimate_decode(d, dataclasses.replace(w, batching="continuous")).coefficients

    with_setup, without = coefficients("10us"), coefficients(0)
    assert with_setup.chunk_expert_setup_s == pytest.approx(58 * 256 * 10e-6, rel=1e-12)
    assert with_setup.chunked_prompt_s(4) - without.chunked_prompt_s(4) == pytest.approx(20_000 / 8188 * 58 * 256 * 10e-6, rel=1e-9)
    assert with_setup.tpot_s(4) == without.tpot_s(4)
