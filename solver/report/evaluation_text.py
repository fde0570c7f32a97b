"""An Evaluation for people: the seed's four steps with every figure and its unit, a
verdict per constraint, and remedies when one fails."""

from __future__ import annotations

import math
from typing import cast

from solver.catalog import ComputeDtype, Device
from solver.physics.compute import matmul_share
from solver.physics.deployment import Deployment, shared_kv_tokens
from solver.physics.engine_memory import memory_fraction
from solver.physics.evaluate import Evaluation, Verdict
from solver.physics.interconnect import ROW_SPLIT_CHUNK_TOKENS, row_split_matrices, row_split_transfers
from solver.physics.memory import MemoryEstimate, kv_bytes_per_token_per_layer
from solver.physics.prefill import PrefillEstimate
from solver.report import bands
from solver.report.batching import batching_text
from solver.units import GB, fmt_bytes, fmt_rate, fmt_seconds

CONSTRAINT_TITLES = {
    "memory": "Step 1 · Memory capacity (per GPU)",
    "max_tpot": "Step 2 · Memory bandwidth — decode (TPOT)",
    "max_ttft": "Step 3 · Compute — prefill (TTFT)",
    "interconnect": "Step 4 · Interconnect",
}


FAILING_WORDS = {
    "memory": "memory capacity",
    "max_tpot": "the TPOT target (decode step)",
    "max_ttft": "the TTFT target (prefill)",
    "interconnect": "on the interconnect",
}


def _gb(x: float) -> str:
    return f"{x / GB:,.2f} GB"


def _verdict_text(v: Verdict) -> str:
    if v.ok is None:
        return "no target set" if v.constraint in ("max_tpot", "max_ttft") else "not involved"
    if v.constraint == "memory":
        # A memory verdict is always measured against the usable memory.
        assert v.limit is not None and v.margin is not None, "a memory verdict has a limit"
        word = "FITS" if v.ok else "EXCEEDS"
        return f"{word} — {_gb(v.value)} needed of {_gb(v.limit)} usable ({'spare' if v.ok else 'over by'} {_gb(abs(v.margin))})"
    if v.constraint == "interconnect":
        return "OK" if v.ok else "BINDS"
    # A TPOT or TTFT verdict has an `ok` only when its target (the limit) is set.
    assert v.limit is not None and v.margin is not None, "a verdict with a target has a limit"
    word = "MEETS" if v.ok else "MISSES"
    return f"{word} {fmt_seconds(v.limit)} target ({'spare' if v.ok else 'over by'} {fmt_seconds(abs(v.margin))})"


def _engine_rule(d: Deployment, mem: MemoryEstimate) -> str:
    total = _gb(mem.device_bytes)
    rule = d.engine.rule if d.engine else "fraction_of_total"
    flag = (d.engine.fraction_flag if d.engine else None) or "utilisation"
    if rule == "static_fraction":
        before = f" less {_gb(mem.preload_bytes)} taken before the weights load" if mem.preload_bytes else ""
        return f"({total} device{before}) × {mem.utilization:.3g} ({flag}) for weights + KV"
    if rule == "fraction_of_free":
        return f"weights + overhead + {mem.utilization:.2f} ({flag}) of the {total} device's free memory"
    if rule == "contiguous":
        return f"{total} device × {mem.utilization:.2f}, KV allocated up front"
    return f"{total} device × {mem.utilization:.2f} ({flag})"


def _activation_note(d: Deployment, mem: MemoryEstimate) -> str:
    e = d.engine
    if e is None or not e.profiles_activation:
        return "none: this engine's KV budget does not reserve it"
    if d.factors.activation_peak_scale == 0:
        return "ignored (activation_peak_scale 0)"
    return (
        f"profiled forward of {mem.activation_tokens:,} tokens (max_num_batched_tokens{'' if e.enable_chunked_prefill else ', chunked prefill off'})"
    )


def _fraction_text(d: Deployment) -> str:
    """The memory fraction the KV rule takes and why: the engine's rule for this
    deployment, its default, or the spec's."""
    f = memory_fraction(d)
    return f"{f.value:.3g} ({f.why})" if d.engine and d.engine.fraction_rule else f"{f.value:.2f}"


