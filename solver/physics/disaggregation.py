"""Disaggregated serving: prompts prefilled on one pool of replicas, their KV cache sent
over the network to another pool that only decodes (xPyD: Splitwise, DistServe, and
the P/D modes of vLLM, SGLang, TensorRT-LLM and Dynamo).

Why it can pay: a decode step of an aggregated replica carries chunks of the arriving
prompts (continuous batching), so its TPOT grows with the prompts' work; a decode-only
replica's step is decode alone, and a prefill replica may be a compute-rich GPU while
the decode replica is a bandwidth- and memory-rich one. What it costs: a second pool,
the KV of every prompt over the link, and a queue of prompts at the prefill pool.

The prefill pool's queue is the closed loop of the users (prompt_queue.queued_prompt_s): each
prefill replica serves its share of the users, one prompt at a time (service S), and
the rest of a request — the transfer, its output tokens on the decode pool, the server's
front end — is the delay Z. The first token streams from the decode replica (as the
engines' P/D proxies run it: the prefill replica's own first token is discarded), so
TTFT = prompt queue + prefill + KV transfer + one decode step + front end.

The transfer always crosses the scale-out network (the pools on separate nodes: the
common deployment; two pools on one NVLink node would transfer faster), at the link's
rate, each GPU sending or receiving its own share of the KV in parallel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solver.physics.deployment import Deployment
from solver.physics.memory import kv_bytes_per_sequence, kv_shard_fraction
from solver.physics.prompt_queue import queued_prompt_s
from solver.physics.weights import stage_layer_fraction


@dataclass(frozen=True)
class KvTransfer:
    """One request's KV cache from its prefill replica to its decode replica."""

    bytes_per_request: float
    """The prompt's whole KV cache, all layers."""
    send_bytes_per_gpu: float
    """What the busiest prefill GPU sends (its TP shard; a DP-attention rank: all of it)."""
    receive_bytes_per_gpu: float
    """What the busiest decode GPU receives (an MLA latent is whole on every TP rank)."""
    link: str
    """The link's kind (infiniband, roce, ethernet)."""
    bandwidth_bytes_per_s: float
    """Per GPU per direction: the slower of the two pools' scale-out links."""
    latency_s: float
    """GPU → switch → GPU: two links' latency."""

    @property
    def time_s(self) -> float:
        return max(self.send_bytes_per_gpu, self.receive_bytes_per_gpu) / self.bandwidth_bytes_per_s + self.latency_s


def kv_share_on_gpu(d: Deployment) -> float:
    """Share of one request's KV on the GPU of `d` that holds most of it."""
    if d.dp_ep:  # a request's sequence lives on one data-parallel rank, whole
        return 1.0
    return kv_shard_fraction(d.model, d.tp) * stage_layer_fraction(d.model, d.pp)


def kv_transfer(prefill: Deployment, decode: Deployment, prompt_tokens: int) -> KvTransfer | None:
    """The transfer of one prompt's KV (None: a pool's platform has no network to send it over)."""
    a, b = prefill.platform.scale_out, decode.platform.scale_out
    if a is None or b is None:
        return None
    whole = kv_bytes_per_sequence(decode.model, decode.kv, prompt_tokens)
    slow = a if a.bandwidth_bytes_per_s <= b.bandwidth_bytes_per_s else b
    return KvTransfer(
        bytes_per_request=whole,
        send_bytes_per_gpu=whole * kv_share_on_gpu(prefill),
        receive_bytes_per_gpu=whole * kv_share_on_gpu(decode),
        link=slow.kind,
        bandwidth_bytes_per_s=slow.bandwidth_bytes_per_s,
        latency_s=a.latency_s + b.latency_s,
    )


