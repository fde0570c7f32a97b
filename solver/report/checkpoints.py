"""Which published checkpoint a plan serves, and what a command says where the catalog
lists none: read by deploy (every engine's command) and by TensorRT-LLM's, which
chooses its own checkpoint path (quantised ahead of serving)."""

from __future__ import annotations

from solver.catalog import Model, PublishedCheckpoint
from solver.physics.resolve import SIXTEEN_BIT


def choose_checkpoint(model: Model, weights: str, gguf: bool, variant: str) -> tuple[PublishedCheckpoint | None, list[str]]:
    """The published checkpoint whose weights are stored in the plan's format (either
    16-bit format serves a 16-bit plan), in the container the engine reads, of the
    wanted variant, else of the other variant (said in a note)."""
    container = "gguf" if gguf else "safetensors"
    formats = SIXTEEN_BIT if weights in SIXTEEN_BIT and not gguf else (weights,)
    found = [c for c in model.published if c.container == container and c.format in formats]
    found.sort(key=lambda c: formats.index(c.format))
    same = [c for c in found if c.variant == variant]
    if same:
        return same[0], []
    if found:
        c = found[0]
        return c, [f"no {variant} {weights} checkpoint of {model.display_name} is published; serving the {c.variant} one, {c.hf_id}"]
    return None, []


def sixteen_bit_id(model: Model, variant: str) -> str:
    """The repository of the 16-bit weights (what runtime quantisation and GGUF
    tokenizers start from); the model's own hf_id when the catalog lists none."""
    c, _ = choose_checkpoint(model, "bf16", False, variant)
    return c.hf_id if c else (model.hf_id or model.config_dir or model.name)


def unlisted_source_note(model: Model, base: str, variant: str) -> str:
    """Where the weights of a model the catalog lists no checkpoint of come from, said."""
    if model.config_dir is not None:
        if model.hf_id is not None:
            return f"serving {base}, the Hub repository the config.json given names (its _name_or_path); its folder {model.config_dir} is not read"
        return f"serving the folder of the config.json given ({base}): the engine loads the weights beside it"
    return (
        f"the catalog lists no published checkpoint of {model.display_name}: {base} is its config's repository "
        f"(the {'base' if variant == 'instruct' else variant} model may be all it names); check the {variant} repository before serving"
    )