def _kept_rows(d: Deployment, mem: MemoryEstimate) -> list[tuple[str, str]]:
    """The memory the engine keeps beside weights and KV, one row a term."""
    k = mem.engine_kept
    if k is None:
        return []
    e = d.engine
    rows = [("runtime overhead", f"{fmt_bytes(k.runtime_bytes):>24}   non-torch memory: CUDA context, workspaces (runtime_overhead_bytes)")]
    if d.tp > 1:
        why = "NCCL's NVLink SHARP buffers (tp_overhead_bytes)" if k.comm_buffer_bytes else "none modelled without NVLink SHARP"
        rows.append(("TP comm buffers", f"{fmt_bytes(k.comm_buffer_bytes):>24}   {why}"))
    rows.append(("activation peak", f"{fmt_bytes(k.forward_bytes):>24}   {_activation_note(d, mem)}"))
    if e is not None and e.profiles_activation:
        per = e.sampler_bytes_per_logit
        note = f"{e.max_num_seqs:,} rows × {d.model.vocab_size:,} logits × {per} B (max_num_seqs, sampler_bytes_per_logit)"
        label = "sampler peak"
        if e.sampler_bytes_allocated:
            label = "logits + sampling"
            note = f"{e.max_num_seqs:,} slots (max_batch_size) × {d.model.vocab_size:,} logits × {per} B (sampler_bytes_per_logit)"
        rows.append((label, f"{fmt_bytes(k.sampler_bytes):>24}   {note if k.sampler_bytes else _activation_note(d, mem)}"))
    if k.cuda_graphs:
        layers = f"{-(-d.model.num_layers // d.pp)} layers"
        rows.append(
            (
                "CUDA graphs",
                f"{fmt_bytes(k.cuda_graph_bytes):>24}   {k.cuda_graphs} sizes × {layers} × {e.cuda_graph_bytes_per_layer_graph if e else 0:,} B",
            )
        )
    return rows


def _kv_band(d: Deployment, kv_tokens: int) -> str:
    lohi = bands.kv_band(d, kv_tokens)
    return f"; P10–P90 {lohi[0]:,.0f} – {lohi[1]:,.0f} tokens" if lohi else ""


def _rate_band(d: Deployment, tokens_per_s: float) -> str:
    lohi = bands.throughput_band(d, tokens_per_s)
    return f", throughput {lohi[0]:,.0f} – {lohi[1]:,.0f} tokens/s" if lohi else ""


def _combine(overlapped: bool, unhidden_share: float, parts: str) -> str:
    """How a kernel's read and compute combine: overlapped (with the share of the shorter
    that does not hide, Factors.unhidden_share), or one after the other."""
    if not overlapped:
        return f"sum({parts})"
    if unhidden_share:
        return f"max({parts}) + {unhidden_share:.2f} unhidden share × min"
    return f"max({parts})"


def _fixed(d: Deployment, seconds: float, batch: int = 0) -> str:
    f = d.factors
    per_seq = f" + {fmt_seconds(f.sequence_overhead_s)} × {batch} sequences" if batch and f.sequence_overhead_s else ""
    moe = f" + {fmt_seconds(f.expert_layer_overhead_s)} × {d.model.moe_layers} MoE layers" if d.model.moe_layers and f.expert_layer_overhead_s else ""
    ranks = f" + {fmt_seconds(f.tp_rank_overhead_s)} × {d.tp - 1} further TP ranks" if d.tp > 1 and f.tp_rank_overhead_s else ""
    return (
        f"{fmt_seconds(seconds)} = {fmt_seconds(f.step_overhead_s)} per pass + {fmt_seconds(f.layer_overhead_s)} × "
        f"{d.model.num_layers} layers{moe}{ranks}{per_seq} (scheduling, sampling, launches)"
    )


def _expert_setup(d: Deployment, pre: PrefillEstimate) -> list[tuple[str, str]]:
    """The prefill's cost per routed expert it reaches, where the model has experts."""
    if not pre.expert_overhead_s:
        return []
    m, f = d.model, d.factors
    hit = pre.expert_overhead_s / (f.prefill_expert_overhead_s * m.moe_layers)
    return [
        (
            "expert setup",
            f"{fmt_seconds(pre.expert_overhead_s)} = {fmt_seconds(f.prefill_expert_overhead_s)} × {m.moe_layers} MoE layers × "
            f"{hit:,.1f} of {m.num_experts} experts reached (prefill_expert_overhead_s: each a GEMM problem of its own, no CUDA graphs)",
        )
    ]


