"""A SolveResult as data: the pydantic models of `plan-opt solve --format json`, whose
schema `plan-opt schema --result` publishes. Deterministic: the same spec gives the
same bytes (no timings, no dictionary-order accidents). Strict JSON (RFC 8259, as
report/strict_json.py): an unbounded figure — a limit not set, a cost that cannot be
had — is null, never Infinity, and the fields that can be null say so; a NaN is a bug
and raises."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from pydantic import Field

from solver.explain.exclusions import by_device, exclusions
from solver.explain.records import SensitivityRow, SolveResult
from solver.optimise.capacity import NO_CAP
from solver.optimise.scenario import objective_value
from solver.physics.costs import TokenCosts, token_costs
from solver.physics.deployment import Deployment
from solver.report import bands, strict_json
from solver.report.headroom import HeadroomOut, headroom_out
from solver.report.mixed_json import MixedPlanOut, mixed_out
from solver.report.speculative_json import SpeculativeOut, speculative_out
from solver.report.strict_json import SolveModel
from solver.report.traffic_json import TrafficOut, traffic_out

if TYPE_CHECKING:
    from solver.catalog import Price
    from solver.optimise.candidate import Candidate
    from solver.optimise.problem import Problem


class SpecSummaryOut(SolveModel):
    model: str
    users: int
    context_tokens: int
    prompt_tokens: int
    output_tokens: int
    kv_fill: float
    batching: str = Field(
        description="continuous (prompts prefilled in chunks inside the decode steps: TPOT carries their work) or isolated "
        "(the seed's figures); workload.batching, else the engine's default (catalogs/engines.yaml)."
    )
    max_ttft_s: float | None = Field(description="None: not set (unbounded).")
    max_tpot_s: float | None = Field(description="None: not set (unbounded).")
    engine_release: str | None = Field(
        default=None,
        description="The engine release line whose defaults the plan assumes (engine.version; catalogs/engine_releases.yaml); "
        "None: the current release, the catalog's engine as it stands.",
    )
    objective: str
    max_usd_per_hour: float | None = Field(description="None: not set (unbounded).")
    max_purchase_usd: float | None = Field(description="None: not set (unbounded).")
    max_gpus: int | None = Field(description="None: not set (unbounded; solve and pareto then apply a default cap, max_gpus_is_default).")
    max_gpus_is_default: bool = Field(default=False, description="max_gpus is the default cap, applied because the cheapest plan exceeded it.")
    inventory: dict[str, int]
    pricing: str = Field(description="The basis rented GPUs are priced on (catalogs/prices.yaml).")


class PriceOut(SolveModel):
    usd_per_gpu_hour: float
    provider: str
    offer: str
    tier: str
    as_of: str
    basis: str = Field(description="How the offer was chosen from the price book.")
    source: str


class OwnershipOut(SolveModel):
    """One GPU-hour of the plan's device, owned (catalogs/ownership.yaml, or the spec)."""

    power_usd_per_gpu_hour: float | None
    hosting_usd_per_gpu_hour: float | None
    capital_usd_per_gpu_hour: float | None = Field(description="Purchase over the life; None without a purchase price.")
    life_years: float
    pue: float
    usd_per_kwh: float
    utilisation: float
    hosting_usd_per_kw_month: float


class PrefillPoolOut(SolveModel):
    """Disaggregated serving: the replicas that only prefill (the plan's own gpu, tp and
    replicas are then the decode pool's)."""

    gpu: str
    gpu_display_name: str
    platform: str
    tp: int
    pp: int
    parallelism: str
    replicas: int
    gpus: int
    users_per_replica: int = Field(description="Closed-loop users whose prompts one prefill replica serves.")
    prompt_s: float = Field(description="One prompt on an idle prefill replica, the GPUs' time.")
    queued_s: float = Field(description="A prompt's wait behind the others at the plan's load (machine-repairman queue).")
    kv_transfer_bytes: float = Field(description="One prompt's KV cache, whole, sent to the decode pool.")
    kv_transfer_s: float
    kv_link: str = Field(description="The network the KV crosses (the pools on separate nodes).")
    kv_link_bandwidth_bytes_per_s: float = Field(description="Per GPU per direction.")
    first_step_s: float = Field(description="The decode pool's first step, in TTFT (the first token streams from the decode replica).")


