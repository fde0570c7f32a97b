"""Render a SolveResult: a terminal report, Markdown, or JSON whose schema is
published (`plan-opt schema --result`). JSON is deterministic: the same spec gives
the same bytes (no timings, no dictionary-order accidents)."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from solver.catalog import TIERS
from solver.physics.costs import plan_tco, token_costs
from solver.optimise.model import LABELS
from solver.explain.exclusions import by_device, exclusions
from solver.explain.exclusions import line as exclusion_line
from solver.optimise.scenario import objective_value
from solver.explain.records import SolveResult
from solver.spec.solve_spec import OBJECTIVES
from solver.units import GB, fmt_seconds

NOT_PRICED = ("no purchase", "cannot run", *(f"no {t} offer" for t in TIERS))
"""Reasons a device was left out before any physics: not a constraint ruling it out."""

# --------------------------------------------------------------------------- JSON (pydantic at the edge)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SpecSummaryOut(_Out):
    model: str
    users: int
    context_tokens: int
    prompt_tokens: int
    output_tokens: int
    kv_fill: float
    max_ttft_s: float | None
    max_tpot_s: float | None
    objective: str
    max_usd_per_hour: float | None
    max_purchase_usd: float | None
    max_gpus: int | None
    max_gpus_is_default: bool = Field(default=False, description="max_gpus is the default cap, applied because the cheapest plan exceeded it.")
    inventory: dict[str, int]
    pricing: str = Field(description="The basis rented GPUs are priced on (catalogs/prices.yaml).")


class PriceOut(_Out):
    usd_per_gpu_hour: float
    provider: str
    offer: str
    tier: str
    as_of: str
    basis: str = Field(description="How the offer was chosen from the price book.")
    source: str


class OwnershipOut(_Out):
    """One GPU-hour of the plan's device, owned (catalogs/ownership.yaml, or the spec)."""

    power_usd_per_gpu_hour: float | None
    hosting_usd_per_gpu_hour: float | None
    capital_usd_per_gpu_hour: float | None = Field(description="Purchase over the life; None without a purchase price.")
    life_years: float
    pue: float
    usd_per_kwh: float
    utilisation: float
    hosting_usd_per_kw_month: float


class PlanOut(_Out):
    gpu: str
    gpu_display_name: str
    platform: str
    tp: int
    pp: int
    replicas: int
    gpus: int
    gpus_owned_used: int
    gpus_rented: int
    weights: str
    kv_cache: str
    batch_per_replica: int
    max_batch_memory: int = Field(description="Sequences per replica that fit beside the weights.")
    max_batch_tpot: int = Field(description="Sequences per replica the TPOT target allows.")
    cost_usd_per_hour: float
    purchase_usd: float
    tpot_s: float
    ttft_s: float
    memory_needed_bytes: float = Field(description="Per GPU.")
    memory_usable_bytes: float = Field(description="Per GPU.")
    engine: str
    kv_capacity_tokens: int = Field(description="Per replica, tokens in every layer, as the engine would report it (vLLM: GPU KV cache size).")
    kv_capacity_blocks: int
    max_concurrency: float = Field(description="Sequences at the full context the KV budget holds, from the bytes per sequence max_batch_memory uses (sliding-window layers hold their window); vLLM prints the like as Maximum concurrency.")
    tokens_per_s: float = Field(description="All replicas.")
    price: PriceOut | None = Field(description="The offer the rented GPUs are priced at (None: none rented, or owned only).")
    tco_usd_per_hour: float | None = Field(description="Total cost of ownership per hour: owned GPUs at power and hosting, "
                                           "the rest as acquired_by (None: they can be neither rented nor bought).")
    acquired_by: str = Field(description="How GPUs beyond those owned are had in the TCO: rented or bought (the cheaper "
                             "per hour over the life; under min_cost, rented), or empty.")
    ownership: OwnershipOut
    usd_per_million_input_tokens: float = Field(description="At steady throughput: the replicas' time to prefill a prompt token.")
    usd_per_million_output_tokens: float = Field(description="At steady throughput: a sequence's share of a decode step.")
    output_tokens_per_joule: float | None = Field(description="At steady throughput, every GPU at its board power (TDP).")
    batch_capped_by: str
    replicas_forced_by: str | None


