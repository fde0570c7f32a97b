"""`plan-opt simulate`'s report: each target's percentile against its limit, the
distributions, the replicas' load, and a plot of the latency CDFs and the queue."""

from __future__ import annotations

from typing import Any

from solver.report.batching import batching_line
from solver.traffic.simulate import SimResult
from solver.traffic.verify import Check, Settings
from solver.units import fmt_seconds

PERCENTILES = (50.0, 90.0, 95.0, 99.0)
METRICS = (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("e2e_s", "end to end"))


def _values(sim: SimResult, metric: str) -> list[float]:
    return sorted(v for r in sim.results if (v := getattr(r, metric)) is not None)


def to_dict(check: Check, plan: str, settings: Settings) -> dict:
    sim, t = check.sim, check.targets
    dist = {}
    for metric, _ in METRICS:
        vals = _values(sim, metric)
        dist[metric] = {f"p{p:g}": (sim.percentile(metric, p) if vals else None) for p in PERCENTILES}
    targets = []
    for name, limit, pct, got in (
        ("max_ttft", t.max_ttft_s, t.ttft_percentile, check.ttft_q_s),
        ("max_tpot", t.max_tpot_s, t.tpot_percentile, check.tpot_q_s),
        ("max_e2e", t.max_e2e_s, t.e2e_percentile, check.e2e_q_s),
    ):
        if limit is not None:
            b = next((x for x in check.bounds if x.target == name), None)
            targets.append(
                {
                    "target": name,
                    "percentile": pct,
                    "limit_s": limit,
                    "simulated_s": got,
                    "met": name not in check.failing,
                    "per_seed_s": list(b.per_seed) if b else [got],
                    "bound_s": b.bound if b else None,
                    "margin_s": b.margin if b else None,
                }
            )
    return {
        "plan": plan,
        "requests": len(sim.results) + len(sim.rejected),
        "seed": settings.seed,
        "seeds": list(check.seeds) or [settings.seed],
        "routing": settings.routing,
        "batching": "continuous",
        "requests_per_s": check.requests_per_s,
        "ok": check.ok,
        "failing": check.failing,
        "targets": targets,
        "goodput": check.goodput,
        "percentiles": dist,
        "duration_s": sim.duration_s,
        "utilisation": min(1.0, sim.utilisation),
        "throughput_tokens_per_s": sim.throughput_tokens_per_s,
        "mean_in_system": sim.mean_in_system,
        "replicas": [
            {"busy_s": x.busy_s, "iterations": x.iterations, "preemptions": x.preemptions, "max_queue": x.max_queue, "mean_queue": x.mean_queue}
            for x in sim.replicas
        ],
        "rejected": len(sim.rejected),
    }


