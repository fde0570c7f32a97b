"""Memory an engine keeps on each GPU beside weights and KV, one named term each.

vLLM sizes its KV cache as total × gpu_memory_utilization less what its startup
profile measured (vllm/v1/worker/gpu_worker.py, determine_available_memory): the
weights, the non-torch memory (CUDA context, cuBLAS workspaces, NCCL's buffers), the
torch peak of a dummy forward over its token budget followed by a dummy sampler run,
and, where the release profiles them, the CUDA graphs it will capture. Each term here
reads the engine's fields (catalogs/engines.yaml), so a release line that changes one
changes the KV budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.catalog import Engine
from solver.physics.deployment import Deployment
from solver.physics.kept import Kept
from solver.physics.weights import BYTES_16BIT
from solver.units import MiB


@dataclass(frozen=True)
class EngineMemory:
    """Per GPU, the bytes the engine holds outside weights and KV, by term."""

    runtime_bytes: float
    """Non-torch memory of one process: CUDA context, cuBLAS workspaces (factors)."""
    comm_buffer_bytes: float
    """The TP group's communication buffers (NCCL's NVLink SHARP multicast buffers)."""
    forward_bytes: float
    """The profiled forward pass's activation peak."""
    sampler_bytes: float
    """The profiled sampler run's peak over max_num_seqs rows of the vocabulary."""
    cuda_graph_bytes: float
    """The CUDA graphs' memory pool, where the engine counts it before sizing KV."""
    forward_tokens: int
    """Tokens in the profiled forward pass (0: the engine profiles none)."""
    cuda_graphs: int
    """Graphs captured per layer piece (0: eager, or not counted)."""

    @property
    def activation_bytes(self) -> float:
        """The profile run's torch peak: forward then sampler, scaled alike."""
        return self.forward_bytes + self.sampler_bytes

    @property
    def total_bytes(self) -> float:
        return self.runtime_bytes + self.comm_buffer_bytes + self.activation_bytes + self.cuda_graph_bytes


def step_budget_tokens(d: Deployment, context_tokens: int) -> int:
    """Tokens one scheduler step may take: max_num_batched_tokens, or, without chunked
    prefill on an engine that raises it to the model's length (vLLM V0: max(max_model_len,
    2048) when not given, and it refuses to start with less), max(max_model_len, it)."""
    e = d.engine
    if e is None:
        return 8192
    if e.enable_chunked_prefill or not e.unchunked_budget_holds_model_len:
        return e.max_num_batched_tokens
    return _one_pass_tokens(e, context_tokens)


def _one_pass_tokens(e: Engine, context_tokens: int) -> int:
    """An unchunked pass's tokens: the whole model length where it is longer than the budget."""
    return max(e.max_model_len or context_tokens, e.max_num_batched_tokens)


def profiled_tokens(d: Deployment, context_tokens: int) -> int:
    """Tokens in the engine's profiling pass: max_num_batched_tokens with chunked
    prefill, else the whole max_model_len if that is longer (0: no profiling pass)."""
    e = d.engine
    if e is None or not e.profiles_activation:
        return 0
    return e.max_num_batched_tokens if e.enable_chunked_prefill else _one_pass_tokens(e, context_tokens)


def forward_bytes_per_token(d: Deployment) -> float:
    """Live 16-bit bytes per token at the forward's peak, per GPU: the MLP's fused
    gate/up output (2 × intermediate) and its activated half (intermediate), split by
    TP, beside three hidden-width buffers (residual, normed input, output); an MoE
    layer holds that per routed expert of every token (fused-MoE caches)."""
    m = d.model
    if m.is_moe:
        inter = m.experts_per_token * (3 * (m.moe_intermediate_size or m.intermediate_size) / d.tp + m.hidden_size)
    else:
        inter = 3 * m.intermediate_size / d.tp
    return BYTES_16BIT * (inter + 3 * m.hidden_size)


def capture_sizes(largest: int) -> list[int]:
    """vLLM's default CUDA-graph batch sizes up to `largest`: 1, 2, 4, then every 8
    below 256, then every 16 (vllm/config/compilation.py, the default
    cudagraph_capture_sizes; 51 sizes up to 512, as the v0.19 logs print)."""
    sizes = [1, 2, 4, *range(8, 256, 8), *range(256, largest + 1, 16)]
    return [s for s in sizes if s <= largest]


