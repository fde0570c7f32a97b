"""Render Pareto frontiers: tables (text, Markdown), JSON, and a picture.

The picture puts cost on a log axis against each traded quantity, draws the
frontier as a staircase, labels its points with their hardware, and shows every
other shape's best plan as faint grey dots, so the gap a frontier point opens over
the alternatives is visible at a glance.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from solver.pareto import Frontier
from solver.units import fmt_seconds

TITLES = {
    "tpot": ("TPOT (time per output token)", "ms"),
    "ttft": ("TTFT (time to first token)", "ms"),
    "users": ("users served", "users"),
}


def _value(axis: str, v: float) -> str:
    return f"{v:,.0f}" if axis == "users" else fmt_seconds(v)


def to_dict(frontiers: dict[str, Frontier]) -> dict:
    out = {}
    for axis, f in frontiers.items():
        out[axis] = [
            {
                "cost_usd_per_hour": round(p.cost_usd_per_hour, 6),
                "value": p.value,
                "unit": "users" if axis == "users" else "s",
                "plan": p.label,
                "gpu": p.candidate.shape.device.name,
                "tp": p.candidate.shape.deployment.tp,
                "pp": p.candidate.shape.deployment.pp,
                "replicas": p.candidate.replicas,
                "gpus": p.candidate.gpus,
                "weights": p.candidate.shape.deployment.weights.name,
                "kv_cache": p.candidate.shape.deployment.kv.name,
                "batch_per_replica": p.candidate.batch,
                "tpot_s": p.candidate.tpot_s,
                "ttft_s": p.candidate.ttft_s,
                "binds": p.binds,
            }
            for p in f.points
        ]
    return out


def to_json(frontiers: dict[str, Frontier]) -> str:
    return json.dumps(to_dict(frontiers), indent=2)


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
        rows = [[f"${p.cost_usd_per_hour:,.2f}/h", _value(axis, p.value), p.label, p.binds] for p in f.points]
        headers = ["$/hour", name.split(" (")[0], "plan", "what limits it"]
        if markdown:
            lines += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
            lines += ["| " + " | ".join(r) + " |" for r in rows]
        else:
            widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
            fmt = "  " + "  ".join("{:<%d}" % w for w in widths)
            lines.append(fmt.format(*headers).rstrip())
            lines += [fmt.format(*r).rstrip() for r in rows]
    return "\n".join(lines) + "\n"


def _short(label: str) -> str:
    """'3 × mi325x TP1 fp8/fp8 (3 GPUs, batch 32)' → '3×mi325x TP1 fp8'."""
    head = label.split(" (")[0]
    reps, rest = head.split(" × ", 1)
    parts = rest.split()
    return f"{reps}×{parts[0]} {parts[1]} {parts[-1].split('/')[0]}"


def plot(frontiers: dict[str, Frontier], title: str, path: Path) -> list[Path]:
    """Write the picture as PNG and SVG (path's stem, both suffixes); return the files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axes_names = [a for a in frontiers if frontiers[a].points]
    n = max(1, len(axes_names))
    fig, axs = plt.subplots(1, n, figsize=(6.4 * n, 5.6), squeeze=False)
    for ax, axis in zip(axs[0], axes_names):
        f = frontiers[axis]
        name, unit = TITLES[axis]
        scale = 1e3 if unit == "ms" else 1.0
        if f.others:
            ax.scatter([c for c, _, _ in f.others], [v * scale for _, v, _ in f.others], s=14, color="0.8", zorder=1,
                       label="other options (dominated)")
        pts = sorted(f.points, key=lambda p: p.cost_usd_per_hour)
        xs = [p.cost_usd_per_hour for p in pts]
        ys = [p.value * scale for p in pts]
        where = "post"
        ax.step(xs, ys, where=where, color="tab:blue", lw=1.6, zorder=2)
        ax.scatter(xs, ys, s=36, color="tab:blue", zorder=3, label="Pareto-optimal plans")
        # Label a point only where it stands clear of the last label, so text never piles up.
        last = None
        for p in f.points:
            x, y = p.cost_usd_per_hour, p.value * scale
            if last is not None and x > 0 and last[0] > 0:
                dx = abs(math.log10(x) - math.log10(last[0])) if axis != "users" else 1.0
                dy = abs(math.log10(y) - math.log10(last[1])) if axis != "users" and y > 0 and last[1] > 0 else abs(y - last[1]) / max(y, 1)
                if dx < 0.8 and dy < 0.06:
                    continue
            ax.annotate(_short(p.label), (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8, color="0.15", zorder=4)
            last = (x, y)
        free = [x for x in xs if x <= 0]
        if not free and axis != "users":
            ax.set_xscale("log")
        if axis != "users":
            ax.set_yscale("log")
        ax.set_xlabel("cost ($/hour, log scale)" if not free and axis != "users" else "cost ($/hour)")
        ax.set_ylabel(f"{name} ({unit}{', log scale' if axis != 'users' else ''})")
        ax.set_title(f"cost vs {name.split(' (')[0]}: {len(f.points)} Pareto-optimal plans", fontsize=10)
        ax.grid(True, which="both", color="0.92", lw=0.6)
        ax.legend(loc="upper right" if axis != "users" else "upper left", fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    path = Path(path)
    files = []
    for suffix in (".png", ".svg"):
        out = path.with_suffix(suffix)
        fig.savefig(out, dpi=130)
        files.append(out)
    plt.close(fig)
    return files