@dataclass(frozen=True)
class PrefillPoolLoad:
    """What the prefill pool's queue gives at one pool size: the figures TTFT is made of."""

    users_per_replica: int
    service_s: float
    """One prompt on an idle prefill replica, the GPUs' time."""
    capacity_s: float
    """The replica time one prompt takes from the others (S over the ranks that prefill at once)."""
    delay_s: float
    """Z: a request's time outside the prompt queue (transfer, output tokens, front end)."""
    wait_s: float
    """Queued behind the other users' prompts."""
    transfer_s: float
    first_step_s: float
    request_overhead_s: float

    @property
    def ttft_s(self) -> float:
        return self.wait_s + self.service_s + self.transfer_s + self.first_step_s + self.request_overhead_s

    @property
    def saturated(self) -> bool:
        """More users per replica than it can keep up with: beyond N* = (S + Z) / S the
        replica's prompts queue without end at a growing user count (the machine-repairman
        model's saturation point), so its throughput no longer covers their arrival."""
        return self.users_per_replica * self.capacity_s > self.capacity_s + self.delay_s * (1 + 1e-12)


def prefill_pool_load(
    users: int,
    replicas: int,
    service_s: float,
    servers: int,
    tpot_s: float,
    output_tokens: int,
    transfer_s: float,
    request_overhead_s: float,
) -> PrefillPoolLoad:
    """`users` closed-loop users spread evenly over `replicas` prefill replicas; the decode
    pool's TPOT sets how long each spends away from the prompt queue."""
    u = math.ceil(users / replicas)
    capacity = service_s / max(1, servers)
    delay = transfer_s + output_tokens * tpot_s + request_overhead_s
    wait = max(0.0, queued_prompt_s(capacity, u, delay) - capacity)
    return PrefillPoolLoad(u, service_s, capacity, delay, wait, transfer_s, tpot_s, request_overhead_s)


def size_prefill_pool(
    users: int,
    service_s: float,
    servers: int,
    delay_s: float,
    after_s: float,
    max_ttft_s: float | None,
    tolerance: float = 0.0,
) -> tuple[int, int, float] | None:
    """The fewest prefill replicas for `users` closed-loop users: each replica unsaturated
    and, with a target, every user's TTFT (wait + S + `after_s`: the transfer, first step
    and front end) within `max_ttft_s`. Returns (replicas, users per replica, wait), or
    None when not even one user per replica meets the target.

    By mean-value analysis of the same queue as prompt_queue.queued_prompt_s (R(n) = S·(1 +
    Q(n − 1)), X(n) = n / (R(n) + Z), Q(n) = X(n)·R(n); exact for M/M/1//N), one user
    more at a time until the target breaks — R grows with n, so the most users a replica
    can take is where it first does, and the fewest replicas is ⌈users / that⌉."""
    c = service_s / max(1, servers)
    top = users if c <= 0 else min(users, math.floor(1 + delay_s / c + 1e-12))  # N* = (S + Z) / S
    limit = math.inf if max_ttft_s is None else max_ttft_s * (1 + tolerance)
    q = 0.0
    waits = [0.0]
    for n in range(1, top + 1):
        r = c * (1 + q)
        wait = max(0.0, r - c)
        if wait + service_s + after_s > limit:
            break
        waits.append(wait)
        q = n * r / (r + delay_s) if r + delay_s > 0 else 0.0
    most = len(waits) - 1
    if most < 1:
        return None
    replicas = math.ceil(users / most)
    per = math.ceil(users / replicas)
    return replicas, per, waits[per]


def link_load_ok(users: int, load: PrefillPoolLoad, transfer: KvTransfer, prefill_gpus: int, decode_gpus: int) -> bool:
    """Whether the pools' links carry the KV of every prompt: at most N / (S + Z) requests
    per second (the loop with no queue at all), each sending its KV, within the scale-out
    bandwidth of the smaller pool's GPUs."""
    rate = users / (load.service_s + load.delay_s) if load.service_s + load.delay_s > 0 else math.inf
    return rate * transfer.bytes_per_request <= min(prefill_gpus, decode_gpus) * transfer.bandwidth_bytes_per_s
