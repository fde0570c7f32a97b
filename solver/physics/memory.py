"""Step 1 of the seed: memory capacity per GPU.

needed = weights / (tp · pp) + KV / (tp · pp) + runtime overhead ≤ memory × utilisation.

Weights per GPU come from weights.py (parameters × bytes per parameter at the real cost
of the format, a rank's share of them). KV = 2 × layers × kv_heads × head_dim × bytes per
token (the seed's formula), with three corrections real engines make: MLA caches one
compressed latent per layer instead of K and V, sliding-window layers hold at most
the window, and when TP exceeds the KV heads the heads are replicated (and an MLA
latent is replicated on every TP rank), so per-GPU KV stops shrinking.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.bisect import largest_true
from solver.catalog import Model, Precision
from solver.physics.deployment import Deployment, Workload, shared_kv_tokens
from solver.physics.engine_memory import EngineMemory, engine_memory, memory_fraction
from solver.physics.kept import Kept
from solver.physics.weights import deployment_weights_bytes, per_gpu_weights_bytes, stage_layer_fraction


def kv_bytes_per_token_per_layer(model: Model, kv: Precision) -> float:
    """K and V of one token in one layer (MLA: the latent plus the RoPE key)."""
    if model.attention == "mla":
        assert model.kv_lora_rank is not None and model.qk_rope_head_dim is not None  # Model requires both for MLA
        return (model.kv_lora_rank + model.qk_rope_head_dim) * kv.bytes_per_value
    return 2 * model.num_kv_heads * model.head_dim * kv.bytes_per_value


def kv_bytes_per_sequence(model: Model, kv: Precision, tokens: int) -> float:
    """KV bytes one sequence of `tokens` holds across all layers."""
    per_layer = kv_bytes_per_token_per_layer(model, kv)
    full_layers = model.num_layers - model.sliding_layers
    resident = full_layers * tokens
    if model.sliding_layers:
        assert model.sliding_window is not None  # Model requires it with sliding layers
        resident += model.sliding_layers * min(tokens, model.sliding_window)
    return per_layer * resident


def kv_shard_fraction(model: Model, tp: int) -> float:
    """Share of the KV cache one TP rank holds. KV heads split across ranks until
    there are more ranks than heads; then each rank keeps one (replicated) head. MLA's
    latent is not split by head at all: every rank keeps all of it (vLLM, SGLang)."""
    if model.attention == "mla":
        return 1.0
    return 1.0 / min(tp, model.num_kv_heads)


def activation_peak_bytes(d: Deployment, context_tokens: int) -> float:
    """Per GPU: the activation peak of the engine's profiling pass, which its KV budget
    leaves room for (vLLM: a forward over max_num_batched_tokens tokens — over the
    whole max_model_len when chunked prefill is off — then the sampler over
    max_num_seqs rows; physics/engine_memory.py has each term)."""
    return engine_memory(d, context_tokens).activation_bytes


def visible_bytes(d: Deployment) -> float:
    """Device memory the runtime sees: the reported total less the driver's share (a
    figure measured on NVIDIA's driver: other vendors' totals are taken as reported)."""
    reserved = d.factors.reserved_bytes if d.device.vendor == "NVIDIA" else 0
    return max(0.0, float(d.device.memory_bytes) - reserved)


def overhead_bytes(d: Deployment, context_tokens: int) -> float:
    """Per GPU, beside weights and KV: every term the engine keeps (engine_memory)."""
    return engine_memory(d, context_tokens).total_bytes


def kv_budget_bytes(
    rule: str, device_bytes: float, fraction: float, weights_bytes: float, overhead_bytes: float, preload_bytes: float = 0.0
) -> float:
    """Bytes an engine gives the KV cache on one GPU (catalogs/engines.yaml):
    vLLM a fraction of the total less weights and overhead; SGLang a static fraction
    for weights and KV of the memory free before it loads the model, what its CUDA
    context and TP group took (preload_bytes) gone already (the overhead must fit in the
    rest); TensorRT-LLM a fraction of what is free after weights and overhead; llama.cpp
    what is left."""
    if rule == "static_fraction":
        # SGLang model_runner: init_torch_distributed returns min_per_gpu_memory, the free
        # memory after the distributed and model-parallel init, before the weights
        # (pre_model_load_memory); profile_max_num_token(total_gpu_memory=that) keeps
        # rest_memory = available_gpu_memory - total_gpu_memory * (1 - mem_fraction_static)
        # for KV, available_gpu_memory measured after the weights load (sgl-project/sglang
        # python/sglang/srt/model_executor/model_runner.py, 2024-2026; read 2026-12-06).
        return min((device_bytes - preload_bytes) * fraction - weights_bytes, device_bytes - weights_bytes - overhead_bytes)
    if rule == "fraction_of_free":
        return (device_bytes - weights_bytes - overhead_bytes) * fraction
    return device_bytes * fraction - weights_bytes - overhead_bytes  # fraction_of_total, contiguous


def kv_capacity_blocks(kv_budget_bytes: float, kv_bytes_per_token: float, block_size_tokens: int) -> int:
    """Whole blocks of block_size tokens (every layer) the KV budget holds: vLLM's
    num_gpu_blocks; its "GPU KV cache size" is that times the block size."""
    per_block = kv_bytes_per_token * block_size_tokens
    return max(0, int(kv_budget_bytes // per_block)) if per_block > 0 else 0


@dataclass(frozen=True)
class MemoryEstimate:
    """Per-GPU memory of the heaviest GPU (first pipeline stage), in bytes."""

    weights_bytes: float
    kv_bytes: float
    overhead_bytes: float
    """Runtime overhead plus the activation peak."""
    device_bytes: float
    """What the runtime sees: the device's total less the driver's share."""
    utilization: float
    model_weights_bytes: float
    """Whole model, unsharded."""
    model_kv_bytes: float
    """Whole KV cache, unsharded, all sequences of one replica."""
    kv_bytes_per_sequence: float
    """Per GPU, one sequence at full context."""
    batch: int
    rule: str = "fraction_of_total"
    """The engine's KV sizing rule."""
    kv_bytes_per_token: float = 0.0
    """Per GPU, one token in every layer."""
    block_size_tokens: int = 16
    context_tokens: int = 0
    activation_bytes: float = 0.0
    """Of the overhead, the engine's profiled activation peak."""
    activation_tokens: int = 0
    """Tokens in the profiling pass that peak comes from (0: the engine has none)."""
    reserved_bytes: float = 0.0
    """The driver's share, outside device_bytes."""
    max_num_seqs: int | None = None
    """The engine schedules at most this many sequences at once."""
    kv_bytes_per_context_sequence: float = 0.0
    """Per GPU, one sequence holding the whole context_tokens (sliding-window layers
    their window): what max_concurrency counts. kv_bytes_per_sequence is this at the
    workload's average fill."""
    shared_kv_bytes: float = 0.0
    """Per GPU, the shared prompt prefix's KV, held once for every sequence (in
    kv_bytes; kv_bytes_per_sequence is then each sequence's own tokens only)."""
    draft_weights_bytes: float = 0.0
    """Per GPU, a speculative draft's weights (in weights_bytes; its KV is in each
    sequence's)."""
    engine_kept: EngineMemory | None = None
    """The overhead by term: runtime, TP buffers, forward and sampler peaks, CUDA graphs."""
    preload_bytes: float = 0.0
    """Of the overhead, what the engine holds before it measures the memory its static
    fraction is of (SGLang: the runtime and the TP group's buffers); 0 for other rules."""

    @property
    def kv_budget_bytes(self) -> float:
        return kv_budget_bytes(self.rule, self.device_bytes, self.utilization, self.weights_bytes, self.overhead_bytes, self.preload_bytes)

    @property
    def needed_bytes(self) -> float:
        return self.weights_bytes + self.kv_bytes + self.overhead_bytes

    @property
    def usable_bytes(self) -> float:
        """Weights, overhead and the KV budget: for vLLM, memory × utilisation."""
        return self.weights_bytes + self.overhead_bytes + self.kv_budget_bytes

    @property
    def margin_bytes(self) -> float:
        return self.kv_budget_bytes - self.kv_bytes

    @property
    def fits(self) -> bool:
        return self.margin_bytes >= 0

    @property
    def max_batch(self) -> int:
        """Most sequences at this context that fit beside the weights, and that the
        engine schedules at once (max_num_seqs)."""
        room = self.kv_budget_bytes - self.shared_kv_bytes
        if room <= 0 or self.kv_bytes_per_sequence <= 0:
            return 0
        fit = int(room // self.kv_bytes_per_sequence)
        return min(fit, self.max_num_seqs) if self.max_num_seqs else fit

    @property
    def kv_capacity_blocks(self) -> int:
        """Blocks of block_size tokens the KV budget holds (vLLM's "# GPU blocks")."""
        return kv_capacity_blocks(self.kv_budget_bytes, self.kv_bytes_per_token, self.block_size_tokens)

    @property
    def kv_capacity_tokens(self) -> int:
        """vLLM's "GPU KV cache size: N tokens"."""
        return self.kv_capacity_blocks * self.block_size_tokens

    @property
    def max_concurrency(self) -> float:
        """Sequences at the full context the KV budget holds, from the same bytes per
        sequence as max_batch (a sliding layer keeps min(context, window) tokens), so
        the two never disagree: at a fill of 1, max_batch is its floor (less any
        max_num_seqs cap). vLLM prints the like as "Maximum concurrency for L tokens
        per request" (in whole blocks, and for sliding layers the window plus one
        prefill chunk: v1 kv_cache_interface.py, SlidingWindowSpec)."""
        room = self.kv_budget_bytes
        if room <= 0 or self.kv_bytes_per_context_sequence <= 0:
            return 0.0
        return room / self.kv_bytes_per_context_sequence


def per_gpu_kv_bytes_per_sequence(d: Deployment, tokens: int) -> float:
    """KV bytes one sequence of `tokens` puts on the heaviest GPU: the one figure that
    every capacity (max_batch, max_concurrency, the longest context) divides by."""
    if d.dp_ep:  # each GPU holds its own sequences whole: a replica's per GPU, on average
        return kv_bytes_per_sequence(d.model, d.kv, tokens) / d.tp
    return kv_bytes_per_sequence(d.model, d.kv, tokens) * kv_shard_fraction(d.model, d.kv_ranks) * stage_layer_fraction(d.model, d.pp)


_CONTEXT_FREE: Kept[tuple[float, float, float, float, float]] = Kept()
"""`_context_free` by the deployment (physics/kept.py): the explanation re-derives every
option's memory at each context it moves, and these figures read the split alone."""


def _context_free(d: Deployment) -> tuple[float, float, float, float, float]:
    """Of `estimate_memory`'s figures, those the workload does not move (memoised,
    `_CONTEXT_FREE`): (weights per GPU with the draft's, the draft's weights per GPU,
    the checkpoint's bytes, the bytes the runtime sees, KV bytes per token per GPU)."""
    return _CONTEXT_FREE.get((d,), lambda: _derive_context_free(d))


def _derive_context_free(d: Deployment) -> tuple[float, float, float, float, float]:
    s = d.speculation  # a draft's weights beside the target's
    # the layer and LM head split over TP; a once-a-round read (EAGLE-3's fc, a
    # ReplicatedLinear in vLLM's llama_eagle3.py) is whole on every rank, as decode reads it
    draft_weights = (s.draft_weight_bytes - s.draft_round_read_bytes) / d.tp + s.draft_round_read_bytes if s else 0.0
    return (
        per_gpu_weights_bytes(d) + draft_weights,
        draft_weights,
        deployment_weights_bytes(d),
        visible_bytes(d),
        per_gpu_kv_bytes_per_sequence(d, 1),
    )


def estimate_memory(d: Deployment, w: Workload) -> MemoryEstimate:
    """A shared prompt prefix the engine caches is held once per replica: each
    sequence holds its own tokens beyond it (`shared_kv_tokens`)."""
    weights, draft_weights, model_weights, device, kv_per_token = _context_free(d)
    batch = d.batch_per_replica(w)
    shared = shared_kv_tokens(d, w)
    # a sequence whose prompt missed the cache holds its own copy of the prefix
    hits = round(shared * w.prefix_hit_rate)
    per_seq = per_gpu_kv_bytes_per_sequence(d, max(1, w.resident_tokens - hits))
    shared_bytes = per_gpu_kv_bytes_per_sequence(d, shared) if shared else 0.0
    if shared and d.dp_ep:  # each data-parallel rank caches the prefix for its own sequences
        shared_bytes = kv_bytes_per_sequence(d.model, d.kv, shared)
    s = d.speculation  # a draft's KV beside each sequence's
    if s:
        per_seq += s.draft_kv_bytes_per_token * w.resident_tokens / d.tp
    engine = d.engine
    kept = engine_memory(d, w.context_tokens)
    return MemoryEstimate(
        weights_bytes=weights,
        kv_bytes=per_seq * batch + shared_bytes,
        overhead_bytes=kept.total_bytes,
        device_bytes=device,
        utilization=memory_fraction(d).value,
        model_weights_bytes=model_weights,
        model_kv_bytes=kv_bytes_per_sequence(d.model, d.kv, max(1, w.resident_tokens - shared)) * batch
        + (kv_bytes_per_sequence(d.model, d.kv, shared) if shared else 0.0),
        kv_bytes_per_sequence=per_seq,
        batch=batch,
        rule=engine.rule if engine else "fraction_of_total",
        kv_bytes_per_token=kv_per_token,
        block_size_tokens=engine.block_size_tokens if engine else 16,
        context_tokens=w.context_tokens,
        activation_bytes=kept.activation_bytes,
        activation_tokens=kept.forward_tokens,
        reserved_bytes=float(d.device.memory_bytes) - device,
        # data-parallel attention ranks schedule their own sequences: each its max_num_seqs
        max_num_seqs=engine.max_num_seqs * (d.tp if d.dp_ep else 1) if engine else None,
        kv_bytes_per_context_sequence=per_gpu_kv_bytes_per_sequence(d, w.context_tokens),
        shared_kv_bytes=shared_bytes,
        draft_weights_bytes=draft_weights,
        engine_kept=kept,
        preload_bytes=kept.runtime_bytes + kept.comm_buffer_bytes if engine and engine.rule == "static_fraction" else 0.0,
    )


def max_context_tokens(d: Deployment, w: Workload) -> int:
    """Longest context at this batch that fits (0 if none), by bisection: KV grows
    monotonically with tokens but not linearly once windows fill."""
    mem = estimate_memory(d, w)
    room, batch = mem.kv_budget_bytes, mem.batch
    upper = max(w.context_tokens, d.model.max_context_tokens)
    return largest_true(lambda n: per_gpu_kv_bytes_per_sequence(d, n) * batch <= room, upper)
