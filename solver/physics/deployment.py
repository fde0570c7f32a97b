"""One configuration to estimate: a model on a device, split and quantised one way,
serving one workload. Plain dataclasses: the physics reads these, never YAML."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from solver.catalog import Device, Engine, Factors, Model, Platform, Precision
from solver.catalog.bands import Bands


@dataclass(frozen=True)
class LengthDistribution:
    """Prompt or output lengths of the requests, in tokens: `fixed` at the mean, or
    `lognormal` (spread by its P99), `exponential`, `uniform` over [low, high]; every
    draw is clipped to [low, high]."""

    dist: str
    mean_tokens: float
    low_tokens: int
    high_tokens: int
    p99_tokens: float | None = None
    samples: tuple[int, ...] = dataclasses.field(default=(), compare=False, repr=False)
    """`empirical`: the lengths of a user's file, drawn from at random."""
    digest: str = ""
    """`empirical`: which file (its samples are not compared)."""


@dataclass(frozen=True)
class Traffic:
    """Open-loop arrivals: requests per second over all replicas, with gaps whose
    coefficient of variation is `arrival_cv` (1: Poisson; above 1: burstier, a gamma
    renewal process), lengths drawn per request."""

    requests_per_s: float
    prompt: LengthDistribution
    output: LengthDistribution
    arrival_cv: float = 1.0
    pairs: tuple[tuple[int, int], ...] = dataclasses.field(default=(), compare=False, repr=False)
    """From a lengths file: each request's prompt and output drawn together."""


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
    steps (vLLM, SGLang), so TPOT grows with the prefill work and TTFT with the load.
    A spec resolves it from the engine's default (physics/resolve.py, continuous for every
    engine listed); this default serves the physics on its own, without an engine."""
    traffic: Traffic | None = None
    """Given as a request rate: `users` is then the concurrency the rate brings at the
    targets (Little's law), and every plan is sized and checked against the traffic."""
    shared_prefix_tokens: int = 0
    """Tokens at the start of every prompt that all requests share (a system prompt)."""
    prefix_hit_rate: float = 1.0
    """Share of prompts whose shared prefix is found in the cache."""

    @cached_property
    def resident_tokens(self) -> int:
        """Tokens of KV cache each sequence is sized for (kept once read: the workload is
        frozen, and a solve reads it some 30,000 times, in every physics key)."""
        return max(1, math.ceil(self.kv_fill * self.context_tokens))


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding as the physics reads it: k tokens drafted per step, each
    kept with probability α given the ones before it, and what the draft costs."""

    method: str
    num_tokens: int
    acceptance: float
    draft_name: str
    """The draft model's name, or the head's ("EAGLE head", "MTP module")."""
    draft_weight_bytes: float
    """The draft's own weights, whole (a head shares the target's embedding and LM head)."""
    draft_read_bytes: float
    """Bytes one drafted token reads, whole: its weights (a head: its layer and the shared LM head)."""
    draft_active_params: float
    """Parameters one drafted token uses (its FLOPs are 2 × these; a prompt's too)."""
    draft_layers: int
    draft_kv_bytes_per_token: float
    """The draft's KV per token, all its layers, whole."""
    checkpoint: str | None = None
    """The draft's Hugging Face id for deploy (None: from the method and model)."""
    vllm_method: str | None = None
    """How the engines name the method (catalogs/engines.yaml), for deploy."""
    sglang_algorithm: str | None = None
    acceptance_by_position: tuple[float, ...] = ()
    """α_k for k = 1, 2, ... (empty: `acceptance` at every position); past the list, its last."""
    draft_round_read_bytes: float = 0.0
    """Bytes the draft reads once a round, not once a drafted token, whole: EAGLE-3's fc
    (3h → h) over the target's three hidden states, on the first draft pass only."""
    draft_round_params: float = 0.0
    """Parameters of that once-a-round read (its FLOPs are 2 × these a sequence)."""

    @property
    def alphas(self) -> tuple[float, ...]:
        """α_1 … α_k of this draft's k positions."""
        return position_alphas(self.acceptance_by_position or (self.acceptance,), self.num_tokens)

    @property
    def expected_tokens(self) -> float:
        """Tokens a verification step yields: the accepted run and the target's own,
        1 + Σ_k Π_{j≤k} α_j."""
        return accepted_tokens(self.alphas)


def position_alphas(alphas: tuple[float, ...], k: int) -> tuple[float, ...]:
    """The first k of α_1, α_2, ..., the last repeated past the list's end."""
    return tuple(alphas[min(i, len(alphas) - 1)] for i in range(k)) if alphas else ()


def accepted_tokens(alphas: tuple[float, ...]) -> float:
    """Tokens one verification step yields on average: the target's own token, and the
    k-th drafted token when it and every one before it are kept, 1 + Σ_k Π_{j≤k} α_j
    (a constant α gives the geometric (1 − α^(k+1)) / (1 − α))."""
    total, run = 1.0, 1.0
    for a in alphas:
        run *= a
        total += run
    return total


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
    bands: Bands | None = None
    """The default P10–P90 bands of its figures (catalogs/bands.yaml), for the reports."""
    speculation: Speculation | None = None
    """Speculative decoding (None: one token per step)."""
    parallelism: str = "tp"
    """tp: every layer split over the tp GPUs. dp_ep (mixture-of-experts models): the tp
    GPUs each run attention and the dense layers whole for their own share of the
    sequences (data-parallel attention: the KV, MLA's latent too, is not replicated) and
    hold 1/tp of the routed experts, the tokens sent to their experts and back by an
    all-to-all per MoE layer (expert parallelism). tp_ep: attention and the dense layers
    split over the tp GPUs as tp, the routed experts whole, 1/tp of them on each GPU
    (expert parallelism inside the TP group: the same bytes per GPU and the same
    all-reduces, the busiest GPU's experts by the load imbalance)."""

    @property
    def dp_ep(self) -> bool:
        return self.parallelism == "dp_ep"

    @property
    def expert_parallel(self) -> bool:
        """The routed experts split whole over the GPUs (dp_ep or tp_ep), not each one by TP."""
        return self.parallelism in ("dp_ep", "tp_ep")

    @property
    def row_split(self) -> bool:
        """llama.cpp's --split-mode row over several GPUs: every weight matrix split by
        rows; the KV cache, attention and the small tensors on the main GPU alone."""
        return self.engine is not None and self.engine.split_mode == "row" and self.tp > 1

    @property
    def kv_ranks(self) -> int:
        """GPUs the KV cache and attention are shared over: 1 under row split, else tp."""
        return 1 if self.row_split else self.tp

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
    """The user's latency limits, in seconds (None: not set). Under traffic a limit
    holds at a percentile of the requests (`ttft_percentile`, `tpot_percentile`), and
    end-to-end time may have one too."""

    max_ttft_s: float | None = None
    max_tpot_s: float | None = None
    ttft_percentile: float | None = None
    tpot_percentile: float | None = None
    max_e2e_s: float | None = None
    e2e_percentile: float | None = None
    min_goodput: float | None = None
    """Share of requests that must meet every limit at once (simulated)."""


def caches_prefixes(d: Deployment) -> bool:
    """Whether the engine keeps a shared prefix's KV for the next request (vLLM's
    automatic prefix caching, SGLang's radix cache); None: vLLM's."""
    return d.engine is None or d.engine.prefix_caching


def cached_prompt_tokens(d: Deployment, w: Workload) -> int:
    """Of each prompt, the tokens the prefix cache supplies: the shared prefix times
    the hit rate (as an expectation), none where the engine keeps no prefix."""
    if not w.shared_prefix_tokens or not caches_prefixes(d):
        return 0
    return min(w.prompt_tokens - 1, round(w.shared_prefix_tokens * w.prefix_hit_rate))


def shared_kv_tokens(d: Deployment, w: Workload) -> int:
    """Tokens of KV a replica holds once for all its sequences: the shared prefix,
    where the engine caches it (each sequence then holds only its own tokens)."""
    return min(w.shared_prefix_tokens, w.prompt_tokens - 1) if w.shared_prefix_tokens and caches_prefixes(d) else 0