class PlanOut(SolveModel):
    gpu: str
    gpu_display_name: str
    platform: str
    tp: int
    pp: int
    replicas: int
    gpus: int
    gpus_owned_used: int
    gpus_rented: int
    gpus_bought: int = Field(description="GPUs beyond those owned that the plan buys (min_tco when buying costs less, or min_purchase).")
    weights: str
    kv_cache: str
    batch_per_replica: int
    max_batch_memory: int = Field(description="Sequences per replica that fit beside the weights.")
    max_batch_tpot: int = Field(description="Sequences per replica the TPOT target allows.")
    max_batch_ttft: int | None = Field(
        default=None, description="Users per replica the TTFT target allows with their prompts queued (None: no TTFT cap applies)."
    )
    capacity_per_replica: int = Field(
        default=0, description="Most users one replica holds under every target at once: the least of the three caps (optimise/capacity.py)."
    )
    cost_usd_per_hour: float
    purchase_usd: float
    tpot_s: float
    ttft_s: float = Field(description="At the plan's load: the prompts of a replica's users (or arrivals) queued ahead of each other.")
    idle_ttft_s: float = Field(description="One prompt on an idle replica, no queue.")
    tpot_band_s: list[float] | None = Field(
        default=None,
        description="TPOT's band [low, high]: a calibration's residual band (--calibration), else the default P10–P90 of catalogs/bands.yaml.",
    )
    ttft_band_s: list[float] | None = Field(default=None, description="TTFT's band [low, high], as tpot_band_s, around ttft_s.")
    band_from: str | None = Field(default=None, description="Where TPOT's band comes from (calibration residuals, or bands.yaml and its fit points).")
    prefix_cached_tokens: int = Field(
        default=0, description="Of each prompt, the tokens the prefix cache supplies (workload.shared_prefix_tokens × prefix_hit_rate)."
    )
    shared_kv_bytes: float = Field(default=0.0, description="Per GPU: the shared prefix's KV, held once for all of a replica's sequences.")
    speculative: SpeculativeOut | None = Field(default=None, description="Speculative decoding (None: one token a step).")
    parallelism: str = Field(
        default="tp",
        description="tp: every layer split over the tp GPUs; dp_ep: data-parallel attention and the experts split over them; "
        "tp_ep: tensor-parallel attention and the experts whole, split over them.",
    )
    serving: str = Field(
        default="aggregated",
        description="aggregated (every replica prefills and decodes) or disaggregated: then gpu, tp, replicas, batch and the "
        "memory figures are the decode pool's, prefill_pool the other pool, and gpus and the costs both pools'.",
    )
    prefill_pool: PrefillPoolOut | None = Field(default=None, description="Disaggregated serving: the prefill pool.")
    memory_needed_bytes: float = Field(description="Per GPU.")
    memory_usable_bytes: float = Field(description="Per GPU.")
    engine: str
    kv_capacity_tokens: int = Field(description="Per replica, tokens in every layer, as the engine would report it (vLLM: GPU KV cache size).")
    kv_capacity_blocks: int
    max_concurrency: float = Field(
        description="Sequences at the full context the KV budget holds, from the bytes per sequence max_batch_memory uses (sliding-window layers hold their window); vLLM prints the like as Maximum concurrency."
    )
    tokens_per_s: float = Field(description="All replicas.")
    price: PriceOut | None = Field(description="The offer the rented GPUs are priced at (None: none rented, or owned only).")
    tco_usd_per_hour: float | None = Field(
        description="Total cost of ownership per hour: owned GPUs at power and hosting, "
        "the rest as acquired_by (None: they can be neither rented nor bought)."
    )
    acquired_by: str = Field(
        description="How GPUs beyond those owned are had in the TCO: rented or bought (the cheaper "
        "per hour over the life; under min_cost, rented), or empty."
    )
    ownership: OwnershipOut
    usd_per_million_input_tokens: float = Field(description="At steady throughput: the replicas' time to prefill a prompt token.")
    usd_per_million_output_tokens: float = Field(description="At steady throughput: a sequence's share of a decode step.")
    output_tokens_per_joule: float | None = Field(description="At steady throughput, every GPU at its board power (TDP).")
    batch_capped_by: str
    replicas_forced_by: str | None


class ConstraintOut(SolveModel):
    name: str
    label: str
    value: float
    limit: float | None = Field(description="None: no limit set (unbounded).")
    unit: str
    slack: float | None = Field(description="limit - value; None without a limit.")
    note: str


