"""A model from a local Hugging Face `config.json` (no network): the architecture
fields mapped to a catalog Model, and the parameter count derived from them.

Parameter counting follows the modelling code's layers: embeddings (and an untied LM
head), per layer the attention projections (MLA's low-rank ones for DeepSeek), norms,
and a gated MLP (three matrices) or a router plus experts.

Every field read is checked first (`hf_config_schema`: types and bounds; here: the
checks across fields), so a damaged file gives one InputError naming the file, the
key and what is allowed, never an error of the arithmetic.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from solver.catalog.hf_bounds import MAX_PARAMS
from solver.catalog.hf_config_schema import (
    ConfigFields,
    TopLevel,
    field_error,
    key_error,
    read_config,
    shown,
)
from solver.catalog.models import Model
from solver.catalog.types import AttentionKind
from solver.errors import InputError

_REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")


def _first(cfg: ConfigFields, *keys: str) -> tuple[str, int | None]:
    """The first of `keys` the config sets (not null), and its value."""
    for k in keys:
        value = getattr(cfg, k)
        if value is not None:
            return k, value
    return keys[0], None


@dataclass(frozen=True)
class _Arch:
    """The fields after every check, with their defaults filled in."""

    cfg: ConfigFields
    layers: int
    hidden: int
    heads: int
    kv: int
    head_dim: int
    vocab: int
    intermediate: int
    mla: bool
    experts: int
    per_token: int
    shared: int
    moe_intermediate: int
    dense_layers: int
    """Layers with a dense MLP: all of a dense model, first_k_dense_replace of an MoE one."""

    @property
    def mtype(self) -> str:
        return self.cfg.model_type or ""

    @property
    def tied(self) -> bool:
        """Configs often omit tie_word_embeddings and rely on their class default:
        True for Gemma (Gemma2Config, Gemma3TextConfig), False for the others here."""
        if self.cfg.tie_word_embeddings is not None:
            return self.cfg.tie_word_embeddings
        return self.mtype.startswith("gemma")


class _Checker:
    """Checks across fields, each failing with the key a user would change."""

    def __init__(self, source: str, text: str, prefix: dict[str, str]):
        self.source, self.text, self.prefix = source, text, prefix

    def fail(self, key: str, value: object, allowed: str, near: str | None = None) -> InputError:
        return key_error(self.source, self.text, key, value, allowed, self.prefix, near)

    def arch(self, cfg: ConfigFields) -> _Arch:
        missing = [k for k in _REQUIRED if getattr(cfg, k) is None]
        if missing:
            raise InputError(
                ", ".join(self.prefix.get(k, "") + k for k in missing),
                None,
                "required (the model's shape), and missing from the file",
                source=self.source,
                line=1,  # the object they belong in opens the file
            )
        L, h, H = cfg.num_hidden_layers or 0, cfg.hidden_size or 0, cfg.num_attention_heads or 0
        V, I = cfg.vocab_size or 0, cfg.intermediate_size or 0
        kv = cfg.num_key_value_heads if cfg.num_key_value_heads is not None else H
        mla = bool(cfg.kv_lora_rank)
        if mla:
            for key in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
                if getattr(cfg, key) is None:
                    raise self.fail(key, None, "required when kv_lora_rank is set (multi-head latent attention)", near="kv_lora_rank")
            head_dim = (cfg.qk_nope_head_dim or 0) + (cfg.qk_rope_head_dim or 0)
        else:
            if H % kv:
                raise self.fail("num_key_value_heads", kv, f"must divide num_attention_heads ({H:,})")
            if cfg.head_dim is None and h < H:
                raise self.fail("num_attention_heads", H, f"must not exceed hidden_size ({h:,}) unless head_dim is given")
            head_dim = cfg.head_dim if cfg.head_dim is not None else h // H
        E = _first(cfg, "num_local_experts", "n_routed_experts", "num_experts")[1] or 0
        k_key, k = _first(cfg, "num_experts_per_tok", "experts_per_token")
        dense = L
        if E:
            e_key = _first(cfg, "num_local_experts", "n_routed_experts", "num_experts")[0]
            if E < 2:
                raise self.fail(e_key, E, "must be 0 (a dense model) or ≥ 2 (an MoE model routes among experts)")
            if not k:
                raise self.fail(k_key, k, f"an MoE model ({e_key} {E:,}) routes each token to 1 to {E - 1:,} experts", near=e_key)
            if k >= E:
                raise self.fail(k_key, k, f"must be fewer than the experts ({e_key} {E:,}); routing to every expert is a dense model")
            dense = cfg.first_k_dense_replace or 0
            if dense >= L:
                raise self.fail("first_k_dense_replace", dense, f"must be below num_hidden_layers ({L:,}) so that some layers route to experts")
        return _Arch(
            cfg=cfg,
            layers=L,
            hidden=h,
            heads=H,
            kv=kv,
            head_dim=head_dim,
            vocab=V,
            intermediate=I,
            mla=mla,
            experts=E,
            per_token=(k or 0) if E else 0,
            shared=(cfg.n_shared_experts or 0) if E else 0,
            moe_intermediate=cfg.moe_intermediate_size if cfg.moe_intermediate_size is not None else I,
            dense_layers=dense,
        )


def _sliding_layers(a: _Arch) -> tuple[int | None, int]:
    cfg, layers = a.cfg, a.layers
    window = cfg.sliding_window
    if not window or cfg.use_sliding_window is False:
        return None, 0
    if cfg.layer_types:
        return window, sum(1 for t in cfg.layer_types[:layers] if t == "sliding_attention")
    pattern = cfg.sliding_window_pattern
    if pattern:  # Gemma 3: every `pattern`-th layer is global
        return window, sum(1 for i in range(layers) if (i + 1) % pattern != 0)
    if cfg.model_type == "gemma2":  # Gemma 2 alternates local and global, local first
        return window, (layers + 1) // 2
    return window, layers


def _count_params(a: _Arch) -> tuple[int, int]:
    """(total, active) parameters."""
    cfg, mtype = a.cfg, a.mtype
    L, h, H, kv, d, V = a.layers, a.hidden, a.heads, a.kv, a.head_dim, a.vocab

    # Attention.
    if a.mla:
        nope, rope = cfg.qk_nope_head_dim or 0, cfg.qk_rope_head_dim or 0
        vd, r_kv = cfg.v_head_dim or 0, cfg.kv_lora_rank or 0
        q_rank = cfg.q_lora_rank
        q = (h * q_rank + q_rank + q_rank * H * (nope + rope)) if q_rank else h * H * (nope + rope)
        attn = q + h * (r_kv + rope) + r_kv + r_kv * H * (nope + vd) + H * vd * h
    else:
        attn = h * H * d + 2 * h * kv * d + H * d * h
        if cfg.attention_bias or mtype.startswith("qwen2"):
            attn += H * d + 2 * kv * d  # q, k, v biases
        if cfg.attention_bias:
            attn += h  # o bias
        if mtype.startswith("qwen3") or mtype.startswith("gemma3"):
            attn += 2 * d  # q_norm, k_norm
        if mtype == "gpt_oss":
            attn += H  # attention sinks
    norms = (4 if mtype.startswith("gemma2") or mtype.startswith("gemma3") else 2) * h

    # MLP / MoE.
    E, k, moe_I = a.experts, a.per_token, a.moe_intermediate
    dense_layers = a.dense_layers
    moe_layers = L - dense_layers if E else 0
    dense_mlp = 3 * h * a.intermediate
    expert = 3 * h * moe_I
    router = h * E
    if mtype == "gpt_oss":
        expert += 2 * moe_I + h  # gate_up and down biases
        router += E
    if mtype == "deepseek_v3":
        router += E  # the gate's e_score_correction_bias
    moe_fixed = router + a.shared * expert

    emb = V * h * (1 if a.tied else 2)
    per_layer_fixed = attn + norms
    total = emb + h + L * per_layer_fixed + dense_layers * dense_mlp + moe_layers * (moe_fixed + E * expert)
    active = emb + h + L * per_layer_fixed + dense_layers * dense_mlp + moe_layers * (moe_fixed + k * expert)
    return total, active


def _attention_kind(a: _Arch) -> AttentionKind:
    if a.mla:
        return "mla"
    if a.kv == a.heads:
        return "mha"
    return "mqa" if a.kv == 1 else "gqa"


def _validated(raw: dict[str, Any], text: str, source: str) -> tuple[ConfigFields, TopLevel, dict[str, str]]:
    """The fields read, typed and bounded; a multimodal config's text_config (Gemma 3)
    laid over the top level, and the prefix (`text_config.`) of each key that came from it."""
    try:
        top = TopLevel.model_validate(raw)
    except ValidationError as exc:
        raise field_error(exc, source, text, {}) from None
    sub = top.text_config or {}
    prefix = dict.fromkeys(sub, "text_config.")
    try:
        cfg = ConfigFields.model_validate({**raw, **sub})
    except ValidationError as exc:
        raise field_error(exc, source, text, prefix) from None
    return cfg, top, prefix


HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
"""A Hugging Face repository id: owner/name (what `_name_or_path` holds when a config
was saved from the Hub rather than from a local folder)."""


def hub_id(name_or_path: str | None) -> str | None:
    """The Hub id a config's `_name_or_path` names, or None (empty, or a local path)."""
    if not name_or_path or not HUB_ID.fullmatch(name_or_path) or name_or_path.startswith((".", "/", "~")):
        return None
    return name_or_path


