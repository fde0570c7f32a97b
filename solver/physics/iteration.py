"""One engine iteration under traffic: what the simulator (solver/traffic) asks the
physics for, built from the same terms as the decode step and the prefill.

A continuous-batching engine runs one forward pass per iteration over the tokens it
scheduled: one new token for each decoding sequence, and prompt chunks beside them.
The pass is the same sum of kernels as a decode step (decode.py) and a prefill
(prefill.py), over the iteration's tokens:

    iteration = K(weights read once, matmul FLOPs of every token)
              + K(the decoders' KV bytes, their attention FLOPs) + the chunks' attention FLOPs
              + communication over every token + fixed cost (+ per decoding sequence)
              (+ per expert reached, in a prefill-only pass: Factors.prefill_expert_overhead_s)

so that a decode-only iteration is exactly `DecodeCoefficients.step_s` at the
decoders' context, and a prefill-only iteration over a whole prompt is exactly the
idle-replica TTFT of `estimate_prefill` (less its front end, `request_overhead_s`,
which the simulator adds to each request). KV bytes and attention FLOPs are linear in
the tokens attended (the simulator's bulk decode steps rely on it); a sliding-window
model's are taken at the workload's context, an approximation. K is a kernel's
max + unhidden share × min: the decode step's share where sequences decode (a chunk
rides in their step, as decode.py mixes it), the prefill's share in a prefill-only pass.
A mixed pass's GEMMs are never cheaper than its chunk's prefill-only GEMMs (and
experts reached) plus the decoders' matmuls: with the prefill's share (fitted 1) and
the decode's (0) a 230-token prompt alone at TP 8 cost more than with 32 decoders.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from solver.physics.decode import DecodeCoefficients, decode_coefficients
from solver.physics.deployment import Deployment, Workload
from solver.physics.kernels import attention_flops, prefill_expert_overhead_s
from solver.physics.prefill import estimate_prefill, prefill_routed_weights_time_s, prefill_weights_time_s

MAX_FIXED_TERMS = 1 << 15
"""Entries each of an IterationModel's tables keeps before it starts again (a bound on
memory, about 6 MB; iteration_s's holds one per decode batch, at most max_num_seqs)."""