class ConstraintOut(_Out):
    name: str
    label: str
    value: float
    limit: float | None
    unit: str
    slack: float | None
    note: str


class SensitivityOut(_Out):
    target: str
    change: str
    value: float
    plan: str | None
    objective: float | None
    delta: float | None


class QualityOut(_Out):
    weights: str
    quality_rank: int
    plan: str | None
    objective: float | None
    delta: float | None


class RunnerUpOut(_Out):
    device: str
    plan: str | None
    objective: float | None
    delta: float | None
    reason: str


class RelaxationOut(_Out):
    target: str
    current: float
    nearest: float | None
    plan: str | None
    note: str


class ExcludedShapesOut(_Out):
    shapes: str = Field(description='The splits left out ("TP 16", "TP 2 × PP 2"); empty when the reason hits every split searched on the device.')
    reason: str
    kind: str = Field(description="split, format, workload, engine or interconnect.")
    count: int = Field(description="Shapes (split × weights × KV cache) it leaves out.")


class SolveOut(_Out):
    """`plan-opt solve --format json`."""

    spec: SpecSummaryOut
    status: str = Field(description="optimal (proven), feasible (time limit hit), infeasible or unknown.")
    proven_optimal: bool
    objective: str
    objective_value: float | None = Field(description="In the objective's unit: $/hour, GPUs, $ or seconds.")
    plan: PlanOut | None
    constraints: list[ConstraintOut]
    binding_targets: list[str] = Field(description="Targets whose relaxation lowers the optimum.")
    gpu_forced_by: list[str] = Field(description="Other GPUs ruled out by a constraint, and which.")
    sensitivity: list[SensitivityOut]
    better_weights: list[QualityOut] = Field(
        description="Each searched weight format better than the plan's (catalogs/precisions.yaml quality_rank), re-solved on "
        "its shapes alone: its best plan and what it would change in the objective.")
    runners_up: list[RunnerUpOut]
    conflict: list[str] = Field(description="A minimal set of targets that cannot hold together (infeasible specs).")
    more_conflicts: list[list[str]] = Field(description="Further minimal conflicts once the first one's targets are dropped.")
    tight_targets: list[str] = Field(description="Targets whose 10 % tightening changes the optimum.")
    explained: bool = Field(description="False under --no-explain: sensitivity, runners-up and diagnosis were skipped.")
    relaxations: list[RelaxationOut]
    excluded: dict[str, str] = Field(description="Devices left out whole, before any physics (e.g. no price), and why.")
    excluded_shapes: dict[str, list[ExcludedShapesOut]] = Field(
        description="Per device, the shapes the spec allows that the search cannot run, grouped by reason.")
    shapes_searched: int
    devices_searched: int


def _quality_line(weights: str, o: SolveOut) -> str:
    """Whether a better weight format was to be had, and at what price."""
    if not o.better_weights:
        return f"- weights: {weights}, the best format the search allows"
    parts = []
    for q in o.better_weights:
        if q.delta is None:
            parts.append(f"{q.weights} meets no plan")
        elif abs(q.delta) < 1e-9:
            parts.append(f"{q.weights} costs nothing more ({q.plan}; slower: prefer quality takes it)")
        else:
            parts.append(f"{q.weights} would cost {_delta_text(o.objective, q.delta)} ({q.plan})")
    return f"- weights: {weights}; better formats: " + "; ".join(parts)