class SensitivityOut(SolveModel):
    target: str
    change: str
    value: float
    plan: str | None
    objective: float | None
    delta: float | None


class QualityOut(SolveModel):
    weights: str
    quality_rank: int
    plan: str | None
    objective: float | None
    delta: float | None


class RunnerUpOut(SolveModel):
    device: str
    plan: str | None
    objective: float | None
    delta: float | None
    reason: str


class RelaxationOut(SolveModel):
    target: str
    current: float
    nearest: float | None
    plan: str | None
    note: str


class ExcludedShapesOut(SolveModel):
    shapes: str = Field(description='The splits left out ("TP 16", "TP 2 × PP 2"); empty when the reason hits every split searched on the device.')
    reason: str
    kind: str = Field(description="split, format, workload, engine or interconnect.")
    count: int = Field(description="Shapes (split × weights × KV cache) it leaves out.")


class ServingOut(SolveModel):
    """With search.serving [aggregated, disaggregated]: the best plan each way and why the chosen one wins."""

    chosen: str
    aggregated_plan: str | None
    aggregated_objective: float | None = Field(description="None: no aggregated plan meets the spec.")
    disaggregated_plan: str | None
    disaggregated_objective: float | None = Field(description="None: no disaggregated plan meets the spec.")
    reason: str


class CrossVendorOut(SolveModel):
    """Disaggregated plans searched over several vendors' GPUs: whether a prefill pool may
    send its KV cache to a decode pool of another vendor, and what allowing it changes."""

    allowed: bool = Field(description="search.allow_cross_vendor_kv (default false: both pools on one vendor's GPUs).")
    vendors: list[str] = Field(description="The vendors of the devices searched.")
    plan_if_allowed: str | None = Field(description="Not allowed: the plan allowing it would choose, where it gains on the objective.")
    objective_if_allowed: float | None = Field(description="That plan's objective value (None: no gain, or not re-solved).")
    note: str


class SolveOut(SolveModel):
    """`plan-opt solve --format json`: strict JSON, where a figure that is unbounded or not set is null, never Infinity or NaN."""

    spec: SpecSummaryOut
    status: str = Field(description="optimal (proven), feasible (time limit hit), infeasible or unknown.")
    proven_optimal: bool
    objective: str
    objective_value: float | None = Field(
        description="In the objective's unit: $/hour, GPUs, $ or seconds. None: no plan, or a TCO that cannot be had "
        "(GPUs neither rented nor bought)."
    )
    plan: PlanOut | None
    constraints: list[ConstraintOut]
    binding_targets: list[str] = Field(description="Targets whose relaxation lowers the optimum.")
    gpu_forced_by: list[str] = Field(description="Other GPUs ruled out by a constraint, and which.")
    sensitivity: list[SensitivityOut]
    better_weights: list[QualityOut] = Field(
        description="Each searched weight format better than the plan's (catalogs/precisions.yaml quality_rank), re-solved on "
        "its shapes alone: its best plan and what it would change in the objective."
    )
    runners_up: list[RunnerUpOut]
    conflict: list[str] = Field(description="A minimal set of targets that cannot hold together (infeasible specs).")
    more_conflicts: list[list[str]] = Field(description="Further minimal conflicts once the first one's targets are dropped.")
    tight_targets: list[str] = Field(description="Targets whose 10 % tightening changes the optimum.")
    explained: bool = Field(description="False under --no-explain: sensitivity, runners-up and diagnosis were skipped.")
    relaxations: list[RelaxationOut]
    excluded: dict[str, str] = Field(description="Devices left out whole, before any physics (e.g. no price), and why.")
    excluded_shapes: dict[str, list[ExcludedShapesOut]] = Field(
        description="Per device, the shapes the spec allows that the search cannot run, grouped by reason."
    )
    shapes_searched: int
    devices_searched: int
    serving: ServingOut | None = Field(
        default=None, description="With search.serving [aggregated, disaggregated]: the best plan each way (None: one way searched)."
    )
    cross_vendor_kv: CrossVendorOut | None = Field(
        default=None, description="Disaggregated serving searched over several vendors' GPUs: the pairing rule (None otherwise)."
    )
    traffic: TrafficOut | None = Field(default=None, description="With workload.requests_per_s: the plan under traffic, screened and simulated.")
    mixed_plan: MixedPlanOut | None = Field(
        default=None,
        description="With an inventory and min_cost: replicas of several shapes (owned GPUs used) that cost less than the one-shape plan, "
        "or serve a workload no one shape can (None: no such mix).",
    )
    traffic_unmet: str = Field(default="", description="With workload.requests_per_s and no plan: why no screened plan passed its simulation.")
    refused_by_simulation: list[str] = Field(
        default=[], description="With workload.requests_per_s: the plans the simulation refused, as replicas × shape."
    )
    cut_short: list[str] = Field(
        default=[],
        description="What the command's time limit (solver.time_limit_s × 3, from the start) skipped or stopped early: "
        "explanations, or the plan's simulated corrections (then no plan).",
    )
    headroom: HeadroomOut | None = Field(
        default=None,
        description="The plan's room under its limits, the limits it is thin on, and the optimum when the plan was chosen "
        "over it for its headroom (None: no plan).",
    )


