"""TensorRT-LLM's `trtllm-serve` for one replica of a plan (the PyTorch backend): the
split, the batch and token limits the plan was sized with, the memory fraction in
TensorRT-LLM's own rule (a share of the memory left after the weights), and what has no
flag — an FP8 KV cache, the draft, attention data parallelism — in the LLM API options
file the launch writes. Flags from catalogs/engine_flags.yaml."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from solver.errors import InputError
from solver.physics.engine_memory import memory_fraction
from solver.report.checkpoints import unlisted_source_note

if TYPE_CHECKING:
    from solver.catalog import Engine, Model, PublishedCheckpoint
    from solver.physics.deployment import Deployment as Plan
    from solver.report.launch import Launch

EXTRA_OPTIONS_FILE = "./extra-llm-api-config.yml"
"""The LLM API options file the command names where the plan needs one."""
DECODING_TYPES = {"eagle": "Eagle", "eagle3": "Eagle3", "mtp": "MTP"}
"""The LLM API's speculative_config decoding_type per method (EagleDecodingConfig,
Eagle3DecodingConfig, MTPDecodingConfig: nvidia.github.io/TensorRT-LLM llm-api/reference,
1.3-1.4, 2026)."""


def trtllm_argv(
    dep: Launch,
    d: Plan,
    model_id: str,
    batch: int,
    max_model_len: int,
    kv: str,
    table: dict,
    e: Engine | None,
) -> list[str]:
    """The command; the options file it names goes into dep.files."""
    argv = ["trtllm-serve", model_id, "--backend", "pytorch"]
    if d.tp > 1:
        argv += ["--tp_size", str(d.tp)]
    if d.pp > 1:
        argv += ["--pp_size", str(d.pp)]
    if d.expert_parallel:  # the experts split over the TP group (attention too, per rank, under dp_ep)
        argv += ["--ep_size", str(d.tp)]
    argv += ["--max_batch_size", str(batch), "--max_seq_len", str(max_model_len)]
    if e is not None and e.name == "trtllm":  # the knobs the plan's memory and steps were sized with
        # the fraction the plan's KV was sized with (a spec's overrides.factors.memory_utilization included), as vLLM's and SGLang's launches read it
        argv += ["--max_num_tokens", str(e.max_num_batched_tokens), "--kv_cache_free_gpu_memory_fraction", f"{memory_fraction(d).value:g}"]
    options = _options(d, table["kv_cache"][kv])
    if options:
        import yaml

        argv += ["--extra_llm_api_options", EXTRA_OPTIONS_FILE]
        dep.files[EXTRA_OPTIONS_FILE] = yaml.safe_dump(options, sort_keys=False)
        dep.notes.append(f"{EXTRA_OPTIONS_FILE} holds what trtllm-serve has no flag for ({', '.join(options)}): write it before starting")
    return argv


def _options(d: Plan, kv_dtype: str) -> dict[str, Any]:
    """The LLM API arguments the plan needs beyond the flags (TorchLlmArgs names)."""
    options: dict[str, Any] = {}
    if kv_dtype != "auto":
        options["kv_cache_config"] = {"dtype": kv_dtype}  # KvCacheConfig(dtype='fp8')
    if d.dp_ep:
        options["enable_attention_dp"] = True
    s = d.speculation
    if s is not None:
        kind = DECODING_TYPES.get(s.method)
        if kind is None:
            raise InputError("speculative.method", s.method, f"deploy emits TensorRT-LLM drafts for {', '.join(DECODING_TYPES)}")
        spec: dict[str, Any] = {"decoding_type": kind, "max_draft_len": s.num_tokens}
        if kind == "MTP":
            spec["num_nextn_predict_layers"] = s.num_tokens
        elif not s.checkpoint:
            raise InputError(
                "speculative.draft_checkpoint",
                None,
                f"deploy needs the {s.draft_name}'s Hugging Face id (the checkpoint the engine loads as the draft)",
            )
        else:
            spec["speculative_model"] = s.checkpoint
        options["speculative_config"] = spec
    return options


def trtllm_model(dep: Launch, model: Model, weights: str, ckpt: PublishedCheckpoint | None, base: str) -> str:
    """The checkpoint trtllm-serve loads: the published one in the plan's format, else
    the 16-bit repository (for a quantised plan, quantised first: TensorRT-LLM has no
    load-time quantisation)."""
    if ckpt is not None:
        dep.model_id = ckpt.hf_id
        return ckpt.hf_id
    dep.model_id = base
    if not model.published:
        dep.notes.append(unlisted_source_note(model, base, "instruct"))
    if weights not in ("bf16", "fp16"):
        dep.notes.append(
            f"{weights} weights: no {weights} checkpoint of {model.display_name} is listed in the catalog and TensorRT-LLM "
            f"does not quantise at load: quantise {base} to {weights} with NVIDIA Model Optimizer and serve that checkpoint in place of {base}"
        )
    return base