def _tco_line(pl: PlanOut) -> str:
    """TCO beside $/hour: what the owned GPUs cost to run, and the rest as acquired."""
    if pl.tco_usd_per_hour is None:
        return "total cost of ownership: — (the GPUs beyond those owned can be neither rented nor bought on this basis)"
    o = pl.ownership
    run = (o.power_usd_per_gpu_hour or 0) + (o.hosting_usd_per_gpu_hour or 0)
    parts = []
    if pl.gpus_owned_used:
        parts.append(f"{pl.gpus_owned_used} owned at ${run:,.2f}/GPU-hour (power + hosting)")
    if pl.acquired_by == "bought":
        parts.append(f"{pl.gpus_rented} bought at ${o.capital_usd_per_gpu_hour + run:,.2f}/GPU-hour "
                     f"(${o.capital_usd_per_gpu_hour:,.2f} purchase over {o.life_years:g} years + ${run:,.2f} power and hosting)")
    elif pl.acquired_by == "rented":
        parts.append(f"{pl.gpus_rented} rented")
    power = "" if o.power_usd_per_gpu_hour is not None else " (no board power in the catalog: power and hosting not counted)"
    return f"total cost of ownership ${pl.tco_usd_per_hour:,.2f}/hour: " + ", ".join(parts) + power


def _plan_tco(c, objective: str) -> tuple[float | None, str]:
    """The plan's TCO as the objective acquires its GPUs: min_tco the cheaper of renting
    and buying, min_purchase buying, otherwise renting."""
    if objective == "min_tco":
        usd, how = c.tco_usd_per_hour, c.acquired_by
    else:
        price = c.shape.device.price
        usd, how = plan_tco(c.gpus, c.gpus - c.rented, c.shape.costs, price.usd_per_gpu_hour if price else None,
                            "buy" if objective == "min_purchase" else "rent")
    return (None if math.isinf(usd) else usd), how


def _price_out(price) -> PriceOut:
    return PriceOut(usd_per_gpu_hour=price.usd_per_gpu_hour, provider=price.provider, offer=price.offer, tier=price.tier,
                    as_of=price.as_of.isoformat(), basis=price.basis, source=price.source)


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
        max_ttft_s=t.max_ttft_s,
        max_tpot_s=t.max_tpot_s,
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
        d = ev.deployment
        tco, acquired = _plan_tco(c, p.objective)
        costs = token_costs(ev, tco if tco is not None else c.cost_usd_per_hour, c.replicas, c.gpus)
        hc, own = c.shape.costs, p.ownership
        plan = PlanOut(
            gpu=d.device.name,
            gpu_display_name=d.device.display_name,
            platform=d.platform.name,
            tp=d.tp,
            pp=d.pp,
            replicas=c.replicas,
            gpus=c.gpus,
            gpus_owned_used=c.gpus - c.rented,
            gpus_rented=c.rented,
            weights=d.weights.name,
            kv_cache=d.kv.name,
            batch_per_replica=c.batch,
            max_batch_memory=c.max_batch_memory,
            max_batch_tpot=c.max_batch_tpot,
            cost_usd_per_hour=round(c.cost_usd_per_hour, 6),
            purchase_usd=round(c.purchase_usd, 2),
            tpot_s=ev.decode.tpot_s,
            ttft_s=ev.ttft_s,
            memory_needed_bytes=ev.memory.needed_bytes,
            memory_usable_bytes=ev.memory.usable_bytes,
            engine=d.engine.name if d.engine else "vllm",
            kv_capacity_tokens=ev.memory.kv_capacity_tokens,
            kv_capacity_blocks=ev.memory.kv_capacity_blocks,
            max_concurrency=round(ev.memory.max_concurrency, 4),
            tokens_per_s=ev.decode.tokens_per_s * c.replicas,
            price=_price_out(d.device.price) if c.rented and d.device.price and acquired == "rented" else None,
            tco_usd_per_hour=None if tco is None else round(tco, 6),
            acquired_by=acquired,
            ownership=OwnershipOut(
                power_usd_per_gpu_hour=None if hc.power_usd is None else round(hc.power_usd, 6),
                hosting_usd_per_gpu_hour=None if hc.hosting_usd is None else round(hc.hosting_usd, 6),
                capital_usd_per_gpu_hour=None if hc.capital_usd is None else round(hc.capital_usd, 6),
                life_years=own.life_years, pue=own.pue, usd_per_kwh=own.usd_per_kwh, utilisation=own.utilisation,
                hosting_usd_per_kw_month=own.hosting_usd_per_kw_month),
            usd_per_million_input_tokens=round(costs.usd_per_million_input_tokens, 6),
            usd_per_million_output_tokens=round(costs.usd_per_million_output_tokens, 6),
            output_tokens_per_joule=None if costs.output_tokens_per_joule is None else round(costs.output_tokens_per_joule, 6),
            batch_capped_by=r.batch_capped_by,
            replicas_forced_by=r.replicas_forced_by,
        )
    return SolveOut(
        spec=spec,
        status=r.solution.status,
        proven_optimal=r.solution.proven_optimal,
        objective=p.objective,
        objective_value=objective_value(p, c) if c is not None else None,
        plan=plan,
        constraints=[ConstraintOut(**vars(x)) for x in r.constraints],
        binding_targets=r.binding_targets,
        gpu_forced_by=r.gpu_forced_by,
        sensitivity=[SensitivityOut(**vars(x)) for x in r.sensitivity],
        better_weights=[QualityOut(**vars(x)) for x in r.better_weights],
        runners_up=[RunnerUpOut(**vars(x)) for x in r.runners_up],
        conflict=r.conflict,
        more_conflicts=r.more_conflicts,
        tight_targets=r.tight_targets,
        explained=r.explained,
        relaxations=[RelaxationOut(**vars(x)) for x in r.relaxations],
        excluded=dict(sorted(p.excluded.items())),
        excluded_shapes={dev: [ExcludedShapesOut(shapes=e.shapes, reason=e.reason, kind=e.kind, count=e.count) for e in items]
                         for dev, items in by_device(exclusions(p)).items()},
        shapes_searched=len(p.shapes),
        devices_searched=len(p.devices),
    )


