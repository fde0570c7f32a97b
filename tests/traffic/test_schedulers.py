"""Each engine's scheduling rule in the simulator, against iterations worked out by hand:
SGLang runs a prompt as a pass of its own that the decoders wait for (prefill_schedule
separate), and vLLM V0 with multi-step scheduling admits a new prompt only once the
decode steps in flight are done (scheduler_steps)."""

from __future__ import annotations

import pytest

from solver.catalog import default_catalog
from solver.physics.deployment import Targets
from solver.traffic.requests import Moments
from solver.traffic.screen import screen
from solver.traffic.simulate import EngineLimits, Request, simulate


class Pass:
    """5 ms a pass, 1 ms per prompt token, 10 ms more when the pass decodes."""

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        return 0.005 + 0.001 * prefill_tokens + (0.010 if decode_seqs else 0.0)


class Linear:
    """1 ms per prompt token, 10 ms per pass that decodes."""

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        return 0.001 * prefill_tokens + (0.010 if decode_seqs else 0.0)


def _limits(**kw) -> EngineLimits:
    return EngineLimits(max_num_seqs=8, max_num_batched_tokens=1000, kv_capacity_tokens=10_000, block_size_tokens=16, **kw)


# A: prompt 100 at t = 0, 3 tokens. B: prompt 50 at t = 0.110, 1 token.
#   pass 1 [0, 0.105): A's prompt (5 + 100 ms); A's first token at 0.105
#   pass 2 [0.105, 0.120): A decodes (5 + 10 ms); B arrives meanwhile
# mixed (vLLM):  pass 3 [0.120, 0.185): A decodes + B's 50 tokens (5 + 10 + 50 ms):
#                B's first token and A's last at 0.185
# separate (SGLang): pass 3 [0.120, 0.175): B's prompt alone (5 + 50 ms), A waits;
#                pass 4 [0.175, 0.190): A decodes (5 + 10 ms): A ends at 0.190, one
#                pass's fixed 5 ms later than mixed, and B's TTFT is 10 ms shorter.
TWO = [Request(0.0, 100, 3), Request(0.110, 50, 1)]


@pytest.mark.parametrize("step_by_step", [False, True])
def test_mixed_chunk_runs_inside_the_decode_step(step_by_step: bool) -> None:
    a, b = simulate(TWO, Pass(), _limits(), _step_by_step=step_by_step).results
    assert a.first_token_s == pytest.approx(0.105)
    assert b.first_token_s == pytest.approx(0.185)
    assert a.finish_s == pytest.approx(0.185)


@pytest.mark.parametrize("step_by_step", [False, True])
def test_separate_prompt_pass_delays_the_decoders(step_by_step: bool) -> None:
    a, b = simulate(TWO, Pass(), _limits(prefill_schedule="separate"), _step_by_step=step_by_step).results
    assert a.first_token_s == pytest.approx(0.105)
    assert b.ttft_s == pytest.approx(0.175 - 0.110)
    assert a.finish_s == pytest.approx(0.190)
    assert a.tpot_s == pytest.approx((0.190 - 0.105) / 2)


# A: prompt 100 at t = 0, 20 tokens; B: prompt 50 at t = 0.105, 1 token; whole prompts (V0).
#   pass 1 [0, 0.100): A's prompt. Decode steps of 10 ms from 0.100.
# one step at a time: B is admitted at the first step boundary after it arrives,
#   0.110, and prefilled alone [0.110, 0.160): TTFT 0.055.
# 4 steps at a time: the window started at 0.100 runs to 0.140 (4 × 10 ms); B is
#   prefilled [0.140, 0.190): TTFT 0.085, the 3 steps left in flight (30 ms) longer.
MULTI = [Request(0.0, 100, 20), Request(0.105, 50, 1)]


