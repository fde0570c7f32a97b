"""Model architectures, from each model's config.json, with their published checkpoints."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Literal

from solver.catalog.hf_bounds import Context, DenseLayers, Experts, HeadDim, Heads, Hidden, Intermediate, Layers, Rank, Shared, Vocab
from solver.catalog.ranges import PARAMS
from solver.catalog.types import (
    FORBID,
    AttentionKind,
    Count,
    Name,
    NonNegInt,
    check_name,
)

# --------------------------------------------------------------------------- models

TensorGroup = Literal["embeddings", "lm_head", "attention", "mlp", "experts"]


@dataclass(frozen=True)
class CheckpointLayout:
    """Which tensors of a published quantised checkpoint stay in 16-bit (Meta's
    Llama-3.1-405B FP8 keeps attention and its first and last blocks in BF16;
    gpt-oss quantises only the experts to MXFP4)."""

    __pydantic_config__ = FORBID
    format: str
    """The weight format (precision name) this layout applies to."""
    source: str
    sixteen_bit: tuple[TensorGroup, ...] = ()
    sixteen_bit_layers: NonNegInt = 0
    """Whole transformer blocks kept in 16-bit (the first and last ones)."""
    eight_bit: tuple[TensorGroup, ...] = ()
    """Groups stored in GGUF Q8_0 (34 bytes a block of 32 values), as llama.cpp's own
    conversion of gpt-oss keeps every tensor but the experts."""
    container: Literal["safetensors", "gguf"] = "safetensors"
    """The files this layout describes: an engine that reads GGUF (llama.cpp) takes a
    format's gguf layout where one is listed, every other engine the safetensors one."""
    hf_ids: tuple[str, ...] = ()
    """The published checkpoints stored this way. Another checkpoint in the same format
    (`overrides.model.checkpoint`: NVIDIA's ModelOpt, AMD's Quark) stores every linear
    layer of every block in it."""


@dataclass(frozen=True)
class PublishedCheckpoint:
    """A repository a publisher put on Hugging Face, so that `deploy` serves the
    checkpoint whose weights are already in the plan's format (no runtime
    quantisation) and an instruct one unless told otherwise."""

    __pydantic_config__ = FORBID
    hf_id: str
    format: str
    """The weight format (precision name) its weights are stored in."""
    variant: Literal["instruct", "base"]
    """instruct: post-trained for chat (Instruct, -it, R1, gpt-oss); base: pretrained only."""
    source: str
    as_of: dt.date
    container: Literal["safetensors", "gguf"] = "safetensors"
    """gguf: a llama.cpp file (llama-server `-hf <hf_id>:<FORMAT>` picks it)."""
    weight_block_size: Count | None = None
    """Block-quantised (its config's quantization_config.weight_block_size, square
    blocks): one scale per block of this many rows and columns, so a TP split must give
    each GPU whole blocks of every matrix it cuts (physics/validity.py)."""


