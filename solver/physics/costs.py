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

from solver.catalog import Device
from solver.catalog.prices import Ownership
from solver.physics.evaluate import Evaluation


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
    est = ev.estimates
    pre = est.prefill
    # The prompt's matmul and attention FLOPs at their rates; pipeline stages each prefill
    # their own layers, and batched prompts keep them all busy.
    prefill_s = pre.compute_time_s / ev.deployment.pp / max(1, ev.workload.prompt_tokens)
    if ev.deployment.dp_ep:  # each data-parallel rank prefills prompts of its own at once
        prefill_s = pre.batched_compute_time_s / max(1, ev.workload.prompt_tokens)
    dec = est.decode
    decode_s = dec.coefficients.decode_only_s(dec.batch) / dec.batch
    tdp = ev.deployment.device.tdp_w
    tokens_per_s = dec.batch / dec.coefficients.decode_only_s(dec.batch) * replicas
    return TokenCosts(
        usd_per_million_input_tokens=replica_usd_per_s * prefill_s * 1e6,
        usd_per_million_output_tokens=replica_usd_per_s * decode_s * 1e6,
        output_tokens_per_joule=tokens_per_s / (gpus * tdp) if tdp else None,
        prefill_s_per_prompt_token=prefill_s,
        decode_s_per_output_token=decode_s,
    )


# --------------------------------------------------------------------------- owning a GPU

HOURS_PER_MONTH = 8760 / 12


@dataclass(frozen=True)
class GpuHourCosts:
    """One GPU-hour of a device, owned: power, hosting, and the purchase spread over the
    life (None without a purchase price)."""

    power_usd: float | None
    """None when the device has no board power in the catalog."""
    hosting_usd: float | None
    capital_usd: float | None

    @property
    def running_usd(self) -> float:
        """What an owned GPU costs to keep serving (its purchase is sunk)."""
        return (self.power_usd or 0.0) + (self.hosting_usd or 0.0)

    @property
    def buy_usd(self) -> float | None:
        """What a GPU bought for the plan costs per hour over its life."""
        return None if self.capital_usd is None else self.capital_usd + self.running_usd


def gpu_hour_costs(device: Device, ownership: Ownership) -> GpuHourCosts:
    kw = device.tdp_w / 1000 if device.tdp_w else None
    o = ownership
    return GpuHourCosts(
        power_usd=None if kw is None else kw * o.utilisation * o.pue * o.usd_per_kwh,
        hosting_usd=None if kw is None else o.hosting_usd_per_kw_month * kw / HOURS_PER_MONTH,
        capital_usd=None if not device.purchase_usd else device.purchase_usd / (o.life_years * 8760),
    )


def plan_tco(
    gpus: int, owned_used: int, costs: GpuHourCosts | None, rent_usd_per_gpu_hour: float | None, acquire: str = "cheaper"
) -> tuple[float, str]:
    """A plan's total cost of ownership per hour and how its non-owned GPUs are had:
    owned ones at their running cost, the others rented or bought — `acquire` "cheaper"
    (whichever costs less per hour over the life), "rent" or "buy". Returns the cost and
    "bought", "rented", or "" when none are needed; infinite when they cannot be had."""
    extra = gpus - owned_used
    owned = owned_used * (costs.running_usd if costs else 0.0)
    if extra <= 0:
        return owned, ""
    buy = costs.buy_usd if costs and acquire != "rent" else None
    if acquire == "buy":
        rent_usd_per_gpu_hour = None
    if buy is not None and (rent_usd_per_gpu_hour is None or buy < rent_usd_per_gpu_hour):
        return owned + extra * buy, "bought"
    if rent_usd_per_gpu_hour is not None:
        return owned + extra * rent_usd_per_gpu_hour, "rented"
    return float("inf"), ""


def owned_in_use(owned: int, pools: list[tuple[int, int]]) -> int:
    """Owned GPUs of one device that pools of (GPUs per replica, replicas) can use:
    whole replicas only, since a replica's TP group is all owned or all rented (four owned
    GPUs are no part of a TP-8 group: the group spans one machine's NVLink domain); the
    pools share the `owned` GPUs, so the most that whole replicas of them fill."""
    best = 0

    def fill(i: int, left: int) -> None:
        nonlocal best
        if i == len(pools):
            best = max(best, owned - left)
            return
        g, r = pools[i]
        for k in range(min(r, left // g), -1, -1):
            fill(i + 1, left - k * g)

    fill(0, max(0, owned))
    return best
