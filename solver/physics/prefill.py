"""Step 3: compute throughput in the prefill phase, which sets TTFT.

The seed's heuristic is 2 × active parameters × prompt tokens FLOPs (one multiply and
one add per parameter per token). Attention adds a term that grows with the square of
the prompt: with causal masking, token i attends to i keys, so the score and value
matmuls cost 2 × 2 × heads × head width × P²/2 per layer (sliding-window layers at
most P × window). A prefill is a sum of kernels too:

    TTFT = request overhead + fixed(layers) + per expert reached × MoE layers
         + K(dense weights read, dense FLOPs / (tp × peak_weights × utilisation × format share))
         + max(routed experts read, expert FLOPs / (… × expert share))
         + attention FLOPs / (tp × peak_attention × utilisation) + communication

The matmuls run at the weight format's peak (FP8 GEMMs at twice the 16-bit rate, but
at a smaller share of it); a mixture-of-experts model's routed experts run as grouped
GEMMs at the weight format's share of that (`expert_compute_share`); attention runs in the KV cache's
dtype (16-bit unless the cache is FP8), whatever the weights. A prompt's shared prefix,
where the engine caches it (`workload.shared_prefix_tokens` × `prefix_hit_rate`), is
not computed: only the later tokens' matmuls, and their attention to every key before
them. The request overhead is
the serving front end's (`request_overhead_s`): the time from a request's arrival to
its first token that no GPU spends. Prompts are prefilled one at a time (no queueing).

K is the dense GEMMs' kernel: their read and their FLOPs summed in part
(`prefill_unhidden_share`, fitted 1 on dense prompts). The routed experts' grouped GEMMs
take the roofline's larger of the two (decode's `unhidden_share`, held 0): a prompt
gives each expert only P × k / E tokens (Mixtral's 128-token prompt: 32; DeepSeek-R1's
610: 19), so the grouped GEMM streams each expert's weight tiles through its pipelined
loads (Triton fused_moe's num_stages, CUTLASS grouped GEMM's multistage mainloop) as a
decode step's GEMMs do, and its math hides under that stream. Summed, the experts'
math at their grouped share came on top of a read it hides under: on the fit half
TensorRT-LLM 0.9's Mixtral prompts of 128 tokens were 34-70 % slow while its dense
prompts of the same campaign were within 21 %, and its 2,048-token ones (math-bound,
where max and sum differ by the read alone) within 5 %.

The cost per expert reached (Factors.prefill_expert_overhead_s) is charged per routed
expert × MoE layer; issue 42 tried other forms, none kept. The grouped GEMMs are one
launch per GEMM per layer, each expert's rows padded to the kernel's row tile (SGLang's
fused_moe: BLOCK_SIZE_M 64 on prompts, sgl-project/sglang c050f40d,
python/sglang/srt/layers/moe/fused_moe_triton/fused_moe_triton_config.py
get_default_config; moe_align_block_size pads). Padding by hand: DeepSeek-R1 (256
experts, k 8) at 1,024 tokens gives an expert 32 rows, padded to 64, its math 8.7 →
17.5 ms on B200 at TP 8 against a 12.5 ms read: about 5 ms more; at 8,192 (256 rows,
4 whole tiles) none. Yet the fit half's SGLang DeepSeek-R1 prompts leave 131-167 ms
beside the other terms at 128, 1,024 and 8,192 tokens alike. Campaign-fold CV on the
fit half (bench/fit_cv.py --prefill-expert-form, 5 folds, seeds 0 / 1, 13 MoE TTFTs of
5 campaigns, 2026-12-06), held-out MoE TTFT median: per expert × layer (kept) 21.7 /
17.8 %; per MoE layer 82.6 / 83.3; per layer 79.0 / 83.2; per row tile of 64 38.0 /
36.7; none 47.8 / 52.1. A per-layer cost cannot give TensorRT-LLM 0.9's Mixtral (32
layers, 12 ms at 128 tokens) and SGLang's DeepSeek-R1 both; tiles grow with the prompt
where the cost does not. The test half's MoE TTFTs (31 % median) are mostly a level:
one engine on one GPU (SGLang's cookbook, B200) leaves DeepSeek-R1 and Qwen3-235B 6-9 µs
per expert × layer, against the 9-13 µs of the fit half's older runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from solver.physics.compute import compute_dtype, dtype_flops_per_s, matmul_dtype, matmul_flops_per_s
from solver.physics.deployment import Deployment, Workload, cached_prompt_tokens
from solver.physics.interconnect import CommEstimate, estimate_comm
from solver.physics.kernels import (
    attention_flops,
    bandwidth_share,
    busiest_expert_share,
    expert_groups,
    expert_imbalance,
    fixed_step_s,
    kernel_time_s,
    linear_flops,
    overlaps,
    prefill_expert_overhead_s,
    routed_active_params,
    split_weight_bytes,
    touched_weight_bytes,
)
from solver.physics.weights import tp_rank_bytes


@dataclass(frozen=True)
class PrefillEstimate:
    prompt_tokens: int
    linear_flops: float
    """Whole model: 2 × active parameters × prompt tokens (the seed's heuristic)."""
    attention_flops: float
    """Whole model: the quadratic attention term."""
    tp: int
    matmul_flops_per_s: float
    """Per GPU, the matmuls' dtype."""
    compute_dtype: str
    compute_efficiency: float
    """Of the matmuls: utilisation × the weight format's share."""
    weight_bytes_read: float
    """Per TP rank, summed over pipeline stages."""
    bandwidth_bytes_per_s: float
    bandwidth_efficiency: float
    comm: CommEstimate
    step_overhead_s: float = 0.0
    """The fixed cost of a forward pass: per pass plus per layer."""
    expert_overhead_s: float = 0.0
    """A mixture-of-experts prefill's cost per routed expert reached, per MoE layer
    (Factors.prefill_expert_overhead_s × MoE layers × experts hit)."""
    attention_matmul_flops_per_s: float = 0.0
    """Per GPU, attention's dtype (0: the matmuls')."""
    attention_compute_dtype: str = ""
    attention_efficiency: float = 0.0
    """Utilisation of the attention kernels (0: the matmuls')."""
    overlapped: bool = True
    """The matmuls take the larger of their read and their FLOPs (True) or the sum."""
    unhidden_share: float = 0.0
    """Overlapped: of the shorter of the two, the share added to the larger (Factors.prefill_unhidden_share)."""
    expert_flops: float = 0.0
    """Of linear_flops, the routed experts': 2 × routed active parameters × prompt tokens."""
    expert_compute_share: float = 1.0
    """The experts' grouped GEMMs' share of the dense matmuls' rate (the weight format's)."""
    request_overhead_s: float = 0.0
    """The serving front end's time before the first token (no GPU work)."""
    cached_tokens: int = 0
    """Of prompt_tokens, those the prefix cache supplies: not computed, still attended to."""
    draft_flops: float = 0.0
    """A speculative draft prefills the prompt too: 2 × its active parameters × tokens."""
    expert_imbalance: float = 1.0
    """Under expert parallelism, the busiest GPU's routed tokens over the mean (its experts' FLOPs scale by it)."""
    dense_ranks: int = 0
    """GPUs that share the prompt's attention and dense matmuls: tp, or one under
    data-parallel attention (0: tp); the routed experts spread over tp either way."""
    attention_ranks: int = 0
    """GPUs that share the prompt's attention, where not dense_ranks (0): one under
    llama.cpp's row split (its KV cache and attention on the main GPU)."""
    routed_bytes_read: float = 0.0
    """Of weight_bytes_read, the routed experts' the prompt reaches (per GPU)."""
    expert_unhidden_share: float = 0.0
    """The experts' grouped GEMMs: of the shorter of their read and their math, the share
    added to the larger (Factors.unhidden_share, as a decode step's GEMMs)."""

    @property
    def flops(self) -> float:
        return self.linear_flops + self.attention_flops

    @property
    def effective_flops_per_s(self) -> float:
        """The TP group's usable matmul throughput: tp × the matmul rate (peak × measured share) × utilisation."""
        return self.tp * self.matmul_flops_per_s * self.compute_efficiency

    @property
    def attention_flops_per_s(self) -> float:
        peak = self.attention_matmul_flops_per_s or self.matmul_flops_per_s
        return (self.attention_ranks or self.dense_ranks or self.tp) * peak * (self.attention_efficiency or self.compute_efficiency)

    @property
    def _dense_share(self) -> float:
        """How much slower the dense part runs than over the whole group (1, or tp under DP attention)."""
        return self.tp / self.dense_ranks if self.dense_ranks else 1.0

    @property
    def linear_time_s(self) -> float:
        dense = self.linear_flops - self.expert_flops
        return (dense * self._dense_share + self.expert_flops * self.expert_imbalance / self.expert_compute_share) / self.effective_flops_per_s

    @property
    def batched_compute_time_s(self) -> float:
        """The prompt's matmuls and attention when the group's ranks all prefill (prompts
        of their own under data-parallel attention): the dense part over every rank."""
        dense = self.linear_flops - self.expert_flops
        linear = (dense + self.expert_flops * self.expert_imbalance / self.expert_compute_share) / self.effective_flops_per_s
        peak = self.attention_matmul_flops_per_s or self.matmul_flops_per_s
        return linear + self.attention_flops / (self.tp * peak * (self.attention_efficiency or self.compute_efficiency))

    @property
    def expert_time_s(self) -> float:
        """Of linear_time_s, the routed experts' GEMMs."""
        return self.expert_flops * self.expert_imbalance / self.expert_compute_share / self.effective_flops_per_s

    @property
    def draft_time_s(self) -> float:
        return self.draft_flops / self.effective_flops_per_s

    @cached_property
    def gpu_time_s(self) -> float:
        """The prefill on the GPUs: TTFT less the front end. Kept once read (the estimate
        is frozen, so it never changes): the problem shares one estimate per prompt, and
        the decode coefficients, the TTFT and the prefill options of every workload that
        keeps the prompt read it again (a dozen sums each time)."""
        return self.gemm_time_s + self.attention_time_s + self.comm_time_s + self.step_overhead_s + self.expert_overhead_s + self.draft_time_s

    @property
    def attention_time_s(self) -> float:
        return self.attention_flops / self.attention_flops_per_s

    @property
    def compute_time_s(self) -> float:
        return self.linear_time_s + self.attention_time_s

    @property
    def weights_time_s(self) -> float:
        return self.weight_bytes_read / (self.bandwidth_bytes_per_s * self.bandwidth_efficiency)

    @property
    def routed_weights_time_s(self) -> float:
        """Of weights_time_s, the routed experts' reads."""
        return self.routed_bytes_read / (self.bandwidth_bytes_per_s * self.bandwidth_efficiency)

    @property
    def gemm_time_s(self) -> float:
        """The matmuls, never faster than one read of the weights: the dense GEMMs' kernel
        and the experts' grouped GEMMs' (the larger of their reads and math, see above)."""
        routed_s, expert_s = self.routed_weights_time_s, self.expert_time_s
        dense = kernel_time_s(self.weights_time_s - routed_s, self.linear_time_s - expert_s, self.overlapped, self.unhidden_share)
        return dense + kernel_time_s(routed_s, expert_s, self.overlapped, self.expert_unhidden_share)

    @property
    def comm_time_s(self) -> float:
        return self.comm.time_s

    @property
    def bound(self) -> str:
        return "compute" if self.linear_time_s >= self.weights_time_s else "bandwidth"

    @property
    def ttft_s(self) -> float:
        return self.gpu_time_s + self.request_overhead_s


def estimate_prefill(d: Deployment, w: Workload) -> PrefillEstimate:
    p = w.prompt_tokens
    cached = cached_prompt_tokens(d, w)
    new = p - cached  # the prompt's tokens the prefix cache does not supply
    attn_dtype = compute_dtype(d.device, d.kv) or matmul_dtype(d.device, d.weights)
    return PrefillEstimate(
        prompt_tokens=p,
        linear_flops=linear_flops(d.model.active_params, new),
        attention_flops=attention_flops(d, p, cached),
        tp=d.tp,
        matmul_flops_per_s=matmul_flops_per_s(d.device, d.weights, d.engine),
        compute_dtype=matmul_dtype(d.device, d.weights),
        # a share above 1 (16-bit prefills beyond the decode-fitted utilisation) never
        # takes a prompt past the device's measured matmul rate
        compute_efficiency=min(1.0, d.factors.compute_efficiency * d.weights.compute_share_on(d.device.vendor, d.device.memory_kind)),
        weight_bytes_read=_weights_read(d, new),
        bandwidth_bytes_per_s=d.device.memory_bandwidth_bytes_per_s,
        bandwidth_efficiency=d.factors.bandwidth_efficiency * bandwidth_share(d),
        # dp_ep: the prompt's tokens all sit on its own rank, which sends each to its
        # experts (the all-to-all per token is per replica token, a 1/g share per GPU)
        comm=estimate_comm(d, new * d.tp if d.dp_ep else new),
        step_overhead_s=fixed_step_s(d),
        expert_overhead_s=prefill_expert_overhead_s(d, new),
        attention_matmul_flops_per_s=dtype_flops_per_s(d.device, attn_dtype),
        attention_compute_dtype=attn_dtype,
        attention_efficiency=min(1.0, d.factors.compute_efficiency * d.kv.compute_share),
        overlapped=overlaps(d),
        unhidden_share=d.factors.prefill_unhidden_share,
        expert_flops=linear_flops(routed_active_params(d.model), new),
        expert_imbalance=expert_imbalance(d),
        expert_compute_share=d.weights.expert_compute_share,
        request_overhead_s=d.factors.request_overhead_s,
        cached_tokens=cached,
        draft_flops=_draft_flops(d, new),
        dense_ranks=1 if d.dp_ep else d.tp,
        attention_ranks=d.kv_ranks if d.row_split else 0,
        routed_bytes_read=_routed_read(d, new),
        expert_unhidden_share=d.factors.unhidden_share,
    )


def prefill_weights_time_s(d: Deployment, tokens: int) -> float:
    """A prefill-only pass over `tokens` new tokens: its weight reads, as
    estimate_prefill(d, Workload(1, tokens + 1, tokens, 1)).weights_time_s computes them
    (the same operations) without the rest of the estimate: the simulator asks it for
    every chunk size it schedules."""
    return _weights_read(d, tokens) / (d.device.memory_bandwidth_bytes_per_s * (d.factors.bandwidth_efficiency * bandwidth_share(d)))


def prefill_routed_weights_time_s(d: Deployment, tokens: int) -> float:
    """Of prefill_weights_time_s, the routed experts' reads (PrefillEstimate.routed_weights_time_s)."""
    return _routed_read(d, tokens) / (d.device.memory_bandwidth_bytes_per_s * (d.factors.bandwidth_efficiency * bandwidth_share(d)))


def _routed_read(d: Deployment, tokens: int) -> float:
    """Per GPU, of _weights_read, the routed experts' bytes: 1/tp of the experts the
    prompt reaches (under expert parallelism the busiest GPU's); 0 for a dense model."""
    m = d.model
    if not m.is_moe or tokens <= 0:
        return 0.0
    _, routed = split_weight_bytes(d)
    return routed * busiest_expert_share(m.num_experts, m.experts_per_token, tokens, expert_groups(d)) / d.tp


def _weights_read(d: Deployment, tokens: int) -> float:
    """Per GPU: 1/tp of what the pass touches, or under data-parallel attention the
    dense layers whole and 1/tp of the experts the prompt hits (under expert
    parallelism the busiest GPU's, busiest_expert_share)."""
    if not d.dp_ep:  # each rank reads the replicated tensors whole
        return tp_rank_bytes(d, touched_weight_bytes(d, tokens))
    dense, _ = split_weight_bytes(d)
    return dense + _routed_read(d, tokens)


def _draft_flops(d: Deployment, new: int) -> float:
    """The draft's FLOPs over the prompt's new tokens: its per-token parameters, and a
    once-a-round part (EAGLE-3's fc, 3h → h) too, which vLLM runs over every token's three
    hidden states (EagleProposer.propose: combine_hidden_states) and which, replicated, each
    TP rank computes whole (× tp, over the TP group's rate)."""
    s = d.speculation
    if s is None:
        return 0.0
    return linear_flops(s.draft_active_params + s.draft_round_params * d.tp, new)