@pytest.mark.parametrize("step_by_step", [False, True])
@pytest.mark.parametrize(("steps", "ttft_s"), [(1, 0.055), (4, 0.085)])
def test_multi_step_prompt_waits_for_the_steps_in_flight(steps: int, ttft_s: float, step_by_step: bool) -> None:
    limits = _limits(chunked_prefill=False, scheduler_steps=steps)
    a, b = simulate(MULTI, Linear(), limits, _step_by_step=step_by_step).results
    assert b.ttft_s == pytest.approx(ttft_s)
    # A: 19 decode steps of 10 ms and B's 50 ms prompt pass after its first token at 0.100
    assert a.finish_s == pytest.approx(0.100 + 19 * 0.010 + 0.050)


def test_multi_step_windows_follow_each_other() -> None:
    """Steps run back to back in windows of k from the first decode step: a prompt that
    arrives in the second window (0.100 + 4 × 10 ms + 5 ms) waits for its 3 steps left."""
    reqs = [Request(0.0, 100, 20), Request(0.145, 50, 1)]
    for step_by_step in (False, True):
        _, b = simulate(reqs, Linear(), _limits(chunked_prefill=False, scheduler_steps=4), _step_by_step=step_by_step).results
        assert b.first_token_s == pytest.approx(0.180 + 0.050)


def test_engines_carry_their_scheduling_rule() -> None:
    cat = default_catalog()
    assert cat.engine("sglang").prefill_schedule == "separate"
    assert "get_next_batch_to_run" in cat.engine("sglang").scheduling_source
    assert cat.engine("vllm").prefill_schedule == "mixed"
    assert cat.engine("vllm").num_scheduler_steps == 1  # V1 has no multi-step; V0's default was 1


def test_bad_scheduling_knobs_are_refused() -> None:
    with pytest.raises(ValueError, match="prefill_schedule"):
        _limits(prefill_schedule="interleaved")
    with pytest.raises(ValueError, match="scheduler_steps"):
        _limits(scheduler_steps=0)


# --- the analytic screen reads the same rules


class Flat:
    """The screen's view of Pass: 5 ms a pass, 1 ms per prompt token, 10 ms more when it decodes."""

    request_overhead_s = 0.0

    def mean_iteration_s(self, decode_seqs: float, decode_context_tokens: float, prefill_tokens: float, prefill_attention_tokens: float) -> float:
        if decode_seqs <= 0 and prefill_tokens <= 0:
            return 0.0
        return 0.005 + 0.001 * prefill_tokens + (0.010 if decode_seqs > 0 else 0.0)


FIXED = Moments(100.0, 100.0 * 101.0, 100.0**2, 50.0, (100.0,) * 4, (50.0,) * 4, 1.0)
LOOSE = Targets(max_ttft_s=10.0, max_tpot_s=1.0, ttft_percentile=50.0, tpot_percentile=50.0)


def test_screen_multi_step_adds_the_rest_of_the_window() -> None:
    """An arrival lands, on average, half way through a window of k decode steps (15 ms
    each here): k = 4 waits 4 × 15 / 2 = 30 ms against 7.5 ms for one step, 22.5 ms more;
    nothing else moves (the decoders' rate is the same)."""
    one = screen(Flat(), _limits(chunked_prefill=False), FIXED, 2.0, LOOSE)  # type: ignore[arg-type]
    four = screen(Flat(), _limits(chunked_prefill=False, scheduler_steps=4), FIXED, 2.0, LOOSE)  # type: ignore[arg-type]
    assert four.ttft_mean_s - one.ttft_mean_s == pytest.approx(0.0225)
    assert four.tpot_mean_s == pytest.approx(one.tpot_mean_s)