@dataclass
class IterationModel:
    """Seconds per iteration of one replica, as `solver.traffic.simulate.IterationCost`."""

    decode: DecodeCoefficients
    kv_s_per_token: float
    """Reading one resident KV token (per TP rank), at the decode bandwidth."""
    decode_attention_s_per_token: float
    """One decoding token attending to one resident token."""
    prefill_linear_s_per_token: float
    """One prompt token's matmuls, at the prefill's rate (the format's compute share)."""
    prefill_attention_s_per_pair: float
    """One prompt token attending to one earlier position."""
    request_overhead_s: float = 0.0
    """The serving front end's time per request before its first token (no GPU
    work): added to each request's TTFT and end to end, never to an iteration."""
    cached_tokens: int = 0
    """Of each prompt, the tokens the prefix cache supplies. The simulator and the
    screen see prompts without them (traffic.requests.uncached); each iteration adds
    them back where they still cost: every decoder reads their KV, and every prompt
    token attends to them."""
    prefill_weights_s: dict[int, float] = field(default_factory=dict)
    """Prefill-only passes: reading the weights `tokens` touch (experts), by tokens."""
    deployment: Deployment | None = None
    prefill_unhidden_share: float = 0.0
    """A prefill-only pass's GEMMs: Factors.prefill_unhidden_share (decode's share otherwise)."""
    prefill_expert_s_per_token: float = 0.0
    """Of prefill_linear_s_per_token, the routed experts' grouped GEMMs: in a prefill-only
    pass they take the larger of their read and their math (expert_unhidden_share), as
    estimate_prefill prices them."""
    expert_unhidden_share: float = 0.0
    fixed_terms: dict[int, tuple[float, float, float, float]] = field(default_factory=dict)
    """iteration_s's table: a decode-only iteration's _fixed_terms by its decode sequences."""
    chunk_terms: dict[float, tuple[float, float, float]] = field(default_factory=dict)
    """_chunk_terms by prefill tokens."""
    token_terms: dict[float, tuple[float, float]] = field(default_factory=dict)
    """_token_terms by the iteration's tokens (decoders + prompt tokens)."""
    decode_lines: dict[int, Callable[[int], float]] = field(default_factory=dict)
    """iteration_s's decode-only iterations as lines in their context (_decode_line), by decode sequences."""

    def _prefill_weights_s(self, tokens: int) -> float:
        cached = self.prefill_weights_s.get(tokens)
        if cached is None:
            assert self.deployment is not None
            cached = self._dense_prefill_weights_s
            if cached is None:
                cached = prefill_weights_time_s(self.deployment, tokens)
            self.prefill_weights_s[tokens] = cached
        return cached

    @cached_property
    def _dense_prefill_weights_s(self) -> float | None:
        """A prefill-only pass's weight reads where they do not depend on its tokens (a
        dense model: every token reads every weight; None for an MoE model's experts or
        data-parallel attention), taken once for every chunk size the simulator meets."""
        d = self.deployment
        assert d is not None
        return None if d.model.is_moe or d.dp_ep else prefill_weights_time_s(d, 1)

    def _prefill_expert_s(self, tokens: int) -> float:
        if self.deployment is None:
            return 0.0
        return prefill_expert_overhead_s(self.deployment, tokens)

    @cached_property
    def _rates(self) -> tuple[float, float, bool, float]:
        """The decode's matmul rate and weight bandwidth (each the product the formula
        takes), whether kernels overlap, and the decode's unhidden share."""
        c = self.decode
        return (
            c.matmul_flops_per_s * c.compute_efficiency,
            c.bandwidth_bytes_per_s * c.bandwidth_efficiency * c.weight_bandwidth_share,
            c.overlapped,
            c.unhidden_share,
        )

    @cached_property
    def _attention_terms(self) -> tuple[float, float, float, int, float, bool, float]:
        """What _with_attention_s reads of the model, as one tuple (the simulator's hottest call)."""
        return (
            self.kv_s_per_token,
            self.decode_attention_s_per_token,
            self.prefill_attention_s_per_pair,
            self.cached_tokens,
            self.decode.step_overhead_s,
            self._rates[2],
            self._rates[3],
        )

    def iteration_s(self, decode_seqs: int, decode_context_tokens: int, prefill_tokens: int, prefill_attention_tokens: float) -> float:
        """mean_iteration_s at whole loads, a decode-only iteration's terms of decode_seqs
        alone read from a table (the simulator asks for the same few hundred batches
        hundreds of thousands of times; a mixed iteration's (decode_seqs, prefill_tokens)
        is computed, as four in five of them are new and a table entry cost more than it
        saved); the same operations in the same order, so the same float bit for bit
        (tests/physics/test_iteration_table.py)."""
        b, k = decode_seqs, prefill_tokens
        if b <= 0 and k <= 0:
            return 0.0
        if k:  # a prompt chunk: its (b, k) seldom comes again (a fifth of them in 100,000 requests)
            return self._with_attention_s(self._fixed_terms(b, k), b, decode_context_tokens, k, prefill_attention_tokens)
        if not prefill_attention_tokens:  # decode only, as the simulator asks (its most frequent call)
            line = self.decode_lines.get(b)
            return (self._decode_line(b) if line is None else line)(decode_context_tokens)
        return self._with_attention_s(self._decode_fixed_terms(b), b, decode_context_tokens, 0, prefill_attention_tokens)

    def _decode_fixed_terms(self, b: int) -> tuple[float, float, float, float]:
        """_fixed_terms(b, 0), kept by b (a decode-only iteration's)."""
        fixed = self.fixed_terms.get(b)
        if fixed is None:
            if len(self.fixed_terms) >= MAX_FIXED_TERMS:
                self.fixed_terms.clear()
            fixed = self.fixed_terms[b] = self._fixed_terms(b, 0)
        return fixed

    def _decode_line(self, decode_seqs: int) -> Callable[[int], float]:
        """A decode-only iteration of `decode_seqs` (whole, at least 1) sequences as a
        function of their summed context alone, its terms of the batch bound once and
        kept by the batch (the simulator's bulk decode prices a fixed batch at two or three
        contexts, a replica's stretches by the hundred thousand: a fifth less a call).
        _with_attention_s at k = 0, written out: the same operations in the same order,
        so the same float bit for bit (kernel_time_s's max and min of kv = ctx·a and
        attend = ctx·c, ctx ≥ 0, are ctx times the larger and the smaller of a and c:
        rounding keeps the order; (0 + 0·cached)·pair is 0·pair)."""
        b = decode_seqs
        line = self.decode_lines.get(b)
        if line is not None:
            return line
        gemm_s, comm_s, setup_s, sequences_s = self._decode_fixed_terms(b)
        kv_per_token_s, attend_per_token_s, pair_s, cached, overhead_s, overlapped, share = self._attention_terms
        extra = b * cached
        zero_s = 0.0 * pair_s
        if overlapped:
            big, small = (attend_per_token_s, kv_per_token_s) if attend_per_token_s > kv_per_token_s else (kv_per_token_s, attend_per_token_s)

            def line(ctx_tokens: int) -> float:
                ctx = ctx_tokens + extra
                return gemm_s + (ctx * big + share * (ctx * small) + zero_s) + comm_s + overhead_s + setup_s + sequences_s

        else:

            def line(ctx_tokens: int) -> float:
                ctx = ctx_tokens + extra
                return gemm_s + (ctx * kv_per_token_s + ctx * attend_per_token_s + zero_s) + comm_s + overhead_s + setup_s + sequences_s

        if len(self.decode_lines) >= MAX_FIXED_TERMS:
            self.decode_lines.clear()
        self.decode_lines[b] = line
        return line

    def mean_iteration_s(self, decode_seqs: float, decode_context_tokens: float, prefill_tokens: float, prefill_attention_tokens: float) -> float:
        """The same cost at average (fractional) loads, as the traffic screen reads it."""
        b, k = decode_seqs, prefill_tokens
        if b <= 0 and k <= 0:
            return 0.0
        return self._with_attention_s(self._fixed_terms(b, k), b, decode_context_tokens, k, prefill_attention_tokens)

    def _with_attention_s(
        self, fixed: tuple[float, float, float, float], b: float, decode_context_tokens: float, k: float, prefill_attention_tokens: float
    ) -> float:
        """The iteration: the fixed terms and the attention over the context, summed in
        the formula's order (kernel_time_s written out: max(kv, attend) is
        `attend if attend > kv else kv`, min `attend if attend < kv else kv`)."""
        gemm_s, comm_s, setup_s, sequences_s = fixed
        kv_per_token_s, attend_per_token_s, pair_s, cached, overhead_s, overlapped, share = self._attention_terms
        ctx = decode_context_tokens + b * cached
        kv_s = ctx * kv_per_token_s
        attend_s = ctx * attend_per_token_s
        if overlapped:
            kernel_s = (attend_s if attend_s > kv_s else kv_s) + share * (attend_s if attend_s < kv_s else kv_s)
        else:
            kernel_s = kv_s + attend_s
        attention_s = kernel_s + (prefill_attention_tokens + k * cached) * pair_s
        return gemm_s + attention_s + comm_s + overhead_s + setup_s + sequences_s

    def _chunk_terms(self, k: float) -> tuple[float, float, float]:
        """A prompt chunk of k tokens priced as a prefill-only pass: its matmuls' seconds,
        its GEMMs (the weights it reads against those matmuls, at the prefill's unhidden
        share) and its expert setup. A function of k alone, kept by k: the screen prices
        one mean prompt at every load, the simulator a few thousand chunk sizes."""
        got = self.chunk_terms.get(k)
        if got is None:
            chunk = max(1, round(k))
            read_s, math_s, share = self._prefill_weights_s(chunk), k * self.prefill_linear_s_per_token, self.prefill_unhidden_share
            routed_s = prefill_routed_weights_time_s(self.deployment, chunk) if self.prefill_expert_s_per_token and self.deployment else 0.0
            expert_s = k * self.prefill_expert_s_per_token
            if not self._rates[2]:
                alone_s = read_s + math_s
            else:  # kernel_time_s written out: the dense GEMMs', then the experts'
                dense_read_s, dense_math_s = read_s - routed_s, math_s - expert_s
                alone_s = (dense_math_s if dense_math_s > dense_read_s else dense_read_s) + share * (
                    dense_math_s if dense_math_s < dense_read_s else dense_read_s
                )
                alone_s += (expert_s if expert_s > routed_s else routed_s) + self.expert_unhidden_share * (
                    expert_s if expert_s < routed_s else routed_s
                )
            if len(self.chunk_terms) >= MAX_FIXED_TERMS:
                self.chunk_terms.clear()
            got = self.chunk_terms[k] = (math_s, alone_s, self._prefill_expert_s(chunk))
        return got

    def _token_terms(self, tokens: float) -> tuple[float, float]:
        """The weights' seconds (of the experts `tokens` reach) and the communication's,
        kept by the iteration's token count: the costly part of _fixed_terms, and a function
        of b + k alone, so a few thousand entries serve the simulator's many (b, k) pairs
        (a day's replay asked for 494,000 pairs past the (b, k) table). Whole counts only:
        the screen's fractional loads are each asked once."""
        if type(tokens) is not int:
            return self._fractional_token_terms(tokens)
        got = self.token_terms.get(tokens)
        if got is None:
            if len(self.token_terms) >= MAX_FIXED_TERMS:
                self.token_terms.clear()
            got = self.token_terms[tokens] = self._fractional_token_terms(tokens)
        return got

    @cached_property
    def _token_lines(self) -> tuple[float | None, tuple[tuple[float, float, float, float], ...], float, float, float]:
        """What _token_terms reads, taken once per model: the weights' seconds where they
        do not depend on the tokens (a dense model: every token reads every weight; None
        for an MoE model's experts), and the communication's pieces, each with the floor
        comm_time_from_segments carries into it (the most the pieces before cost at their
        ends), then the last piece's floor, fixed and per-token terms ((0, fixed, per
        token) for the single line)."""
        c = self.decode
        weights_s = c.weight_bytes(1) / self._rates[1] if c.num_experts == 0 else None
        if not c.comm_pieces:
            return weights_s, (), 0.0, c.comm_fixed_s, c.comm_per_sequence_s
        pieces, floor = [], 0.0
        for seg in c.comm_pieces:
            pieces.append((seg.upto_tokens, seg.fixed_s, seg.per_token_s, floor))
            floor = max(floor, seg.time_s(seg.upto_tokens))
        last = c.comm_pieces[-1]
        return weights_s, tuple(pieces), floor, last.fixed_s, last.per_token_s

    def _fractional_token_terms(self, tokens: float) -> tuple[float, float]:
        """_token_terms computed (at a fractional count, the screen's mean loads, each asked
        once, not kept): the same floats as weight_bytes and comm_time_from_segments, from
        the per-model lines (max(floor, x) is `x if x > floor else floor`)."""
        weights_s, pieces, floor, fixed_s, per_token_s = self._token_lines
        if weights_s is None:
            weights_s = self.decode.weight_bytes(tokens) / self._rates[1]
        if not pieces:
            return weights_s, fixed_s + tokens * per_token_s
        for upto, piece_fixed_s, piece_per_token_s, before in pieces:
            if tokens < upto:
                comm_s = piece_fixed_s + piece_per_token_s * tokens
                return weights_s, comm_s if comm_s > before else before
        comm_s = fixed_s + per_token_s * tokens
        return weights_s, comm_s if comm_s > floor else floor

    def _fixed_terms(self, b: float, k: float) -> tuple[float, float, float, float]:
        """The terms that depend on the batch and the chunk alone: the GEMMs, the
        communication, a prefill-only pass's expert setup, the per-sequence overhead.
        Each kernel is kernel_time_s written out (max(m, c) is `c if c > m else m`,
        min(m, c) `c if c < m else m`, as the builtins pick)."""
        c = self.decode
        rate, _, overlapped, share = self._rates
        tokens = b + k  # _token_terms' and _chunk_terms' tables read here first (a mixed iteration's every call)
        got = self.token_terms.get(tokens) if type(tokens) is int else None
        weights_s, comm_s = self._token_terms(tokens) if got is None else got
        if b > 0:
            decoders_s = b * c.linear_flops_per_sequence / rate
            linear_s = decoders_s + k * self.prefill_linear_s_per_token
            if overlapped:
                gemm_s = (linear_s if linear_s > weights_s else weights_s) + share * (linear_s if linear_s < weights_s else weights_s)
            else:
                gemm_s = weights_s + linear_s
            setup_s = 0.0  # a prefill-only pass's cost per expert reached (estimate_prefill's)
            if k > 0:
                # the chunk priced as a prefill-only pass of its own, plus the decoders' matmuls:
                # a pass never costs less when decoders join a prompt (monotone in b and k)
                chunk = self.chunk_terms.get(k)
                _, alone_s, chunk_setup_s = self._chunk_terms(k) if chunk is None else chunk
                priced_s = alone_s + chunk_setup_s + decoders_s
                if priced_s > gemm_s:  # max(gemm_s, priced_s)
                    gemm_s = priced_s
        else:  # a prefill-only pass: the chunk's own GEMMs (the same kernel of the same reads and matmuls)
            _, gemm_s, setup_s = self._chunk_terms(k)
        return gemm_s, comm_s, setup_s, b * c.sequence_overhead_s


