"""The plan under traffic, as text: the rate per replica and what one sustains, each
target against the screen and the simulation, and the simulated run."""

from __future__ import annotations

from solver.physics.deployment import Targets, Traffic
from solver.report.traffic_json import LengthsOut, PercentilesOut, TrafficOut, lengths_out
from solver.units import fmt_seconds

NAMES = {"max_ttft": "TTFT", "max_tpot": "TPOT", "max_e2e": "end to end"}
BINDING = {
    "ttft": "the TTFT target",
    "tpot": "the TPOT target",
    "e2e": "the end-to-end target",
    "memory": "the KV cache",
    "max_num_seqs": "max_num_seqs",
    "budget": "the token budget (prompt throughput)",
    "decode": "decode throughput",
}


def lengths_text(x: LengthsOut) -> str:
    if x.dist == "fixed":
        return f"{x.mean_tokens:,.0f}"
    if x.dist == "empirical":
        return f"from the lengths file (mean {x.mean_tokens:,.0f}, {x.low_tokens:,} to {x.high_tokens:,})"
    if x.dist == "lognormal" and x.p99_tokens is not None:
        return f"lognormal, mean {x.mean_tokens:,.0f}, P99 {x.p99_tokens:,.0f}"
    return f"{x.dist}, mean {x.mean_tokens:,.0f}"


def workload_text(t: TrafficOut | Traffic) -> str:
    """The rate and the lengths, from the report (a plan) or the workload (no plan)."""
    prompt = t.prompt if isinstance(t, TrafficOut) else lengths_out(t.prompt)
    output = t.output if isinstance(t, TrafficOut) else lengths_out(t.output)
    burst = "" if t.arrival_cv == 1 else f" (gaps cv {t.arrival_cv:g})"
    return f"{t.requests_per_s:,.4g} requests/s{burst}, prompts {lengths_text(prompt)}, outputs {lengths_text(output)}"


def targets_text(t: Targets) -> str:
    parts = [
        f"{name} P{pct:g} ≤ {fmt_seconds(limit)}"
        for name, limit, pct in (
            ("TTFT", t.max_ttft_s, t.ttft_percentile),
            ("TPOT", t.max_tpot_s, t.tpot_percentile),
            ("end to end", t.max_e2e_s, t.e2e_percentile),
        )
        if limit is not None and pct is not None
    ]
    if t.min_goodput is not None:
        parts.append(f"goodput ≥ {t.min_goodput:.1%}")
    return ", ".join(parts) or "no latency targets"


def _pct(p: PercentilesOut) -> str:
    return " / ".join("—" if v is None else fmt_seconds(v) for v in (p.p50, p.p90, p.p99))


def _seeds(seeds: list[int]) -> str:
    return f"{seeds[0]}–{seeds[-1]}" if seeds == list(range(seeds[0], seeds[0] + len(seeds))) else ", ".join(map(str, seeds))


def _signed(seconds: float) -> str:
    return ("+" if seconds >= 0 else "−") + fmt_seconds(abs(seconds))


def traffic_lines(t: TrafficOut, replicas: int) -> list[str]:
    lines = [
        f"{t.requests_per_s:,.4g} requests/s over {replicas} replica{'s' if replicas != 1 else ''} "
        f"({t.requests_per_s_per_replica:,.3g} each); one replica sustains {t.sustainable_requests_per_s_per_replica:,.3g} "
        f"within the targets, stopped by {BINDING.get(t.binding, t.binding)}"
    ]
    if t.targets:
        sim = t.simulated
        several = sim is not None and len(sim.seeds) > 1
        if sim is None:
            head = "simulated"
        elif several:
            head = f"simulated, {len(sim.seeds)} seeds ({_seeds(sim.seeds)}) × {sim.requests:,} requests, {sim.routing.replace('_', '-')}"
        else:
            head = f"simulated ({sim.requests:,} requests, seed {sim.seed}, {sim.routing.replace('_', '-')})"
        lines.append(f"  {'target':<16} {'limit':>9} {'screened':>9}  {head}")
        if several:
            from solver.traffic.verify import PREDICTION  # a simulated plan: its module is loaded already

            lines.append(f"  {'':<16} {'':>9} {'':>9}  {'mean':>9} {'95% bound':>10} {'margin':>10}")
        for x in t.targets:
            name = f"{NAMES.get(x.target, x.target)} P{x.percentile:g}"
            screened = "—" if x.screened_s is None else fmt_seconds(x.screened_s)
            if several and x.bound_s is not None and x.simulated_mean_s is not None and x.margin_s is not None:
                simulated = f"{fmt_seconds(x.simulated_mean_s):>9} {fmt_seconds(x.bound_s):>10} {_signed(x.margin_s):>10}"
            else:
                simulated = "—" if x.simulated_s is None else fmt_seconds(x.simulated_s)
            lines.append(f"  {name:<16} {fmt_seconds(x.limit_s):>9} {screened:>9}  {simulated}")
        if several:
            lines.append(
                f"  (the bound: one-sided 95 % for another seed's percentile, mean + {PREDICTION:.2f} × the seeds' spread; it must meet the limit)"
            )
    if t.simulated:
        s = t.simulated
        first = f" (seed {s.seed})" if len(s.seeds) > 1 else ""
        lines.append(f"simulated{first} P50 / P90 / P99: TTFT {_pct(s.ttft_s)}; TPOT {_pct(s.tpot_s)}; end to end {_pct(s.e2e_s)}")
        lines.append(
            f"  busy {s.utilisation:.0%} of the time, {s.mean_queue:,.2f} waiting on average (at most {s.max_queue:,}), "
            f"{s.preemptions:,} preemptions, goodput {s.goodput:.1%}"
            + (f" (95% bound over the seeds {s.goodput_bound:.1%})" if s.goodput_bound is not None else "")
            + f", {s.throughput_tokens_per_s:,.0f} output tokens/s"
            + (f", {s.rejected:,} requests too long for the KV cache" if s.rejected else "")
        )
    for ref in t.refused_by_simulation:
        lines.append(f"- the screen's {ref.replicas} × {ref.plan} missed {', '.join(ref.missed)} in simulation: more replicas, or another plan")
    lines.append(
        f"${t.usd_per_million_input_tokens_at_load:,.3f} per million input and ${t.usd_per_million_output_tokens_at_load:,.2f} per million "
        f"output tokens at {t.requests_per_s:,.4g} requests/s (${t.usd_per_million_tokens_at_load:,.3f} for both together); "
        f"${t.usd_per_million_input_tokens_at_capacity:,.3f} and ${t.usd_per_million_output_tokens_at_capacity:,.2f} at the replicas' sustainable rate"
    )
    return lines