def _comm(seconds: float, d: Deployment) -> str:
    return fmt_seconds(seconds) if d.tp * d.pp > 1 else "none (one GPU per replica)"


def _matmul_rate(dev: Device, dtype: str, rate_flops_per_s: float) -> str:
    """The matmuls' rate, and where the device's measured share of its peak set it."""
    share = matmul_share(dev, cast(ComputeDtype, dtype))
    if share == 1.0:
        return f"{fmt_rate(rate_flops_per_s, 'FLOP/s')} {dtype}"
    return f"{fmt_rate(rate_flops_per_s / share, 'FLOP/s')} {dtype} × {share:.3f} measured matmul share = {fmt_rate(rate_flops_per_s, 'FLOP/s')}"


def _rows(rows: list[tuple[str, str]], indent: str = "  ") -> list[str]:
    width = max(len(a) for a, _ in rows)
    return [f"{indent}{a.ljust(width)}  {b}" for a, b in rows]


def render_text(ev: Evaluation) -> str:
    d, w, t = ev.deployment, ev.workload, ev.targets
    m, dev = d.model, d.device
    out: list[str] = []
    out.append(f"plan-opt evaluate · {m.display_name} on {d.gpus} × {dev.display_name}")
    header = [
        (
            "split",
            (
                f"DP attention {d.tp} × EP {d.tp}"
                if d.dp_ep
                else f"TP {d.tp} × EP {d.tp} (the experts whole, split over the TP group) × PP {d.pp}"
                if d.parallelism == "tp_ep"
                else f"TP {d.tp} × PP {d.pp}"
            )
            + f" per replica, {d.replicas} replica(s) = {d.gpus} GPU(s) on {d.platform.display_name}"
            + (
                " (llama.cpp --split-mode layer: the GPUs hold whole layers and run in turn)"
                if d.engine is not None and d.engine.split_mode == "layer" and d.pp > 1
                else ""
            ),
        ),
        (
            "precision",
            f"weights {d.weights.name} ({d.weights.bytes_per_value:.4g} B/param), KV cache {d.kv.name} ({d.kv.bytes_per_value:.4g} B/value)",
        ),
        (
            "workload",
            f"{w.users:,} concurrent users, {w.context_tokens:,}-token context (prompt {w.prompt_tokens:,} + output {w.output_tokens:,})",
        ),
        ("batching", batching_text(w.batching, d.engine, traffic=w.traffic is not None)),
        *([("engine release", f"{d.engine.release} (catalogs/engine_releases.yaml)")] if d.engine and d.engine.release else []),
        (
            "targets",
            f"TTFT ≤ {fmt_seconds(t.max_ttft_s) if t.max_ttft_s else '—'}, TPOT ≤ {fmt_seconds(t.max_tpot_s) if t.max_tpot_s else '—'}",
        ),
        (
            "factors",
            f"memory utilisation {_fraction_text(d)}, runtime overhead {_gb(d.factors.runtime_overhead_bytes)}, "
            f"bandwidth efficiency {d.factors.bandwidth_efficiency:.2f}, compute utilisation {d.factors.compute_efficiency:.2f}",
        ),
    ]
    out += _rows(header)
    if not ev.valid:
        out.append("")
        out.append("NOT POSSIBLE — this split cannot run:")
        out += [f"  - {r}" for r in ev.refusals]
        return "\n".join(out) + "\n"

    est = ev.estimates
    mem, dec, pre, ring = est.memory, est.decode, est.prefill, est.ring

    # Step 1
    out += ["", f"{CONSTRAINT_TITLES['memory']}  —  {_verdict_text(ev.verdict('memory'))}"]
    per_layer = kv_bytes_per_token_per_layer(m, d.kv)
    if m.attention == "mla":
        kv_formula = f"({m.kv_lora_rank} latent + {m.qk_rope_head_dim} rope) × {d.kv.bytes_per_value:g} B × {m.num_layers} layers"
    else:
        kv_formula = f"2 × {m.num_layers} layers × {m.num_kv_heads} KV heads × {m.head_dim} head dim × {d.kv.bytes_per_value:g} B"
    stage = f" × {math.ceil(m.num_layers / d.pp)}/{m.num_layers} layers (heaviest of {d.pp} stages)" if d.pp > 1 else ""
    if d.weights_bytes_override is not None:
        wdesc = f"{_gb(mem.model_weights_bytes)} given"
    else:
        wdesc = f"{m.total_params / 1e9:,.2f} B params × {d.weights.bytes_per_value:.4g} B/param"
        layout = m.checkpoint(d.weights.name)
        eight = list(layout.eight_bit) if layout else []  # a GGUF conversion's Q8_0 tensors
        sixteen = list(layout.sixteen_bit) if layout else []
        if d.weights.keeps_embeddings_16bit:
            sixteen += [g for g in ("embeddings", "lm_head") if g not in sixteen]
        sixteen = [g for g in sixteen if g not in eight]  # as memory weighs them
        kept = [f"{', '.join(groups)} {name}" for groups, name in ((sixteen, "16-bit"), (eight, "Q8_0")) if groups]
        if kept:
            wdesc += f" ({'; '.join(kept)})"
    if d.dp_ep:
        wdesc += f": the routed experts / EP {d.tp}, the rest whole on each GPU"
    else:
        wdesc += (f" / TP {d.tp}" if d.tp > 1 else "") + stage
    shared = shared_kv_tokens(d, w)
    kvdesc = f"{w.context_tokens:,} tokens × {mem.batch:,} sequences"
    if shared:
        kvdesc = f"({w.context_tokens:,} − {shared:,} shared prefix) tokens × {mem.batch:,} sequences + {shared:,} once"
    if m.sliding_layers:
        kvdesc += f"; {m.sliding_layers} of {m.num_layers} layers keep only a {m.sliding_window}-token window"
    if d.dp_ep:
        kvdesc += f" / {d.tp} GPUs (data-parallel attention: each holds its own sequences whole)"
    elif d.row_split:
        kvdesc += " on the main GPU alone (llama.cpp --split-mode row keeps the KV cache there)"
    elif d.tp > 1:
        if m.attention == "mla":
            kvdesc += "; the MLA latent is replicated on every TP rank"
        elif d.tp > m.num_kv_heads:
            kvdesc += f" / {m.num_kv_heads} (TP {d.tp} > {m.num_kv_heads} KV heads: heads replicated)"
        else:
            kvdesc += f" / TP {d.tp}"
    kvdesc += stage
    rows = [
        ("weights", f"{fmt_bytes(mem.weights_bytes):>24}   {wdesc}"),
        ("KV cache", f"{fmt_bytes(mem.kv_bytes):>24}   {per_layer * m.num_layers:,.0f} B/token = {kv_formula}"),
        ("", f"{'':>24}   × {kvdesc}"),
        *_kept_rows(d, mem),
        ("needed", f"{fmt_bytes(mem.needed_bytes):>24}"),
        ("usable", f"{fmt_bytes(mem.usable_bytes):>24}   {_engine_rule(d, mem)}"),
    ]
    if mem.reserved_bytes:
        rows.append(
            (
                "driver's share",
                f"{fmt_bytes(mem.reserved_bytes):>24}   of the device's {_gb(mem.device_bytes + mem.reserved_bytes)}, unseen by the runtime",
            )
        )
    if mem.kv_capacity_blocks:
        name = d.engine.display_name if d.engine else "vLLM"
        rows.append(
            (
                "KV capacity",
                f"{mem.kv_capacity_tokens:>17,} tokens   {mem.kv_capacity_blocks:,} blocks of {mem.block_size_tokens}; "
                f"max concurrency at {w.context_tokens:,} tokens: {mem.max_concurrency:.2f}x ({name})" + _kv_band(d, mem.kv_capacity_tokens),
            )
        )
        if m.sliding_layers:
            # Model.__post_init__ refuses sliding layers without a window.
            assert m.sliding_window is not None, "sliding_layers needs sliding_window"
            full = m.num_layers - m.sliding_layers
            rows.append(
                (
                    "",
                    f"{'':>24}   a sequence holds {w.context_tokens:,} tokens in {full} full layers and "
                    f"{min(w.context_tokens, m.sliding_window):,} in {m.sliding_layers} sliding ones",
                )
            )
    out += _rows(rows)

    # Step 2
    out += ["", f"{CONSTRAINT_TITLES['max_tpot']}  —  {_verdict_text(ev.verdict('max_tpot'))}"]
    eff_bw = dec.bandwidth_bytes_per_s * dec.bandwidth_efficiency
    moe = f" ({dec.expert_hit_fraction:.0%} of experts hit at batch {dec.batch})" if m.is_moe else ""
    per_gpu = f" per TP rank, over its {d.pp} pipeline stages" if d.pp > 1 else " per GPU"
    share = f" at {dec.weight_bandwidth_share:.2f} of 16-bit speed ({d.weights.name} kernels)" if dec.weight_bandwidth_share != 1 else ""
    kv_share = f" at {dec.attention_bandwidth_share:.2f} of the weights' speed (attention kernels)" if dec.attention_bandwidth_share != 1 else ""
    rows = [
        ("weights read", f"{_gb(dec.weight_bytes_read)} per step{per_gpu}{moe}{share}  → {fmt_seconds(dec.weights_time_s)}"),
        (
            "KV read",
            f"{_gb(dec.kv_bytes_read)} per step{per_gpu} ({dec.batch:,} sequence{'s' if dec.batch != 1 else ''} × {w.resident_tokens:,} tokens){kv_share}  → {fmt_seconds(dec.kv_time_s)}",
        ),
        ("bandwidth", f"{dec.bandwidth_bytes_per_s / GB:,.0f} GB/s × {dec.bandwidth_efficiency:.2f} efficiency = {eff_bw / GB:,.0f} GB/s"),
        (
            "compute",
            f"{fmt_rate(dec.flops, 'FLOP')} per step{per_gpu} at {_matmul_rate(dev, dec.compute_dtype, dec.matmul_flops_per_s)} × {dec.compute_efficiency:.2f}  → {fmt_seconds(dec.compute_time_s)}",
        ),
        *(
            [
                (
                    "prefill mixed in",
                    f"{dec.prefill_tokens:,.0f} prompt tokens per step (continuous batching: each request brings {w.prompt_tokens:,} over {w.output_tokens:,} steps)",
                )
            ]
            if dec.prefill_tokens
            else []
        ),
        (
            "GEMMs",
            f"{_combine(dec.coefficients.overlapped, dec.coefficients.unhidden_share, 'weights read, matmul FLOPs')}  → {fmt_seconds(dec.gemm_time_s)}",
        ),
        (
            "attention",
            f"{_combine(dec.coefficients.overlapped, dec.coefficients.unhidden_share, 'KV read, attention FLOPs')}  → {fmt_seconds(dec.attention_time_s)}",
        ),
        ("communication", _comm(dec.comm_time_s, d)),
        ("fixed cost", _fixed(d, dec.step_overhead_s, dec.batch)),
        (
            "TPOT",
            f"{fmt_seconds(dec.tpot_s)} ({dec.bound}-bound): {dec.tokens_per_s_per_user:,.1f} tokens/s per user, "
            f"{dec.tokens_per_s * d.replicas:,.0f} tokens/s in all"
            + bands.time_text(bands.tpot_band(d, dec.tpot_s, dec.batch), bands.tpot_source(d, dec.batch), "TPOT")
            + _rate_band(d, dec.tokens_per_s * d.replicas),
        ),
    ]
    sp = d.speculation
    if sp is not None:
        c = dec.coefficients
        rows[-1:-1] = [
            (
                "speculative",
                f"{sp.method} ({sp.draft_name}): {sp.num_tokens} drafted, α {'/'.join(f'{a:g}' for a in sp.alphas)} by position → "
                f"1 + Σ_k Π_(j≤k) α_j = {sp.expected_tokens:.2f} tokens per verification step",
            ),
            (
                "",
                f"verify {fmt_seconds(c.verify_step_s(dec.batch))} (the rows above, over {sp.num_tokens + 1} tokens a sequence) + draft "
                f"{fmt_seconds(c.draft_s(dec.batch))} ({sp.num_tokens} passes of {fmt_bytes(sp.draft_read_bytes / d.tp).strip()}"
                + (f", the fc once, {fmt_bytes(sp.draft_round_read_bytes).strip()}" if sp.draft_round_read_bytes else "")
                + f"), ÷ {sp.expected_tokens:.2f}",
            ),
        ]
    out += _rows(rows)

    # Step 3
    out += ["", f"{CONSTRAINT_TITLES['max_ttft']}  —  {_verdict_text(ev.verdict('max_ttft'))}"]
    rows = [
        (
            "FLOPs",
            f"2 × {m.active_params / 1e9:,.2f} B active params × {pre.prompt_tokens - pre.cached_tokens:,} tokens = {fmt_rate(pre.linear_flops, 'FLOP')}"
            f" + attention {fmt_rate(pre.attention_flops, 'FLOP')}",
        ),
        (
            "throughput",
            f"{_matmul_rate(dev, pre.compute_dtype, pre.matmul_flops_per_s)} × {pre.compute_efficiency:.2f} utilisation × TP {pre.tp} = {fmt_rate(pre.effective_flops_per_s, 'FLOP/s')}",
        ),
        (
            "compute time",
            f"{fmt_seconds(pre.linear_time_s)} linear + {fmt_seconds(pre.attention_time_s)} attention "
            f"({pre.attention_compute_dtype}, the KV cache's) = {fmt_seconds(pre.compute_time_s)}",
        ),
        (
            "weights read",
            fmt_seconds(pre.weights_time_s)
            + (
                f"; GEMMs read + linear, one after the other = {fmt_seconds(pre.gemm_time_s)}"
                if not pre.overlapped
                else f"; GEMMs max(read, linear) + {pre.unhidden_share:.2f} unhidden share × min = {fmt_seconds(pre.gemm_time_s)}"
                if pre.unhidden_share
                else " (floor for the matmuls of short prompts)"
            ),
        ),
        ("communication", _comm(pre.comm_time_s, d)),
        ("fixed cost", _fixed(d, pre.step_overhead_s)),
        *_expert_setup(d, pre),
        (
            "idle TTFT",
            f"{fmt_seconds(pre.ttft_s)} ({pre.bound}-bound, one prompt on an idle replica)"
            + bands.time_text(bands.ttft_band(d, pre.ttft_s), bands.ttft_source(d)),
        ),
    ]
    if pre.cached_tokens:
        rows.insert(
            0,
            (
                "prefix cache",
                f"{pre.cached_tokens:,} of the {pre.prompt_tokens:,} prompt tokens not computed "
                f"(shared_prefix_tokens {w.shared_prefix_tokens:,} × hit rate {w.prefix_hit_rate:g}): "
                f"{pre.prompt_tokens - pre.cached_tokens:,} tokens' matmuls, attending to all {pre.prompt_tokens:,}",
            ),
        )
    elif w.shared_prefix_tokens:
        rows.insert(0, ("prefix cache", f"none: {d.engine.display_name if d.engine else 'the engine'} keeps no shared prefix"))
    if pre.expert_flops:
        rows.insert(
            3,
            (
                "expert GEMMs",
                f"{fmt_seconds(pre.expert_time_s)} of the linear time: {fmt_rate(pre.expert_flops, 'FLOP')} routed at "
                f"{pre.expert_compute_share:.2f} of the dense GEMMs' rate ({d.weights.name}'s expert_compute_share)",
            ),
        )
    if pre.request_overhead_s:
        rows.insert(
            -1,
            (
                "front end",
                f"{fmt_seconds(pre.request_overhead_s)} per request before the GPUs see it: HTTP, tokenising, streaming (request_overhead_s)",
            ),
        )
    if dec.ttft_under_load_s is not None:
        c = dec.coefficients
        budget = c.prefill_budget_tokens
        chunk = max(1, budget - dec.batch)
        own = (
            f"the prompt in chunks of {min(chunk, c.prompt_tokens):,} tokens ({budget:,}-token step budget less {dec.batch} decoding), "
            f"one chunk per step (continuous batching)"
            + (f" and its expert setup ({fmt_seconds(c.chunk_expert_setup_s)} a chunk)" if c.chunk_expert_setup_s else "")
            + f", {fmt_seconds(c.prompt_service_s(dec.batch))}"
            + (" (the idle replica's: the decoders beside it never speed it up)" if c.chunked_prompt_s(dec.batch) < c.prefill_gpu_s else "")
            if budget
            else f"the prompt in a pass of its own, {fmt_seconds(c.prompt_service_s(dec.batch))}"
        )
        rows.append(
            (
                "TTFT",
                f"{fmt_seconds(dec.ttft_under_load_s)} under load: {own}, behind the prompts of the replica's other "
                f"{dec.batch - 1:,} users (each sends its next request when its last ends)"
                + (", and the front end" if c.request_overhead_s else "")
                + bands.time_text(bands.ttft_band(d, dec.ttft_under_load_s), bands.ttft_source(d)),
            )
        )
    out += _rows(rows)

    # Step 4
    iv = ev.verdict("interconnect")
    out += ["", f"{CONSTRAINT_TITLES['interconnect']}  —  {_verdict_text(iv)}"]
    if d.tp > 1:
        rows = [
            (
                "TP ring",
                f"{ring.size} GPUs over {'/'.join(ring.link_kinds)} at {fmt_rate(ring.bandwidth_bytes_per_s, 'B/s')} per direction, {fmt_seconds(ring.hop_latency_s)} per hop",
            ),
            ("all-reduces", f"{dec.comm.allreduces} per forward pass (2 per layer)"),
            ("decode", f"{fmt_rate(dec.comm.allreduce_bytes, 'B')} each by {dec.comm.algorithm}  → {fmt_seconds(dec.comm.tp_time_s)} per step"),
            ("prefill", f"{fmt_rate(pre.comm.allreduce_bytes, 'B')} each by {pre.comm.algorithm}  → {fmt_seconds(pre.comm.tp_time_s)} per prompt"),
        ]
        if d.row_split:  # no all-reduces: every matrix handed to every GPU and gathered back
            per_chunk, per_token = row_split_transfers(d)
            calls = len(row_split_matrices(d.model)) * d.model.num_layers
            rows[1:] = [
                (
                    "row split",
                    f"{calls:,} matrices per pass ({calls // d.model.num_layers} per layer), each in chunks of {ROW_SPLIT_CHUNK_TOKENS} tokens "
                    f"sent to {d.tp - 1} more GPU{'s' if d.tp > 2 else ''} and gathered back ({dec.comm.algorithm})",
                ),
                ("", f"{fmt_seconds(per_chunk)} per chunk (hand-offs and copy latency) + {fmt_seconds(per_token)} per token (copies)"),
                ("decode", f"→ {fmt_seconds(dec.comm.tp_time_s)} per step"),
                ("prefill", f"→ {fmt_seconds(pre.comm.tp_time_s)} per prompt"),
            ]
        if d.dp_ep:  # no all-reduces: a dispatch and a combine per MoE layer
            rows[1:] = [
                ("all-to-alls", f"2 per MoE layer × {d.model.moe_layers} (dispatch and combine: the tokens to their experts and back)"),
                ("decode", f"→ {fmt_seconds(dec.comm.tp_time_s)} per step"),
                ("prefill", f"→ {fmt_seconds(pre.comm.tp_time_s)} per prompt (its tokens all leave its own rank)"),
            ]
        if d.pp > 1:
            rows.append(("pipeline", f"{d.pp - 1} stage boundaries → {fmt_seconds(dec.comm.pp_time_s)} per decode step"))
        rows.append(("note", iv.note))
        out += _rows(rows)
    else:
        out += _rows([("note", iv.note + (f"; {d.pp} pipeline stages add {fmt_seconds(dec.comm.pp_time_s)} per step" if d.pp > 1 else ""))])

    out.append("")
    if ev.ok:
        out.append("Verdict: every constraint holds.")
    else:
        out.append(f"Verdict: fails {', '.join(FAILING_WORDS[c] for c in ev.failing)}.")
    if ev.remedies:
        out += ["", "Remedies (each re-evaluated in full):"]
        for r in ev.remedies:
            mark = "✓" if r.resolves else "✗"
            out.append(f"  {mark} {r.action}")
            out.append(f"      {r.gives}")
    return "\n".join(out) + "\n"
