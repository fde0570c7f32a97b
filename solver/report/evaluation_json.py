"""An Evaluation as data: `plan-opt evaluate --format json`, the same figures as the
text, under the names the other commands use. Strict JSON (report/strict_json.py): a
figure that is not set or unbounded (a limit without a target, a verdict's margin
against it) is null, never Infinity."""

from __future__ import annotations

import dataclasses
from typing import Any

from solver.physics.engine_memory import memory_fraction
from solver.physics.evaluate import Evaluation, Remedy, Verdict
from solver.physics.memory import MemoryEstimate, kv_bytes_per_token_per_layer
from solver.report import bands, strict_json


def _verdict_dict(v: Verdict) -> dict[str, Any]:
    return {
        "constraint": v.constraint,
        "value": v.value,
        "limit": v.limit,
        "unit": v.unit,
        "ok": v.ok,
        "margin": v.margin,
        "note": v.note,
    }


def _kept(mem: MemoryEstimate) -> dict[str, Any] | None:
    """The memory the engine keeps beside weights and KV, by term (overhead_bytes is their sum)."""
    k = mem.engine_kept
    if k is None:
        return None
    return {
        "runtime_bytes": k.runtime_bytes,
        "comm_buffer_bytes": k.comm_buffer_bytes,
        "forward_bytes": k.forward_bytes,
        "forward_tokens": k.forward_tokens,
        "sampler_bytes": k.sampler_bytes,
        "cuda_graph_bytes": k.cuda_graph_bytes,
        "cuda_graph_sizes": k.cuda_graphs,
    }


def _remedy_dict(r: Remedy) -> dict[str, Any]:
    e = r.evaluation
    return {
        "action": r.action,
        "resolves": r.resolves,
        "gives": r.gives,
        "tp": e.deployment.tp,
        "replicas": e.deployment.replicas,
        "weights": e.deployment.weights.name,
        "kv_cache": e.deployment.kv.name,
        "users": e.workload.users,
        "context_tokens": e.workload.context_tokens,
        "memory_needed_bytes": e.memory.needed_bytes if e.memory else None,
        "memory_usable_bytes": e.memory.usable_bytes if e.memory else None,
        "tpot_s": e.decode.tpot_s if e.decode else None,
        "ttft_s": e.ttft_s,
        "refusals": e.refusals,
    }


def to_json(ev: Evaluation) -> str:
    """`plan-opt evaluate --format json`, strict."""
    return strict_json.dumps(to_dict(ev))


def to_dict(ev: Evaluation) -> dict[str, Any]:
    """The evaluation as JSON-ready data, already finite: an unbounded figure is None."""
    out = _to_dict(ev)
    finite: dict[str, Any] = strict_json.finite(out)
    return finite


