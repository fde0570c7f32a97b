"""The weights' bytes: parameters × bytes per parameter at the real cost of the format
(group scales, embeddings and what a format keeps in 16-bit, GGUF's blocks), the
padding an engine allocates around expert slices, and a GPU's share of them — its
pipeline stage's layers, split over the TP ranks but for the tensors every rank holds
whole (MLA's down-projections and router). Memory (memory.py) and every weight read
(decode.py, prefill.py) take them here."""

from __future__ import annotations

import math

from solver.catalog import Model, Precision
from solver.physics.deployment import Deployment
from solver.physics.kept import Kept
from solver.physics.padding import expert_padding_factor

BYTES_16BIT = 2.0
BYTES_Q8_0 = 34 / 32
"""GGUF Q8_0: 32 int8 values and one FP16 scale a block (ggml block_q8_0)."""


_GROUPS: Kept[dict[str, float]] = Kept()
"""group_weights_bytes by its model and format (physics/kept.py): a solve asks for the
same pair tens of thousands of times."""


def group_weights_bytes(model: Model, precision: Precision) -> dict[str, float]:
    """Whole-model weight bytes per tensor group in `precision`, as published
    checkpoints store them: a group the checkpoint keeps in 16-bit (or embeddings in
    formats that keep them) costs 2 bytes a value, and so do whole blocks kept in
    16-bit (the first and last, in Meta's FP8 405B)."""
    return dict(_GROUPS.get((model, precision), lambda: _group_weights_bytes(model, precision)))


def _group_weights_bytes(model: Model, precision: Precision) -> dict[str, float]:
    bpv = precision.bytes_per_value
    layout = model.checkpoint(precision.name)
    sixteen: set[str] = set(layout.sixteen_bit) if layout else set()
    if precision.keeps_embeddings_16bit:
        sixteen |= {"embeddings", "lm_head"}
    eight: set[str] = set(layout.eight_bit) if layout else set()
    whole = min(1.0, (layout.sixteen_bit_layers if layout else 0) / model.num_layers)
    out: dict[str, float] = {}
    for group, params in model.param_groups().items():
        if group in eight:
            out[group] = params * BYTES_Q8_0
        elif group in sixteen:
            out[group] = params * BYTES_16BIT
        elif group in ("attention", "mlp", "experts"):
            out[group] = params * (whole * BYTES_16BIT + (1 - whole) * bpv)
        else:
            out[group] = params * bpv
    return out


def weights_bytes(model: Model, precision: Precision) -> float:
    """Whole-model weight bytes in `precision`."""
    return sum(group_weights_bytes(model, precision).values())


def sixteen_bit_bytes(model: Model, precision: Precision, skip: tuple[str, ...] = ()) -> float:
    """Of the weights (less the groups in `skip`), the bytes stored in 16-bit: read
    by 16-bit kernels."""
    groups = group_weights_bytes(model, precision)
    bpv = precision.bytes_per_value
    layout = model.checkpoint(precision.name)
    eight = set(layout.eight_bit) if layout else set()
    total = 0.0
    for group, params in model.param_groups().items():
        if group in skip or not params or group in eight:  # Q8_0: read by the quantised kernels
            continue
        if bpv >= BYTES_16BIT:
            total += groups[group]
            continue
        # a group's bytes are q·bpv + s·(2 − bpv) for s of its values kept in 16-bit
        kept = (groups[group] - params * bpv) / (BYTES_16BIT - bpv)
        total += kept * BYTES_16BIT
    return total


def embedding_bytes(model: Model, precision: Precision) -> float:
    """Input embedding plus LM head."""
    g = group_weights_bytes(model, precision)
    return g["embeddings"] + g["lm_head"]


def input_embedding_bytes(model: Model, precision: Precision) -> float:
    """The input embedding table alone: a step reads one row per token of it, not the
    table, unless it is tied to the LM head (which reads all of it)."""
    if model.tie_word_embeddings:
        return 0.0
    return group_weights_bytes(model, precision)["embeddings"]


def deployment_weights_bytes(d: Deployment) -> float:
    """The checkpoint's bytes (what a pod downloads); loaded_weights_bytes is what the GPUs hold."""
    if d.weights_bytes_override is not None:
        return d.weights_bytes_override
    return weights_bytes(d.model, d.weights)


def loaded_group_weights_bytes(d: Deployment) -> dict[str, float]:
    """Whole-model weight bytes per tensor group as the engine allocates them: the routed
    experts with the padding the engine adds around each GPU's slice (physics/padding.py)."""
    groups = group_weights_bytes(d.model, d.weights)
    pad = expert_padding_factor(d)
    if pad != 1.0:
        groups["experts"] *= pad
    return groups


def loaded_weights_bytes(d: Deployment) -> float:
    """Weight bytes the GPUs of a replica hold together (the engine's padding counted)."""
    if d.weights_bytes_override is not None:
        return d.weights_bytes_override
    return sum(loaded_group_weights_bytes(d).values())


def stage_layer_fraction(model: Model, pp: int) -> float:
    """Share of the layers in the heaviest pipeline stage."""
    return math.ceil(model.num_layers / pp) / model.num_layers


def replicated_weights_bytes(d: Deployment) -> float:
    """Whole-model bytes of the tensors every TP rank holds and reads whole
    (Model.replicated_params: MLA's down-projections and its MoE router), at the
    bytes a value their group ("mlp": MLA counts its attention there) is stored in;
    of a checkpoint size the user gives, their share of its parameters. 0 for every
    model without MLA."""
    m = d.model
    params = m.replicated_params
    if not params:
        return 0.0
    if d.weights_bytes_override is not None:
        return d.weights_bytes_override * params / m.total_params
    return params * group_weights_bytes(m, d.weights)["mlp"] / m.param_groups()["mlp"]


def tp_rank_bytes(d: Deployment, whole_bytes: float) -> float:
    """One TP rank's share of `whole_bytes`, weights that include the replicated ones
    (replicated_weights_bytes): those whole, the rest split over the TP ranks."""
    replicated = replicated_weights_bytes(d)
    return (whole_bytes - replicated) / d.tp + replicated


def per_gpu_weights_bytes(d: Deployment) -> float:
    """Weights on the heaviest GPU: its stage's layers plus one embedding matrix
    (both when there is a single stage), split across the TP ranks but for the
    tensors each rank holds whole (replicated_weights_bytes)."""
    total = loaded_weights_bytes(d)
    if d.dp_ep:  # everything but the routed experts on every GPU, the experts split
        routed = total * d.model.routed_expert_params / d.model.total_params if d.weights_bytes_override else loaded_group_weights_bytes(d)["experts"]
        return total - routed + routed / d.tp
    stage = stage_layer_fraction(d.model, d.pp)
    if d.weights_bytes_override is not None:
        return tp_rank_bytes(d, total) * stage
    emb_total = embedding_bytes(d.model, d.weights)
    layers = tp_rank_bytes(d, total - emb_total) * stage
    if d.pp == 1:
        emb = emb_total
    else:
        emb = d.model.vocab_size * d.model.hidden_size * (emb_total / d.model.embedding_params)
    return layers + emb / d.tp