def render(check: Check, plan: str, settings: Settings, model: str) -> str:
    sim, d = check.sim, to_dict(check, plan, settings)
    seeds = d["seeds"]
    verdict = "every target met" if check.ok else "misses " + ", ".join(check.failing)
    if check.bounds:
        run = f"{seeds[0]}–{seeds[-1]}" if seeds[-1] > seeds[0] else ", ".join(map(str, seeds))  # they wrap at 2^32
        verdict += f" by its 95 % bound over seeds {run}"
    elif len(seeds) > 1:
        verdict += f" on seed {seeds[-1]} (so its bound over {len(seeds)}+ seeds misses too; the rest not run)"
    lines = [
        f"plan-opt simulate · {model} · {check.requests_per_s:,.4g} requests/s on {plan}",
        f"{d['requests']:,} requests (seed {settings.seed}, {settings.routing.replace('_', '-')}), {sim.duration_s:,.0f} s of traffic: {verdict}",
        batching_line("continuous", None, traffic=True),
        "",
    ]
    if d["targets"]:
        several = bool(check.bounds)
        extra = f" {'mean':>10} {'95% bound':>10} {'margin':>10}" if several else ""
        lines.append(f"  {'target':<16} {'limit':>9} {'seed ' + str(settings.seed):>10}{extra}")
        for x in d["targets"]:
            name = {"max_ttft": "TTFT", "max_tpot": "TPOT", "max_e2e": "end to end"}[x["target"]]
            mark = "" if x["met"] else "  ← missed"
            more = ""
            if several and x["bound_s"] is not None:
                mean = sum(x["per_seed_s"]) / len(x["per_seed_s"])
                sign = "+" if x["margin_s"] >= 0 else "−"
                more = f" {fmt_seconds(mean):>10} {fmt_seconds(x['bound_s']):>10} {sign + fmt_seconds(abs(x['margin_s'])):>10}"
            lines.append(
                f"  {name + ' P' + format(x['percentile'], 'g'):<16} {fmt_seconds(x['limit_s']):>9} {fmt_seconds(x['simulated_s']):>10}{more}{mark}"
            )
        if several:
            lines.append("  (the bound: one-sided 95 % for another seed's percentile, from the seeds' mean and spread; it must meet the limit)")
        lines.append(f"  goodput (every target at once): {check.goodput:.1%}")
        lines.append("")
    lines.append(f"  {'':<12}" + "".join(f"{'P' + format(p, 'g'):>11}" for p in PERCENTILES))
    for metric, name in METRICS:
        row = d["percentiles"][metric]
        lines.append(f"  {name:<12}" + "".join(f"{'—' if v is None else fmt_seconds(v):>11}" for v in row.values()))
    lines.append("")
    lines.append(
        f"busy {min(1.0, sim.utilisation):.0%} of the time, {sim.mean_in_system:,.1f} requests in the system on average, "
        f"{sim.throughput_tokens_per_s:,.0f} output tokens/s"
    )
    for i, x in enumerate(sim.replicas):
        lines.append(
            f"  replica {i}: {x.iterations:,} iterations, queue {x.mean_queue:,.2f} on average (at most {x.max_queue:,}), {x.preemptions:,} preemptions"
        )
        if i == 7 and len(sim.replicas) > 9:
            lines.append(f"  … {len(sim.replicas) - 8:,} more replicas (--format json lists them)")
            break
    if sim.rejected:
        lines.append(f"{len(sim.rejected):,} requests are longer than a replica's KV cache and were never served")
    return "\n".join(lines) + "\n"


def plot(check: Check, plan: str) -> Any:
    """Latency CDFs (TTFT, TPOT) and the first replica's queue over time: the figure,
    for the command to save (matplotlib is checked for before the command starts)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sim = check.sim
    fig, axs = plt.subplots(1, 3, figsize=(16, 4.6))
    for ax, (metric, name) in zip(axs[:2], METRICS[:2]):
        vals = _values(sim, metric)
        if vals:
            n = len(vals)
            ax.step([v * 1e3 for v in vals], [(i + 1) / n for i in range(n)], where="post", color="tab:blue")
        limit = check.targets.max_ttft_s if metric == "ttft_s" else check.targets.max_tpot_s
        if limit is not None:
            ax.axvline(limit * 1e3, color="tab:red", ls="--", lw=1, label="target")
            ax.legend(loc="lower right")
        ax.set_xlabel(f"{name} (ms)")
        ax.set_ylabel("share of requests")
        ax.set_title(f"{name}: cumulative distribution")
        ax.grid(alpha=0.3)
    if sim.replicas:
        tl = sim.replicas[0].queue_timeline
        axs[2].step([t for t, _ in tl], [q for _, q in tl], where="post", color="tab:green")
    axs[2].set_xlabel("time (s)")
    axs[2].set_ylabel("requests waiting")
    axs[2].set_title("replica 0: queue over time")
    axs[2].grid(alpha=0.3)
    fig.suptitle(f"{plan} · {check.requests_per_s:,.4g} requests/s")
    fig.tight_layout()
    return fig