_MODELS: dict[tuple[int, Workload], tuple[Deployment, IterationModel]] = {}
_MODELS_LOCK = threading.Lock()
MAX_MODELS = 128
"""Models iteration_model keeps, the least recently asked for dropped first (a bound on
memory in a long-lived `plan-opt serve`; one solve of the 70B chat asks for 69)."""


def iteration_model(d: Deployment, w: Workload) -> IterationModel:
    """The iteration costs of deployment `d` for prompts and contexts like `w`'s: one
    model per (deployment, workload), so that its tables (iteration_s's, the prefill
    weights') serve every seed, replica count and screen of a plan. A function of `d`
    and `w`'s fields alone (the model reads no traffic lengths), its deployment kept
    beside it so that the id in the key stays its own."""
    key = (id(d), w)
    with _MODELS_LOCK:
        got = _MODELS.pop(key, None)
        if got is not None and got[0] is d:
            _MODELS[key] = got  # the most recent now
            return got[1]
    model = _iteration_model(d, w)
    with _MODELS_LOCK:
        while len(_MODELS) >= MAX_MODELS:
            del _MODELS[next(iter(_MODELS))]
        _MODELS[key] = (d, model)
    return model


def _iteration_model(d: Deployment, w: Workload) -> IterationModel:
    ctx = max(1, w.context_tokens)
    dec = decode_coefficients(d, ctx)
    bw = dec.bandwidth_bytes_per_s * dec.bandwidth_efficiency
    rate = dec.matmul_flops_per_s * dec.compute_efficiency
    pre = estimate_prefill(d, w)
    cached = pre.cached_tokens
    p = max(1, w.prompt_tokens)
    pairs = p * (p + 1) / 2
    new = max(1, p - cached)
    model = IterationModel(
        decode=dec,
        kv_s_per_token=dec.kv_bytes_per_sequence / ctx / (bw * dec.attention_bandwidth_share),
        decode_attention_s_per_token=dec.attention_flops_per_sequence / ctx / rate,
        prefill_linear_s_per_token=pre.linear_time_s / new,
        prefill_attention_s_per_pair=attention_flops(d, p) / pairs / pre.attention_flops_per_s,
        request_overhead_s=pre.request_overhead_s,
        cached_tokens=cached,
        deployment=d,
        prefill_unhidden_share=pre.unhidden_share,
        prefill_expert_s_per_token=pre.expert_time_s / new,
        expert_unhidden_share=pre.expert_unhidden_share,
    )
    model.prefill_weights_s[new] = pre.weights_time_s
    return model
