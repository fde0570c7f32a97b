"""The bounds of the config.json fields a catalog model shares with the config.json
import (hf_config_schema.py): the ranges, and the field types that carry them. Apart
from the import's pydantic models so that loading the catalog, which every command
does, builds none of them (their module's classes were about 4 ms of each process).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

# --------------------------------------------------------------------------- bounds

MAX_LAYERS = 1_000
"""The deepest published decoders have about 130 layers (Llama 3.1 405B: 126)."""
MAX_HIDDEN = 100_000
"""The widest published residual streams: Llama 3.1 405B 16,384, MT-NLG 530B 20,480."""
MAX_INTERMEDIATE = 1_000_000
"""The widest published MLPs: PaLM 540B 73,728, Llama 3.1 405B 53,248."""
MAX_HEADS = 1_024
"""The most attention heads published: 128 (DeepSeek-V3, Llama 3.1 405B)."""
MAX_HEAD_DIM = 4_096
"""Published head widths are 64 to 256 (Gemma 2 and 3: 256; MLA's 128 + 64 RoPE)."""
MAX_RANK = MAX_HIDDEN
"""MLA's low-rank widths (DeepSeek-V3: kv 512, q 1,536) are below the hidden size."""
MAX_VOCAB = 10_000_000
"""The largest published vocabularies are about 262,000 tokens (Gemma 3)."""
MAX_EXPERTS = 100_000
"""The most routed experts published: 384 (Kimi K2); DeepSeek-V3 has 256."""
MAX_SHARED_EXPERTS = 1_000
"""Published MoE models share 0 to 2 experts (DeepSeek-V3: 1)."""
MAX_CONTEXT = 100_000_000
"""The longest published context is 10,485,760 tokens (Llama 4 Scout)."""
MAX_PARAMS = 10**14
"""The largest published models have 1 to 2 trillion parameters (Kimi K2 1.04T,
Switch-C 1.6T); 100T also keeps every byte count the physics derives from it
(weights × bytes per parameter × replicas) inside the solver's 64-bit integers."""
MAX_FILE_BYTES = 16 * 2**20
"""Published config.json files are a few kilobytes (the largest, with per-layer
lists, a few hundred)."""


# --------------------------------------------------------------------------- fields


Layers = Annotated[int, Field(ge=1, le=MAX_LAYERS)]
Hidden = Annotated[int, Field(ge=1, le=MAX_HIDDEN)]
Intermediate = Annotated[int, Field(ge=1, le=MAX_INTERMEDIATE)]
Heads = Annotated[int, Field(ge=1, le=MAX_HEADS)]
HeadDim = Annotated[int, Field(ge=1, le=MAX_HEAD_DIM)]
Rank = Annotated[int, Field(ge=1, le=MAX_RANK)]
Vocab = Annotated[int, Field(ge=1, le=MAX_VOCAB)]
Experts = Annotated[int, Field(ge=0, le=MAX_EXPERTS)]  # 0: dense
Shared = Annotated[int, Field(ge=0, le=MAX_SHARED_EXPERTS)]
DenseLayers = Annotated[int, Field(ge=0, le=MAX_LAYERS)]
Context = Annotated[int, Field(ge=1, le=MAX_CONTEXT)]
Window = Annotated[int, Field(ge=0, le=MAX_CONTEXT)]  # 0, like null, means no window (as transformers reads it)
