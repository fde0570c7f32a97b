"""Step 3: compute throughput in the prefill phase, which sets TTFT.

The seed's heuristic is 2 × active parameters × prompt tokens FLOPs (one multiply and
one add per parameter per token). Attention adds a term that grows with the square of
the prompt: with causal masking, token i attends to i keys, so the score and value
matmuls cost 2 × 2 × heads × head width × P²/2 per layer (sliding-window layers at
most P × window). TTFT = FLOPs / (tp × peak × utilisation), but never less than the
time to read the weights once, plus the all-reduces over the prompt's activations.
Prompts are assumed prefilled one at a time (no queueing behind other prompts).
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.deployment import Deployment, Workload
from solver.physics.compute import compute_dtype, peak_flops_per_s
from solver.physics.decode import touched_weight_bytes
from solver.physics.interconnect import CommEstimate, estimate_comm


def linear_flops(active_params: float, prompt_tokens: int) -> float:
    return 2.0 * active_params * prompt_tokens


def attention_flops(d: Deployment, prompt_tokens: int) -> float:
    """Causal attention over the prompt, whole model."""
    m = d.model
    p = prompt_tokens
    if m.attention == "mla":
        # Prefill runs MLA un-absorbed: per head, Q·K over qk (nope + rope) width and
        # P·V over v width.
        width = m.head_dim + (m.v_head_dim or m.head_dim)
    else:
        width = 2 * m.head_dim
    per_key = 2 * m.num_attention_heads * width  # 2 FLOP per multiply-add
    full_pairs = p * (p + 1) / 2
    pairs = (m.num_layers - m.sliding_layers) * full_pairs
    if m.sliding_layers:
        w = min(p, m.sliding_window)
        # token i attends to min(i, w) keys: w(w+1)/2 for the first w, then w each.
        window_pairs = w * (w + 1) / 2 + (p - w) * w
        pairs += m.sliding_layers * window_pairs
    return per_key * pairs


@dataclass(frozen=True)
class PrefillEstimate:
    prompt_tokens: int
    linear_flops: float
    """Whole model: 2 × active parameters × prompt tokens (the seed's heuristic)."""
    attention_flops: float
    """Whole model: the quadratic attention term."""
    tp: int
    peak_flops_per_s: float
    compute_dtype: str
    compute_efficiency: float
    weight_bytes_read: float
    """Per TP rank, summed over pipeline stages."""
    bandwidth_bytes_per_s: float
    bandwidth_efficiency: float
    comm: CommEstimate
    step_overhead_s: float = 0.0
    """The fixed cost of a forward pass (calibrated; 0 by default): a prefill is a step too."""

    @property
    def flops(self) -> float:
        return self.linear_flops + self.attention_flops

    @property
    def effective_flops_per_s(self) -> float:
        """The TP group's usable throughput: tp × peak × utilisation."""
        return self.tp * self.peak_flops_per_s * self.compute_efficiency

    @property
    def linear_time_s(self) -> float:
        return self.linear_flops / self.effective_flops_per_s

    @property
    def attention_time_s(self) -> float:
        return self.attention_flops / self.effective_flops_per_s

    @property
    def compute_time_s(self) -> float:
        return self.flops / self.effective_flops_per_s

    @property
    def weights_time_s(self) -> float:
        return self.weight_bytes_read / (self.bandwidth_bytes_per_s * self.bandwidth_efficiency)

    @property
    def comm_time_s(self) -> float:
        return self.comm.time_s

    @property
    def bound(self) -> str:
        return "compute" if self.compute_time_s >= self.weights_time_s else "bandwidth"

    @property
    def ttft_s(self) -> float:
        return max(self.compute_time_s, self.weights_time_s) + self.comm_time_s + self.step_overhead_s


def estimate_prefill(d: Deployment, w: Workload) -> PrefillEstimate:
    p = w.prompt_tokens
    return PrefillEstimate(
        prompt_tokens=p,
        linear_flops=linear_flops(d.model.active_params, p),
        attention_flops=attention_flops(d, p),
        tp=d.tp,
        peak_flops_per_s=peak_flops_per_s(d.device, d.weights),
        compute_dtype=compute_dtype(d.device, d.weights),
        compute_efficiency=d.factors.compute_efficiency,
        weight_bytes_read=touched_weight_bytes(d, p) / d.tp,
        bandwidth_bytes_per_s=d.device.memory_bandwidth_bytes_per_s,
        bandwidth_efficiency=d.factors.bandwidth_efficiency,
        comm=estimate_comm(d, p),
        step_overhead_s=d.factors.step_overhead_s,
    )