def _plan_tco(c: Candidate, objective: str) -> tuple[float | None, str, int, int]:
    """The plan's TCO as the objective acquires its GPUs — min_tco the cheaper of renting
    and buying, min_purchase buying, otherwise renting — with how (rented, bought, both
    or "") and the GPUs bought and rented."""
    usd, bought, rented = c.acquired_as(objective)
    how = " and ".join(w for w, n in (("bought", bought), ("rented", rented)) if n)
    return (None if math.isinf(usd) else usd), how, bought, rented


def rent_usd_per_hour(c: Candidate, objective: str) -> float:
    """The plan's rent per hour as solve reports it: none where its objective buys every GPU
    it acquires (min_tco's bought plan rents nothing); the sweep's cost column reads this."""
    _, bought, rented = c.acquired_as(objective)
    return round(c.cost_usd_per_hour, 6) if rented or not bought else 0.0


def _disaggregated_token_costs(c: Candidate, usd_per_hour: float, costs: TokenCosts) -> TokenCosts:
    """Each pool's tokens at its own share of the plan's cost (by its GPUs at their
    price): a prompt token a prefill replica's time, an output token a decode replica's."""
    pool = c.prefill
    assert pool is not None
    list_usd = [n * (shape.device.price.usd_per_gpu_hour if shape.device.price else 0.0) for shape, n in c.pools]
    total = sum(list_usd)
    shares = [x / total for x in list_usd] if total else [n / c.gpus for _, n in c.pools]
    decode_usd_per_s = usd_per_hour * shares[0] / 3600 / c.replicas
    prefill_usd_per_s = usd_per_hour * shares[1] / 3600 / pool.replicas
    dec = pool.physics.decode
    prefill_s = pool.load.capacity_s / max(1, dec.prompt_tokens if dec is not None else 1)  # a replica's time per prompt token
    return dataclasses.replace(
        costs,
        usd_per_million_input_tokens=prefill_usd_per_s * prefill_s * 1e6,
        usd_per_million_output_tokens=decode_usd_per_s * costs.decode_s_per_output_token * 1e6,
        prefill_s_per_prompt_token=prefill_s,
    )


def _prefill_pool_out(c: Candidate) -> PrefillPoolOut | None:
    pool = c.prefill
    if pool is None:
        return None
    d, load, tr = pool.shape.deployment, pool.load, pool.transfer
    return PrefillPoolOut(
        gpu=d.device.name,
        gpu_display_name=d.device.display_name,
        platform=d.platform.name,
        tp=d.tp,
        pp=d.pp,
        parallelism=d.parallelism,
        replicas=pool.replicas,
        gpus=pool.gpus,
        users_per_replica=load.users_per_replica,
        prompt_s=load.service_s,
        queued_s=load.wait_s,
        kv_transfer_bytes=tr.bytes_per_request,
        kv_transfer_s=tr.time_s,
        kv_link=tr.link,
        kv_link_bandwidth_bytes_per_s=tr.bandwidth_bytes_per_s,
        first_step_s=load.first_step_s,
    )


def _price_out(price: Price) -> PriceOut:
    return PriceOut(
        usd_per_gpu_hour=price.usd_per_gpu_hour,
        provider=price.provider,
        offer=price.offer,
        tier=price.tier,
        as_of=price.as_of.isoformat(),
        basis=price.basis,
        source=price.source,
    )


def _in_traffic_terms(p: Problem, names: list[str]) -> list[str]:
    """Under traffic the users target is the request rate (a re-solve scales one with the
    other), and the context follows the length distributions, so it is not a target."""
    if p.workload.traffic is None:
        return names
    return ["requests_per_s" if n == "users" else n for n in names if n != "context_tokens"]