def _to_dict(ev: Evaluation) -> dict[str, Any]:
    d, w, t = ev.deployment, ev.workload, ev.targets
    e = d.engine
    out: dict[str, Any] = {
        "model": d.model.name,
        "engine": {
            "name": e.name,
            "max_num_seqs": e.max_num_seqs,
            "max_num_batched_tokens": e.max_num_batched_tokens,
            "max_model_len": e.max_model_len or w.context_tokens,
            "gpu_memory_utilization": memory_fraction(d).value,
            "enable_chunked_prefill": e.enable_chunked_prefill,
            "enforce_eager": e.enforce_eager,
            "split_mode": e.split_mode,
        }
        if e
        else None,
        "engine_release": e.release or None if e else None,
        "gpu": d.device.name,
        "platform": d.platform.name,
        "gpus": d.gpus,
        "tp": d.tp,
        "pp": d.pp,
        "parallelism": d.parallelism,
        "replicas": d.replicas,
        "weights": d.weights.name,
        "kv_cache": d.kv.name,
        "workload": {
            "users": w.users,
            "context_tokens": w.context_tokens,
            "prompt_tokens": w.prompt_tokens,
            "output_tokens": w.output_tokens,
            "batching": w.batching,
        },
        "targets": {"max_ttft_s": t.max_ttft_s, "max_tpot_s": t.max_tpot_s},
        "factors": dataclasses.asdict(d.factors),
        "valid": ev.valid,
        "refusals": ev.refusals,
        "ok": ev.ok,
    }
    if not ev.valid:
        return out
    est = ev.estimates
    mem, dec, pre, ring = est.memory, est.decode, est.prefill, est.ring
    out["memory"] = {
        "weights_bytes": mem.weights_bytes,
        "kv_bytes": mem.kv_bytes,
        "overhead_bytes": mem.overhead_bytes,
        "activation_bytes": mem.activation_bytes,
        "engine_kept": _kept(mem),
        "reserved_bytes": mem.reserved_bytes,
        "needed_bytes": mem.needed_bytes,
        "device_bytes": mem.device_bytes,
        "usable_bytes": mem.usable_bytes,
        "margin_bytes": mem.margin_bytes,
        "model_weights_bytes": mem.model_weights_bytes,
        "model_kv_bytes": mem.model_kv_bytes,
        "kv_bytes_per_token": kv_bytes_per_token_per_layer(d.model, d.kv) * d.model.num_layers,
        "batch": mem.batch,
        "max_batch": mem.max_batch,
        "engine": d.engine.name if d.engine else "vllm",
        "kv_budget_bytes": mem.kv_budget_bytes,
        "kv_capacity_blocks": mem.kv_capacity_blocks,
        "kv_capacity_tokens": mem.kv_capacity_tokens,
        "kv_capacity_tokens_band": _pair(bands.kv_band(d, mem.kv_capacity_tokens)),
        "block_size_tokens": mem.block_size_tokens,
        "max_concurrency": mem.max_concurrency,
    }
    out["decode"] = {
        "batch": dec.batch,
        "weight_bytes_read": dec.weight_bytes_read,
        "kv_bytes_read": dec.kv_bytes_read,
        "weights_time_s": dec.weights_time_s,
        "kv_time_s": dec.kv_time_s,
        "memory_time_s": dec.memory_time_s,
        "flops": dec.flops,
        "compute_time_s": dec.compute_time_s,
        "comm_time_s": dec.comm_time_s,
        "weight_bandwidth_share": dec.weight_bandwidth_share,
        "attention_bandwidth_share": dec.attention_bandwidth_share,
        "gemm_time_s": dec.gemm_time_s,
        "attention_time_s": dec.attention_time_s,
        "fixed_time_s": dec.step_overhead_s,
        "tpot_s": dec.tpot_s,
        "tpot_band_s": _pair(bands.tpot_band(d, dec.tpot_s, dec.batch)),
        "tpot_band_from": bands.tpot_source(d, dec.batch),
        "bound": dec.bound,
        "tokens_per_s_per_user": dec.tokens_per_s_per_user,
        "tokens_per_s": dec.tokens_per_s * d.replicas,
        "tokens_per_s_band": _pair(bands.throughput_band(d, dec.tokens_per_s * d.replicas)),
        "expert_hit_fraction": dec.expert_hit_fraction,
        "speculative": None
        if d.speculation is None
        else {
            "method": d.speculation.method,
            "draft": d.speculation.draft_name,
            "num_tokens": d.speculation.num_tokens,
            "acceptance": d.speculation.alphas[0],
            "acceptance_by_position": list(d.speculation.alphas),
            "expected_tokens_per_step": d.speculation.expected_tokens,
            "verify_step_s": dec.coefficients.verify_step_s(dec.batch),
            "draft_s": dec.coefficients.draft_s(dec.batch),
        },
    }
    out["prefill"] = {
        "prompt_tokens": pre.prompt_tokens,
        "linear_flops": pre.linear_flops,
        "attention_flops": pre.attention_flops,
        "effective_flops_per_s": pre.effective_flops_per_s,
        "compute_dtype": pre.compute_dtype,
        "linear_time_s": pre.linear_time_s,
        "attention_time_s": pre.attention_time_s,
        "weights_time_s": pre.weights_time_s,
        "comm_time_s": pre.comm_time_s,
        "attention_compute_dtype": pre.attention_compute_dtype,
        "fixed_time_s": pre.step_overhead_s,
        "expert_overhead_s": pre.expert_overhead_s,
        "expert_time_s": pre.expert_time_s,
        "expert_compute_share": pre.expert_compute_share,
        "request_overhead_s": pre.request_overhead_s,
        "ttft_s": pre.ttft_s,
        "ttft_band_s": _pair(bands.ttft_band(d, pre.ttft_s)),
        "ttft_band_from": bands.ttft_source(d),
        "ttft_under_load_s": dec.ttft_under_load_s,
        # the idle prompt's band multiples: queueing's own error is not in them
        "ttft_under_load_band_s": _pair(bands.ttft_band(d, dec.ttft_under_load_s)) if dec.ttft_under_load_s is not None else None,
        "bound": pre.bound,
    }
    out["interconnect"] = {
        "ring_gpus": ring.size,
        "ring_bandwidth_bytes_per_s": ring.bandwidth_bytes_per_s if ring.size > 1 else None,
        "hop_latency_s": ring.hop_latency_s,
        "link_kinds": list(ring.link_kinds),
        "allreduces_per_pass": dec.comm.allreduces,
        "allreduce_algorithm": dec.comm.algorithm if d.tp > 1 else None,
        "prefill_allreduce_algorithm": pre.comm.algorithm if d.tp > 1 else None,
        "decode_comm_s": dec.comm_time_s,
        "prefill_comm_s": pre.comm_time_s,
    }
    out["verdicts"] = [_verdict_dict(v) for v in ev.verdicts]
    out["remedies"] = [_remedy_dict(r) for r in ev.remedies]
    return out


def _pair(lohi: tuple[float, float] | None) -> list[float] | None:
    return list(lohi) if lohi else None
