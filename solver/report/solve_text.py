"""A SolveResult for people: the terminal report and its Markdown twin."""

from __future__ import annotations

from solver.catalog import TIERS
from solver.explain.exclusions import line as exclusion_line
from solver.explain.records import SolveResult
from solver.optimise.targets import LABELS, TARGETS
from solver.report.batching import batching_line
from solver.report.headroom import headroom_lines
from solver.report.mixed_json import mixed_lines
from solver.report.solve_json import ConstraintOut, PlanOut, SolveOut, to_output
from solver.report.traffic_text import BINDING, targets_text, traffic_lines, workload_text
from solver.spec.solve_spec import OBJECTIVES
from solver.units import GB, fmt_bytes, fmt_seconds

NOT_PRICED = ("no purchase", "cannot run", *(f"no {t} offer" for t in TIERS))


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
    capital = o.capital_usd_per_gpu_hour
    if pl.gpus_bought and capital is None:  # bought for the other pool: its device has a purchase price, this one not
        parts.append(f"{pl.gpus_bought} bought")
    elif pl.gpus_bought:
        assert capital is not None
        parts.append(
            f"{pl.gpus_bought} bought at ${capital + run:,.2f}/GPU-hour "
            f"(${capital:,.2f} purchase over {o.life_years:g} years + ${run:,.2f} power and hosting)"
        )
    if pl.gpus_rented and pl.acquired_by:
        parts.append(f"{pl.gpus_rented} rented")
    power = "" if o.power_usd_per_gpu_hour is not None else " (no board power in the catalog: power and hosting not counted)"
    return f"total cost of ownership ${pl.tco_usd_per_hour:,.2f}/hour: " + ", ".join(parts) + power


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
    if target == "requests_per_s":  # the users target under traffic (report/solve_json.py)
        return "—" if value is None else f"{value:,.4g}/s"
    return TARGETS[target].text(value)


def _constraint_cells(row: ConstraintOut) -> tuple[str, str, str]:
    if row.unit == "s":
        lim = fmt_seconds(row.limit) if row.limit is not None else "no target"
        slack = fmt_seconds(row.slack) if row.slack is not None else "—"
        if row.slack is not None and row.slack < 0:
            slack = "−" + fmt_seconds(-row.slack)
        return fmt_seconds(row.value), lim, slack
    limit, margin = row.limit, row.slack
    # Only a latency target can be unset: memory, GPUs and a budget row always have their limit.
    assert limit is not None and margin is not None, f"constraint {row.name} has no limit"
    if row.unit == "bytes":
        return f"{row.value / GB:,.2f} GB", f"{limit / GB:,.2f} GB", f"{margin / GB:,.2f} GB"
    if row.unit == "usd_per_hour":
        return f"${row.value:,.2f}/h", f"${limit:,.2f}/h", f"${margin:,.2f}/h"
    if row.unit == "usd":
        return f"${row.value:,.0f}", f"${limit:,.0f}", f"${margin:,.0f}"
    return f"{row.value:,.0f}", f"{limit:,.0f}", f"{margin:,.0f}"


