"""One configuration to estimate: a model on a device, split and quantised one way,
serving one workload. Plain dataclasses: the physics reads these, never YAML."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from solver.catalog import Device, Engine, Factors, Model, Platform, Precision


@dataclass(frozen=True)
class Workload:
    users: int
    """Concurrent sequences (requests in flight) across all replicas."""
    context_tokens: int
    """Tokens resident per sequence at its longest (prompt + output, or the engine's max_model_len)."""
    prompt_tokens: int
    output_tokens: int
    kv_fill: float = 1.0
    """Share of the context each sequence holds on average; 1.0 = every user at full
    context, the seed's worst case."""
    batching: str = "isolated"
    """isolated: the seed's figures, each step and each prompt on its own;
    continuous: prompts of arriving requests are prefilled in chunks inside the decode
    steps (vLLM, SGLang), so TPOT grows with the prefill work and TTFT with the load."""

    @property
    def resident_tokens(self) -> int:
        """Tokens of KV cache each sequence is sized for."""
        return max(1, math.ceil(self.kv_fill * self.context_tokens))


@dataclass(frozen=True)
class Deployment:
    model: Model
    device: Device
    platform: Platform
    weights: Precision
    kv: Precision
    factors: Factors
    tp: int = 1
    pp: int = 1
    replicas: int = 1
    weights_bytes_override: float | None = None
    """Whole-model weight bytes given by the user (e.g. a checkpoint's size on disk)."""
    engine: Engine | None = None
    """How the KV cache is sized; None: vLLM's rule (a fraction of the total)."""
    band: tuple[float, float] = (0.0, 0.0)
    """Relative uncertainty of (TPOT, TTFT): the worst residual of a calibration."""

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.replicas

    def batch_per_replica(self, workload: Workload) -> int:
        return math.ceil(workload.users / self.replicas)

    def as_engine_runs(self) -> Deployment:
        """llama.cpp splits a model over GPUs by whole layers unless told to split rows:
        the GPUs run one after another for a token, as pipeline stages do, so TP
        GPUs of layer split are estimated as stages (memory grows, speed does not)."""
        if self.engine is not None and self.engine.split_mode == "layer" and self.tp > 1:
            return dataclasses.replace(self, tp=1, pp=self.tp * self.pp)
        return self

    def replace(self, **changes: Any) -> Deployment:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Targets:
    """The user's latency limits, in seconds (None: not set)."""

    max_ttft_s: float | None = None
    max_tpot_s: float | None = None
