"""The padding an engine allocates around each GPU's expert matrices, and streams with
them: its rule for the weight format on the device (catalogs/engines.yaml `moe_padding`,
catalog.engines.MoePadding) applied to the model's shapes. Every figure that holds or
reads the routed experts' bytes takes them from here through physics/memory.py's
loaded_group_weights_bytes: the weights each GPU holds (so the KV room left), and the
bytes a decode step or a prompt's pass reads (physics/kernels.py)."""

from __future__ import annotations

from functools import lru_cache

from solver.catalog.engines import MoePadding
from solver.physics.deployment import Deployment


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


@lru_cache(maxsize=256)
def padded_expert_share(rule: MoePadding, hidden: int, intermediate_per_gpu: int) -> float:
    """Allocated ÷ stored values of one GPU's slice of a gated expert (gate-up: 2·I rows
    by H columns; down: H rows by I columns) under `rule`."""
    i = round_up(intermediate_per_gpu, rule.intermediate_multiple)
    h = round_up(hidden, rule.hidden_multiple)
    rows, cols = rule.rows_multiple, rule.columns_multiple
    padded = round_up(2 * i, rows) * round_up(h, cols) + round_up(h, rows) * round_up(i, cols)
    return padded / (3 * intermediate_per_gpu * hidden)


def expert_intermediate_per_gpu(d: Deployment) -> int:
    """Each GPU's share of an expert's intermediate size: the whole of it under expert
    parallelism (experts dealt whole), a TP rank's slice otherwise."""
    m = d.model
    size = m.moe_intermediate_size or 0
    return size if d.expert_parallel else size // d.tp


def moe_padding_rule(d: Deployment) -> MoePadding | None:
    """The engine's padding of this deployment's experts, None where it has none modelled."""
    m, e = d.model, d.engine
    if e is None or not m.is_moe or not m.moe_intermediate_size or d.weights_bytes_override is not None:
        return None
    return e.moe_padding_on(d.weights.name, d.device)


def expert_padding_factor(d: Deployment) -> float:
    """The routed experts' bytes as the engine allocates them ÷ as stored (1: no padding)."""
    rule = moe_padding_rule(d)
    per_gpu = expert_intermediate_per_gpu(d)
    if rule is None or per_gpu <= 0:
        return 1.0
    return padded_expert_share(rule, d.model.hidden_size, per_gpu)