@dataclass(frozen=True)
class Model:
    __pydantic_config__ = FORBID
    name: Name
    display_name: str
    num_layers: Layers
    hidden_size: Hidden
    num_attention_heads: Heads
    num_kv_heads: Heads
    head_dim: HeadDim
    intermediate_size: Intermediate
    vocab_size: Vocab
    total_params: Annotated[int, PARAMS]
    active_params: Annotated[int, PARAMS]
    """Parameters used per token (= total for dense models)."""
    attention: AttentionKind
    max_context_tokens: Context
    source: str
    as_of: dt.date
    hf_id: str | None = None
    config_dir: str | None = None
    """A model read from a local config.json: the folder holding it, which an engine
    serves from (its weights beside the config) when the config names no Hub id."""
    aliases: tuple[str, ...] = ()
    v_head_dim: HeadDim | None = None
    """When V heads differ from Q/K heads (MLA)."""
    moe_intermediate_size: Intermediate | None = None
    tie_word_embeddings: bool = False
    num_experts: Experts = 0
    """Routed experts per MoE layer (0 = dense)."""
    experts_per_token: Experts = 0
    shared_experts: Shared = 0
    dense_layers: DenseLayers = 0
    """Leading layers of an MoE model with a dense MLP (config.json first_k_dense_replace)."""
    kv_lora_rank: Rank | None = None
    """MLA: compressed KV latent width."""
    q_lora_rank: Rank | None = None
    """MLA: compressed query latent width (config.json q_lora_rank); None where the
    queries are projected whole (DeepSeek-V2-Lite)."""
    qk_rope_head_dim: HeadDim | None = None
    """MLA: decoupled RoPE key width."""
    sliding_window: Context | None = None
    sliding_layers: DenseLayers = 0
    """How many layers attend only within the window."""
    checkpoints: tuple[CheckpointLayout, ...] = ()
    """Published checkpoints whose tensors are not all in one format."""
    published: tuple[PublishedCheckpoint, ...] = ()
    """The checkpoints on Hugging Face, per format and variant (catalogs/models.yaml)."""
    mtp_layers: NonNegInt = 0
    """Multi-token-prediction modules shipped with the model (config.json
    num_nextn_predict_layers): the draft of `speculative: {method: mtp}`."""
    mtp_params: NonNegInt = 0
    """Their parameters beyond the main model's (embedding and head shared)."""

    def __post_init__(self) -> None:
        check_name("model", self.name)
        h, kv = self.num_attention_heads, self.num_kv_heads
        if self.attention == "mha" and kv != h:
            raise ValueError(f"attention 'mha' needs num_kv_heads == num_attention_heads ({kv} != {h})")
        if self.attention == "mqa" and kv != 1:
            raise ValueError("attention 'mqa' needs num_kv_heads 1")
        if self.attention == "gqa" and not (1 < kv < h and h % kv == 0):
            raise ValueError(f"attention 'gqa' needs 1 < num_kv_heads < heads, dividing them ({kv}, {h})")
        if self.attention == "mla" and (self.kv_lora_rank is None or self.qk_rope_head_dim is None):
            raise ValueError("attention 'mla' needs kv_lora_rank and qk_rope_head_dim")
        if self.active_params > self.total_params:
            raise ValueError("active_params exceeds total_params")
        if self.num_experts:
            if not 0 < self.experts_per_token <= self.num_experts:
                raise ValueError("experts_per_token must be in 1..num_experts")
            if self.active_params >= self.total_params:
                raise ValueError("an MoE model has fewer active than total parameters")
        elif self.active_params != self.total_params:
            raise ValueError("a dense model (num_experts 0) has active_params == total_params")
        if self.sliding_layers > self.num_layers:
            raise ValueError("sliding_layers exceeds num_layers")
        if self.sliding_layers and self.sliding_window is None:
            raise ValueError("sliding_layers needs sliding_window")
        for layout in self.checkpoints:
            if set(layout.sixteen_bit) & set(layout.eight_bit):
                raise ValueError(f"checkpoints[{layout.format}]: a group is either sixteen_bit or eight_bit, not both")
            stored = {c.hf_id for c in self.published if c.format == layout.format}
            stray = [h for h in layout.hf_ids if h not in stored]
            if stray:
                # a misspelt id would silently stand for "every layer in the format"
                raise ValueError(f"checkpoints[{layout.format}].hf_ids: {', '.join(stray)} is not a published {layout.format} checkpoint")

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def moe_layers(self) -> int:
        """Layers that route to experts (all but the leading dense ones)."""
        return self.num_layers - self.dense_layers if self.is_moe else 0

    @property
    def embedding_params(self) -> int:
        """Input embedding plus LM head (one matrix when tied)."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    def served_block(self, weights_format: str, container: str = "safetensors") -> PublishedCheckpoint | None:
        """The published checkpoint in that format deploy serves by default (the instruct
        one first) when it is block-quantised; None when it is not, or none is listed."""
        found = [c for c in self.published if c.format == weights_format and c.container == container]
        found.sort(key=lambda c: c.variant != "instruct")
        return found[0] if found and found[0].weight_block_size else None

    def checkpoint(self, weights_format: str) -> CheckpointLayout | None:
        return next((c for c in self.checkpoints if c.format == weights_format), None)

    @property
    def attention_params(self) -> int:
        """Q, K, V and O projections of every layer (MLA: not derivable from these
        fields, so 0 and counted with the MLP)."""
        if self.attention == "mla":
            return 0
        q = self.num_attention_heads * self.head_dim
        kv = 2 * self.num_kv_heads * self.head_dim
        return self.num_layers * self.hidden_size * (2 * q + kv)

    def param_groups(self) -> dict[str, int]:
        """Parameters per tensor group: input embeddings, LM head, attention, routed
        experts, and the rest of the blocks (dense MLP, shared experts, router, norms)."""
        emb = self.vocab_size * self.hidden_size
        head = 0 if self.tie_word_embeddings else emb
        experts = self.routed_expert_params
        attention = self.attention_params
        mlp = max(0, self.total_params - emb - head - experts - attention)
        return {"embeddings": emb, "lm_head": head, "attention": attention, "mlp": mlp, "experts": experts}

    @property
    def replicated_params(self) -> int:
        """Parameters every tensor-parallel rank holds whole: MLA's down-projections
        (hidden × (q_lora_rank + kv_lora_rank + qk_rope_head_dim) a layer) and, of an
        MLA MoE model, the router (hidden × routed experts a MoE layer). vLLM keeps them
        in replicated linears (vllm-project/vllm vllm/model_executor/models/deepseek_v2.py
        @002d6073: DeepSeekV2FusedQkvAProjLinear with disable_tp=True, kv_a_proj_with_mqa
        a ReplicatedLinear, the gate a GateLinear), SGLang likewise
        (sgl-project/sglang python/sglang/srt/models/deepseek_v2.py @3e4a39ee:
        fused_qkv_a_proj_with_mqa a ReplicatedLinear, MoEGate's weight unsplit) and
        TensorRT-LLM's MLA builds its fused A projection without a TP mapping
        (NVIDIA/TensorRT-LLM tensorrt_llm/_torch/modules/attention.py @c6d3bb2a:
        kv_a_proj_with_mqa = Linear(hidden, q_lora_rank + kv_lora_rank + rope)). 0 for
        every other attention."""
        if self.attention != "mla":
            return 0
        assert self.kv_lora_rank is not None and self.qk_rope_head_dim is not None  # Model requires both for MLA
        down = self.hidden_size * ((self.q_lora_rank or 0) + self.kv_lora_rank + self.qk_rope_head_dim)
        return self.num_layers * down + self.moe_layers * self.hidden_size * self.num_experts

    @property
    def routed_expert_params(self) -> int:
        """All routed-expert parameters, from total = rest + routed and
        active = rest + routed · k/E (so no per-layer bookkeeping is needed)."""
        if not self.is_moe:
            return 0
        frac = self.experts_per_token / self.num_experts
        return round((self.total_params - self.active_params) / (1 - frac))