def test_screen_separate_prompt_pass_is_paid_by_the_decoders() -> None:
    """SGLang's prompt pass (5 + 100 ms for a 100-token prompt) runs alone: a prompt's
    own pass is 10 ms shorter than the mixed one (5 + 10 + 100 ms), and the decoders wait
    for every pass that lands in their life instead of sharing it, so TPOT is longer."""
    mixed = screen(Flat(), _limits(), FIXED, 2.0, LOOSE)  # type: ignore[arg-type]
    apart = screen(Flat(), _limits(prefill_schedule="separate"), FIXED, 2.0, LOOSE)  # type: ignore[arg-type]
    assert apart.tpot_mean_s > mixed.tpot_mean_s
    # At a light load (no wait): half a 15 ms step in flight, then the prompt's pass,
    # 105 ms apart against 115 ms mixed.
    light_mixed = screen(Flat(), _limits(), FIXED, 1e-4, LOOSE)  # type: ignore[arg-type]
    light_apart = screen(Flat(), _limits(prefill_schedule="separate"), FIXED, 1e-4, LOOSE)  # type: ignore[arg-type]
    assert light_mixed.ttft_mean_s == pytest.approx(0.0075 + 0.115, rel=1e-3)
    assert light_apart.ttft_mean_s == pytest.approx(0.0075 + 0.105, rel=1e-3)


# --- SGLang's overlap scheduler (Scheduler.event_loop_overlap, on by default from PR #2067):
# batch N+1 is chosen when batch N is launched, so a request that arrives while N runs
# is first scheduled in N+2. TWO on Pass, separate prompt passes, overlap on:
#   pass 1 [0, 0.105): A's prompt (A found the replica idle: scheduled at once)
#   pass 2 [0.105, 0.120): A decodes; B arrives at 0.110. Pass 3 was chosen at 0.105,
#     before B: A decodes again [0.120, 0.135), its 3rd and last token: A ends at 0.135
#   pass 4 [0.135, 0.190): B's prompt alone (5 + 50 ms): TTFT 0.190 − 0.110 = 0.080,
#     one 15 ms decode pass more than the 0.065 without overlap.


@pytest.mark.parametrize("step_by_step", [False, True])
def test_overlap_a_prompt_waits_for_the_pass_already_chosen(step_by_step: bool) -> None:
    a, b = simulate(TWO, Pass(), _limits(prefill_schedule="separate", overlap_schedule=True), _step_by_step=step_by_step).results
    assert a.first_token_s == pytest.approx(0.105)
    assert a.finish_s == pytest.approx(0.135)
    assert b.ttft_s == pytest.approx(0.080)


@pytest.mark.parametrize("step_by_step", [False, True])
def test_overlap_in_a_decode_stretch(step_by_step: bool) -> None:
    """A long decode: A (prompt 100 at 0, 30 tokens) decodes in 15 ms passes from 0.105;
    B (prompt 50) arrives at 0.200, inside the pass [0.195, 0.210) (the 7th). The pass
    [0.210, 0.225) was chosen at 0.195: B's prompt pass runs [0.225, 0.280), TTFT 0.080;
    A's 29 decode passes (435 ms) and B's 55 ms pass: A ends at 0.105 + 0.435 + 0.055."""
    reqs = [Request(0.0, 100, 30), Request(0.200, 50, 1)]
    a, b = simulate(reqs, Pass(), _limits(prefill_schedule="separate", overlap_schedule=True), _step_by_step=step_by_step).results
    assert b.first_token_s == pytest.approx(0.280)
    assert a.finish_s == pytest.approx(0.105 + 0.435 + 0.055)


def test_sglang_overlap_by_release_line() -> None:
    """On from the release after PR #2067 (v0.3.6); v0.3.0 (the vLLM 0.6.0 comparison's
    SGLang) ran the plain loop."""
    cat = default_catalog()
    sglang = cat.engine("sglang")
    assert sglang.overlap_schedule is True
    assert cat.releases.engine_at(sglang, "0.3.0").overlap_schedule is False
    assert cat.releases.engine_at(sglang, "0.4.0").overlap_schedule is True
    assert cat.engine("vllm").overlap_schedule is False


def test_screen_overlap_adds_the_step_already_chosen() -> None:
    """One 15 ms decode step (Flat's 5 + 10 ms) more than half a step in flight."""
    plain = screen(Flat(), _limits(prefill_schedule="separate"), FIXED, 2.0, LOOSE)  # type: ignore[arg-type]
    overlap = screen(Flat(), _limits(prefill_schedule="separate", overlap_schedule=True), FIXED, 2.0, LOOSE)  # type: ignore[arg-type]
    assert overlap.ttft_mean_s - plain.ttft_mean_s == pytest.approx(0.015)
    assert overlap.tpot_mean_s == pytest.approx(plain.tpot_mean_s)


