"""A model from a local Hugging Face `config.json` (no network): the architecture
fields mapped to a catalog Model, and the parameter count derived from them.

Parameter counting follows the modelling code's layers: embeddings (and an untied LM
head), per layer the attention projections (MLA's low-rank ones for DeepSeek), norms,
and a gated MLP (three matrices) or a router plus experts.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from solver.catalog.models import Model
from solver.catalog.types import AttentionKind
from solver.errors import InputError


def _first(cfg: dict, *keys: str, default: Any = None) -> Any:
    for k in keys:
        if cfg.get(k) is not None:
            return cfg[k]
    return default


def _sliding_layers(cfg: dict, layers: int) -> tuple[int | None, int]:
    window = cfg.get("sliding_window")
    if not window or cfg.get("use_sliding_window") is False:
        return None, 0
    types = cfg.get("layer_types")
    if types:
        return window, sum(1 for t in types[:layers] if t == "sliding_attention")
    pattern = cfg.get("sliding_window_pattern")
    if pattern:  # Gemma 3: every `pattern`-th layer is global
        return window, sum(1 for i in range(layers) if (i + 1) % pattern != 0)
    if cfg.get("model_type") == "gemma2":  # Gemma 2 alternates local and global, local first
        return window, (layers + 1) // 2
    return window, layers


def _tied(cfg: dict) -> bool:
    """Configs often omit tie_word_embeddings and rely on their class default:
    True for Gemma (Gemma2Config, Gemma3TextConfig), False for the others here."""
    if cfg.get("tie_word_embeddings") is not None:
        return bool(cfg["tie_word_embeddings"])
    return str(cfg.get("model_type", "")).startswith("gemma")


def _count_params(cfg: dict) -> tuple[int, int]:
    """(total, active) parameters."""
    L = cfg["num_hidden_layers"]
    h = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    kv = _first(cfg, "num_key_value_heads", default=H)
    d = _first(cfg, "head_dim", default=h // H)
    V = cfg["vocab_size"]
    mtype = cfg.get("model_type", "")
    tied = _tied(cfg)

    # Attention.
    if cfg.get("kv_lora_rank"):
        nope, rope = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"]
        vd, r_kv = cfg["v_head_dim"], cfg["kv_lora_rank"]
        q_rank = cfg.get("q_lora_rank")
        q = (h * q_rank + q_rank + q_rank * H * (nope + rope)) if q_rank else h * H * (nope + rope)
        attn = q + h * (r_kv + rope) + r_kv + r_kv * H * (nope + vd) + H * vd * h
    else:
        attn = h * H * d + 2 * h * kv * d + H * d * h
        if cfg.get("attention_bias") or mtype.startswith("qwen2"):
            attn += H * d + 2 * kv * d  # q, k, v biases
        if cfg.get("attention_bias"):
            attn += h  # o bias
        if mtype.startswith("qwen3") or mtype.startswith("gemma3"):
            attn += 2 * d  # q_norm, k_norm
        if mtype == "gpt_oss":
            attn += H  # attention sinks
    norms = (4 if mtype.startswith("gemma2") or mtype.startswith("gemma3") else 2) * h

    # MLP / MoE.
    I = cfg["intermediate_size"]
    E = _first(cfg, "num_local_experts", "n_routed_experts", "num_experts", default=0) or 0
    k = _first(cfg, "num_experts_per_tok", "experts_per_token", default=0) or 0
    shared = cfg.get("n_shared_experts") or 0
    moe_I = _first(cfg, "moe_intermediate_size", default=I)
    dense_layers = cfg.get("first_k_dense_replace", 0) if E else L
    moe_layers = L - dense_layers if E else 0
    dense_mlp = 3 * h * I
    expert = 3 * h * moe_I
    router = h * E
    if mtype == "gpt_oss":
        expert += 2 * moe_I + h  # gate_up and down biases
        router += E
    if mtype == "deepseek_v3":
        router += E  # the gate's e_score_correction_bias
    moe_fixed = router + shared * expert

    emb = V * h * (1 if tied else 2)
    per_layer_fixed = attn + norms
    total = emb + h + L * per_layer_fixed + dense_layers * dense_mlp + moe_layers * (moe_fixed + E * expert)
    active = emb + h + L * per_layer_fixed + dense_layers * dense_mlp + moe_layers * (moe_fixed + k * expert)
    return total, active


def _attention_kind(cfg: dict, heads: int, kv: int) -> AttentionKind:
    if cfg.get("kv_lora_rank"):
        return "mla"
    if kv == heads:
        return "mha"
    return "mqa" if kv == 1 else "gqa"


def model_from_config(path: str | Path) -> Model:
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("model", str(path), "no such config.json file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError("model", str(path), f"not a readable JSON config ({exc})") from None
    if not isinstance(raw, dict):
        raise InputError("model", str(path), "a config.json holds a JSON object")
    # Multimodal configs (Gemma 3) keep the language model in text_config.
    cfg = {**raw, **raw["text_config"]} if isinstance(raw.get("text_config"), dict) else raw
    needed = ["num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size"]
    missing = [k for k in needed if cfg.get(k) is None]
    if missing:
        raise InputError("model", str(path), f"config.json lacks {', '.join(missing)}")
    L, h, H = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"]
    kv = _first(cfg, "num_key_value_heads", default=H)
    mla = bool(cfg.get("kv_lora_rank"))
    head_dim = (cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]) if mla else _first(cfg, "head_dim", default=h // H)
    E = _first(cfg, "num_local_experts", "n_routed_experts", "num_experts", default=0) or 0
    total, active = _count_params(cfg)
    window, sliding = _sliding_layers(cfg, L)
    name = path.parent.name.lower() if path.name == "config.json" else path.stem.lower()
    name = "".join(c if c.isalnum() or c in ".-" else "-" for c in name).strip("-.") or "model"
    try:
        return Model(
            name=name,
            display_name=str(raw.get("_name_or_path") or name),
            num_layers=L,
            hidden_size=h,
            num_attention_heads=H,
            num_kv_heads=kv,
            head_dim=head_dim,
            v_head_dim=cfg.get("v_head_dim") if mla else None,
            intermediate_size=cfg["intermediate_size"],
            moe_intermediate_size=cfg.get("moe_intermediate_size") if E else None,
            vocab_size=cfg["vocab_size"],
            tie_word_embeddings=_tied(cfg),
            total_params=total,
            active_params=active,
            num_experts=E,
            experts_per_token=_first(cfg, "num_experts_per_tok", "experts_per_token", default=0) if E else 0,
            shared_experts=(cfg.get("n_shared_experts") or 0) if E else 0,
            dense_layers=min(L, cfg.get("first_k_dense_replace") or 0) if E else 0,
            attention=_attention_kind(cfg, H, kv),
            kv_lora_rank=cfg.get("kv_lora_rank"),
            qk_rope_head_dim=cfg.get("qk_rope_head_dim") if mla else None,
            sliding_window=window,
            sliding_layers=sliding,
            max_context_tokens=_first(cfg, "max_position_embeddings", default=4096),
            source=f"local config.json: {path}",
            as_of=dt.date.fromtimestamp(path.stat().st_mtime),
        )
    except ValueError as exc:
        raise InputError("model", str(path), f"config.json describes an unusable model: {exc}") from None
