"""Step 2: memory bandwidth in the decode phase.

Each decode step produces one token for every sequence in the batch. It reads the
weights the step touches — for an MoE model only the experts the batch's tokens are
routed to — and every resident KV byte. The seed's TPOT = model bytes / bandwidth is
the batch-1, zero-context case of

    step = max(bytes read / (bandwidth × efficiency), FLOPs / (peak × efficiency)) + communication

Pipeline stages run one after another for a token, so pp adds memory, not speed:
each TP rank reads its 1/(tp·pp) share in each of pp stages.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.deployment import Deployment, Workload
from solver.physics.compute import compute_dtype, peak_flops_per_s
from solver.physics.interconnect import CommEstimate, estimate_comm
from solver.physics.memory import deployment_weights_bytes, kv_bytes_per_sequence, kv_shard_fraction


def expert_hit_fraction(num_experts: int, experts_per_token: int, tokens: int) -> float:
    """Expected share of an MoE layer's routed experts that at least one of `tokens`
    tokens is routed to, assuming uniform independent routing:
    1 − (1 − k/E)^tokens. One token touches k/E; a large batch touches them all."""
    if num_experts == 0:
        return 1.0
    return 1.0 - (1.0 - experts_per_token / num_experts) ** tokens


def touched_weight_bytes(d: Deployment, tokens: int) -> float:
    """Whole-model weight bytes one forward pass over `tokens` tokens reads."""
    total = deployment_weights_bytes(d)
    m = d.model
    if not m.is_moe:
        return total
    routed = total * m.routed_expert_params / m.total_params
    return (total - routed) + routed * expert_hit_fraction(m.num_experts, m.experts_per_token, tokens)


def attention_flops_per_token(d: Deployment, context_tokens: int) -> float:
    """Score and value FLOPs of one new token attending to `context_tokens` tokens,
    whole model: 2 matmuls × 2 FLOP per multiply-add × heads × head width × keys.
    MLA in absorbed form attends over the latent: width 2·kv_lora_rank + rope."""
    m = d.model
    if m.attention == "mla":
        width = 2 * m.kv_lora_rank + m.qk_rope_head_dim
        per_layer_key = 2 * m.num_attention_heads * width
    else:
        per_layer_key = 4 * m.num_attention_heads * m.head_dim
    keys = (m.num_layers - m.sliding_layers) * context_tokens
    if m.sliding_layers:
        keys += m.sliding_layers * min(context_tokens, m.sliding_window)
    return per_layer_key * keys


@dataclass(frozen=True)
class DecodeEstimate:
    batch: int
    context_tokens: int
    weight_bytes_read: float
    """Per TP rank per step, summed over pipeline stages."""
    kv_bytes_read: float
    """Per TP rank per step, summed over pipeline stages."""
    bandwidth_bytes_per_s: float
    bandwidth_efficiency: float
    flops: float
    """Per TP rank per step."""
    peak_flops_per_s: float
    compute_dtype: str
    compute_efficiency: float
    comm: CommEstimate
    expert_hit_fraction: float

    @property
    def memory_time_s(self) -> float:
        return (self.weight_bytes_read + self.kv_bytes_read) / (self.bandwidth_bytes_per_s * self.bandwidth_efficiency)

    @property
    def weights_time_s(self) -> float:
        return self.weight_bytes_read / (self.bandwidth_bytes_per_s * self.bandwidth_efficiency)

    @property
    def kv_time_s(self) -> float:
        return self.kv_bytes_read / (self.bandwidth_bytes_per_s * self.bandwidth_efficiency)

    @property
    def compute_time_s(self) -> float:
        return self.flops / (self.peak_flops_per_s * self.compute_efficiency)

    @property
    def comm_time_s(self) -> float:
        return self.comm.time_s

    @property
    def bound(self) -> str:
        return "bandwidth" if self.memory_time_s >= self.compute_time_s else "compute"

    @property
    def tpot_s(self) -> float:
        return max(self.memory_time_s, self.compute_time_s) + self.comm_time_s

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
    ctx = w.context_tokens
    m = d.model
    kv_read = batch * kv_bytes_per_sequence(m, d.kv, ctx) * kv_shard_fraction(m, d.tp)
    active_flops = 2.0 * m.active_params * batch
    attn = attention_flops_per_token(d, ctx) * batch
    hit = expert_hit_fraction(m.num_experts, m.experts_per_token, batch)
    return DecodeEstimate(
        batch=batch,
        context_tokens=ctx,
        weight_bytes_read=touched_weight_bytes(d, batch) / d.tp,
        kv_bytes_read=kv_read,
        bandwidth_bytes_per_s=d.device.memory_bandwidth_bytes_per_s,
        bandwidth_efficiency=d.factors.bandwidth_efficiency,
        flops=(active_flops + attn) / d.tp,
        peak_flops_per_s=peak_flops_per_s(d.device, d.weights),
        compute_dtype=compute_dtype(d.device, d.weights),
        compute_efficiency=d.factors.compute_efficiency,
        comm=estimate_comm(d, batch),
        expert_hit_fraction=hit,
    )


def max_batch_for_tpot(d: Deployment, w: Workload, max_tpot_s: float, upper: int) -> int:
    """Largest batch per replica (≤ upper) whose step time meets `max_tpot_s`; 0 if
    none. Step time grows with batch, so bisect."""
    if estimate_decode(d, w, 1).tpot_s > max_tpot_s:
        return 0
    lo, hi = 1, max(1, upper)
    if estimate_decode(d, w, hi).tpot_s <= max_tpot_s:
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_decode(d, w, mid).tpot_s <= max_tpot_s:
            lo = mid
        else:
            hi = mid - 1
    return lo
