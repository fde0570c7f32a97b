"""A sweep's table: one row per scenario — its settings, the plan, its cost, what bound
it, the status — written as CSV (and Parquet), read back to resume, and drawn."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from solver.errors import InputError

PLAN_COLUMNS = [
    "status",
    "serving",
    "plan",
    "gpu",
    "tp",
    "pp",
    "parallelism",
    "replicas",
    "gpus",
    "weights",
    "kv_cache",
    "batching",
    "cost_usd_per_hour",
    "tco_usd_per_hour",
    "tpot_s",
    "ttft_s",
    "batch_capped_by",
    "binding",
    "error",
]


def row_of(result: Any) -> dict[str, Any]:
    """A solved scenario's columns (explain/records.SolveResult)."""
    from solver.optimise.scenario import plan_label

    c = result.solution.candidate
    row: dict[str, Any] = dict.fromkeys(PLAN_COLUMNS, "")
    row["status"] = result.solution.status
    row["batching"] = result.problem.workload.batching
    if c is None:
        row["binding"] = ",".join(result.conflict)
        return row
    d = c.shape.deployment
    row.update(
        serving=c.serving,
        plan=plan_label(c),
        gpu=d.device.name,
        tp=d.tp,
        pp=d.pp,
        parallelism=d.parallelism,
        replicas=c.replicas,
        gpus=c.gpus,
        weights=d.weights.name,
        kv_cache=d.kv.name,
        cost_usd_per_hour=round(c.cost_usd_per_hour, 6),
        tco_usd_per_hour="" if math.isinf(c.tco_usd_per_hour) else round(c.tco_usd_per_hour, 6),
        tpot_s=round(c.tpot_s, 9),
        ttft_s=round(c.ttft_s, 9),
        batch_capped_by=c.caps,
        binding=",".join(result.binding_targets) if result.explained else c.caps,
    )
    return row


def error_row(message: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(PLAN_COLUMNS, "")
    row.update(status="bad input", error=message)
    return row


def columns(axes: list[str]) -> list[str]:
    return ["scenario", "id", *axes, *PLAN_COLUMNS]


def read_done(path: Path) -> dict[str, dict[str, str]]:
    """Rows already written (by scenario id), to resume a sweep; none if no file."""
    if not path.exists():
        return {}
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return {r["id"]: r for r in csv.DictReader(f) if r.get("id")}
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError("--output", str(path), f"cannot be read to resume: {exc}") from None


def write_csv(path: Path, header: list[str], rows: list[dict[str, Any]]) -> None:
    """Whole or not at all: into a temporary file beside it, then renamed over it."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
            w.writeheader()
            for r in sorted(rows, key=lambda r: int(r["scenario"])):
                w.writerow(r)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError("--output", str(path), f"cannot be written: {exc.strerror or exc}") from None


def write_parquet(path: Path, header: list[str], rows: list[dict[str, Any]]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("--parquet", str(path), "needs pyarrow: pip install 'plan-opt[sweep]'") from None
    ordered = sorted(rows, key=lambda r: int(r["scenario"]))
    table = pa.table({k: [None if r.get(k) in ("", None) else str(r.get(k)) for r in ordered] for k in header})
    pq.write_table(table, path)


def plot(path: Path, rows: list[dict[str, Any]], axis: str) -> Path:
    """Cost against one axis, a point per scenario that has a plan."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--plot", str(path), "needs matplotlib: pip install 'plan-opt[plot]'") from None
    pts = [(r.get(axis), float(r["cost_usd_per_hour"])) for r in rows if r.get("cost_usd_per_hour") not in ("", None)]
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = sorted({str(x) for x, _ in pts}, key=_order)
    ax.scatter([labels.index(str(x)) for x, _ in pts], [y for _, y in pts])
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_xlabel(axis)
    ax.set_ylabel("$/hour")
    ax.set_title(f"plan-opt sweep: cost against {axis}")
    fig.tight_layout()
    out = path if path.suffix else path.with_suffix(".png")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _order(text: str) -> tuple[int, float, str]:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)
