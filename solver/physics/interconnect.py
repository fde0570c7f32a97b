"""Step 4: the interconnect. Tensor parallelism all-reduces the activations twice per
layer (after attention and after the MLP, Megatron-LM, arXiv 1909.08053). Pipeline
stages pass the activations once per boundary.

Each all-reduce runs the algorithm the engine would pick for its size (vLLM's
dispatch in vllm/distributed/device_communicators/cuda_communicator.py; SGLang and
TensorRT-LLM pick alike), each a fixed latency plus bytes over a bandwidth:

- custom one-shot (csrc/custom_all_reduce.cuh, cross_device_reduce_1stage): every
  rank reads all t−1 peers' whole buffers and sums them: (t−1)·S over its links;
- custom two-shot (cross_device_reduce_2stage): reduce-scatter, then all-gather,
  2(t−1)/t·S, with a second barrier;
- NVLS (NVLink SHARP, Hopper/Blackwell NVSwitch): the switch reduces and multicasts;
  each GPU moves about S, at the measured rate in the platform's catalog entry;
- NCCL ring (Patarasuk & Yuan 2009): 2(t−1)/t·S and 2(t−1) hops of latency, or
  NVLS where NCCL's tuner would find it faster;
- without PCIe peer access (GeForce cards) NCCL's ring bounces every hop through host
  memory: each byte crosses PCIe twice, and the hop pays the host-staged latency.

llama.cpp's --split-mode row all-reduces nothing: each weight matrix is split by rows,
and for every matrix (in chunks of 128 tokens) the main GPU sends the activations to
each other GPU and gathers their rows of the result (ggml-cuda's ggml_cuda_op_mul_mat);
`row_split_transfers`.

Within one algorithm the time is linear in the message, so linear in tokens;
`comm_segments` gives the pieces over the token counts where each applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solver.catalog import TP_SIZES_WITH_CUSTOM_ALLREDUCE, Model
from solver.catalog.topology import Ring, tp_ring
from solver.physics.deployment import Deployment
from solver.physics.kept import Kept

ACTIVATION_BYTES = 2.0
"""Activations travel in 16-bit even when weights are quantised (vLLM, TensorRT-LLM)."""
ALLREDUCES_PER_LAYER = 2

KIB = 1024
ONE_SHOT_BELOW_BYTES = ((4, 512 * KIB), (8, 256 * KIB))
"""vLLM's kernel choice on fully NVLink-connected GPUs: one-shot for world size ≤ 4
below 512 KiB and ≤ 8 below 256 KiB, two-shot above; world size 2 always one-shot
(csrc/custom_all_reduce.cuh, REDUCE_CASE)."""
FULLY_CONNECTED_KINDS = frozenset({"nvswitch", "nvlink", "infinity-fabric"})
"""Links over which every GPU of the group reaches every other directly (vLLM's
is_fully_connected: NVLink on CUDA, xGMI on ROCm). Over PCIe vLLM runs its custom
kernels for two GPUs only."""
NVLS_MIN_TP = 6
"""vLLM's symmetric-memory all-reduce uses multimem (NVLS) for world sizes 6 and 8,
its two-shot kernel for 2 and 4 (vLLM PR #20759)."""
HOST_STAGED_CROSSINGS = 2
"""A hop through host memory: device → host, then host → device."""
ROW_SPLIT_CHUNK_TOKENS = 128
"""ggml-cuda's MUL_MAT_SRC1_COL_STRIDE: under row split a matmul runs over its tokens
128 at a time, each chunk handed to every GPU in turn."""
Q8_1_BYTES_PER_VALUE = 36 / 32
"""The activations a quantised matmul reads, as ggml's block_q8_1 (32 int8 values, an
fp16 scale and an fp16 sum): what row split copies to the other GPUs."""
F32_BYTES = 4
"""Activations of a 16-bit matmul, and every matmul's output, are fp32 in ggml."""


@dataclass(frozen=True)
class AllReduceAlgorithm:
    name: str
    latency_s: float
    """Fixed cost of one call."""
    seconds_per_byte: float
    """Per byte of the message (the whole tensor each rank holds)."""

    def time_s(self, size_bytes: float) -> float:
        return self.latency_s + self.seconds_per_byte * size_bytes


def ring_algorithm(ring: Ring, name: str = "NCCL ring") -> AllReduceAlgorithm:
    t = ring.size
    return AllReduceAlgorithm(name, 2 * (t - 1) * ring.hop_latency_s, 2 * (t - 1) / t / ring.bandwidth_bytes_per_s)


def allreduce_time_s(size_bytes: float, ring: Ring) -> float:
    """NCCL's ring all-reduce of `size_bytes` over `ring`."""
    if ring.size <= 1:
        return 0.0
    return ring_algorithm(ring).time_s(size_bytes)


def ring_for(d: Deployment) -> Ring:
    return tp_ring(d.platform, d.tp)


def has_peer_access(d: Deployment, ring: Ring) -> bool:
    """GPUs reach each other's memory: over NVLink/xGMI always, over PCIe only where
    the driver allows it (not on GeForce cards)."""
    return d.device.pcie_p2p or "pcie" not in ring.link_kinds


def allreduce_algorithm(d: Deployment, size_bytes: float) -> AllReduceAlgorithm | None:
    """The algorithm the engine runs for one TP all-reduce of `size_bytes`, with its
    cost; None for TP 1."""
    t = d.tp
    if t <= 1:
        return None
    ring = ring_for(d)
    spec = d.platform.allreduce
    if not has_peer_access(d, ring):
        hop = spec.host_staged_hop_latency_s
        if hop is None:
            hop = HOST_STAGED_CROSSINGS * ring.hop_latency_s
        return AllReduceAlgorithm(
            "NCCL ring via host memory",
            2 * (t - 1) * hop,
            2 * (t - 1) / t * HOST_STAGED_CROSSINGS / ring.bandwidth_bytes_per_s,
        )
    fully_connected = set(ring.link_kinds) <= FULLY_CONNECTED_KINDS
    engine_sizes = t in TP_SIZES_WITH_CUSTOM_ALLREDUCE
    bw = ring.bandwidth_bytes_per_s
    c = spec.custom
    if c is not None and engine_sizes and (t == 2 or fully_connected) and size_bytes < c.limit_bytes(t):
        one_shot = t == 2 or any(t <= n and size_bytes < below for n, below in ONE_SHOT_BELOW_BYTES)
        if one_shot:
            return AllReduceAlgorithm("custom one-shot", c.one_shot_latency_s, (t - 1) / bw)
        return AllReduceAlgorithm("custom two-shot", c.two_shot_latency_s, 2 * (t - 1) / t / (c.two_shot_rate(t) or bw))
    nv = spec.nvls if fully_connected else None
    if nv is not None and engine_sizes and size_bytes < nv.max_bytes:
        if t >= NVLS_MIN_TP:
            return AllReduceAlgorithm("NVLS", nv.latency_s, 1 / nv.bandwidth_bytes_per_s)
        if c is not None:
            return AllReduceAlgorithm("symmetric-memory two-shot", c.two_shot_latency_s, 2 * (t - 1) / t / bw)
    candidates = [ring_algorithm(ring)]
    if nv is not None:
        candidates.append(AllReduceAlgorithm("NCCL NVLS", nv.latency_s, 1 / nv.bandwidth_bytes_per_s))
    return min(candidates, key=lambda a: a.time_s(size_bytes))


def _breakpoints_bytes(d: Deployment) -> list[float]:
    """Message sizes at which the choice may change."""
    spec = d.platform.allreduce
    points = [float(b) for _, b in ONE_SHOT_BELOW_BYTES]
    if spec.custom is not None:
        points.append(float(spec.custom.limit_bytes(d.tp)))
    if spec.nvls is not None:
        nv = spec.nvls
        points.append(float(nv.max_bytes))
        ring = ring_algorithm(ring_for(d))
        nccl_nvls = 1 / nv.bandwidth_bytes_per_s
        if ring.seconds_per_byte != nccl_nvls:
            cross = (nv.latency_s - ring.latency_s) / (ring.seconds_per_byte - nccl_nvls)
            if cross > 0:
                points.append(cross)
    return sorted(set(points))


@dataclass(frozen=True)
class CommSegment:
    """Communication of one forward pass, linear in tokens below `upto_tokens`."""

    upto_tokens: float
    fixed_s: float
    per_token_s: float
    algorithm: str

    def time_s(self, tokens: float) -> float:
        return self.fixed_s + self.per_token_s * tokens


@dataclass(frozen=True)
class CommEstimate:
    tokens: float
    allreduce_bytes: float
    """One all-reduce: tokens × hidden × 2 bytes."""
    allreduces: int
    tp_time_s: float
    pp_time_s: float
    algorithm: str = "none"
    """The all-reduce algorithm at this size ('none' without TP)."""

    @property
    def time_s(self) -> float:
        return self.tp_time_s + self.pp_time_s


def _pp_link(d: Deployment) -> tuple[float, float]:
    """(bandwidth, latency) of one pipeline boundary. Stages of one replica span nodes
    when tp·pp exceeds a node; a network hop goes GPU → switch → GPU (two links), a
    local hop as the TP ring's does."""
    if d.tp * d.pp > d.platform.gpus_per_node and d.platform.scale_out:
        link = d.platform.scale_out
        return link.bandwidth_bytes_per_s, 2 * link.latency_s
    pair = tp_ring(d.platform, 2)
    return pair.bandwidth_bytes_per_s, pair.hop_latency_s


def _count(d: Deployment) -> int:
    if d.row_split:
        return 0
    return ALLREDUCES_PER_LAYER * d.model.num_layers if d.tp > 1 and not d.dp_ep else 0


def row_split_matrices(m: Model) -> tuple[tuple[int, int], ...]:
    """(inputs, outputs) of each weight matrix of one layer of a dense model as llama.cpp
    multiplies them: Q, K, V, output, then the MLP's up (and gate) and down."""
    q, kv, h, i = m.num_attention_heads * m.head_dim, m.num_kv_heads * m.head_dim, m.hidden_size, m.intermediate_size
    mlp_per_layer = m.param_groups()["mlp"] / m.num_layers
    gated = mlp_per_layer > 2.5 * h * i  # gate, up and down: 3·h·I; up and down: 2·h·I
    return ((h, q), (h, kv), (h, kv), (q, h)) + ((h, i),) * (2 if gated else 1) + ((i, h),)


def _row_split_name(d: Deployment) -> str:
    return "row split, peer copies" if has_peer_access(d, ring_for(d)) else "row split via host memory"


def row_split_transfers(d: Deployment) -> tuple[float, float]:
    """(seconds per 128-token chunk, seconds per token) of llama.cpp's row split in one
    pass. Per matrix and chunk the host sets each other GPU going in turn
    (Engine.row_split_peer_issue_s each), and the chain of one copy in and one copy back
    pays two hops' latency — host-staged without peer access; per token the main GPU's
    link carries every other GPU's activations in and rows of the result out, twice
    (there and back through host memory) without peer access."""
    t, m = d.tp, d.model
    if not d.row_split:
        return 0.0, 0.0
    ring = ring_for(d)
    peer = has_peer_access(d, ring)
    hop = ring.hop_latency_s if peer else (d.platform.allreduce.host_staged_hop_latency_s or HOST_STAGED_CROSSINGS * ring.hop_latency_s)
    crossings = 1 if peer else HOST_STAGED_CROSSINGS
    issue = d.engine.row_split_peer_issue_s if d.engine is not None else 0.0
    matrices = row_split_matrices(m)
    calls = len(matrices) * m.num_layers
    per_chunk = calls * (2 * hop + (t - 1) * issue)
    act = F32_BYTES if d.weights.bits >= 16 else Q8_1_BYTES_PER_VALUE
    per_token_bytes = m.num_layers * sum((t - 1) * n_in * act + (t - 1) / t * n_out * F32_BYTES for n_in, n_out in matrices)
    return per_chunk, per_token_bytes * crossings / ring.bandwidth_bytes_per_s


def all_to_all(d: Deployment) -> tuple[float, float]:
    """(fixed, per replica token) seconds of expert parallelism's all-to-alls in one
    pass: per MoE layer a dispatch and a combine, each GPU sending its 1/g of the tokens
    to the k experts they are routed to, (g − 1)/g of them on other GPUs, in 16-bit;
    each call's fixed cost taken as the platform's one-stage collective's (the engines'
    one-shot all-reduce: one launch and its barriers), else two hops of its ring."""
    g, m = d.tp, d.model
    if not d.dp_ep or g < 2:
        return 0.0, 0.0
    ring = tp_ring(d.platform, g)
    custom = d.platform.allreduce.custom
    latency = custom.one_shot_latency_s if custom is not None else 2 * ring.hop_latency_s
    # the busiest GPU sends and receives `expert_load_imbalance` times the mean
    per_token_bytes = m.experts_per_token * m.hidden_size * ACTIVATION_BYTES * (g - 1) / g / g * d.factors.expert_load_imbalance
    calls = 2 * m.moe_layers
    return calls * latency, calls * per_token_bytes / ring.bandwidth_bytes_per_s


def estimate_comm(d: Deployment, tokens: float) -> CommEstimate:
    """Communication for one forward pass over `tokens` tokens (a decode step over the
    batch, or a prefill over the prompt)."""
    size = tokens * d.model.hidden_size * ACTIVATION_BYTES
    count = _count(d)
    if d.dp_ep:
        fixed, per_token = all_to_all(d)
        return CommEstimate(tokens, size, 0, fixed + per_token * tokens, 0.0, "all-to-all")
    if d.row_split:
        per_chunk, per_token = row_split_transfers(d)
        chunks = max(1, math.ceil(tokens / ROW_SPLIT_CHUNK_TOKENS))
        return CommEstimate(tokens, size, 0, chunks * per_chunk + per_token * tokens, 0.0, _row_split_name(d))
    algo = allreduce_algorithm(d, size) if count else None
    tp_time = count * algo.time_s(size) if algo else 0.0
    pp_time = 0.0
    if d.pp > 1:
        bandwidth, latency = _pp_link(d)
        pp_time = (d.pp - 1) * (size / d.tp / bandwidth + latency)
    return CommEstimate(tokens, size, count, tp_time, pp_time, algo.name if algo else "none")


def comm_segments(d: Deployment) -> tuple[CommSegment, ...]:
    """The forward pass's communication as pieces linear in tokens, one per run of
    token counts over which the algorithm holds; the last runs to infinity. A piece
    applies to tokens below its `upto_tokens` (and at or above the previous one)."""
    per_token_bytes = d.model.hidden_size * ACTIVATION_BYTES
    count = _count(d)
    if d.dp_ep:
        fixed, per_token = all_to_all(d)
        return (CommSegment(math.inf, fixed, per_token, "all-to-all"),)
    if d.row_split:
        # one chunk up to 128 tokens, then a chunk's cost every 128 (ceil taken as linear)
        per_chunk, per_token = row_split_transfers(d)
        name = _row_split_name(d)
        return (
            CommSegment(ROW_SPLIT_CHUNK_TOKENS, per_chunk, per_token, name),
            CommSegment(math.inf, 0.0, per_token + per_chunk / ROW_SPLIT_CHUNK_TOKENS, name),
        )
    pp_fixed = pp_per_token = 0.0
    if d.pp > 1:
        bandwidth, latency = _pp_link(d)
        pp_fixed = (d.pp - 1) * latency
        pp_per_token = (d.pp - 1) * per_token_bytes / d.tp / bandwidth
    if not count:
        return (CommSegment(math.inf, pp_fixed, pp_per_token, "none"),)
    edges = [0.0] + [b / per_token_bytes for b in _breakpoints_bytes(d)] + [math.inf]
    segments: list[CommSegment] = []
    for lo, hi in zip(edges, edges[1:]):
        if hi <= lo:
            continue
        probe = (lo + hi) / 2 if math.isfinite(hi) else 2 * lo + 1
        algo = allreduce_algorithm(d, probe * per_token_bytes)
        assert algo is not None  # count > 0: TP > 1 has an algorithm
        seg = CommSegment(
            hi,
            count * algo.latency_s + pp_fixed,
            count * algo.seconds_per_byte * per_token_bytes + pp_per_token,
            algo.name,
        )
        if segments and segments[-1].algorithm == seg.algorithm:
            segments[-1] = seg
        else:
            segments.append(seg)
    return tuple(segments)


_COMM: Kept[tuple[float, float, tuple[CommSegment, ...]]] = Kept()
"""A deployment's step communication (physics/kept.py): the figures depend on the split
alone, and the explanation asks for them again at every workload it moves."""


def step_comm(d: Deployment) -> tuple[float, float, tuple[CommSegment, ...]]:
    """(fixed seconds, seconds per token, the piecewise form) of a step's communication."""

    def compute() -> tuple[float, float, tuple[CommSegment, ...]]:
        comm0 = estimate_comm(d, 0).time_s
        return comm0, estimate_comm(d, 1).time_s - comm0, comm_segments(d)

    return _COMM.get((d,), compute)


def comm_time_from_segments(segments: tuple[CommSegment, ...], tokens: float) -> float:
    """The piece that holds at `tokens`, but never less than what fewer tokens cost: where
    the engine switches to a faster algorithm the time would dip, and a step must not get
    faster with a larger batch (the batch caps are found by bisection)."""
    floor = 0.0
    for seg in segments:
        if tokens < seg.upto_tokens:
            return max(floor, seg.time_s(tokens))
        floor = max(floor, seg.time_s(seg.upto_tokens))
    return max(floor, segments[-1].time_s(tokens))