def model_from_config(path: str | Path) -> Model:
    path = Path(path)
    source = shown(path)
    raw, text, mtime = read_config(path)
    cfg, top, prefix = _validated(raw, text, source)
    check = _Checker(source, text, prefix)
    a = check.arch(cfg)
    total, active = _count_params(a)
    if total > MAX_PARAMS:
        raise InputError(
            "the parameters these fields count",
            f"{total:,}",
            f"must be ≤ {MAX_PARAMS:,} (published models have at most about 2 trillion)",
            source=source,
        )
    window, sliding = _sliding_layers(a)
    name = path.parent.name.lower() if path.name == "config.json" else path.stem.lower()
    name = "".join(c if c.isalnum() or c in ".-" else "-" for c in name).strip("-.") or "model"
    try:
        return Model(
            name=name,
            display_name=top.name_or_path or name,
            hf_id=hub_id(top.name_or_path),
            config_dir=str(path.resolve().parent),
            num_layers=a.layers,
            hidden_size=a.hidden,
            num_attention_heads=a.heads,
            num_kv_heads=a.kv,
            head_dim=a.head_dim,
            v_head_dim=cfg.v_head_dim if a.mla else None,
            intermediate_size=a.intermediate,
            moe_intermediate_size=cfg.moe_intermediate_size if a.experts else None,
            vocab_size=a.vocab,
            tie_word_embeddings=a.tied,
            total_params=total,
            active_params=active,
            num_experts=a.experts,
            experts_per_token=a.per_token,
            shared_experts=a.shared,
            dense_layers=min(a.layers, a.dense_layers) if a.experts else 0,
            attention=_attention_kind(a),
            kv_lora_rank=cfg.kv_lora_rank,
            q_lora_rank=cfg.q_lora_rank if a.mla else None,
            qk_rope_head_dim=cfg.qk_rope_head_dim if a.mla else None,
            sliding_window=window,
            sliding_layers=sliding,
            max_context_tokens=cfg.max_position_embeddings if cfg.max_position_embeddings is not None else 4096,
            source=f"local config.json: {path}",
            as_of=dt.date.fromtimestamp(mtime),
        )
    except ValueError as exc:
        raise InputError("config.json", None, f"describes an unusable model: {exc}", source=source) from None
