"""Which splits are possible at all, before any estimate: the serving engines'
divisibility rules and the platform's shape. Each refusal says why.

The rules are vLLM's, which SGLang and TensorRT-LLM share in substance:
- attention heads are split across TP ranks: heads % tp == 0;
- KV heads are split when tp ≤ kv_heads (kv_heads % tp == 0) and replicated when
  tp > kv_heads (tp % kv_heads == 0);
- the MLP's intermediate size is split column-wise: intermediate % tp == 0, and for
  group-quantised formats and block-quantised checkpoints each rank's slice must hold
  whole groups and blocks, unless the engine pads that format's experts;
- the engine must have kernels for the weight and KV formats (the lists deploy reads);
- a TP group lies inside one scale-up domain; pipeline stages may cross nodes.
"""

from __future__ import annotations

from solver.physics.compute import compute_dtype
from solver.physics.deployment import Deployment, Workload

INTERCONNECT = "interconnect"
"""The kind of refusal the interconnect constraint owns: a TP group or a replica that
does not fit the platform's scale-up domain or nodes."""


def refusals(d: Deployment, w: Workload) -> list[str]:
    return [reason for _, reason in check(d, w)]


DP_EP_ENGINES = ("vllm", "sglang", "trtllm")
"""Engines with data-parallel attention over expert-parallel MoE layers: vLLM
(--data-parallel-size with --enable-expert-parallel), SGLang (--enable-dp-attention,
--ep-size), TensorRT-LLM (enable_attention_dp, moe_expert_parallel_size)."""


TP_EP_ENGINES = ("vllm", "sglang", "trtllm")
"""Engines with expert parallelism inside a tensor-parallel group: vLLM
(--enable-expert-parallel without --data-parallel-size), SGLang (--tp with --ep-size),
TensorRT-LLM (moe_expert_parallel_size with tensor-parallel attention)."""


def _dp_ep(d: Deployment) -> list[tuple[str, str]]:
    m, g, name = d.model, d.tp, d.parallelism
    out = []
    if not m.is_moe:
        out.append(("split", f"{name} splits routed experts; {m.display_name} has none"))
    elif m.num_experts % g:
        out.append(("split", f"{name} over {g} GPUs does not divide the model's {m.num_experts} routed experts"))
    if g < 2:
        out.append(("split", f"{name} needs 2 GPUs or more (one GPU is tp 1)"))
    if d.pp > 1:
        out.append(("split", f"{name} is planned with pp 1"))
    engines, what = (DP_EP_ENGINES, "data-parallel attention") if d.dp_ep else (TP_EP_ENGINES, "expert parallelism")
    if d.engine is not None and d.engine.name not in engines:
        out.append(("split", f"{d.engine.display_name} has no {what} (engines with it: {', '.join(engines)})"))
    return out


def _cite(source: str) -> str:
    """A catalog source's first clause, for a reason's parenthesis."""
    return source.split(" (")[0].split(":")[0].strip()


def _whole_blocks(d: Deployment, tp: int, per_gpu: int, experts: bool) -> list[tuple[str, str]]:
    """Each GPU's slice of the MLP holds whole quantisation groups, and whole blocks of
    a block-quantised checkpoint (the one deploy serves), unless the engine pads the
    experts of that format to its kernels' block (catalogs/engines.yaml)."""
    e, wf = d.engine, d.weights
    what = "expert MLP" if experts else "MLP"
    if e is not None and experts and wf.name in e.pads_moe_intermediate:
        return []  # e.g. vLLM's MXFP4 MoE rounds each GPU's slice up (gpt-oss-120b at TP 4 and 8)
    out = []
    if wf.group_size and per_gpu % wf.group_size:
        out.append(("split", f"tp={tp} leaves {per_gpu} {what} columns per GPU, not a multiple of the {wf.name} group size {wf.group_size}"))
    ckpt = d.model.served_block(wf.name, e.weights_container if e is not None else "safetensors")
    if ckpt is not None and ckpt.weight_block_size and per_gpu % ckpt.weight_block_size:
        b = ckpt.weight_block_size
        out.append(
            (
                "split",
                f"tp={tp} leaves {per_gpu} {what} columns per GPU, not whole {b}×{b} blocks of {ckpt.hf_id} (weight_block_size in its "
                f"config.json, catalogs/models.yaml): vLLM refuses it at load ('not divisible by weight quantization block_n = {b}'); "
                "a smaller TP or expert parallelism serves it",
            )
        )
    return out


def padded_split(d: Deployment) -> bool:
    """Whether the engine pads this split's expert slices (they hold part of a group per
    GPU). The padded bytes are counted (held and read) where the engine's rule for the
    device is in the catalog (physics/padding.py, vLLM's MXFP4 on Ampere, Ada, Hopper,
    B200 and ROCm); how the kernels' time differs at these shapes is not modelled, and
    bench/fit_defaults.py keeps such splits out of the fit."""
    m, e, g = d.model, d.engine, d.weights.group_size
    if e is None or d.expert_parallel or not m.is_moe or not m.moe_intermediate_size or d.weights.name not in e.pads_moe_intermediate:
        return False
    per_gpu = m.moe_intermediate_size // d.tp
    block = d.model.served_block(d.weights.name, e.weights_container)
    return bool((g and per_gpu % g) or (block and block.weight_block_size and per_gpu % block.weight_block_size))


