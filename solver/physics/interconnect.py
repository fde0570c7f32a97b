"""Step 4: the interconnect. Tensor parallelism all-reduces the activations twice per
layer (after attention and after the MLP, Megatron-LM, arXiv 1909.08053). A ring
all-reduce of S bytes over t GPUs moves 2(t−1)/t · S per GPU and takes 2(t−1) steps
(Patarasuk & Yuan 2009), each paying the hop latency. Pipeline stages pass the
activations once per boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.deployment import Deployment
from solver.topology import Ring, tp_ring

ACTIVATION_BYTES = 2.0
"""Activations travel in 16-bit even when weights are quantised (vLLM, TensorRT-LLM)."""
ALLREDUCES_PER_LAYER = 2


def allreduce_time_s(size_bytes: float, ring: Ring) -> float:
    t = ring.size
    if t <= 1:
        return 0.0
    return 2 * (t - 1) / t * size_bytes / ring.bandwidth_bytes_per_s + 2 * (t - 1) * ring.hop_latency_s


@dataclass(frozen=True)
class CommEstimate:
    tokens: int
    allreduce_bytes: float
    """One all-reduce: tokens × hidden × 2 bytes."""
    allreduces: int
    tp_time_s: float
    pp_time_s: float

    @property
    def time_s(self) -> float:
        return self.tp_time_s + self.pp_time_s


def ring_for(d: Deployment) -> Ring:
    return tp_ring(d.platform, d.tp)


def estimate_comm(d: Deployment, tokens: int) -> CommEstimate:
    """Communication for one forward pass over `tokens` tokens (a decode step over the
    batch, or a prefill over the prompt)."""
    size = tokens * d.model.hidden_size * ACTIVATION_BYTES
    count = ALLREDUCES_PER_LAYER * d.model.num_layers if d.tp > 1 else 0
    tp_time = count * allreduce_time_s(size, ring_for(d)) if count else 0.0
    pp_time = 0.0
    if d.pp > 1:
        # Stages of one replica span nodes when tp·pp exceeds a node; a network hop
        # goes GPU → switch → GPU (two links), a local hop as the TP ring's does.
        if d.tp * d.pp > d.platform.gpus_per_node and d.platform.scale_out:
            link = d.platform.scale_out
            bandwidth, latency = link.bandwidth_bytes_per_s, 2 * link.latency_s
        else:
            pair = tp_ring(d.platform, 2)
            bandwidth, latency = pair.bandwidth_bytes_per_s, pair.hop_latency_s
        pp_time = (d.pp - 1) * (size / d.tp / bandwidth + latency)
    return CommEstimate(tokens, size, count, tp_time, pp_time)
