"""A sweep's table: one row per scenario — its settings, the plan, its cost, what bound
it, the status — written as CSV (and Parquet), read back to resume, and drawn."""

from __future__ import annotations

import csv
import io
import math
from typing import Any, BinaryIO

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
    from solver.report.solve_json import rent_usd_per_hour

    c = result.solution.candidate
    row: dict[str, Any] = dict.fromkeys(PLAN_COLUMNS, "")
    row["status"] = result.solution.status
    row["batching"] = result.problem.workload.batching
    if c is None:
        row["binding"] = ",".join(result.conflict)
        return row
    d = c.shape.deployment
    tco = c.acquired_as(result.problem.objective)[0]  # as solve reports it (report/solve_json.py)
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
        cost_usd_per_hour=rent_usd_per_hour(c, result.problem.objective),  # as solve reports it
        tco_usd_per_hour="" if math.isinf(tco) else round(tco, 6),
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


MAX_TABLE_BYTES = 512 * 2**20
"""The largest table a sweep resumes from: a million scenarios (the most one sweep
holds) at about 300 bytes a row, with room for long error messages."""
TABLE_KEYS = ("scenario", "id", "status")
"""The columns that make a CSV a sweep's table (and not a file -o would destroy)."""


def read_done(raw: bytes | None, source: str) -> dict[str, dict[str, str]]:
    """Rows already written (by scenario id), to resume a sweep; none if no file or an
    empty one. A file that is not a sweep table is refused, not overwritten."""
    if not raw or not raw.strip():
        return {}
    try:
        reader = csv.DictReader(io.StringIO(raw.decode("utf-8").removeprefix("\ufeff"), newline=""))
        missing = [k for k in TABLE_KEYS if k not in (reader.fieldnames or [])]
        if missing:
            raise InputError(
                "--output",
                source,
                f"holds a file that is not a sweep table (no {', '.join(missing)} column); the sweep would overwrite it: give a new file",
            )
        return {r["id"]: r for r in reader if r.get("id")}
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InputError("--output", source, f"cannot be read to resume: {exc}") from None


def table_csv(header: list[str], rows: list[dict[str, Any]]) -> str:
    """The table as CSV, a row per scenario in scenario order."""
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=header, extrasaction="ignore")
    w.writeheader()
    for r in sorted(rows, key=lambda r: int(r["scenario"])):
        w.writerow(r)
    return buf.getvalue()


def write_parquet(out: BinaryIO, header: list[str], rows: list[dict[str, Any]]) -> None:
    """The table as Parquet into `out` (pyarrow is checked for before the sweep starts)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ordered = sorted(rows, key=lambda r: int(r["scenario"]))
    kinds = {int: pa.int64(), float: pa.float64(), str: pa.string()}
    columns = {}
    for k in header:
        cells = typed_column([r.get(k) for r in ordered])
        kind = FIXED_TYPES.get(k) or next((type(v) for v in cells if v is not None), str)
        columns[k] = pa.array([None if v is None else kind(v) for v in cells], type=kinds[kind])
    pq.write_table(pa.table(columns), out)


# A plan column's type whatever the rows hold, so that every sweep's file has one schema
# (a sweep with no error, or none feasible, wrote those columns as Arrow's null type).
FIXED_TYPES: dict[str, type] = {
    "scenario": int,
    **dict.fromkeys(("tp", "pp", "replicas", "gpus"), int),
    **dict.fromkeys(("cost_usd_per_hour", "tco_usd_per_hour", "tpot_s", "ttft_s"), float),
    **{k: str for k in PLAN_COLUMNS if k not in ("tp", "pp", "replicas", "gpus", "cost_usd_per_hour", "tco_usd_per_hour", "tpot_s", "ttft_s")},
}


def typed_column(values: list[Any]) -> list[Any]:
    """A column's cells in one type, as a reader of the table expects them: whole numbers
    as int, other numbers as float, anything else as text; an empty cell is null. Rows
    read back from the CSV (a resumed sweep) are text and come out as the rows solved."""
    cells = [None if v in ("", None) else v for v in values]
    present = [v for v in cells if v is not None]
    if present and all(_is_int(v) for v in present):
        return [None if v is None else int(v) for v in cells]
    if present and all(_is_number(v) for v in present):
        return [None if v is None else float(v) for v in cells]
    return [None if v is None else str(v) for v in cells]


def _is_int(v: object) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, str) and v.strip().lstrip("-").isdigit())


def _is_number(v: object) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int | float):
        return math.isfinite(v)
    try:
        return math.isfinite(float(str(v)))
    except ValueError:
        return False


def plot(rows: list[dict[str, Any]], axis: str, axes: list[str] | None = None) -> Any:
    """Cost against one axis, a point per scenario that has a plan, one series (a line
    and its legend entry) per setting of the other varied axes: the figure (matplotlib
    is checked for before the sweep starts)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    others = [a for a in (axes or []) if a != axis]
    pts = [(r.get(axis), float(r["cost_usd_per_hour"]), _series(r, others)) for r in rows if r.get("cost_usd_per_hour") not in ("", None)]
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = sorted({str(x) for x, _, _ in pts}, key=_order)
    series = sorted({s for _, _, s in pts})
    for name in series[:MAX_SERIES]:
        mine = sorted(((labels.index(str(x)), y) for x, y, s in pts if s == name))
        ax.plot([x for x, _ in mine], [y for _, y in mine], marker="o", label=name or None)
    if len(series) > MAX_SERIES:
        ax.set_title(f"plan-opt sweep: cost against {axis} (the first {MAX_SERIES} of {len(series)} series)")
    else:
        ax.set_title(f"plan-opt sweep: cost against {axis}")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_xlabel(axis)
    ax.set_ylabel("$/hour")
    if any(series[:MAX_SERIES]):
        ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


MAX_SERIES = 12
"""Series drawn at most (more than this many settings of the other axes would be a blur)."""


def _series(row: dict[str, Any], others: list[str]) -> str:
    return ", ".join(f"{a}={row.get(a)}" for a in others if row.get(a) not in ("", None))


def _order(text: str) -> tuple[int, float, str]:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)