def to_json(r: SolveResult) -> str:
    return to_output(r).model_dump_json(indent=2)


def result_json_schema() -> dict:
    return SolveOut.model_json_schema()


# --------------------------------------------------------------------------- text and Markdown


def _objective_text(objective: str, value: float | None) -> str:
    if value is None:
        return "—"
    return {
        "min_cost": f"${value:,.2f}/h",
        "min_gpus": f"{value:,.0f} GPUs",
        "min_purchase": f"${value:,.0f}",
        "min_tpot": f"{value * 1e3:,.1f} ms",
        "min_tco": f"${value:,.2f}/h TCO",
    }[objective]


def _delta_text(objective: str, delta: float | None) -> str:
    if delta is None:
        return "—"
    return ("+" if delta >= 0 else "−") + _objective_text(objective, abs(delta))


def _value_text(target: str, value: float | None) -> str:
    if value is None:
        return "—"
    if target in ("max_tpot", "max_ttft"):
        return fmt_seconds(value)
    if target == "max_usd_per_hour":
        return f"${value:,.2f}/h"
    if target == "max_purchase_usd":
        return f"${value:,.0f}"
    return f"{value:,.0f}"


def _constraint_cells(row) -> tuple[str, str, str]:
    if row.unit == "bytes":
        return f"{row.value / GB:,.2f} GB", f"{row.limit / GB:,.2f} GB", f"{row.slack / GB:,.2f} GB"
    if row.unit == "s":
        lim = fmt_seconds(row.limit) if row.limit is not None else "no target"
        slack = fmt_seconds(row.slack) if row.slack is not None else "—"
        if row.slack is not None and row.slack < 0:
            slack = "−" + fmt_seconds(-row.slack)
        return fmt_seconds(row.value), lim, slack
    if row.unit == "usd_per_hour":
        return f"${row.value:,.2f}/h", f"${row.limit:,.2f}/h", f"${row.slack:,.2f}/h"
    if row.unit == "usd":
        return f"${row.value:,.0f}", f"${row.limit:,.0f}", f"${row.slack:,.0f}"
    return f"{row.value:,.0f}", f"{row.limit:,.0f}", f"{row.slack:,.0f}"


