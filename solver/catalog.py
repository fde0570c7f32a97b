"""The catalog: devices, platforms, models and precisions, read from `catalogs/*.yaml`.

Every entry is validated by pydantic on load and carries `source` and `as_of`, so a
figure in a report can always be traced to where it came from. Internal units are
SI: bytes, bytes/s, FLOP/s, seconds, US dollars.
"""

from __future__ import annotations

import datetime as dt
import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from solver.errors import InputError
from solver.yaml_lines import load_yaml_file

ComputeDtype = Literal["fp16", "bf16", "fp8", "int8", "fp4"]
AttentionKind = Literal["mha", "gqa", "mqa", "mla"]
LinkKind = Literal[
    "nvlink", "nvswitch", "pcie", "infinity-fabric", "ici", "roce", "infiniband", "ethernet", "neuronlink"
]


class _Entry(BaseModel):
    """Base of every catalog entry: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- factors


class Factors(_Entry):
    """Efficiency and utilisation factors. Data, not constants: devices override the
    catalog defaults and a spec overrides both."""

    memory_utilization: float = Field(
        gt=0, le=1, description="Fraction of device memory the engine may use (vLLM's gpu_memory_utilization)."
    )
    runtime_overhead_bytes: int = Field(
        ge=0, description="Per-GPU memory the engine needs beside weights and KV (CUDA context, activations)."
    )
    bandwidth_efficiency: float = Field(gt=0, le=1, description="Achieved / peak memory bandwidth in decode.")
    compute_efficiency: float = Field(
        gt=0, le=1, description="Achieved / peak dense tensor throughput (the seed's utilisation factor)."
    )


class FactorOverrides(_Entry):
    memory_utilization: float | None = Field(default=None, gt=0, le=1)
    runtime_overhead_bytes: int | None = Field(default=None, ge=0)
    bandwidth_efficiency: float | None = Field(default=None, gt=0, le=1)
    compute_efficiency: float | None = Field(default=None, gt=0, le=1)

    def apply(self, base: Factors) -> Factors:
        return base.model_copy(update=self.model_dump(exclude_none=True))


class DefaultFactors(Factors):
    source: str
    as_of: dt.date


# --------------------------------------------------------------------------- devices


class Price(_Entry):
    usd_per_gpu_hour: float = Field(gt=0)
    provider: str
    offer: str
    as_of: dt.date
    source: str


class Device(_Entry):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._\-]*$")
    display_name: str
    vendor: str
    family: str
    aliases: list[str] = []
    memory_bytes: int = Field(gt=0, description="Device memory as the device reports it (e.g. nvidia-smi total).")
    memory_note: str = Field(description="Where memory_bytes comes from.")
    memory_bandwidth_bytes_per_s: float = Field(gt=0)
    dense_flops_per_s: dict[ComputeDtype, float] = Field(
        description="Dense (no 2:4 sparsity) tensor throughput per precision; absent = unsupported."
    )
    weight_formats: list[str] = Field(min_length=1)
    kv_formats: list[str] = Field(min_length=1)
    tdp_w: float | None = Field(default=None, gt=0)
    price: Price | None = None
    purchase_usd: float | None = Field(default=None, gt=0)
    purchase_source: str | None = None
    platforms: list[str] = Field(min_length=1, description="Platforms this device ships in; the first is the default.")
    factors: FactorOverrides = FactorOverrides()
    source: str
    as_of: dt.date

    @model_validator(mode="after")
    def _check(self) -> Device:
        if not self.dense_flops_per_s:
            raise ValueError("dense_flops_per_s needs at least one precision")
        if any(v <= 0 for v in self.dense_flops_per_s.values()):
            raise ValueError("dense_flops_per_s values must be positive")
        if self.purchase_usd is not None and not self.purchase_source:
            raise ValueError("purchase_usd needs purchase_source")
        return self


# --------------------------------------------------------------------------- platforms


class Link(_Entry):
    kind: LinkKind
    bandwidth_bytes_per_s: float = Field(gt=0, description="Per GPU, per direction.")
    latency_s: float = Field(ge=0, description="Per hop.")
    source: str


class Platform(_Entry):
    """How devices connect. `layout` says how the scale-up links are wired:
    switch — every GPU on one switch (NVSwitch, PCIe switch, ICI approximated);
    mesh — every pair of GPUs has its own link (AMD Infinity Fabric, Gaudi RoCE);
    pairs — GPUs bridged two by two, pairs joined through the host link (NVLink bridge);
    single — one device, no scale-up."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._\-]*$")
    display_name: str
    layout: Literal["switch", "mesh", "pairs", "single"]
    gpus_per_node: int = Field(ge=1)
    scale_up: Link | None = None
    host: Link | None = Field(default=None, description="PCIe link to the host (joins bridged pairs).")
    scale_out: Link | None = Field(default=None, description="Network between nodes; absent = one node only.")
    max_nodes: int = Field(default=1, ge=1)
    source: str
    as_of: dt.date

    @model_validator(mode="after")
    def _check(self) -> Platform:
        if self.layout == "single":
            if self.gpus_per_node != 1:
                raise ValueError("layout 'single' has gpus_per_node 1")
        elif self.scale_up is None:
            raise ValueError(f"layout '{self.layout}' needs a scale_up link")
        if self.layout == "pairs" and self.host is None:
            raise ValueError("layout 'pairs' needs a host link to join the pairs")
        if self.max_nodes > 1 and self.scale_out is None:
            raise ValueError("max_nodes > 1 needs a scale_out link")
        return self


