"""Render Pareto frontiers: tables (text, Markdown), JSON, and a picture.

The picture puts cost on a log axis against each traded quantity, draws the
frontier as a staircase, labels its points with their hardware, and shows every
other shape's best plan as faint grey dots, so the gap a frontier point opens over
the alternatives is visible at a glance. The knee is a star; where the cost cap cut
the frontier, a dashed line, with the first point left out as a hollow circle.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from solver.optimise.clock import WORK_FACTOR
from solver.optimise.pareto import KNEE_MIN_DEPTH, Frontier, ParetoPoint
from solver.report import strict_json
from solver.traffic.verify import SEEDS
from solver.units import fmt_seconds

if TYPE_CHECKING:
    from solver.optimise.candidate import Candidate

KNEE_RULE = "farthest below the chord between the frontier's ends, log cost against log metric, both normalised to [0, 1]"

TITLES = {
    "tpot": ("TPOT (time per output token)", "ms"),
    "ttft": ("TTFT (time to first token)", "ms"),
    "users": ("users served", "users"),
    "rate": ("requests served", "requests/s"),
}
COUNTS = ("users", "rate")
"""Axes whose metric is served (more is better, drawn on a linear scale), not a latency."""


def _value(axis: str, v: float) -> str:
    if axis == "rate":
        return f"{v:,.3g} requests/s"
    return f"{v:,.0f}" if axis == "users" else fmt_seconds(v)


def _point_costs(c: Candidate) -> dict[str, float | str | None]:
    """What a frontier point costs beyond $/hour: its TCO (owned GPUs at power and
    hosting, the rest rented), the offer it is priced at, and a million output tokens at
    steady throughput (a sequence's share of the decode step)."""
    price = c.shape.device.price
    tco = c.acquisition("rent")[0]
    dec = c.physics.decode
    assert dec is not None, "a candidate is built only on a shape with a decode step"
    step = dec.decode_only_s(c.batch)
    per_replica = (tco if math.isfinite(tco) else c.cost_usd_per_hour) / 3600 / max(1, c.replicas)
    return {
        "tco_usd_per_hour": round(tco, 6) if math.isfinite(tco) else None,
        "usd_per_million_output_tokens": round(per_replica * step / c.batch * 1e6, 6),
        "priced_at": f"{price.provider}, {price.offer}, ${price.usd_per_gpu_hour:,.2f}/GPU-hour ({price.as_of})" if price and c.rented else None,
    }


def _point_dict(p: ParetoPoint, axis: str, knee: bool = False) -> dict[str, object]:
    c = p.candidate
    return {
        **_point_costs(c),
        "cost_usd_per_hour": round(p.cost_usd_per_hour, 6),
        "value": p.value,
        "unit": TITLES[axis][1] if axis in COUNTS else "s",
        "plan": p.label,
        "gpu": c.shape.device.name,
        "tp": c.shape.deployment.tp,
        "pp": c.shape.deployment.pp,
        "replicas": c.replicas,
        "gpus": c.gpus,
        "weights": c.shape.deployment.weights.name,
        "kv_cache": c.shape.deployment.kv.name,
        "batch_per_replica": c.batch,
        "tpot_s": c.tpot_s,
        "ttft_s": c.ttft_s,
        "binds": p.binds,
        "knee": knee,
        **_simulated_dict(p, axis),
    }


def _simulated_dict(p: ParetoPoint, axis: str) -> dict[str, object]:
    """Rate axis: whether the point's plan was simulated at the spec's rate and passed
    (`basis`: simulated, refused by simulation, or screened: priced from the screen alone)."""
    if axis != "rate":
        return {}
    if p.simulated is None:
        return {"basis": "screened", "simulation_misses": None}
    return {"basis": "refused by simulation" if p.simulated else "simulated", "simulation_misses": list(p.simulated)}


def _simulated_text(p: ParetoPoint, axis: str) -> str:
    if axis != "rate":
        return ""
    if p.simulated is None:
        return "screened"
    return f"refused: misses {', '.join(p.simulated)}" if p.simulated else f"passes ({SEEDS} seeds)"


def to_dict(frontiers: dict[str, Frontier]) -> dict:
    """Per axis: the points (the knee flagged), the knee's index, and where the frontier was cut."""
    out = {}
    for axis, f in frontiers.items():
        out[axis] = {
            "points": [_point_dict(p, axis, i == f.knee) for i, p in enumerate(f.points)],
            "knee": f.knee,
            "knee_rule": KNEE_RULE,
            "batching": f.batching,
            "cut": {
                "max_cost_ratio": f.max_cost_ratio if axis not in COUNTS else None,
                "max_cost_usd_per_hour": None if f.max_cost_usd_per_hour is None else round(f.max_cost_usd_per_hour, 6),
                "next_point": None if f.beyond is None else _point_dict(f.beyond, axis),
                "max_gpus": f.max_gpus,
                "max_gpus_is_default": f.max_gpus_default,
                "cut_by_max_gpus": f.gpu_capped,
                "cut_by_time": f.out_of_time,
            },
        }
    return out


def to_json(frontiers: dict[str, Frontier]) -> str:
    """Strict JSON: an unbounded figure is null (report/strict_json.py)."""
    return strict_json.dumps(to_dict(frontiers))


def _cut_lines(axis: str, f: Frontier) -> list[str]:
    """Where the frontier stopped, and what lifts each cap."""
    out = []
    v = _value
    if f.knee is not None:
        k = f.points[f.knee]
        cost_scale = "log cost" if all(p.cost_usd_per_hour > 0 for p in f.points) else "cost (linear: a plan is free)"
        out.append(
            f"knee: ${k.cost_usd_per_hour:,.2f}/h, {v(axis, k.value)}, {k.label} "
            f"(farthest below the chord between the ends, {cost_scale} against log " + (TITLES[axis][1] if axis in COUNTS else axis.upper()) + ")"
        )
    elif len(f.points) >= 3:
        out.append(
            f"no knee: no point lies {KNEE_MIN_DEPTH:g} or more below the chord between the ends (log-log, normalised); "
            "the trade is about even along the frontier"
        )
    if f.beyond is not None:
        # Only the cost cap, which the ratio sets, leaves a next point out.
        assert f.max_cost_usd_per_hour is not None and f.max_cost_ratio is not None
        base = f.max_cost_usd_per_hour / f.max_cost_ratio
        which = "the cheapest plan" if f.points[0].cost_usd_per_hour > 0 else "the cheapest plan that costs anything"
        out.append(
            f"cut at ${f.max_cost_usd_per_hour:,.2f}/h = {f.max_cost_ratio:g} × {which} (${base:,.2f}/h); "
            f"next: ${f.beyond.cost_usd_per_hour:,.2f}/h, {v(axis, f.beyond.value)}, {f.beyond.label} "
            "(pareto.max_cost_ratio lifts it)"
        )
    if f.gpu_capped:
        out.append(
            f"plans of more than {f.max_gpus} GPUs left out ({'the default ' if f.max_gpus_default else ''}search.max_gpus; a larger one lifts it)"
        )
    if f.out_of_time:
        out.append(
            f"stopped after {len(f.points)} points: the command's CP-SAT time ran out "
            f"({WORK_FACTOR:g} × solver.time_limit_s for every frontier together; a larger limit goes further)"
        )
    return out


def render(frontiers: dict[str, Frontier], title: str, markdown: bool = False) -> str:
    lines = [f"# {title}" if markdown else title]
    for axis, f in frontiers.items():
        name, _ = TITLES[axis]
        lines.append("")
        head = f"Cost against {name}: {len(f.points)} Pareto-optimal plan{'s' if len(f.points) != 1 else ''}"
        lines.append(f"## {head}" if markdown else head)
        if not f.points:
            lines.append("no plan meets the other targets")
            continue
        rows = [
            [
                f"${p.cost_usd_per_hour:,.2f}/h",
                _value(axis, p.value),
                f"${_point_costs(p.candidate)['usd_per_million_output_tokens']:,.2f}",
                p.label,
                p.binds,
                *([_simulated_text(p, axis)] if axis == "rate" else []),
                "knee" if i == f.knee else "",
            ]
            for i, p in enumerate(f.points)
        ]
        headers = ["$/hour", name.split(" (")[0], "$/Mtok out", "plan", "what limits it", *(["simulated"] if axis == "rate" else []), ""]
        if markdown:
            lines += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
            lines += ["| " + " | ".join(r) + " |" for r in rows]
        else:
            widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
            fmt = "  " + "  ".join(f"{{:<{w}}}" for w in widths)
            lines.append(fmt.format(*headers).rstrip())
            lines += [fmt.format(*r).rstrip() for r in rows]
        extra = _cut_lines(axis, f)
        if axis == "rate":
            extra.append(
                f"simulated: a point at the spec's rate, on {SEEDS} seeds, held to the targets as solve holds its plan; "
                "'screened': priced from the analytic screen alone (it may need more replicas)"
            )
        if extra:
            lines.append("")
            lines += [f"- {x}" if markdown else f"  {x}" for x in extra]
    return "\n".join(lines) + "\n"


def _short(label: str) -> str:
    """'3 × mi325x TP1 fp8/fp8 (3 GPUs, batch 32)' → '3×mi325x TP1 fp8'."""
    head = label.split(" (")[0]
    reps, rest = head.split(" × ", 1)
    parts = rest.split()
    return f"{reps}×{parts[0]} {parts[1]} {parts[-1].split('/')[0]}"


def plot(frontiers: dict[str, Frontier], title: str) -> Any:
    """The frontiers drawn: the figure, for the command to save (as PNG and SVG);
    matplotlib is checked for before the command starts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # text stays text in the SVG: searchable, and smaller

    axes_names = [a for a in frontiers if frontiers[a].points]
    n = max(1, len(axes_names))
    fig, axs = plt.subplots(1, n, figsize=(6.4 * n, 5.6), squeeze=False)
    for ax, axis in zip(axs[0], axes_names):
        f = frontiers[axis]
        name, unit = TITLES[axis]
        scale = 1e3 if unit == "ms" else 1.0
        if f.others:
            ax.scatter(
                [c for c, _, _ in f.others], [v * scale for _, v, _ in f.others], s=14, color="0.8", zorder=1, label="other options (dominated)"
            )
        pts = sorted(f.points, key=lambda p: p.cost_usd_per_hour)
        xs = [p.cost_usd_per_hour for p in pts]
        ys = [p.value * scale for p in pts]
        where = "post"
        ax.step(xs, ys, where=where, color="tab:blue", lw=1.6, zorder=2)
        ax.scatter(xs, ys, s=36, color="tab:blue", zorder=3, label="Pareto-optimal plans")
        if f.knee_point is not None:
            k = f.knee_point
            ax.scatter(
                [k.cost_usd_per_hour],
                [k.value * scale],
                s=170,
                marker="*",
                color="tab:orange",
                edgecolors="0.2",
                linewidths=0.6,
                zorder=5,
                label=f"knee: {_short(k.label)}",
            )
        if f.beyond is not None:
            ax.axvline(
                f.max_cost_usd_per_hour,
                color="0.45",
                ls="--",
                lw=1.0,
                zorder=1,
                label=f"cut at ${f.max_cost_usd_per_hour:,.2f}/h ({f.max_cost_ratio:g} × cheapest)",
            )
            ax.scatter(
                [f.beyond.cost_usd_per_hour],
                [f.beyond.value * scale],
                s=36,
                facecolors="none",
                edgecolors="tab:blue",
                zorder=3,
                label=f"next point, left out: {_short(f.beyond.label)}",
            )
        # Label a point only where it stands clear of the last label, so text never piles up.
        last = None
        for p in f.points:
            x, y = p.cost_usd_per_hour, p.value * scale
            if last is not None and x > 0 and last[0] > 0:
                dx = abs(math.log10(x) - math.log10(last[0])) if axis not in COUNTS else 1.0
                dy = abs(math.log10(y) - math.log10(last[1])) if axis not in COUNTS and y > 0 and last[1] > 0 else abs(y - last[1]) / max(y, 1)
                if dx < 0.8 and dy < 0.06:
                    continue
            ax.annotate(_short(p.label), (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8, color="0.15", zorder=4)
            last = (x, y)
        free = [x for x in xs if x <= 0]
        if not free and axis not in COUNTS:
            ax.set_xscale("log")
        if axis not in COUNTS:
            ax.set_yscale("log")
        ax.set_xlabel("cost ($/hour, log scale)" if not free and axis not in COUNTS else "cost ($/hour)")
        ax.set_ylabel(f"{name} ({unit}{', log scale' if axis not in COUNTS else ''})")
        ax.set_title(f"cost vs {name.split(' (')[0]}: {len(f.points)} Pareto-optimal plans", fontsize=10)
        ax.grid(True, which="both", color="0.92", lw=0.6)
        ax.legend(loc="upper right" if axis not in COUNTS else "upper left", fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig
