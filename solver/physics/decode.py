"""Step 2: memory bandwidth in the decode phase.

Each decode step produces one token for every sequence in the batch. It reads the
weights the step touches — for an MoE model only the experts the batch's tokens are
routed to; of the input embedding table only a row per token — and every resident
KV byte. A step is a sum of kernels, each bound by its own limit:

    step = max(weight bytes / (bandwidth × efficiency × format share), linear FLOPs / (peak × efficiency))
         + max(KV bytes / (bandwidth × efficiency), attention FLOPs / (peak × efficiency))
         + communication + fixed cost (per step, and per layer)

The seed's TPOT = model bytes / bandwidth is the batch-1, zero-context case with the
fixed costs at zero. Pipeline stages run one after another for a token, so pp adds
memory, not speed: each TP rank reads its 1/(tp·pp) share in each of pp stages.

A user's TTFT under load counts the prompts queued ahead of its own (a closed loop of
the replica's users; `ttft_under_load_s`); one prompt on an idle replica is prefill.py's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from solver.bisect import largest_true
from solver.physics.compute import matmul_dtype, matmul_flops_per_s
from solver.physics.deployment import Deployment, Workload, accepted_tokens, cached_prompt_tokens
from solver.physics.interconnect import CommEstimate, CommSegment, comm_time_from_segments, estimate_comm, step_comm
from solver.physics.kept import Kept
from solver.physics.kernels import (
    attention_flops,
    attention_flops_per_token,
    bandwidth_share,
    busiest_expert_share,
    expert_groups,
    expert_hit_fraction,
    expert_imbalance,
    fixed_step_s,
    kernel_time_s,
    linear_flops,
    overlaps,
    prefill_expert_overhead_s,
    routed_active_params,
    split_weight_bytes,
)
from solver.physics.memory import kv_bytes_per_sequence, kv_shard_fraction
from solver.physics.prefill import PrefillEstimate, estimate_prefill
from solver.physics.prompt_queue import queued_prompt_s
from solver.physics.weights import tp_rank_bytes


@dataclass(frozen=True)
class DecodeCoefficients:
    """A decode step's pieces as functions of the batch, per TP rank: what the
    estimate at one batch and the solver's search over batches both read, so the
    two can never disagree."""

    context_tokens: int
    dense_weight_bytes: float
    """Weights every step reads (all but the routed experts and the input embedding
    table), per TP rank."""
    routed_weight_bytes: float
    """All routed experts, per TP rank; a step reads the share its batch hits."""
    num_experts: int
    experts_per_token: int
    kv_bytes_per_sequence: float
    """One sequence at full context, per TP rank."""
    linear_flops_per_sequence: float
    """One token's matmul FLOPs (2 × active parameters), per TP rank."""
    attention_flops_per_sequence: float
    """One token attending to its context, per TP rank."""
    bandwidth_bytes_per_s: float
    bandwidth_efficiency: float
    matmul_flops_per_s: float
    compute_dtype: str
    compute_efficiency: float
    comm_fixed_s: float
    """Communication latency per step (independent of the batch)."""
    comm_per_sequence_s: float
    weight_bandwidth_share: float = 1.0
    """Share of the 16-bit GEMV bandwidth the weight format's kernels reach."""
    attention_bandwidth_share: float = 1.0
    """Of the bandwidth the weight reads reach, the share attention's KV reads reach (Factors)."""
    overlapped: bool = True
    """A kernel takes the larger of its memory and compute times (True) or their sum."""
    unhidden_share: float = 0.0
    """Overlapped: of the shorter of the two, the share added to the larger (Factors)."""
    step_overhead_s: float = 0.0
    """Fixed cost of every step: per step plus per layer."""
    sequence_overhead_s: float = 0.0
    """Host cost per decoding sequence per step (sampling, detokenising)."""
    prefill_tokens_per_sequence: float = 0.0
    """Continuous batching: prompt tokens mixed into each step per decoding sequence —
    every request brings `prompt` tokens over its `output` steps (0 when isolated)."""
    prefill_flops_per_token: float = 0.0
    """One prompt token's prefill FLOPs, per TP rank (linear + average attention)."""
    prompt_tokens: int = 0
    """The tokens of the workload's prompt to prefill: all but what the prefix cache
    supplies (0: no workload given, so no TTFT under load)."""
    output_tokens: int = 0
    prefill_gpu_s: float = 0.0
    """One prompt alone on an idle replica, the GPUs' time (estimate_prefill's TTFT less
    its front end)."""
    request_overhead_s: float = 0.0
    """The serving front end's time per request, in TTFT only (never in a step)."""
    prefill_servers: int = 1
    """Prompts prefilled at once: one, or each data-parallel attention rank its own."""
    chunk_expert_setup_s: float = 0.0
    """Continuous batching: the cost per routed expert reached of a step that carries one
    of the prompt's chunks (Factors.prefill_expert_overhead_s), in the prompt's time
    (its TTFT, its share of the replica) and not in the decoders' step: the fit half's
    batched MoE TPOTs do not show it, its MoE prefills do."""
    prefill_budget_tokens: int = 0
    """Tokens a step may process (the engine's max_num_batched_tokens); 0 when isolated."""
    separate_prefill: bool = False
    """Continuous batching on an engine that runs a prompt's chunk as a pass of its own
    (Engine.prefill_schedule "separate": SGLang without enable_mixed_chunk): the decoders
    wait for the whole pass, its own read of the weights (of an MoE model, every expert
    its tokens reach), its launches, all-reduces and expert setup (prompt_pass_s)."""
    prefill_unhidden_share: float = 0.0
    """A prompt-only pass's GEMMs: Factors.prefill_unhidden_share, as in prefill.py."""
    chunk_flops_per_token: float = 0.0
    """One token of a prompt's own chunk, the FLOPs on the GPU that carries it, where not
    prefill_flops_per_token (0): under data-parallel attention the chunk's dense matmuls
    and attention run whole on its rank, only its routed experts spread over tp."""
    chunk_comm_tokens: float = 1.0
    """A chunk token's weight in the step's communication, in replica tokens: tp under
    data-parallel attention (its rank sends every token to its experts, as a prefill's)."""
    comm_pieces: tuple[CommSegment, ...] = ()
    """The communication over the step's tokens, piecewise linear: the all-reduce
    algorithm changes with the message (one-shot, two-shot, NVLS, ring). Empty: the
    single line comm_fixed_s + tokens × comm_per_sequence_s."""
    draft_tokens: int = 0
    """Speculative decoding: tokens drafted per step, k (0: none)."""
    acceptance: tuple[float, ...] = ()
    """α_1 … α_k: the chance each drafted token is kept given the ones before it were."""
    draft_read_bytes: float = 0.0
    """Bytes one drafted token reads of the draft's weights, per TP rank."""
    draft_kv_bytes_per_sequence: float = 0.0
    """The draft's KV of one sequence at full context, per TP rank (read per drafted token)."""
    draft_fixed_s: float = 0.0
    """Fixed cost of one draft pass (its layers' launches)."""
    draft_flops_per_sequence: float = 0.0
    """FLOPs one drafted token costs on a TP rank, 2 × the draft's active parameters / tp."""
    draft_comm_fixed_s: float = 0.0
    """One draft pass's all-reduces under TP: its layers' share of the step's (fixed part)."""
    draft_comm_per_sequence_s: float = 0.0
    draft_round_read_bytes: float = 0.0
    """Bytes the draft reads once a round on each TP rank (EAGLE-3's 3h → h fc, first pass
    only; replicated, not split)."""
    draft_round_flops_per_sequence: float = 0.0
    expert_groups: int = 1
    """GPUs the routed experts are dealt over whole (expert parallelism); a step reads
    the busiest one's (busiest_expert_share). 1: TP splits every expert over every GPU."""
    _steps: dict[tuple[int, float | None], float] = field(default_factory=dict, init=False, compare=False, repr=False)
    """(batch, prompt tokens) → `_step`, kept: a TTFT under load reads the same chunk's step
    three times (the prompt's capacity share, its own service, the decode steps' mean
    behind its TPOT), and the TPOT and TTFT caps' bisections probe the same batches.
    Not copied by dataclasses.replace: changed coefficients start empty."""

    @property
    def flops_per_sequence(self) -> float:
        return self.linear_flops_per_sequence + self.attention_flops_per_sequence

    def weight_bytes(self, batch: float) -> float:
        """The dense weights and the routed experts the batch's tokens reach, on the GPU
        the step waits for (under expert parallelism the busiest)."""
        hit = busiest_expert_share(self.num_experts, self.experts_per_token, batch, self.expert_groups)
        return self.dense_weight_bytes + self.routed_weight_bytes * hit

    def _bandwidth(self) -> float:
        return self.bandwidth_bytes_per_s * self.bandwidth_efficiency

    def _flops_rate(self) -> float:
        return self.matmul_flops_per_s * self.compute_efficiency

    def weights_time_s(self, batch: int, prefill_tokens: float | None = 0.0) -> float:
        """The step's weight reads: of an MoE model the routed experts that its `batch`
        decoders and its prompt tokens reach together (a chunk of a few hundred tokens
        reaches nearly every expert, as a prefill does: iteration.py reads them alike)."""
        tokens = batch + (self._prefill_tokens(batch, prefill_tokens) if prefill_tokens != 0.0 else 0.0)
        return self.weight_bytes(tokens) / (self._bandwidth() * self.weight_bandwidth_share)

    def kv_time_s(self, batch: int) -> float:
        return batch * self.kv_bytes_per_sequence / (self._bandwidth() * self.attention_bandwidth_share)

    def memory_time_s(self, batch: int) -> float:
        return self.weights_time_s(batch) + self.kv_time_s(batch)

    def _prefill_tokens(self, batch: int, prefill_tokens: float | None) -> float:
        return batch * self.prefill_tokens_per_sequence if prefill_tokens is None else prefill_tokens

    def linear_compute_time_s(self, batch: int, prefill_tokens: float | None = None) -> float:
        """The batch's matmuls plus the prompt tokens mixed into the step."""
        k = self._prefill_tokens(batch, prefill_tokens)
        return (batch * self.linear_flops_per_sequence + k * self.prefill_flops_per_token) / self._flops_rate()

    def attention_compute_time_s(self, batch: int) -> float:
        return batch * self.attention_flops_per_sequence / self._flops_rate()

    def compute_time_s(self, batch: int, prefill_tokens: float | None = None) -> float:
        return self.linear_compute_time_s(batch, prefill_tokens) + self.attention_compute_time_s(batch)

    def _kernel(self, memory_s: float, compute_s: float) -> float:
        return kernel_time_s(memory_s, compute_s, self.overlapped, self.unhidden_share)

    def gemm_time_s(self, batch: int, prefill_tokens: float | None = None) -> float:
        """The matmul kernels: each reads its weights once for the whole batch, and of an
        MoE model the experts the step's prompt tokens reach as well as its decoders'."""
        return self._kernel(self.weights_time_s(batch, prefill_tokens), self.linear_compute_time_s(batch, prefill_tokens))

    def attention_time_s(self, batch: int) -> float:
        """The attention kernels: each sequence reads its own KV."""
        return self._kernel(self.kv_time_s(batch), self.attention_compute_time_s(batch))

    def comm_time_s(self, batch: int, prefill_tokens: float | None = None) -> float:
        k = self._prefill_tokens(batch, prefill_tokens)
        if self.comm_pieces:
            return comm_time_from_segments(self.comm_pieces, batch + k)
        return self.comm_fixed_s + (batch + k) * self.comm_per_sequence_s

    def step_s(self, batch: int, prefill_tokens: float | None = None) -> float:
        """A step carrying `prefill_tokens` prompt tokens; by default the mean step of
        continuous batching: a prompt arrives whole in chunks of what the step's token
        budget leaves, so a share f = (mean prompt tokens a step) / chunk of the steps
        carry a chunk and the rest none — the mean of the two steps, not the step at the
        mean (a chunk's FLOPs do not hide under the weight read the way a few tokens do)."""
        if prefill_tokens is None and self.separate_prefill:
            got = self._steps.get((batch, -1.0))  # -1: the mean step with its share of passes
            if got is None:
                passes = self.pass_mix(batch)
                got = self._step(batch, 0.0) + (passes[0] * self.prompt_pass_s(passes[1]) if passes else 0.0)
                self._steps[(batch, -1.0)] = got
            return got
        mix = self.chunk_mix(batch) if prefill_tokens is None else None
        if mix is not None:
            f, chunk = mix
            return (1 - f) * self._step(batch, 0.0) + f * self._step(batch, chunk)
        return self._step(batch, prefill_tokens)

    def pass_mix(self, batch: int) -> tuple[float, float] | None:
        """Prompt passes apart (separate_prefill): (prompt passes per decode step, tokens
        per pass); None when isolated or mixed. The engine runs one pass of every prompt
        waiting, up to its token budget, before the next decode step (SGLang's
        get_new_batch_prefill): with λ prompts arriving a step, taken as Poisson, a step
        is followed by a pass when one or more arrived, 1 − e^(−λ) of them, and by as many
        as the budget needs when their tokens overflow it. A closed loop of few users
        gets a pass per prompt; a saturated one a pass a step, of every arrival."""
        if not (self.separate_prefill and self.prefill_tokens_per_sequence and self.prefill_budget_tokens):
            return None
        tokens = batch * self.prefill_tokens_per_sequence  # prompt tokens arriving a step
        arrivals = tokens / max(1, self.prompt_tokens or self.prefill_budget_tokens)
        passes = max(-math.expm1(-arrivals), tokens / self.prefill_budget_tokens)
        return passes, tokens / passes

    def prompt_pass_s(self, tokens: float) -> float:
        """A pass over `tokens` of prompts with no decoders in it, as a prefill: its weight
        reads (the experts its tokens reach) and matmuls at the prefill's unhidden share,
        its all-reduces and the fixed cost. Not the cost per expert reached of a lone
        prompt (chunk_expert_setup_s): charged to every pass, the fit half's batched
        MoE TPOTs went from 13.9 to 22.6 % median (2026-12-05; without it 12.8 %)."""
        gemm = kernel_time_s(
            self.weights_time_s(0, tokens), tokens * self.prefill_flops_per_token / self._flops_rate(), self.overlapped, self.prefill_unhidden_share
        )
        comm = comm_time_from_segments(self.comm_pieces, tokens) if self.comm_pieces else self.comm_fixed_s + tokens * self.comm_per_sequence_s
        return gemm + comm + self.step_overhead_s

    def chunk_mix(self, batch: int) -> tuple[float, int] | None:
        """Continuous batching: (share of steps that carry a prompt chunk, the chunk's
        tokens), or None when every step carries prompt tokens (the mean is a chunk or more)
        or none do (isolated), or prompts run in passes of their own (pass_mix)."""
        if not (self.prefill_tokens_per_sequence and self.prefill_budget_tokens) or self.separate_prefill:
            return None
        mean = batch * self.prefill_tokens_per_sequence
        chunk = min(max(1, self.prefill_budget_tokens - batch), self.prompt_tokens or self.prefill_budget_tokens)
        return (mean / chunk, chunk) if mean < chunk else None

    def _step(self, batch: int, prefill_tokens: float | None = None) -> float:
        key = (batch, prefill_tokens)
        got = self._steps.get(key)
        if got is None:
            got = self._steps[key] = (
                self.gemm_time_s(batch, prefill_tokens)
                + self.attention_time_s(batch)
                + self.comm_time_s(batch, prefill_tokens)
                + self.step_overhead_s
                + batch * self.sequence_overhead_s
            )
        return got

    def chunk_step_s(self, batch: int, tokens: int) -> float:
        """A step carrying `tokens` of one prompt beside `batch` decoders, on the GPU that
        carries them: `_step`, but with the chunk's FLOPs and communication where they
        fall (one rank under data-parallel attention, `chunk_flops_per_token`)."""
        if not self.chunk_flops_per_token:
            return self._step(batch, tokens)
        linear = (batch * self.linear_flops_per_sequence + tokens * self.chunk_flops_per_token) / self._flops_rate()
        comm_tokens = batch + tokens * self.chunk_comm_tokens
        comm = (
            comm_time_from_segments(self.comm_pieces, comm_tokens) if self.comm_pieces else self.comm_fixed_s + comm_tokens * self.comm_per_sequence_s
        )
        gemm = self._kernel(self.weights_time_s(batch, tokens), linear)
        return gemm + self.attention_time_s(batch) + comm + self.step_overhead_s + batch * self.sequence_overhead_s

    def tpot_s(self, batch: int) -> float:
        """Time per output token: a step per token, or with speculative decoding a draft
        of k tokens and one verification step per 1 + Σ_k Π_{j≤k} α_j tokens."""
        if not self.draft_tokens:
            return self.step_s(batch)
        return (self.verify_step_s(batch) + self.draft_s(batch)) / self.expected_tokens

    @property
    def expected_tokens(self) -> float:
        return accepted_tokens(self.acceptance) if self.draft_tokens else 1.0

    def decode_only_s(self, batch: int) -> float:
        """Time per output token with no prompt tokens mixed in (steady decode, for the
        cost of a token): a step, or a speculative round over the tokens it yields."""
        if not self.draft_tokens:
            return self.step_s(batch, prefill_tokens=0)
        return (self.verify_step_s(batch, prefill_tokens=0) + self.draft_s(batch)) / self.expected_tokens

    def verify_step_s(self, batch: int, prefill_tokens: float | None = None) -> float:
        """The target's step over k + 1 tokens of every sequence: one read of the weights
        (the experts all of its tokens hit), k + 1 times the matmul and attention FLOPs and
        the all-reduced activations, every sequence's KV read once."""
        n = batch * (self.draft_tokens + 1)
        k = self._prefill_tokens(batch, prefill_tokens)
        linear = (n * self.linear_flops_per_sequence + k * self.prefill_flops_per_token) / self._flops_rate()
        gemm = self._kernel(self.weights_time_s(n, k), linear)
        attention = self._kernel(self.kv_time_s(batch), n * self.attention_flops_per_sequence / self._flops_rate())
        comm = comm_time_from_segments(self.comm_pieces, n + k) if self.comm_pieces else self.comm_fixed_s + (n + k) * self.comm_per_sequence_s
        return gemm + attention + comm + self.step_overhead_s + batch * self.sequence_overhead_s

    def draft_s(self, batch: int) -> float:
        """k draft passes, each one forward of the draft over the batch: its weights read
        once against its FLOPs for every sequence (the larger sets the time, as a step's
        matmuls), every sequence's draft KV, its launches and, under TP, its layers'
        all-reduces; and once a round what the first pass alone reads (EAGLE-3's fc)."""
        bw = self._bandwidth()
        gemm = self._kernel(self.draft_read_bytes / bw, batch * self.draft_flops_per_sequence / self._flops_rate())
        kv = batch * self.draft_kv_bytes_per_sequence / (bw * self.attention_bandwidth_share)
        comm = self.draft_comm_fixed_s + batch * self.draft_comm_per_sequence_s
        once = self._kernel(self.draft_round_read_bytes / bw, batch * self.draft_round_flops_per_sequence / self._flops_rate())
        return self.draft_tokens * (gemm + kv + self.draft_fixed_s + comm) + once

    def prompt_service_s(self, batch: int) -> float:
        """The GPUs' time for one prompt at this load: its chunks (continuous batching),
        never less than the prompt alone on an idle replica (decoders beside it only take
        from it), or one pass of its own (isolated)."""
        if not self.prefill_budget_tokens:
            return self.prefill_gpu_s
        return max(self.prefill_gpu_s, self.chunked_prompt_s(batch))

    def chunked_prompt_s(self, batch: int) -> float:
        """A prompt in chunks of what the step's token budget leaves beside `batch`
        decoders, one chunk per step: a prompt of one chunk or less is one step carrying
        it; past one, the last partial chunk costs its share of a full chunk's step (the
        rest of that step's budget goes to the next queued prompt), so one more token
        never adds a whole step."""
        chunk = max(1, self.prefill_budget_tokens - batch)
        steps = self.prompt_tokens / chunk if self.prompt_tokens > chunk else 1.0
        return steps * (self.chunk_step_s(batch, min(chunk, self.prompt_tokens)) + self.chunk_expert_setup_s)

    def delay_s(self, batch: int) -> float:
        """What a request spends outside the prompt queue: its later tokens' steps and the front end."""
        return max(0, self.output_tokens - 1) * self.tpot_s(batch) + self.request_overhead_s

    def prompt_capacity_s(self, batch: int) -> float:
        """The replica time one prompt takes from the others: its share of the steps'
        token budget (several prompts share a step's chunk), or its own pass (isolated);
        over the ranks that prefill at once."""
        if self.prefill_budget_tokens:
            chunk = max(1, self.prefill_budget_tokens - batch)
            s = self.prompt_tokens / chunk * (self.chunk_step_s(batch, min(chunk, self.prompt_tokens)) + self.chunk_expert_setup_s)
        else:
            s = self.prefill_gpu_s
        return s / max(1, self.prefill_servers)

    def ttft_under_load_s(self, batch: int) -> float:
        """TTFT with `batch` users on the replica, each sending its next request when its
        last one ends (a closed loop): the wait for the prompts queued ahead of it
        (`queued_prompt_s` at each prompt's capacity share, less its own), its own
        prompt's time, and the front end."""
        capacity = self.prompt_capacity_s(batch)
        wait = queued_prompt_s(capacity, batch, self.delay_s(batch)) - capacity
        return max(0.0, wait) + self.prompt_service_s(batch) + self.request_overhead_s

    def max_batch(self, max_tpot_s: float, upper: int) -> int:
        """Largest batch (≤ upper) whose step meets `max_tpot_s`; 0 if none. Every
        term grows with the batch, so bisect."""
        return largest_true(lambda b: self.tpot_s(b) <= max_tpot_s, upper)


def decode_coefficients(d: Deployment, context_tokens: int, w: Workload | None = None, prefill: PrefillEstimate | None = None) -> DecodeCoefficients:
    """`w` with batching "continuous" mixes its prompts' prefill into the steps.
    `prefill`: `estimate_prefill(d, w)` where the caller has it already (the solver's
    physics of a shape), so that it is not derived twice."""
    fixed, kv_share = _split_terms(d)
    comm0, comm_per_sequence_s = fixed["comm_fixed_s"], fixed["comm_per_sequence_s"]
    return DecodeCoefficients(
        context_tokens=context_tokens,
        kv_bytes_per_sequence=kv_bytes_per_sequence(d.model, d.kv, context_tokens) * kv_share,
        attention_flops_per_sequence=attention_flops_per_token(d, context_tokens) / d.kv_ranks,
        **fixed,
        **_prompts(d, w, prefill),
        **_continuous(d, w),
        **_speculation(d, context_tokens, comm0, comm_per_sequence_s),
    )


_SPLIT_TERMS: Kept[tuple[dict, float]] = Kept()
"""`_split_terms` by the deployment (physics/kept.py): the explanation re-derives every
option's coefficients at each context it moves, and these terms read the split alone."""


def _split_terms(d: Deployment) -> tuple[dict, float]:
    """The coefficients that read the deployment alone, not the context or the workload
    (memoised, `_SPLIT_TERMS`), and the share of a sequence's KV on one TP rank."""
    return _SPLIT_TERMS.get((d,), lambda: _derive_split_terms(d))


def _derive_split_terms(d: Deployment) -> tuple[dict, float]:
    m = d.model
    dense, routed = split_weight_bytes(d)
    comm0, comm_per_sequence_s, comm_pieces = step_comm(d)
    fixed = {
        # DP attention: the dense layers whole on each GPU; TP: split but for the replicated tensors
        "dense_weight_bytes": dense if d.dp_ep else tp_rank_bytes(d, dense),
        "routed_weight_bytes": routed / d.tp,
        "num_experts": m.num_experts,
        "experts_per_token": m.experts_per_token,
        "expert_groups": expert_groups(d),
        # under expert parallelism the step waits for the busiest GPU's experts
        "linear_flops_per_sequence": 2.0 * (m.active_params + routed_active_params(m) * (expert_imbalance(d) - 1)) / d.tp,
        "bandwidth_bytes_per_s": d.device.memory_bandwidth_bytes_per_s,
        "bandwidth_efficiency": d.factors.bandwidth_efficiency,
        "attention_bandwidth_share": d.factors.attention_bandwidth_share,
        "matmul_flops_per_s": matmul_flops_per_s(d.device, d.weights, d.engine),
        "compute_dtype": matmul_dtype(d.device, d.weights),
        "compute_efficiency": d.factors.compute_efficiency,
        "comm_fixed_s": comm0,
        "comm_per_sequence_s": comm_per_sequence_s,
        "weight_bandwidth_share": bandwidth_share(d),
        "overlapped": overlaps(d),
        "unhidden_share": d.factors.unhidden_share,
        "comm_pieces": comm_pieces,
        "step_overhead_s": fixed_step_s(d),
        "sequence_overhead_s": d.factors.sequence_overhead_s,
        "request_overhead_s": d.factors.request_overhead_s,
    }
    kv_share = 1 / d.tp if d.dp_ep else kv_shard_fraction(m, d.kv_ranks)
    return fixed, kv_share


def _speculation(d: Deployment, context_tokens: int, comm_fixed_s: float, comm_per_sequence_s: float) -> dict:
    """The draft's terms per TP rank; its all-reduces are its layers' share of the
    target's (a head is one target layer; a draft model's layers are counted alike)."""
    s = d.speculation
    if s is None:
        return {}
    layer_share = s.draft_layers / d.model.num_layers
    return {
        "draft_flops_per_sequence": 2.0 * s.draft_active_params / d.tp,
        "draft_comm_fixed_s": comm_fixed_s * layer_share,
        "draft_comm_per_sequence_s": comm_per_sequence_s * layer_share,
        "draft_tokens": s.num_tokens,
        "acceptance": s.alphas,
        "draft_read_bytes": s.draft_read_bytes / d.tp,
        "draft_kv_bytes_per_sequence": s.draft_kv_bytes_per_token * context_tokens / d.tp,
        "draft_fixed_s": d.factors.layer_overhead_s * s.draft_layers,
        # EAGLE-3's fc is a ReplicatedLinear in vLLM's llama_eagle3.py: whole on every rank
        "draft_round_read_bytes": s.draft_round_read_bytes,
        "draft_round_flops_per_sequence": 2.0 * s.draft_round_params,
    }


def _prompts(d: Deployment, w: Workload | None, prefill: PrefillEstimate | None) -> dict:
    """What the TTFT under load needs of the workload's requests."""
    if w is None:
        return {}
    new = w.prompt_tokens - cached_prompt_tokens(d, w)
    return {
        "prompt_tokens": new,
        "output_tokens": w.output_tokens,
        "prefill_gpu_s": (prefill or estimate_prefill(d, w)).gpu_time_s,
        "prefill_servers": d.tp if d.dp_ep else 1,
    }


def _continuous(d: Deployment, w: Workload | None) -> dict:
    if w is None or w.batching != "continuous":
        return {}

    p = w.prompt_tokens
    cached = cached_prompt_tokens(d, w)
    new = p - cached  # what the prefix cache leaves to compute
    # the routed experts' FLOPs at their grouped GEMMs' share, as in a prefill
    experts = linear_flops(routed_active_params(d.model), new)
    linear = linear_flops(d.model.active_params, new) + experts * (expert_imbalance(d) / d.weights.expert_compute_share - 1)
    attention = attention_flops(d, p, cached)
    per_token = (linear + attention) / new / d.tp
    budget = d.engine.max_num_batched_tokens if d.engine else 8192
    # a request's prompt is spread over the steps of its life: with speculative decoding
    # fewer of them, each yielding (1 − α^(k+1)) / (1 − α) tokens
    steps = max(1, w.output_tokens) / (d.speculation.expected_tokens if d.speculation else 1.0)
    dp = {}
    if d.dp_ep:  # a prompt's chunk on its own rank: dense matmuls and attention whole, experts over tp
        dense = linear_flops(d.model.active_params, new) - experts
        dp = {
            "chunk_flops_per_token": (dense + attention + experts * expert_imbalance(d) / d.weights.expert_compute_share / d.tp) / new,
            "chunk_comm_tokens": float(d.tp),
        }
    return {
        **dp,
        "prefill_tokens_per_sequence": new / steps,
        "prefill_flops_per_token": per_token,
        "prefill_budget_tokens": budget,
        "separate_prefill": d.engine is not None and d.engine.prefill_schedule == "separate" and d.engine.enable_chunked_prefill,
        "prefill_unhidden_share": d.factors.prefill_unhidden_share,
        # a chunk of the prompt's reaches the experts its tokens are routed to (at most a budget's)
        "chunk_expert_setup_s": prefill_expert_overhead_s(d, min(budget, new)),
    }


@dataclass(frozen=True)
class DecodeEstimate:
    batch: int
    coefficients: DecodeCoefficients
    comm: CommEstimate
    """The communication's parts at this batch, for the report."""

    @property
    def context_tokens(self) -> int:
        return self.coefficients.context_tokens

    @property
    def weight_bytes_read(self) -> float:
        """Per TP rank per step, summed over pipeline stages."""
        return self.coefficients.weight_bytes(self.batch)

    @property
    def kv_bytes_read(self) -> float:
        """Per TP rank per step, summed over pipeline stages."""
        return self.batch * self.coefficients.kv_bytes_per_sequence

    @property
    def flops(self) -> float:
        """Per TP rank per step (decode, plus any prompt tokens mixed in)."""
        c = self.coefficients
        return self.batch * c.flops_per_sequence + self.prefill_tokens * c.prefill_flops_per_token

    @property
    def prefill_tokens(self) -> float:
        """Prompt tokens mixed into each step (continuous batching)."""
        return self.batch * self.coefficients.prefill_tokens_per_sequence

    @property
    def ttft_under_load_s(self) -> float | None:
        c = self.coefficients
        return c.ttft_under_load_s(self.batch) if c.prompt_tokens else None

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.coefficients.bandwidth_bytes_per_s

    @property
    def bandwidth_efficiency(self) -> float:
        return self.coefficients.bandwidth_efficiency

    @property
    def matmul_flops_per_s(self) -> float:
        return self.coefficients.matmul_flops_per_s

    @property
    def compute_dtype(self) -> str:
        return self.coefficients.compute_dtype

    @property
    def compute_efficiency(self) -> float:
        return self.coefficients.compute_efficiency

    @property
    def expert_hit_fraction(self) -> float:
        c = self.coefficients
        return expert_hit_fraction(c.num_experts, c.experts_per_token, self.batch)

    @property
    def memory_time_s(self) -> float:
        return self.coefficients.memory_time_s(self.batch)

    @property
    def weights_time_s(self) -> float:
        return self.coefficients.weights_time_s(self.batch)

    @property
    def kv_time_s(self) -> float:
        return self.coefficients.kv_time_s(self.batch)

    @property
    def gemm_time_s(self) -> float:
        return self.coefficients.gemm_time_s(self.batch)

    @property
    def attention_time_s(self) -> float:
        return self.coefficients.attention_time_s(self.batch)

    @property
    def step_overhead_s(self) -> float:
        """The step's fixed cost: per pass, per layer and per sequence."""
        c = self.coefficients
        return c.step_overhead_s + self.batch * c.sequence_overhead_s

    @property
    def weight_bandwidth_share(self) -> float:
        return self.coefficients.weight_bandwidth_share

    @property
    def attention_bandwidth_share(self) -> float:
        return self.coefficients.attention_bandwidth_share

    @property
    def compute_time_s(self) -> float:
        return self.coefficients.compute_time_s(self.batch)

    @property
    def comm_time_s(self) -> float:
        return self.coefficients.comm_time_s(self.batch)

    @property
    def bound(self) -> str:
        return "bandwidth" if self.memory_time_s >= self.compute_time_s else "compute"

    @property
    def tpot_s(self) -> float:
        return self.coefficients.tpot_s(self.batch)

    @property
    def tokens_per_s_per_user(self) -> float:
        return 1.0 / self.tpot_s

    @property
    def tokens_per_s(self) -> float:
        """Per replica: every sequence of the batch gets a token each step."""
        return self.batch / self.tpot_s


def estimate_decode(d: Deployment, w: Workload, batch: int | None = None) -> DecodeEstimate:
    """The decode step at `batch` sequences (default: the workload's batch per
    replica), every sequence at full context — the worst case the seed sizes for."""
    batch = d.batch_per_replica(w) if batch is None else batch
    return DecodeEstimate(batch, decode_coefficients(d, w.resident_tokens, w), estimate_comm(d, batch))


def max_batch_for_tpot(d: Deployment, w: Workload, max_tpot_s: float, upper: int) -> int:
    """Largest batch per replica (≤ upper) whose step time meets `max_tpot_s`; 0 if none."""
    return decode_coefficients(d, w.resident_tokens, w).max_batch(max_tpot_s, upper)