# --------------------------------------------------------------------------- models


class Model(_Entry):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._\-]*$")
    display_name: str
    hf_id: str | None = None
    aliases: list[str] = []
    num_layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    num_attention_heads: int = Field(ge=1)
    num_kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    v_head_dim: int | None = Field(default=None, ge=1, description="When V heads differ from Q/K heads (MLA).")
    intermediate_size: int = Field(ge=1)
    moe_intermediate_size: int | None = Field(default=None, ge=1)
    vocab_size: int = Field(ge=1)
    tie_word_embeddings: bool = False
    total_params: int = Field(gt=0)
    active_params: int = Field(gt=0, description="Parameters used per token (= total for dense models).")
    num_experts: int = Field(default=0, ge=0, description="Routed experts per MoE layer (0 = dense).")
    experts_per_token: int = Field(default=0, ge=0)
    shared_experts: int = Field(default=0, ge=0)
    attention: AttentionKind
    kv_lora_rank: int | None = Field(default=None, ge=1, description="MLA: compressed KV latent width.")
    qk_rope_head_dim: int | None = Field(default=None, ge=1, description="MLA: decoupled RoPE key width.")
    sliding_window: int | None = Field(default=None, ge=1)
    sliding_layers: int = Field(default=0, ge=0, description="How many layers attend only within the window.")
    max_context_tokens: int = Field(ge=1)
    source: str
    as_of: dt.date

    @model_validator(mode="after")
    def _check(self) -> Model:
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
        return self

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def embedding_params(self) -> int:
        """Input embedding plus LM head (one matrix when tied)."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def routed_expert_params(self) -> int:
        """All routed-expert parameters, from total = rest + routed and
        active = rest + routed · k/E (so no per-layer bookkeeping is needed)."""
        if not self.is_moe:
            return 0
        frac = self.experts_per_token / self.num_experts
        return round((self.total_params - self.active_params) / (1 - frac))


# --------------------------------------------------------------------------- precisions


class Precision(_Entry):
    """A number format for weights and/or the KV cache, with its real storage cost."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._\-]*$")
    display_name: str
    aliases: list[str] = []
    bits: float = Field(gt=0, le=32, description="Bits per stored value, before scales.")
    group_size: int | None = Field(default=None, ge=1, description="Values sharing one scale (block formats).")
    scale_bytes_per_group: float = Field(default=0, ge=0)
    zero_bytes_per_group: float = Field(default=0, ge=0)
    keeps_embeddings_16bit: bool = Field(
        default=False, description="Embedding and LM head stay in 16-bit (AWQ/GPTQ/FP8 checkpoints)."
    )
    compute: ComputeDtype = Field(description="Tensor-core precision its matmuls run in when the device has it.")
    fallback_compute: ComputeDtype | None = Field(
        default=None, description="Precision used (weight-only kernels) on a device without `compute`."
    )
    use: list[Literal["weights", "kv"]] = Field(min_length=1)
    source: str
    as_of: dt.date

    @property
    def bytes_per_value(self) -> float:
        per_group = 0.0
        if self.group_size:
            per_group = (self.scale_bytes_per_group + self.zero_bytes_per_group) / self.group_size
        return self.bits / 8 + per_group


# --------------------------------------------------------------------------- the catalog


class _DevicesFile(_Entry):
    default_factors: DefaultFactors
    devices: list[Device]


class _PlatformsFile(_Entry):
    platforms: list[Platform]


class _ModelsFile(_Entry):
    models: list[Model]


class _PrecisionsFile(_Entry):
    precisions: list[Precision]


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum() or ch == ".")


