"""The simulator's iteration costs read from tables (issue 44: the rate form's time was
the simulations, and IterationModel.mean_iteration_s inside them) must be the very
floats the formula gives: the reference below is the formula as it stood before the
tables (main at b1f0eea: a step reads the busiest GPU's experts; since ttft42 a prefill-only pass prices its routed experts' GEMMs apart, as estimate_prefill does), computed from the model's public coefficients, and every
comparison is exact (==), over random whole batches on dense, tensor-parallel,
mixture-of-experts (TP and dp_ep), sliding-window and prefix-cached deployments."""

from __future__ import annotations

import random

import pytest

from solver.catalog import default_catalog
from solver.physics.deployment import Workload
from solver.physics.interconnect import comm_time_from_segments
from solver.physics.iteration import IterationModel, iteration_model
from solver.physics.kernels import kernel_time_s, prefill_expert_overhead_s
from solver.physics.prefill import estimate_prefill, prefill_weights_time_s
from solver.physics.resolve import resolve
from solver.spec.evaluate_input import parse_input

CASES = [
    ("llama-3.1-8b", "h100-sxm", 1, {}),
    ("llama-3.1-70b", "h100-sxm", 4, {}),
    ("qwen3-30b-a3b", "h100-sxm", 2, {}),
    ("gemma-3-27b", "h100-sxm", 2, {}),
    ("deepseek-r1", "mi300x", 8, {"parallelism": "dp_ep"}),
    ("llama-3.1-70b", "mi300x", 8, {}),
]


def _deployment(model: str, gpu: str, tp: int, hardware: dict, shared_prefix: int = 0):
    workload = {"users": 8, "prompt_tokens": 1000, "output_tokens": 300, **({"shared_prefix_tokens": shared_prefix} if shared_prefix else {})}
    spec = {"model": model, "hardware": {"gpu": gpu, "tp": tp, **hardware}, "workload": workload}
    d, w, _ = resolve(parse_input(spec), default_catalog())
    return d, w


def _reference_s(it: IterationModel, b: float, ctx: float, k: float, att: float) -> float:
    """The formula, written out once, in the order the sums were taken before the tables."""
    c, d = it.decode, it.deployment
    assert d is not None
    if b <= 0 and k <= 0:
        return 0.0
    ctx += b * it.cached_tokens
    att += k * it.cached_tokens

    def weights(tokens: int) -> float:
        return estimate_prefill(d, Workload(1, tokens + 1, tokens, 1)).weights_time_s

    def alone(k: float) -> float:
        """A prefill-only pass's GEMMs: the dense ones' kernel at the prefill's share, the
        routed experts' at theirs (estimate_prefill's gemm_time_s over k tokens)."""
        chunk = max(1, round(k))
        read_s, math_s = weights(chunk), k * it.prefill_linear_s_per_token
        if not c.overlapped:
            return read_s + math_s
        routed_s = estimate_prefill(d, Workload(1, chunk + 1, chunk, 1)).routed_weights_time_s if it.prefill_expert_s_per_token else 0.0
        expert_s = k * it.prefill_expert_s_per_token
        dense_s = kernel_time_s(read_s - routed_s, math_s - expert_s, True, it.prefill_unhidden_share)
        return dense_s + kernel_time_s(routed_s, expert_s, True, it.expert_unhidden_share)

    setup_s = 0.0
    if b > 0:
        weights_s = c.weight_bytes(b + k) / (c.bandwidth_bytes_per_s * c.bandwidth_efficiency * c.weight_bandwidth_share)
        linear_s = b * c.linear_flops_per_sequence / (c.matmul_flops_per_s * c.compute_efficiency) + k * it.prefill_linear_s_per_token
        gemm_s = kernel_time_s(weights_s, linear_s, c.overlapped, c.unhidden_share)
    else:
        gemm_s = alone(k)
        setup_s = prefill_expert_overhead_s(d, max(1, round(k)))
    if b > 0 and k > 0:
        chunk = max(1, round(k))
        alone_s = alone(k)
        decoders_s = b * c.linear_flops_per_sequence / (c.matmul_flops_per_s * c.compute_efficiency)
        gemm_s = max(gemm_s, alone_s + prefill_expert_overhead_s(d, chunk) + decoders_s)
    kv_s = ctx * it.kv_s_per_token
    attend_s = ctx * it.decode_attention_s_per_token
    attention_s = kernel_time_s(kv_s, attend_s, c.overlapped, c.unhidden_share) + att * it.prefill_attention_s_per_pair
    comm_s = comm_time_from_segments(c.comm_pieces, b + k) if c.comm_pieces else c.comm_fixed_s + (b + k) * c.comm_per_sequence_s
    return gemm_s + attention_s + comm_s + c.step_overhead_s + setup_s + b * c.sequence_overhead_s