def _table(headers: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        return out
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    return ["  " + fmt.format(*headers).rstrip()] + ["  " + fmt.format(*r).rstrip() for r in rows]


def render(r: SolveResult, markdown: bool = False) -> str:
    o = to_output(r)
    p = r.problem
    s = o.spec
    h = (lambda x: f"## {x}") if markdown else (lambda x: x)
    lines: list[str] = []
    targets = ", ".join(
        x for x in (
            f"TTFT ≤ {fmt_seconds(s.max_ttft_s)}" if s.max_ttft_s else "",
            f"TPOT ≤ {fmt_seconds(s.max_tpot_s)}" if s.max_tpot_s else "",
        ) if x
    ) or "no latency targets"
    title = (
        f"plan-opt solve · {s.model} · {s.users:,} users × {s.context_tokens:,}-token context "
        f"(prompt {s.prompt_tokens:,}) · {targets} · objective: {OBJECTIVES[s.objective]}"
    )
    lines.append(f"# {title}" if markdown else title)
    budgets = [f"${s.max_usd_per_hour:,.2f}/h" if s.max_usd_per_hour else "", f"${s.max_purchase_usd:,.0f} to buy" if s.max_purchase_usd else "",
               (f"≤ {s.max_gpus} GPUs" + (" (the default: the cheapest plan needs more; a larger search.max_gpus lifts it)"
                                      if r.gpu_cap_defaulted else "")) if s.max_gpus else ""]
    budgets = [b for b in budgets if b]
    if budgets:
        lines.append("budget: " + "; ".join(budgets))
    if s.pricing:
        lines.append(f"prices: {s.pricing} (catalogs/prices.yaml)")
    if s.inventory:
        lines.append("owned (free, limited): " + ", ".join(f"{n} × {k}" for k, n in s.inventory.items()))
    status = {"optimal": "optimal (proven by CP-SAT)", "feasible": "feasible, not proven optimal (time limit)",
              "infeasible": "no plan exists", "unknown": "unknown (time limit before any plan)"}[o.status]
    lines.append(f"searched {o.shapes_searched:,} shapes on {o.devices_searched} devices: {status}")
    lines.append("")

    if o.plan:
        pl = o.plan
        split = f"TP {pl.tp}" + (f" × PP {pl.pp}" if pl.pp > 1 else "")
        own = f" ({pl.gpus_owned_used} owned, {pl.gpus_rented} rented)" if pl.gpus_owned_used else ""
        lines.append(h("Plan"))
        lines.append(
            f"{pl.replicas} × {pl.gpu_display_name}, {split}, weights {pl.weights}, KV cache {pl.kv_cache} — "
            f"{pl.gpus} GPU{'s' if pl.gpus != 1 else ''}{own}, ${pl.cost_usd_per_hour:,.2f}/hour"
            + (f", ${pl.purchase_usd:,.0f} to buy" if p.max_purchase_usd or p.objective == "min_purchase" else "")
        )
        lines.append(
            f"{pl.batch_per_replica:,} users per replica on {pl.platform}; TPOT {fmt_seconds(pl.tpot_s)}, "
            f"TTFT {fmt_seconds(pl.ttft_s)}, {pl.tokens_per_s:,.0f} tokens/s in all"
        )
        lines.append(_tco_line(pl))
        joules = f"; {pl.output_tokens_per_joule:,.2f} output tokens per joule at board power" if pl.output_tokens_per_joule else ""
        lines.append(
            f"${pl.usd_per_million_input_tokens:,.3f} per million input tokens, "
            f"${pl.usd_per_million_output_tokens:,.2f} per million output tokens at steady throughput{joules}"
        )
        if pl.price:
            pr = pl.price
            lines.append(f"priced at {pr.provider}, {pr.offer}, {pr.tier.replace('_', '-')}, ${pr.usd_per_gpu_hour:,.2f}/GPU-hour "
                         f"({pr.as_of}); basis: {pr.basis}")
        lines.append("")
        lines.append(h("Constraints at the plan"))
        rows = []
        for c in o.constraints:
            value, limit, slack = _constraint_cells(c)
            rows.append([c.name, value, limit, slack, c.note])
        lines += _table(["constraint", "value", "limit", "slack", "note"], rows, markdown)
        lines.append("")
        lines.append(h("What decided it"))
        capped = "memory (room beside the weights)" if pl.batch_capped_by == "memory" else "the TPOT target (decode step time)"
        tpot_allows = (
            "no TPOT target" if s.max_tpot_s is None
            else f"TPOT allows {'at least ' if pl.max_batch_tpot >= pl.max_batch_memory else ''}{pl.max_batch_tpot:,}"
        )
        lines.append(f"- batch per replica: capped by {capped}: memory allows {pl.max_batch_memory:,}, {tpot_allows}")
        cap = min(pl.max_batch_memory, pl.max_batch_tpot)
        needed = -(-s.users // cap) if cap else pl.replicas
        if pl.replicas > needed:
            lines.append(f"- replicas: {pl.replicas}, more than the ⌈{s.users:,} / {cap:,}⌉ = {needed} that hold the users: chosen for the objective ({OBJECTIVES[s.objective]})")
        elif pl.replicas > 1:
            lines.append(f"- replicas: ⌈{s.users:,} users / {cap:,} per replica⌉ = {pl.replicas}, forced by {pl.replicas_forced_by}")
        if o.binding_targets:
            lines.append(f"- targets that bind (relaxing them lowers the optimum): {', '.join(o.binding_targets)}")
        elif o.explained:
            lines.append("- no target binds: relaxing any by 50 % leaves the optimum unchanged")
        if o.tight_targets:
            lines.append(f"- little headroom: tightening {', '.join(o.tight_targets)} by 10 % changes the plan")
        if o.explained:
            lines.append(_quality_line(pl.weights, o))
        cheaper_blocked = [ru for ru in o.runners_up if ru.plan is None and not ru.reason.startswith(NOT_PRICED)]
        if cheaper_blocked:
            lines.append("- other GPUs ruled out: " + "; ".join(f"{ru.device}: {ru.reason}" for ru in cheaper_blocked[:6]))
        if o.sensitivity:
            lines.append("")
            lines.append(h("The price of each target (re-solved)"))
            rows = [[x.target, x.change, _value_text(x.target, x.value), x.plan or "no plan",
                     _objective_text(o.objective, x.objective), _delta_text(o.objective, x.delta)] for x in o.sensitivity]
            lines += _table(["target", "change", "value", "plan", "objective", "Δ"], rows, markdown)
    else:
        lines.append(h("No plan"))
        if not o.explained:
            lines.append("No plan meets the spec. Run without --no-explain to see which targets conflict and how far each must move.")
        elif len(o.conflict) == 1:
            t = o.conflict[0]
            lines.append(f"No plan meets {t} ({LABELS[t]}), whatever the other targets.")
        elif o.conflict:
            lines.append(
                "These targets cannot hold together (a minimal set: drop any one and the others can): "
                + ", ".join(f"{t} ({LABELS[t]})" for t in o.conflict)
            )
        elif not o.shapes_searched and o.excluded:
            lines.append("Every searched device was left out before any physics (no price on this basis, or none to buy): "
                         "see each device below.")
        else:
            lines.append("No searched device can run this model for even one user at any allowed split: see each device below.")
        for more in o.more_conflicts:
            lines.append("Another conflict among the remaining targets: " + ", ".join(more))
        if o.relaxations:
            lines.append("")
            lines.append(h("Nearest feasible relaxation (the other targets held)"))
            rows = [[x.target, _value_text(x.target, x.current), x.note, x.plan or "—"] for x in o.relaxations]
            lines += _table(["target", "asked", "nearest", "plan"], rows, markdown)

    if o.runners_up:
        lines.append("")
        lines.append(h("Runners-up (best plan on each other GPU)" if o.plan else "Each GPU searched"))
        rows = [[ru.device, ru.plan or "—", _objective_text(o.objective, ru.objective), _delta_text(o.objective, ru.delta),
                 "" if ru.plan else ru.reason] for ru in o.runners_up]
        lines += _table(["gpu", "plan", "objective", "Δ", "why not"], rows, markdown)
    if o.excluded_shapes:
        lines.append("")
        lines.append(h("Left out of the search (the spec allows them; they cannot run)"))
        for dev, items in o.excluded_shapes.items():
            texts = [exclusion_line(e) for e in items]
            lines += [f"- {dev}: {texts[0]}"] if len(texts) == 1 else [f"- {dev}:"] + [f"  - {t}" for t in texts]
    return "\n".join(lines) + "\n"
