"""The bundled prefill/decode spec with its search held to NVIDIA GPUs, for the tests of
what a P/D launch emits (router, KServe): which vendor's pool is cheapest moves with the
fitted factors, and these tests are about the launch, not the choice of vendor."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
NVIDIA_GPUS = ["b200", "h100-sxm", "h200"]


@cache
def nvidia_pd_spec() -> Path:
    """specs/long-prompts-disaggregated.yaml with search.gpus = NVIDIA_GPUS, written once."""
    spec = yaml.safe_load((ROOT / "specs" / "long-prompts-disaggregated.yaml").read_text())
    spec["search"]["gpus"] = NVIDIA_GPUS
    path = Path(tempfile.mkdtemp(prefix="pd-spec-")) / "long-prompts-disaggregated-nvidia.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path