def _table(headers: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        return out
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return ["  " + fmt.format(*headers).rstrip()] + ["  " + fmt.format(*r).rstrip() for r in rows]


def render(r: SolveResult, markdown: bool = False) -> str:
    o = to_output(r)
    p = r.problem
    s = o.spec
    h = (lambda x: f"## {x}") if markdown else (lambda x: x)
    lines: list[str] = []
    targets = (
        ", ".join(
            x
            for x in (
                f"TTFT ≤ {fmt_seconds(s.max_ttft_s)}" if s.max_ttft_s else "",
                f"TPOT ≤ {fmt_seconds(s.max_tpot_s)}" if s.max_tpot_s else "",
            )
            if x
        )
        or "no latency targets"
    )
    if p.workload.traffic is not None:
        title = f"plan-opt solve · {s.model} · {workload_text(p.workload.traffic)} · {targets_text(p.targets)} · objective: {OBJECTIVES[s.objective]}"
    else:
        title = (
            f"plan-opt solve · {s.model} · {s.users:,} users × {s.context_tokens:,}-token context "
            f"(prompt {s.prompt_tokens:,}) · {targets} · objective: {OBJECTIVES[s.objective]}"
        )
    lines.append(f"# {title}" if markdown else title)
    engine = p.shapes[0].deployment.engine if p.shapes else None
    pooled = o.plan is not None and o.plan.prefill_pool is not None
    lines.append(batching_line(s.batching, engine, traffic=p.workload.traffic is not None, disaggregated=pooled))
    if s.engine_release:
        lines.append(f"engine release: {s.engine_release} (catalogs/engine_releases.yaml)")
    budgets = [
        f"${s.max_usd_per_hour:,.2f}/h" if s.max_usd_per_hour else "",
        f"${s.max_purchase_usd:,.0f} to buy" if s.max_purchase_usd else "",
        (f"≤ {s.max_gpus} GPUs" + (" (the default: the cheapest plan needs more; a larger search.max_gpus lifts it)" if r.gpu_cap_defaulted else ""))
        if s.max_gpus
        else "",
    ]
    budgets = [b for b in budgets if b]
    if budgets:
        lines.append("budget: " + "; ".join(budgets))
    if s.pricing:
        lines.append(f"prices: {s.pricing} (catalogs/prices.yaml)")
    if s.inventory:
        lines.append("owned (free, limited): " + ", ".join(f"{n} × {k}" for k, n in s.inventory.items()))
    status = {
        "optimal": "optimal (proven by CP-SAT)",
        "feasible": "feasible, not proven optimal (time limit)",
        "infeasible": "no plan exists",
        "unknown": "unknown (time limit before any plan)",
    }[o.status]
    if o.headroom is not None and o.headroom.cheapest_plan is not None:
        status += f"; the plan is within {o.headroom.tolerance:.0%} of it, chosen for its headroom"
    lines.append(f"searched {o.shapes_searched:,} shapes on {o.devices_searched} devices: {status}")
    lines.append("")

    if o.plan:
        pl = o.plan
        split = (
            f"data-parallel attention × EP {pl.tp}"
            if pl.parallelism == "dp_ep"
            else f"TP {pl.tp} × EP {pl.tp}"
            if pl.parallelism == "tp_ep"
            else f"TP {pl.tp}"
        ) + (f" × PP {pl.pp}" if pl.pp > 1 else "")
        parts = [f"{n} {what}" for n, what in ((pl.gpus_owned_used, "owned"), (pl.gpus_rented, "rented"), (pl.gpus_bought, "bought")) if n]
        own = f" ({', '.join(parts)})" if pl.gpus_owned_used or pl.gpus_bought else ""
        pp_pool = pl.prefill_pool
        lines.append(h("Plan" + (" (disaggregated: a prefill pool and a decode pool)" if pp_pool else "")))
        if pp_pool:
            p_split = (
                f"data-parallel attention × EP {pp_pool.tp}"
                if pp_pool.parallelism == "dp_ep"
                else f"TP {pp_pool.tp}" + (f" × PP {pp_pool.pp}" if pp_pool.pp > 1 else "")
            )
            lines.append(
                f"prefill: {pp_pool.replicas} × {pp_pool.gpu_display_name}, {p_split} — {pp_pool.gpus} GPUs on {pp_pool.platform}, "
                f"{pp_pool.users_per_replica:,} users' prompts per replica"
            )
        lines.append(
            ("decode: " if pp_pool else "")
            + f"{pl.replicas} × {pl.gpu_display_name}, {split}, weights {pl.weights}, KV cache {pl.kv_cache}"
            + (f", speculative decoding ({pl.speculative.draft})" if pl.speculative else "")
            + " — "
            + (f"{pl.replicas * pl.tp * pl.pp} GPUs on {pl.platform}\nin all: " if pp_pool else "")
            + f"{pl.gpus} GPU{'s' if pl.gpus != 1 else ''}{own}, ${pl.cost_usd_per_hour:,.2f}/hour"
            + (f", ${pl.purchase_usd:,.0f} to buy" if p.max_purchase_usd or p.objective == "min_purchase" or pl.gpus_bought else "")
        )
        if o.traffic:
            lines.append(f"{pl.batch_per_replica:,} requests per replica on average on {pl.platform}")
        else:
            lines.append(
                f"{pl.batch_per_replica:,} users per {'decode ' if pp_pool else ''}replica on {pl.platform}; TPOT {fmt_seconds(pl.tpot_s)}, "
                f"TTFT {fmt_seconds(pl.ttft_s)}, {pl.tokens_per_s:,.0f} tokens/s in all"
            )
        if pl.tpot_band_s and pl.ttft_band_s:
            lines.append(
                f"how sure: TPOT {fmt_seconds(pl.tpot_band_s[0])} – {fmt_seconds(pl.tpot_band_s[1])}, "
                f"TTFT {fmt_seconds(pl.ttft_band_s[0])} – {fmt_seconds(pl.ttft_band_s[1])} ({pl.band_from})"
            )
            if pp_pool:
                lines.append(
                    f"each prompt's KV cache ({pp_pool.kv_transfer_bytes / GB:,.2f} GB) goes from its prefill replica to a decode replica over "
                    f"{pp_pool.kv_link} ({pp_pool.kv_link_bandwidth_bytes_per_s / GB:,.0f} GB/s per GPU) in {fmt_seconds(pp_pool.kv_transfer_s)}"
                )
        lines.append(_tco_line(pl))
        joules = f"; {pl.output_tokens_per_joule:,.2f} output tokens per joule at board power" if pl.output_tokens_per_joule else ""
        if not o.traffic:  # under traffic the cost per token is the rate's (below)
            lines.append(
                f"${pl.usd_per_million_input_tokens:,.3f} per million input tokens, "
                f"${pl.usd_per_million_output_tokens:,.2f} per million output tokens at steady throughput{joules}"
            )
        if pl.price:
            pr = pl.price
            lines.append(
                f"priced at {pr.provider}, {pr.offer}, {pr.tier.replace('_', '-')}, ${pr.usd_per_gpu_hour:,.2f}/GPU-hour "
                f"({pr.as_of}); basis: {pr.basis}"
            )
        if o.traffic:
            lines.append("")
            lines.append(h("Under traffic"))
            lines += traffic_lines(o.traffic, pl.replicas)
        if o.mixed_plan:
            lines.append("")
            lines += mixed_lines(o.mixed_plan, one_plan=True)
        lines.append("")
        lines.append(h("Constraints at the plan"))
        rows = []
        for c in o.constraints:
            value, limit, slack = _constraint_cells(c)
            rows.append([c.name, value, limit, slack, c.note])
        lines += _table(["constraint", "value", "limit", "slack", "note"], rows, markdown)
        lines.append("")
        lines.append(h("What decided it"))
        if o.traffic:
            tr = o.traffic
            lines.append(
                f"- replicas: ⌈{tr.requests_per_s:,.4g} requests/s / {tr.sustainable_requests_per_s_per_replica:,.3g} per replica⌉ "
                f"= {-(-tr.requests_per_s // tr.sustainable_requests_per_s_per_replica):.0f} by the screen, stopped by "
                f"{BINDING.get(tr.binding, tr.binding)}" + (f"; {pl.replicas} after simulation" if tr.refused_by_simulation else "")
            )
        else:
            capped = {
                "memory": "memory (room beside the weights)",
                "max_ttft": "the TTFT target (the users' prompts queue behind each other)",
            }.get(pl.batch_capped_by, "the TPOT target (decode step time)")
            tpot_allows = (
                "no TPOT target"
                if s.max_tpot_s is None
                else f"TPOT allows {'at least ' if pl.max_batch_tpot >= pl.max_batch_memory else ''}{pl.max_batch_tpot:,}"
            )
            if pl.max_batch_ttft is not None:
                tpot_allows += f", TTFT allows {'at least ' if pl.max_batch_ttft >= pl.max_batch_memory else ''}{pl.max_batch_ttft:,}"
            cap = pl.capacity_per_replica
            if pl.replicas == 1 and s.users < cap:  # nothing capped it: every user fits one replica
                lines.append(f"- batch per replica: all {s.users:,} users on one replica (memory allows {pl.max_batch_memory:,}, {tpot_allows})")
            else:
                lines.append(f"- batch per replica: capped by {capped}: memory allows {pl.max_batch_memory:,}, {tpot_allows}")
            needed = -(-s.users // cap) if cap else pl.replicas
            if pl.replicas > needed:
                lines.append(
                    f"- replicas: {pl.replicas}, more than the ⌈{s.users:,} / {cap:,}⌉ = {needed} that hold the users: chosen for the objective ({OBJECTIVES[s.objective]})"
                )
            elif pl.replicas > 1:
                lines.append(f"- replicas: ⌈{s.users:,} users / {cap:,} per replica⌉ = {pl.replicas}, forced by {pl.replicas_forced_by}")
        lines += headroom_lines(o.headroom, s.objective, o.objective_value)
        if pp_pool:
            lines.append(
                f"- prefill pool: ⌈{s.users:,} users / {pp_pool.users_per_replica:,} per replica⌉ = {pp_pool.replicas}: each replica's "
                f"prompts queue {fmt_seconds(pp_pool.queued_s)} before their {fmt_seconds(pp_pool.prompt_s)} on it"
                + (", within the TTFT target" if s.max_ttft_s else ", the most it keeps up with")
            )
        if o.serving:
            lines.append(f"- serving: {o.serving.reason}")
        if o.cross_vendor_kv:
            lines.append(f"- prefill/decode vendors: {o.cross_vendor_kv.note}")
        if pl.speculative:
            sp = pl.speculative
            lines.append(
                f"- speculative decoding: {sp.method} ({sp.draft}), {sp.num_tokens} drafted at α {'/'.join(f'{a:g}' for a in sp.acceptance_by_position)} by position → "
                f"{sp.tokens_per_step:.2f} tokens per step: TPOT {fmt_seconds(pl.tpot_s)}, {fmt_seconds(sp.tpot_without_s)} one token a step"
            )
        if pl.prefix_cached_tokens:
            lines.append(
                f"- prefix cache: {pl.prefix_cached_tokens:,} of each prompt's {s.prompt_tokens:,} tokens come from it (not computed; "
                f"idle TTFT {fmt_seconds(pl.idle_ttft_s)}); the shared prefix's KV, {fmt_bytes(pl.shared_kv_bytes).strip()} per GPU, is held once per replica"
            )
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
            rows = [
                [
                    x.target,
                    x.change,
                    _value_text(x.target, x.value),
                    x.plan or "no plan",
                    _objective_text(o.objective, x.objective),
                    _delta_text(o.objective, x.delta),
                ]
                for x in o.sensitivity
            ]
            lines += _table(["target", "change", "value", "plan", "objective", "Δ"], rows, markdown)
    else:
        lines.append(h("No plan"))
        if o.mixed_plan:
            lines += mixed_lines(o.mixed_plan, one_plan=False)
            lines.append("")
            lines.append("On one shape (what follows is for plans of one shape only):")
        if o.traffic_unmet:
            lines.append(f"No plan passes its simulation: {o.traffic_unmet}.")
            lines += [f"- refused: {x}" for x in o.refused_by_simulation]
            lines.append("Loosen a percentile target, lower the rate, or check a plan with `plan-opt simulate`.")
        elif not o.explained:
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
            lines.append("Every searched device was left out before any physics (no price on this basis, or none to buy): see each device below.")
        elif p.workload.traffic is not None:
            lines.append("No searched shape sustains any request rate within the targets: see each device below.")
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
        rows = [
            [
                ru.device,
                ru.plan or "—",
                _objective_text(o.objective, ru.objective),
                _delta_text(o.objective, ru.delta),
                ru.reason if not ru.plan or "simulat" in ru.reason or ru.reason.startswith("cheaper") else "",
            ]
            for ru in o.runners_up
        ]
        lines += _table(["gpu", "plan", "objective", "Δ", "why not"], rows, markdown)
    if o.excluded_shapes:
        lines.append("")
        lines.append(h("Left out of the search (the spec allows them; they cannot run)"))
        for dev, items in o.excluded_shapes.items():
            texts = [exclusion_line(e) for e in items]
            lines += [f"- {dev}: {texts[0]}"] if len(texts) == 1 else [f"- {dev}:"] + [f"  - {t}" for t in texts]
    if o.cut_short:
        lines.append("")
        lines.append(f"The time limit ({p.spec.solver.time_limit_s:g} s a solve, 3× that for the command) cut short: " + "; ".join(o.cut_short))
    return "\n".join(lines) + "\n"
