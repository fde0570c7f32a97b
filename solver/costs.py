"""What a plan costs per token and how many tokens it makes per joule, at its steady
throughput: the replicas kept busy at their batch.

GPU time is split between the two phases a request needs, so input and output tokens
each carry their own share:

- a prompt token costs the replica's time to prefill it, batched with other prompts
  (compute-bound: the prompt's FLOPs at the replica's effective FLOP/s);
- an output token costs its sequence's share of a decode step, step / batch, where the
  step is the decode step alone (no prompt chunks mixed in: those are the prompt's).

Energy counts every GPU at its board power (TDP), an upper bound on what it draws.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.evaluate import Evaluation


@dataclass(frozen=True)
class TokenCosts:
    usd_per_million_input_tokens: float
    usd_per_million_output_tokens: float
    output_tokens_per_joule: float | None
    """None when a device has no board power in the catalog."""
    prefill_s_per_prompt_token: float
    decode_s_per_output_token: float
    """Replica-seconds per token: what the dollar figures are made of."""


def token_costs(ev: Evaluation, usd_per_hour: float, replicas: int, gpus: int) -> TokenCosts:
    """Per-token costs of a plan whose replicas (all alike) cost usd_per_hour together."""
    replica_usd_per_s = usd_per_hour / 3600 / max(1, replicas)
    pre = ev.prefill
    # The prompt's matmul and attention FLOPs at their rates; pipeline stages each prefill
    # their own layers, and batched prompts keep them all busy.
    prefill_s = pre.compute_time_s / ev.deployment.pp / max(1, ev.workload.prompt_tokens)
    dec = ev.decode
    decode_s = dec.coefficients.step_s(dec.batch, prefill_tokens=0) / dec.batch
    tdp = ev.deployment.device.tdp_w
    tokens_per_s = dec.batch / dec.coefficients.step_s(dec.batch, prefill_tokens=0) * replicas
    return TokenCosts(
        usd_per_million_input_tokens=replica_usd_per_s * prefill_s * 1e6,
        usd_per_million_output_tokens=replica_usd_per_s * decode_s * 1e6,
        output_tokens_per_joule=tokens_per_s / (gpus * tdp) if tdp else None,
        prefill_s_per_prompt_token=prefill_s,
        decode_s_per_output_token=decode_s,
    )