def cuda_graph_count(d: Deployment) -> int:
    """Graphs captured per layer piece, 0 when eager or when the engine does not count
    them before it sizes the KV cache. The largest size is capped at 2 × max_num_seqs
    (vLLM: max_cudagraph_capture_size = min(max_num_seqs × 2, 512))."""
    e = d.engine
    if e is None or e.enforce_eager or not e.profiles_cuda_graphs or not e.cuda_graph_max_capture_size:
        return 0
    return len(capture_sizes(min(e.cuda_graph_max_capture_size, 2 * e.max_num_seqs)))


_KEPT: Kept[EngineMemory] = Kept()
"""`engine_memory` by the deployment and its profiled tokens, the one figure a context
moves (and only without chunked prefill; physics/kept.py): the explanation re-derives
every option's memory at each context it moves."""


def engine_memory(d: Deployment, context_tokens: int) -> EngineMemory:
    """Every term for deployment d at a context of `context_tokens` (memoised, `_KEPT`)."""
    tokens = profiled_tokens(d, context_tokens)
    return _KEPT.get((d,), lambda: _engine_memory(d, tokens), tokens)


def _engine_memory(d: Deployment, tokens: int) -> EngineMemory:
    """Every term for deployment d with `tokens` in its profiling pass."""
    f = d.factors
    comm = float(f.tp_overhead_bytes) if d.tp > 1 and d.platform.allreduce.nvls is not None else 0.0
    e = d.engine
    forward = sampler = 0.0
    if e is not None and e.profiles_activation:
        forward = f.activation_peak_scale * tokens * forward_bytes_per_token(d)
        # a profiled sampler run's peak takes the peak's scale; buffers the runtime
        # allocates per slot (TensorRT-LLM's TensorRT flow) are what they are
        scale = 1.0 if e.sampler_bytes_allocated else f.activation_peak_scale
        sampler = scale * e.max_num_seqs * d.model.vocab_size * e.sampler_bytes_per_logit
    graphs = cuda_graph_count(d)
    # piecewise graphs: one per layer piece per size, each with a fixed pool share and
    # a share TP splits
    per_graph = e.cuda_graph_bytes_per_layer_graph + e.cuda_graph_sharded_bytes_per_layer_graph / d.tp if e is not None else 0.0
    layers = -(-d.model.num_layers // d.pp)  # the heaviest stage captures its own layers
    graph_bytes = float(graphs * layers * per_graph)
    return EngineMemory(
        runtime_bytes=float(f.runtime_overhead_bytes),
        comm_buffer_bytes=comm,
        forward_bytes=forward,
        sampler_bytes=sampler,
        cuda_graph_bytes=graph_bytes,
        forward_tokens=tokens,
        cuda_graphs=graphs,
    )


@dataclass(frozen=True)
class MemoryFraction:
    """The share of each GPU's memory the engine's KV rule takes (vLLM's
    gpu_memory_utilization, SGLang's mem_fraction_static), and why that one."""

    value: float
    why: str


def memory_fraction(d: Deployment) -> MemoryFraction:
    """The one place the fraction is read: the engine's own rule for this deployment (its
    GPU's MiB as nvidia-smi totals them, TP, PP, a draft beside the target) unless a spec's
    knob replaced it (the rule then dropped, physics/resolve.py), else the factors' figure."""
    e = d.engine
    rule = e.fraction_rule if e else None
    if e is None or rule is None:
        return MemoryFraction(d.factors.memory_utilization, "the engine's default" if e and d.factors.memory_utilization == e.fraction else "given")
    s = d.speculation
    draft = None if s is None else ("model" if s.method == "draft_model" else "head")
    value = rule.fraction(d.device.memory_bytes / MiB, d.tp, d.pp, draft)
    if rule.by_tp:
        why = f"{e.display_name}'s default at TP {d.tp}"
    else:
        why = f"{e.display_name}'s default for {d.device.memory_bytes / MiB:,.0f} MiB at TP {d.tp}" + (f" × PP {d.pp}" if d.pp > 1 else "")
        why += f" with a draft {'model' if draft == 'model' else 'head'}" if draft else ""
    return MemoryFraction(value, why + (f", {e.release.split(':')[0]}" if e.release else ""))