_FIELDS = (
    "decode",
    "kv_s_per_token",
    "decode_attention_s_per_token",
    "prefill_linear_s_per_token",
    "prefill_attention_s_per_pair",
    "request_overhead_s",
    "cached_tokens",
    "deployment",
    "prefill_unhidden_share",
    "prefill_expert_s_per_token",
    "expert_unhidden_share",
)
"""An IterationModel's coefficients: a fresh model built from them starts with empty tables."""


def _batches(seed: str, count: int) -> list[tuple[int, int, int, int]]:
    """Random iterations as the simulator schedules them: decode-only, prefill-only and
    mixed, with repeats (a table's hits) among them."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        b = rng.choice([0, rng.randint(1, 8), rng.randint(1, 512)])
        k = rng.choice([0, 0, rng.randint(1, 64), rng.randint(1, 8192)])
        if b == 0 and k == 0:
            k = rng.randint(1, 4096)
        ctx = b * rng.randint(1, 4000)
        computed = rng.randint(0, 3000)
        out.append((b, ctx, k, k * computed + k * (k + 1) // 2))
    return out + out[: count // 4]


@pytest.mark.parametrize("model, gpu, tp, hardware", CASES)
@pytest.mark.parametrize("shared_prefix", [0, 600])
def test_tabled_iteration_times_are_the_formulas_floats(model, gpu, tp, hardware, shared_prefix):
    d, w = _deployment(model, gpu, tp, hardware, shared_prefix)
    it = iteration_model(d, w)
    for b, ctx, k, att in _batches(f"{model}:{tp}:{shared_prefix}", 400):
        want = _reference_s(it, b, ctx, k, att)
        assert it.iteration_s(b, ctx, k, float(att)) == want, (b, ctx, k, att)
        assert it.mean_iteration_s(b, ctx, k, float(att)) == want, (b, ctx, k, att)
    assert it.fixed_terms, "iteration_s fills its table"


@pytest.mark.parametrize("model, gpu, tp, hardware", CASES)
def test_fractional_loads_are_the_formulas_floats_and_stay_out_of_the_table(model, gpu, tp, hardware):
    d, w = _deployment(model, gpu, tp, hardware)
    it = iteration_model(d, w)
    rng = random.Random(7)
    before = dict(it.fixed_terms)
    for _ in range(200):
        b, k = rng.uniform(0, 300), rng.choice([0.0, rng.uniform(0, 4000)])
        ctx, att = b * rng.uniform(1, 3000), k * rng.uniform(1, 2000)
        assert it.mean_iteration_s(b, ctx, k, att) == _reference_s(it, b, ctx, k, att)
    assert it.fixed_terms == before
    assert all(type(n) is int for n in it.token_terms)


def test_weights_and_communication_are_priced_once_per_token_count(monkeypatch):
    """The costly terms of an iteration, the weights its tokens reach and its
    communication, are functions of decoders + prompt tokens alone (the formula's b + k):
    a day's replay asks for hundreds of thousands of (b, k) pairs but a few thousand
    sums, so each sum's weights are read once. 60 pairs over 3 sums: 3 reads (of an MoE
    model: a dense model's weights do not depend on the tokens, and are read once per
    model, test_a_dense_models_weights_are_priced_once)."""
    d, w = _deployment("qwen3-30b-a3b", "h100-sxm", 2, {})
    it = iteration_model(d, w)
    reads: list[float] = []
    original = type(it.decode).weight_bytes

    def counted(self, batch):  # type: ignore[no-untyped-def]
        reads.append(batch)
        return original(self, batch)

    pairs = [(b, total - b) for total in (300, 1000, 4000) for b in range(1, 21)]
    want = [_reference_s(it, b, b * 500, k, k) for b, k in pairs]
    monkeypatch.setattr(type(it.decode), "weight_bytes", counted)
    assert [it.iteration_s(b, b * 500, k, float(k)) for b, k in pairs] == want
    assert sorted(reads) == [300, 1000, 4000]


@pytest.mark.parametrize("model, gpu, tp, hardware", CASES)
def test_prefill_weight_reads_are_estimate_prefills(model, gpu, tp, hardware):
    d, _ = _deployment(model, gpu, tp, hardware)
    for tokens in [1, 2, 3, 7, 16, 100, 511, 512, 2048, 8192, 32768]:
        assert prefill_weights_time_s(d, tokens) == estimate_prefill(d, Workload(1, tokens + 1, tokens, 1)).weights_time_s


def test_one_model_per_deployment_and_workload():
    """The tables serve every seed and replica count of a plan: the same (deployment,
    workload) gives the same model; another workload, or another deployment object,
    its own."""
    d, w = _deployment("llama-3.1-70b", "h100-sxm", 4, {})
    it = iteration_model(d, w)
    assert iteration_model(d, w) is it
    other = Workload(w.users, w.context_tokens, w.prompt_tokens + 1, w.output_tokens)
    assert iteration_model(d, other) is not it
    twin = d.replace()
    assert twin == d and iteration_model(twin, w) is not it
    assert iteration_model(twin, w).iteration_s(32, 32 * 1300, 200, 20100.0) == it.iteration_s(32, 32 * 1300, 200, 20100.0)


def test_the_least_recently_asked_model_goes_first(monkeypatch):
    """A long-lived `plan-opt serve` keeps at most MAX_MODELS models: past it the one
    asked for least recently is dropped (and built again, the same, when asked again)."""
    from solver.physics import iteration

    monkeypatch.setattr(iteration, "MAX_MODELS", 3)
    monkeypatch.setattr(iteration, "_MODELS", {})
    d, w = _deployment("llama-3.1-8b", "h100-sxm", 1, {})
    loads = [Workload(w.users, w.context_tokens, w.prompt_tokens + i, w.output_tokens) for i in range(4)]
    first, second, third = (iteration_model(d, x) for x in loads[:3])
    assert iteration_model(d, loads[0]) is first  # asked again: the most recent now
    iteration_model(d, loads[3])  # a fourth: `second` was asked for least recently
    assert iteration_model(d, loads[0]) is first and iteration_model(d, loads[2]) is third
    again = iteration_model(d, loads[1])
    assert again is not second and again.iteration_s(8, 8000, 100, 5050.0) == second.iteration_s(8, 8000, 100, 5050.0)


@pytest.mark.parametrize("model, gpu, tp, hardware", CASES)
def test_fractional_token_terms_are_the_formulas_floats_at_every_piece(model, gpu, tp, hardware):
    """The screen's fractional loads read the weights and the communication from lines
    taken once per model (IterationModel._token_lines): the same floats as
    DecodeCoefficients.weight_bytes and comm_time_from_segments, checked exactly at each
    piece's end, just either side of it, and at random loads."""
    d, w = _deployment(model, gpu, tp, hardware)
    it = iteration_model(d, w)
    c = it.decode
    rate = c.bandwidth_bytes_per_s * c.bandwidth_efficiency * c.weight_bandwidth_share
    ends = [s.upto_tokens for s in c.comm_pieces if s.upto_tokens != float("inf")]
    rng = random.Random(f"{model}:{tp}")
    loads = [e + delta for e in ends for delta in (-0.5, -1e-9, 0.0, 1e-9, 0.5)] + [rng.uniform(0, 20_000) for _ in range(300)]
    for tokens in loads:
        comm = comm_time_from_segments(c.comm_pieces, tokens) if c.comm_pieces else c.comm_fixed_s + tokens * c.comm_per_sequence_s
        assert it._fractional_token_terms(tokens) == (c.weight_bytes(tokens) / rate, comm), tokens


