"""The answer of POST /evaluate as a typed model: every field of
`plan-opt evaluate --format json` (report/evaluation_json.py), extra forbidden. A figure
that is unbounded or not set is null (strict JSON); an invalid configuration stops after
`ok`, so its estimates are absent."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from solver.catalog.factors import Factors


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")  # the schema names every field the JSON has


class EngineOut(_Strict):
    name: str
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    max_model_len: int | None
    gpu_memory_utilization: float
    enable_chunked_prefill: bool | None
    enforce_eager: bool | None
    split_mode: str | None


class WorkloadOut(_Strict):
    users: int
    context_tokens: int
    prompt_tokens: int
    output_tokens: int
    batching: str


class TargetsOut(_Strict):
    max_ttft_s: float | None
    max_tpot_s: float | None


def _factors_model() -> type[BaseModel]:
    """The factors as the catalog's dataclass declares them (dataclasses.asdict is what
    the report writes), so a factor added there is in the schema without a second list."""
    hints = typing.get_type_hints(Factors, include_extras=True)
    fields: dict[str, Any] = {f.name: (hints[f.name], ...) for f in dataclasses.fields(Factors)}
    return create_model("FactorsOut", __config__=ConfigDict(extra="forbid"), **fields)


FactorsOut = _factors_model()


class EngineKeptOut(_Strict):
    runtime_bytes: float
    comm_buffer_bytes: float
    forward_bytes: float
    forward_tokens: int
    sampler_bytes: float
    cuda_graph_bytes: float
    cuda_graph_sizes: int = Field(description="CUDA graphs captured (by batch size).")


class MemoryOut(_Strict):
    weights_bytes: float
    kv_bytes: float
    overhead_bytes: float
    activation_bytes: float
    engine_kept: EngineKeptOut | None
    reserved_bytes: float
    needed_bytes: float
    device_bytes: float
    usable_bytes: float
    margin_bytes: float
    model_weights_bytes: float
    model_kv_bytes: float
    kv_bytes_per_token: float
    batch: int
    max_batch: int
    engine: str
    kv_budget_bytes: float | None
    kv_capacity_blocks: int | None
    kv_capacity_tokens: int | None
    kv_capacity_tokens_band: list[float] | None = Field(description="P10 and P90, or null.")
    block_size_tokens: int | None
    max_concurrency: float | None


class SpeculativeOut(_Strict):
    method: str
    draft: str | None
    num_tokens: int
    acceptance: float
    acceptance_by_position: list[float]
    expected_tokens_per_step: float
    verify_step_s: float
    draft_s: float


class DecodeOut(_Strict):
    batch: int
    weight_bytes_read: float
    kv_bytes_read: float
    weights_time_s: float
    kv_time_s: float
    memory_time_s: float
    flops: float
    compute_time_s: float
    comm_time_s: float
    weight_bandwidth_share: float
    attention_bandwidth_share: float
    gemm_time_s: float
    attention_time_s: float
    fixed_time_s: float
    tpot_s: float
    tpot_band_s: list[float] | None = Field(description="P10 and P90, or null.")
    tpot_band_from: str
    bound: str
    tokens_per_s_per_user: float
    tokens_per_s: float
    tokens_per_s_band: list[float] | None
    expert_hit_fraction: float
    speculative: SpeculativeOut | None


class PrefillOut(_Strict):
    prompt_tokens: int
    linear_flops: float
    attention_flops: float
    effective_flops_per_s: float
    compute_dtype: str
    linear_time_s: float
    attention_time_s: float
    weights_time_s: float
    comm_time_s: float
    attention_compute_dtype: str
    fixed_time_s: float
    expert_overhead_s: float
    expert_time_s: float
    expert_compute_share: float
    request_overhead_s: float
    ttft_s: float
    ttft_band_s: list[float] | None
    ttft_band_from: str
    ttft_under_load_s: float | None
    ttft_under_load_band_s: list[float] | None
    bound: str


class InterconnectOut(_Strict):
    ring_gpus: int
    ring_bandwidth_bytes_per_s: float | None
    hop_latency_s: float
    link_kinds: list[str]
    allreduces_per_pass: int
    allreduce_algorithm: str | None
    prefill_allreduce_algorithm: str | None
    decode_comm_s: float
    prefill_comm_s: float


class VerdictOut(_Strict):
    constraint: str
    value: float | None
    limit: float | None
    unit: str
    ok: bool | None = Field(description="null: no target to hold it to.")
    margin: float | None
    note: str


class RemedyOut(_Strict):
    action: str
    resolves: bool
    gives: str
    tp: int
    replicas: int
    weights: str
    kv_cache: str
    users: int
    context_tokens: int
    memory_needed_bytes: float | None
    memory_usable_bytes: float | None
    tpot_s: float | None
    ttft_s: float | None
    refusals: list[str]


class EvaluateOut(_Strict):
    """`plan-opt evaluate --format json`: one configuration, step by step."""

    model: str
    engine: EngineOut | None
    engine_release: str | None
    gpu: str
    platform: str
    gpus: int
    tp: int
    pp: int
    parallelism: str
    replicas: int
    weights: str
    kv_cache: str
    workload: WorkloadOut
    targets: TargetsOut
    factors: FactorsOut  # type: ignore[valid-type]
    valid: bool
    refusals: list[str]
    ok: bool
    memory: MemoryOut | None = Field(default=None, description="Absent when the configuration is not valid (see refusals).")
    decode: DecodeOut | None = None
    prefill: PrefillOut | None = None
    interconnect: InterconnectOut | None = None
    verdicts: list[VerdictOut] | None = None
    remedies: list[RemedyOut] | None = None
