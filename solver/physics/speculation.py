"""Speculative decoding from the spec to the physics: the method's defaults from the
catalog (catalogs/engines.yaml `speculative`), the draft's size and KV, and the rules
of which engine drafts how."""

from __future__ import annotations

from solver.catalog import Catalog, Engine, Model, Precision
from solver.errors import InputError
from solver.physics.deployment import Speculation
from solver.physics.memory import kv_bytes_per_sequence, kv_bytes_per_token_per_layer
from solver.physics.weights import input_embedding_bytes, weights_bytes
from solver.spec.fields import SpeculativeIn

HEAD_BYTES_PER_PARAM = 2.0
"""EAGLE heads are published in 16-bit."""
ENGINE_METHODS = {
    "vllm": ("eagle", "eagle3", "mtp", "draft_model"),
    "sglang": ("eagle", "eagle3", "mtp"),
    "trtllm": ("eagle", "eagle3", "mtp", "draft_model"),
}
"""What each engine drafts with: vLLM's --speculative-config methods, SGLang's EAGLE and
EAGLE3 (MTP as EAGLE on the NextN layer), TensorRT-LLM's EAGLE/EAGLE-3, MTP and
draft-target models. llama-server drafts with a small model only (--model-draft)."""


def _layer_params(m: Model) -> float:
    """One of the target's layers as a token uses it (its active parameters beyond the
    embedding and LM head, per layer)."""
    head = m.vocab_size * m.hidden_size * (1 if m.tie_word_embeddings else 2)
    return max(0.0, (m.active_params - head) / m.num_layers)


def resolve_speculation(
    spec: SpeculativeIn | None, model: Model, weights: Precision, kv: Precision, engine: Engine | None, catalog: Catalog
) -> Speculation | None:
    if spec is None:
        return None
    method = catalog.speculative_methods.get(spec.method)
    if method is None:
        raise InputError("speculative.method", spec.method, f"choose from {', '.join(catalog.speculative_methods)}")
    engine_name = engine.name if engine else "vllm"
    if spec.method not in ENGINE_METHODS.get(engine_name, ("draft_model",)):
        allowed = ", ".join(ENGINE_METHODS.get(engine_name, ("draft_model",)))
        raise InputError("speculative.method", spec.method, f"{engine_name} drafts with {allowed}")
    if spec.method == "eagle" and spec.draft_checkpoint and "eagle3" in spec.draft_checkpoint.lower().replace("-", "").replace("_", ""):
        raise InputError(
            "speculative.method",
            "eagle",
            f'{spec.draft_checkpoint} names an EAGLE-3 head, which engines load as method eagle3 (vLLM "method": "eagle3"); set method: eagle3',
        )
    k = spec.num_tokens or method.num_tokens
    # the user's α stands at every position; else the family's published α_k, or the method's
    alphas = (spec.acceptance,) if spec.acceptance else method.acceptance_for(model.name)
    h = model.hidden_size
    lm_head = model.vocab_size * h
    if spec.method == "draft_model":
        assert spec.draft_model is not None  # SpeculativeIn requires it
        try:
            draft = catalog.model(spec.draft_model)
        except InputError as exc:
            raise exc.relabel("speculative.draft_model") from None
        if draft.vocab_size != model.vocab_size:
            raise InputError(
                "speculative.draft_model",
                spec.draft_model,
                f"must share the target's tokenizer: its vocabulary has {draft.vocab_size:,} tokens, {model.display_name}'s {model.vocab_size:,}",
            )
        if draft.active_params >= model.active_params:
            raise InputError("speculative.draft_model", spec.draft_model, f"must be smaller than {model.display_name}")
        stored = weights_bytes(draft, weights)
        return Speculation(
            "draft_model",
            k,
            alphas[0],
            draft.display_name,
            stored,
            stored - input_embedding_bytes(draft, weights),
            float(draft.active_params),
            draft.num_layers,
            kv_bytes_per_sequence(draft, kv, 1),
            spec.draft_checkpoint or draft.hf_id,
            method.vllm_method,
            method.sglang_algorithm,
            alphas,
        )
    if spec.method == "mtp":
        if not model.mtp_layers:
            raise InputError(
                "speculative.method",
                "mtp",
                f"{model.display_name} ships no multi-token-prediction module (num_nextn_predict_layers 0): use eagle or draft_model",
            )
        # DeepSeek's MTP module: an embedding projection (2h → h) and one transformer
        # block in the checkpoint's format; the embedding and LM head are the target's.
        per_byte = weights.bytes_per_value
        stored = model.mtp_params * per_byte
        read = (_layer_params(model) + 2 * h * h) * per_byte + lm_head * 2.0
        active = _layer_params(model) + 2 * h * h + lm_head
        return Speculation(
            "mtp",
            k,
            alphas[0],
            "MTP module",
            stored,
            read,
            active,
            model.mtp_layers,
            kv_bytes_per_token_per_layer(model, kv),
            spec.draft_checkpoint,
            method.vllm_method,
            method.sglang_algorithm,
            alphas,
        )
    if spec.method == "eagle3":
        return _eagle3_head(model, k, alphas, spec, method.draft_vocab_size, kv, method.vllm_method, method.sglang_algorithm)
    # EAGLE (1, 2): one decoder layer over the target's hidden states and a fusing
    # projection (2h → h) on every pass, sharing the target's embedding and LM head.
    params = _layer_params(model) + 2 * h * h
    return Speculation(
        spec.method,
        k,
        alphas[0],
        "EAGLE head",
        params * HEAD_BYTES_PER_PARAM,
        params * HEAD_BYTES_PER_PARAM + lm_head * 2.0,
        params + lm_head,
        1,
        kv_bytes_per_token_per_layer(model, kv),
        spec.draft_checkpoint,
        method.vllm_method,
        method.sglang_algorithm,
        alphas,
    )


def _eagle3_head(
    model: Model, k: int, alphas: tuple[float, ...], spec: SpeculativeIn, draft_vocab: int | None, kv: Precision, vllm: str | None, sglang: str | None
) -> Speculation:
    """An EAGLE-3 head as vLLM builds it (vllm/model_executor/models/llama_eagle3.py,
    commit 00bd1493b3e8): one decoder layer of the target's shape whose QKV projection
    reads the embedding and the hidden state side by side (2h inputs, not h), its own LM
    head over `draft_vocab` rows (config.json draft_vocab_size; the target's vocabulary
    where the catalog gives none), and the fc (3h → h) that fuses the target's three
    hidden states, run on a round's first pass only and replicated on every TP rank. The
    embedding is the target's."""
    h = model.hidden_size
    qkv_input = h * (model.num_attention_heads + 2 * model.num_kv_heads) * model.head_dim
    head = (draft_vocab or model.vocab_size) * h
    per_token = _layer_params(model) + qkv_input + head
    fc = 3 * h * h
    return Speculation(
        "eagle3",
        k,
        alphas[0],
        "EAGLE-3 head",
        (per_token + fc) * HEAD_BYTES_PER_PARAM,
        per_token * HEAD_BYTES_PER_PARAM,
        per_token,
        1,
        kv_bytes_per_token_per_layer(model, kv),
        spec.draft_checkpoint,
        vllm,
        sglang,
        alphas,
        draft_round_read_bytes=fc * HEAD_BYTES_PER_PARAM,
        draft_round_params=fc,
    )