def test_a_dense_models_weights_are_priced_once(monkeypatch):
    """A dense model's step reads every weight whatever its tokens, so the screen's
    fractional loads (each asked once, never tabled) price the weights once per model,
    not once per load (issue 44: the rate form's screen made 231,786 weight_bytes
    calls); the iteration times stay the formula's floats."""
    d, w = _deployment("llama-3.1-70b", "h100-sxm", 4, {})
    it = IterationModel(**{f: getattr(iteration_model(d, w), f) for f in _FIELDS})
    reads: list[float] = []
    original = type(it.decode).weight_bytes

    def counted(self, batch):  # type: ignore[no-untyped-def]
        reads.append(batch)
        return original(self, batch)

    monkeypatch.setattr(type(it.decode), "weight_bytes", counted)
    rng = random.Random(11)
    for _ in range(100):
        b = rng.uniform(0.5, 300)
        ctx = b * rng.uniform(1, 3000)
        assert it.mean_iteration_s(b, ctx, 0.0, 0.0) == _reference_s(it, b, ctx, 0.0, 0.0)
    assert len(reads) == 100 + 1  # the reference's 100, and the model's one


@pytest.mark.parametrize("model, gpu, tp, hardware", CASES)
def test_a_chunks_weight_reads_are_priced_once_where_they_do_not_depend_on_it(model, gpu, tp, hardware, monkeypatch):
    """A prompt chunk's weight reads (a prefill-only pass over its tokens) are
    prefill_weights_time_s's at every chunk size; a dense model's read every weight
    whatever the chunk, so the simulator's thousands of chunk sizes price them once per
    model (issue 44: 16,944 reads in the rate form's solve), an MoE model's once per size."""
    from solver.physics import iteration

    d, w = _deployment(model, gpu, tp, hardware)
    it = IterationModel(**{f: getattr(iteration_model(d, w), f) for f in _FIELDS})
    sizes = [1, 2, 3, 7, 16, 100, 511, 512, 2048, 8192, 32768]
    want = [prefill_weights_time_s(d, n) for n in sizes]
    calls: list[int] = []

    def counted(dep, tokens):  # type: ignore[no-untyped-def]
        calls.append(tokens)
        return prefill_weights_time_s(dep, tokens)

    monkeypatch.setattr(iteration, "prefill_weights_time_s", counted)
    assert [it._prefill_weights_s(n) for n in sizes + sizes] == want + want
    moe = d.model.is_moe or d.dp_ep
    assert len(calls) == (len(sizes) if moe else 1)