def _engine_formats(d: Deployment) -> list[tuple[str, str]]:
    """The formats the engine has kernels for: the list deploy emits from (catalogs/engines.yaml)."""
    e = d.engine
    if e is None:
        return []
    out = []
    if e.weight_formats and d.weights.name not in e.weight_formats:
        out.append(
            (
                "format",
                f"{e.display_name} cannot run {d.weights.name} weights (it runs: {', '.join(e.weight_formats)}; "
                f"catalogs/engines.yaml, from {_cite(e.formats_source)})",
            )
        )
    if e.kv_formats and d.kv.name not in e.kv_formats:
        out.append(("format", f"{e.display_name} cannot hold a {d.kv.name} KV cache (it holds: {', '.join(e.kv_formats)}; catalogs/engines.yaml)"))
    return out


def check(d: Deployment, w: Workload) -> list[tuple[str, str]]:
    """(kind, reason) for every rule this split breaks; kind is "split", "format",
    "workload" or INTERCONNECT."""
    m, dev, plat = d.model, d.device, d.platform
    out: list[tuple[str, str]] = []
    tp, pp = d.tp, d.pp
    if d.expert_parallel:
        out += _dp_ep(d)
    if d.dp_ep:
        tp = 1  # attention and the dense layers run whole on each GPU: no head or column split
    if m.num_attention_heads % tp:
        out.append(("split", f"tp={tp} does not divide the model's {m.num_attention_heads} attention heads"))
    if m.attention != "mla":
        kv = m.num_kv_heads
        if tp <= kv and kv % tp:
            out.append(("split", f"tp={tp} does not divide the model's {kv} KV heads"))
        if tp > kv and tp % kv:
            out.append(("split", f"tp={tp} exceeds the model's {kv} KV heads and is not a multiple of them"))
    # the MLP columns split by TP: the experts' (each split over the group), or under
    # expert parallelism only the dense layers' (the experts stay whole)
    experts = bool(m.is_moe and m.moe_intermediate_size and not d.expert_parallel)
    mlp = m.moe_intermediate_size if experts and m.moe_intermediate_size else m.intermediate_size
    if mlp % tp:
        out.append(("split", f"tp={tp} does not divide the MLP intermediate size {mlp}"))
    else:
        out += _whole_blocks(d, tp, mlp // tp, experts)
    tp = d.tp  # the group's size, for the interconnect's rules
    if pp > m.num_layers:
        out.append(("split", f"pp={pp} exceeds the model's {m.num_layers} layers"))
    if plat.layout == "single" and (tp > 1 or pp > 1):
        out.append((INTERCONNECT, f"platform {plat.name} holds one device: tp and pp must be 1"))
    elif tp > 1:
        from solver.catalog.topology import scale_up_domain_size

        domain = scale_up_domain_size(plat)
        if tp > domain:
            out.append((INTERCONNECT, f"tp={tp} exceeds the scale-up domain of {plat.name} ({domain} GPUs); a TP group cannot span nodes"))
    if d.engine is not None and d.engine.single_node and plat.gpus_per_node < tp * pp <= plat.gpus_per_node * plat.max_nodes:
        out.append(
            (INTERCONNECT, f"tp×pp = {tp * pp} GPUs spans nodes of {plat.gpus_per_node}: {d.engine.display_name} runs a replica on one machine")
        )
    if tp * pp > plat.gpus_per_node * plat.max_nodes:
        out.append((INTERCONNECT, f"tp×pp = {tp * pp} GPUs exceeds {plat.name}: {plat.max_nodes} node(s) of {plat.gpus_per_node}"))
    out += _engine_formats(d)
    if d.weights.name not in dev.weight_formats and d.weights_bytes_override is None:
        out.append(("format", f"{dev.display_name} cannot run {d.weights.name} weights (it runs: {', '.join(dev.weight_formats)})"))
    elif compute_dtype(dev, d.weights) is None:
        out.append(("format", f"{dev.display_name} has no tensor throughput for {d.weights.name}"))
    if d.kv.name not in dev.kv_formats:
        out.append(("format", f"{dev.display_name} cannot hold a {d.kv.name} KV cache (it holds: {', '.join(dev.kv_formats)})"))
    if w.context_tokens > m.max_context_tokens:
        out.append(("workload", f"context of {w.context_tokens} tokens exceeds the model's maximum {m.max_context_tokens}"))
    if w.prompt_tokens + w.output_tokens > w.context_tokens:
        out.append(("workload", f"prompt + output = {w.prompt_tokens + w.output_tokens} tokens exceeds the context of {w.context_tokens}"))
    return out