def _sensitivity_in_traffic_terms(p: Problem, rows: list[SensitivityRow]) -> list[SensitivityRow]:
    traffic = p.workload.traffic
    if traffic is None:
        return rows
    scale = traffic.requests_per_s / max(1, p.workload.users)
    return [
        dataclasses.replace(x, target="requests_per_s", value=x.value * scale) if x.target == "users" else x
        for x in rows
        if x.target != "context_tokens"
    ]


def to_output(r: SolveResult) -> SolveOut:
    p = r.problem
    w, t = p.workload, p.targets
    spec = SpecSummaryOut(
        model=p.shapes[0].deployment.model.name if p.shapes else p.spec.model,
        users=w.users,
        context_tokens=w.context_tokens,
        prompt_tokens=w.prompt_tokens,
        output_tokens=w.output_tokens,
        kv_fill=w.kv_fill,
        batching=w.batching,
        max_ttft_s=t.max_ttft_s,
        max_tpot_s=t.max_tpot_s,
        engine_release=next((sh.deployment.engine.release for sh in p.shapes if sh.deployment.engine), "") or None,
        objective=p.objective,
        max_usd_per_hour=p.max_usd_per_hour,
        max_purchase_usd=p.max_purchase_usd,
        max_gpus=p.max_gpus,
        max_gpus_is_default=r.gpu_cap_defaulted,
        inventory=dict(sorted(p.spec.inventory.items())),
        pricing=p.pricing.label() if p.pricing else "",
    )
    plan = None
    c = r.solution.candidate
    if c is not None and r.plan is not None:
        ev = r.plan
        est = ev.estimates
        d = ev.deployment
        tco, acquired, bought, rented = _plan_tco(c, p.objective)
        usd = tco if tco is not None else c.cost_usd_per_hour
        costs = token_costs(ev, usd, c.replicas, c.gpus)
        if c.prefill is not None:
            costs = _disaggregated_token_costs(c, usd, costs)
        hc, own = c.shape.costs, p.ownership
        ttft_s, capped_by = est.ttft_s, r.batch_capped_by
        # build_problem gives every shape its costs and the problem its ownership;
        # explain_plan sets the plan and its batch cap together.
        assert hc is not None and own is not None and capped_by is not None
        plan_ttft_s = c.ttft_s if c.traffic is not None or c.prefill is not None else ttft_s
        plan = PlanOut(
            gpu=d.device.name,
            gpu_display_name=d.device.display_name,
            platform=d.platform.name,
            tp=d.tp,
            parallelism=d.parallelism,
            pp=d.pp,
            replicas=c.replicas,
            gpus=c.gpus,
            gpus_owned_used=c.gpus - c.rented,
            gpus_rented=rented if tco is not None else c.rented,
            gpus_bought=bought,
            weights=d.weights.name,
            kv_cache=d.kv.name,
            batch_per_replica=c.batch,
            max_batch_memory=c.max_batch_memory,
            max_batch_tpot=c.max_batch_tpot,
            max_batch_ttft=c.max_batch_ttft if c.max_batch_ttft < NO_CAP else None,
            capacity_per_replica=c.capacity.users,
            cost_usd_per_hour=rent_usd_per_hour(c, p.objective),
            purchase_usd=round(c.purchase_usd, 2),
            tpot_s=c.tpot_s if c.traffic is not None else est.decode.tpot_s,
            ttft_s=c.ttft_s if c.traffic is not None or c.prefill is not None else ttft_s,
            idle_ttft_s=est.prefill.ttft_s if c.prefill is None else c.prefill.ttft_s - c.prefill.load.wait_s,
            **_bands_out(d, c.tpot_s if c.traffic is not None else est.decode.tpot_s, c.batch, plan_ttft_s),
            serving=c.serving,
            prefill_pool=_prefill_pool_out(c),
            prefix_cached_tokens=est.prefill.cached_tokens,
            speculative=speculative_out(ev),
            shared_kv_bytes=est.memory.shared_kv_bytes,
            memory_needed_bytes=est.memory.needed_bytes,
            memory_usable_bytes=est.memory.usable_bytes,
            engine=d.engine.name if d.engine else "vllm",
            kv_capacity_tokens=est.memory.kv_capacity_tokens,
            kv_capacity_blocks=est.memory.kv_capacity_blocks,
            max_concurrency=round(est.memory.max_concurrency, 4),
            tokens_per_s=est.decode.tokens_per_s * c.replicas,
            price=_price_out(d.device.price) if rented and d.device.price else None,
            tco_usd_per_hour=None if tco is None else round(tco, 6),
            acquired_by=acquired,
            ownership=OwnershipOut(
                power_usd_per_gpu_hour=None if hc.power_usd is None else round(hc.power_usd, 6),
                hosting_usd_per_gpu_hour=None if hc.hosting_usd is None else round(hc.hosting_usd, 6),
                capital_usd_per_gpu_hour=None if hc.capital_usd is None else round(hc.capital_usd, 6),
                life_years=own.life_years,
                pue=own.pue,
                usd_per_kwh=own.usd_per_kwh,
                utilisation=own.utilisation,
                hosting_usd_per_kw_month=own.hosting_usd_per_kw_month,
            ),
            usd_per_million_input_tokens=round(costs.usd_per_million_input_tokens, 6),
            usd_per_million_output_tokens=round(costs.usd_per_million_output_tokens, 6),
            output_tokens_per_joule=None if costs.output_tokens_per_joule is None else round(costs.output_tokens_per_joule, 6),
            batch_capped_by=capped_by,
            replicas_forced_by=r.replicas_forced_by,
        )
    sv = r.serving
    cv = r.cross_vendor
    return SolveOut(
        cross_vendor_kv=None if cv is None else CrossVendorOut(**vars(cv)),
        serving=None
        if sv is None
        else ServingOut(
            chosen=sv.chosen,
            aggregated_plan=sv.aggregated_plan,
            aggregated_objective=sv.aggregated_objective,
            disaggregated_plan=sv.disaggregated_plan,
            disaggregated_objective=sv.disaggregated_objective,
            reason=sv.reason,
        ),
        spec=spec,
        status=r.solution.status,
        proven_optimal=r.solution.proven_optimal,
        objective=p.objective,
        objective_value=objective_value(p, c) if c is not None else None,
        plan=plan,
        constraints=[ConstraintOut(**vars(x)) for x in r.constraints],
        binding_targets=_in_traffic_terms(p, r.binding_targets),
        gpu_forced_by=r.gpu_forced_by,
        sensitivity=[SensitivityOut(**vars(x)) for x in _sensitivity_in_traffic_terms(p, r.sensitivity)],
        better_weights=[QualityOut(**vars(x)) for x in r.better_weights],
        runners_up=[RunnerUpOut(**vars(x)) for x in r.runners_up],
        conflict=r.conflict,
        more_conflicts=r.more_conflicts,
        tight_targets=_in_traffic_terms(p, r.tight_targets),
        explained=r.explained,
        relaxations=[RelaxationOut(**vars(x)) for x in r.relaxations],
        excluded=dict(sorted(p.excluded.items())),
        excluded_shapes={
            dev: [ExcludedShapesOut(shapes=e.shapes, reason=e.reason, kind=e.kind, count=e.count) for e in items]
            for dev, items in by_device(exclusions(p)).items()
        },
        shapes_searched=len(p.shapes),
        devices_searched=len(p.devices),
        traffic=traffic_out(r),
        mixed_plan=mixed_out(r.mixed),
        traffic_unmet=r.traffic_unmet,
        cut_short=r.cut_short,
        refused_by_simulation=[f"{n} × {label} (missed {', '.join(missed)})" for label, n, missed in r.traffic_rejected],
        headroom=headroom_out(r),
    )


def to_json(r: SolveResult) -> str:
    """Strict JSON: an unbounded figure null, a NaN refused (strict_json.finite) before
    pydantic writes the bytes."""
    out = to_output(r)
    strict_json.finite(out.model_dump())
    return out.model_dump_json(indent=2)


def result_json_schema() -> dict:
    return SolveOut.model_json_schema()


def _bands_out(d: Deployment, tpot_s: float, batch: int, ttft_s: float) -> dict[str, Any]:
    """The plan's TPOT and TTFT bands (report/bands.py)."""
    tb, fb = bands.tpot_band(d, tpot_s, batch), bands.ttft_band(d, ttft_s)
    return {"tpot_band_s": list(tb) if tb else None, "ttft_band_s": list(fb) if fb else None, "band_from": bands.tpot_source(d, batch)}