@dataclass(frozen=True)
class _Index:
    """Name → entry with aliases, case and punctuation folded, and 'did you mean'."""

    kind: str
    field_name: str
    entries: dict[str, object]
    keys: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, kind: str, field_name: str, items: list) -> _Index:
        entries = {}
        keys: dict[str, str] = {}
        for item in items:
            if item.name in entries:
                raise ValueError(f"duplicate {kind} name '{item.name}'")
            entries[item.name] = item
            names = [item.name, *getattr(item, "aliases", [])]
            if getattr(item, "hf_id", None):
                names.append(item.hf_id)
            for n in names:
                k = _norm(n)
                if k in keys and keys[k] != item.name:
                    raise ValueError(f"{kind} alias '{n}' names both '{keys[k]}' and '{item.name}'")
                keys[k] = item.name
        return cls(kind, field_name, entries, keys)

    def get(self, name: str):
        key = self.keys.get(_norm(str(name)))
        if key is not None:
            return self.entries[key]
        close = difflib.get_close_matches(_norm(str(name)), list(self.keys), n=3, cutoff=0.5)
        suggestions = list(dict.fromkeys(self.keys[c] for c in close))  # closest first
        hint = f"did you mean {', '.join(repr(s) for s in suggestions)}? " if suggestions else ""
        raise InputError(
            self.field_name,
            name,
            f"unknown {self.kind}; {hint}`plan-opt list {self.kind}s` shows all {len(self.entries)}",
        )

    def __iter__(self):
        return iter(self.entries.values())

    def __len__(self) -> int:
        return len(self.entries)


class Catalog:
    """Everything plan-opt knows about hardware and models, validated."""

    def __init__(self, devices: _DevicesFile, platforms: _PlatformsFile, models: _ModelsFile, precisions: _PrecisionsFile):
        self.default_factors = Factors(**devices.default_factors.model_dump(exclude={"source", "as_of"}))
        self.default_factors_source = devices.default_factors.source
        self.devices = _Index.build("device", "gpu", devices.devices)
        self.platforms = _Index.build("platform", "platform", platforms.platforms)
        self.models = _Index.build("model", "model", models.models)
        self.precisions = _Index.build("precision", "precision", precisions.precisions)
        self._cross_check()

    def _cross_check(self) -> None:
        for d in self.devices:
            for p in d.platforms:
                if p not in self.platforms.entries:
                    raise ValueError(f"device '{d.name}' names unknown platform '{p}'")
            for fmt in d.weight_formats + d.kv_formats:
                if fmt not in self.precisions.entries:
                    raise ValueError(f"device '{d.name}' names unknown precision '{fmt}'")
            for fmt in d.weight_formats:
                if "weights" not in self.precisions.entries[fmt].use:
                    raise ValueError(f"device '{d.name}': '{fmt}' is not a weight format")
            for fmt in d.kv_formats:
                if "kv" not in self.precisions.entries[fmt].use:
                    raise ValueError(f"device '{d.name}': '{fmt}' is not a KV-cache format")

    def device(self, name: str) -> Device:
        return self.devices.get(name)

    def model(self, name: str) -> Model:
        return self.models.get(name)

    def platform(self, name: str) -> Platform:
        return self.platforms.get(name)

    def precision(self, name: str, use: str = "weights") -> Precision:
        p = self.precisions.get(name)
        if use not in p.use:
            allowed = ", ".join(x.name for x in self.precisions if use in x.use)
            raise InputError(f"precision.{'kv_cache' if use == 'kv' else use}", name, f"not a {use} format; allowed: {allowed}")
        return p

    def factors_for(self, device: Device) -> Factors:
        return device.factors.apply(self.default_factors)


CATALOG_FILES = {
    "devices": ("devices.yaml", _DevicesFile),
    "platforms": ("platforms.yaml", _PlatformsFile),
    "models": ("models.yaml", _ModelsFile),
    "precisions": ("precisions.yaml", _PrecisionsFile),
}


def catalog_dir() -> Path:
    """The shipped catalogs: `solver/catalogs/` in an installed wheel (setuptools maps
    the top-level `catalogs/` there), or `catalogs/` beside the package in a source
    checkout or editable install."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "catalogs", here.parent / "catalogs"):
        if (candidate / "devices.yaml").exists():
            return candidate
    raise InputError("catalog", str(here), "the catalogs are missing from this installation; reinstall plan-opt")


def _load_file(path: Path, schema: type[BaseModel]):
    data, lines = load_yaml_file(path)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise InputError.from_validation(exc, lines, source=str(path)) from None


def load_catalog(directory: Path | None = None) -> Catalog:
    directory = Path(directory) if directory else catalog_dir()
    parts = {key: _load_file(directory / fname, schema) for key, (fname, schema) in CATALOG_FILES.items()}
    try:
        return Catalog(**parts)
    except ValueError as exc:
        raise InputError("catalog", str(directory), str(exc)) from None


_cached: Catalog | None = None


def default_catalog() -> Catalog:
    global _cached
    if _cached is None:
        _cached = load_catalog()
    return _cached