# --- SGLang's admission (PrefillAdder, schedule_policy.py): a prompt is admitted only when
# prompt + its whole output < the free KV tokens − new_token_ratio × the outputs the running
# requests have still to make; the ratio starts at 0.7 when the replica is idle and falls by
# (0.7 − 0.7 × 0.14) / 600 = 0.0010033 per decode step (global_config.py).
#   KV 1,600 tokens (100 blocks of 16). A: prompt 16 at 0, 1,500 tokens; B: prompt 100 and
#   500 tokens (needs 600) at 0.010. Pass: A's prompt [0, 0.021), A's first token; then
#   15 ms decode passes. Before decode pass D + 1, A holds ceil((16 + D) / 16) blocks and
#   has 1,499 − D tokens to make:
#   D = 0:  99 × 16 − 0.7 × 1,499 = 1,584 − 1,049.3 = 534.7 < 600: B waits
#   D = 60: 95 × 16 − (0.7 − 60 × 0.0010033) × 1,439 = 1,520 − 920.7 = 599.3 < 600: waits
#   D = 61: 95 × 16 − (0.7 − 61 × 0.0010033) × 1,438 = 1,520 − 918.6 = 601.4: admitted
#   B's pass [0.021 + 61 × 0.015, + 0.105): first token at 1.041 (without the rule: at
#   0.021 + 0.105 = 0.126, its 7 blocks being free at once).
RESERVE = [Request(0.0, 16, 1500), Request(0.010, 100, 500)]


@pytest.mark.parametrize("step_by_step", [False, True])
@pytest.mark.parametrize(("reserve", "first_s"), [(False, 0.126), (True, 0.021 + 61 * 0.015 + 0.105)])
def test_sglang_admission_keeps_room_for_the_outputs_to_come(reserve: bool, first_s: float, step_by_step: bool) -> None:
    limits = EngineLimits(8, 1000, 1600, 16, prefill_schedule="separate", reserve_new_tokens=reserve)
    _, b = simulate(RESERVE, Pass(), limits, _step_by_step=step_by_step).results
    assert b.first_token_s == pytest.approx(first_s)


# KV 320 tokens (20 blocks). A: prompt 100, 100 tokens at 0; B: prompt 100, 80 tokens at
# 0.010 (its 7 blocks free at 0.105). Admitted at once (vLLM's rule), B ends with
# 100 + 79 KV tokens (12 blocks) when A holds about as many: 24 blocks > 20, so one is
# recomputed; under SGLang's rule B needs 180 ≥ (20 − 7) × 16 − 0.7 × 99 = 138.7 and the room only shrinks as A
# grows, so it waits for A: A's 99 decode passes end at 0.105 + 99 × 0.015 = 1.590, B's
# prompt pass (5 + 100 ms) at 1.695, and nothing is preempted.
CRAMPED = [Request(0.0, 100, 100), Request(0.010, 100, 80)]


@pytest.mark.parametrize("step_by_step", [False, True])
def test_sglang_admission_waits_for_kv_instead_of_retracting(step_by_step: bool) -> None:
    greedy = simulate(CRAMPED, Pass(), EngineLimits(8, 1000, 320, 16, prefill_schedule="separate"), _step_by_step=step_by_step)
    assert sum(r.preemptions for r in greedy.results) >= 1
    kept = simulate(CRAMPED, Pass(), EngineLimits(8, 1000, 320, 16, prefill_schedule="separate", reserve_new_tokens=True), _step_by_step=step_by_step)
    a, b = kept.results
    assert a.finish_s == pytest.approx(1.590)
    assert b.first_token_s == pytest.approx(1.695)
    assert sum(r.preemptions for r in kept.results) == 0


def test_sglang_reserves_kv_for_outputs() -> None:
    cat = default_catalog()
    assert cat.engine("sglang").reserve_new_tokens is True
    assert cat.engine("vllm").reserve_new_tokens is False