def test_only_decode_only_iterations_are_tabled():
    """A mixed iteration's (decoders, chunk) pair seldom comes again (a fifth of them in
    100,000 simulated requests of the 70B chat), so iteration_s computes its terms and
    tables only the decode-only ones, by their decoders; the floats are the formula's
    either way, asked once or again."""
    d, w = _deployment("llama-3.1-70b", "h100-sxm", 4, {})
    it = IterationModel(**{f: getattr(iteration_model(d, w), f) for f in _FIELDS})
    batches = _batches("tabled", 300)
    for b, ctx, k, att in batches + batches:
        assert it.iteration_s(b, ctx, k, float(att)) == _reference_s(it, b, ctx, k, att), (b, ctx, k, att)
    assert set(it.fixed_terms) == {b for b, _, k, _ in batches if k == 0 and b > 0}


@pytest.mark.parametrize("model, gpu, tp, hardware", CASES)
@pytest.mark.parametrize("shared_prefix", [0, 600])
def test_a_decode_only_iteration_read_from_its_line_is_the_formulas_floats(model, gpu, tp, hardware, shared_prefix):
    """A decode-only iteration (the simulator's bulk decode prices a fixed batch by its
    context), read from the batch's line, is the formula's reference at k = 0 to the bit,
    whether the line is built by the call or read back, on overlapped and serial kernels
    alike."""
    d, w = _deployment(model, gpu, tp, hardware, shared_prefix)
    it = iteration_model(d, w)
    rng = random.Random(f"line:{model}:{tp}:{shared_prefix}")
    for _ in range(300):
        b = rng.choice([1, rng.randint(1, 8), rng.randint(1, 512)])
        ctx = b * rng.randint(1, 4000)
        want = _reference_s(it, b, ctx, 0, 0)
        built = b not in it.decode_lines
        assert it.iteration_s(b, ctx, 0, 0.0) == want, (b, ctx, built)
        assert it.iteration_s(b, ctx, 0, 0.0) == want, (b, ctx)  # read back
        assert b in it.decode_lines
    # a decode-only call with prefill attention given (no simulator makes one) is still the formula's
    assert it.iteration_s(16, 16_000, 0, 120.0) == _reference_s(it, 16, 16_000, 0, 120)
