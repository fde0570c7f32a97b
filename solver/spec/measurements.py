"""Measurements a user brings to `plan-opt calibrate`: a CSV of runs, or the JSON
`vllm bench serve --save-result` writes. Read at the edge, like a spec: every cell is
checked (a finite number in range, an integer where one is counted, text where a name
goes), and a bad one is refused naming the file, the row and the column."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from solver.errors import InputError, is_pipe

REQUIRED = ("model", "gpu", "tp", "weights", "kv_cache", "batch", "prompt_tokens", "output_tokens")
MEASURES = ("tpot_ms", "ttft_ms")

_N = TypeVar("_N", int, float)

_COLUMNS = {
    "model": "model",
    "hardware.gpu": "gpu",
    "hardware.tp": "tp",
    "hardware.pp": "pp",
    "precision.weights": "weights",
    "precision.kv_cache": "kv_cache",
    "engine": "engine",
}
"""The CSV column a resolve error means, by the input field the column was read into."""


@dataclass(frozen=True)
class Measurement:
    row: int
    """The line of the file it was read from (1 for a vllm bench JSON)."""
    model: str
    gpu: str
    count: int
    tp: int
    pp: int
    weights: str
    kv_cache: str
    batch: int
    prompt_tokens: int
    output_tokens: int
    tpot_s: float | None
    ttft_s: float | None
    engine: str = "vllm"
    source: str = ""
    """The file it was read from, so an unknown name in it is refused at its line."""

    def located(self, exc: InputError) -> InputError:
        """A catalog lookup's error on this row, at its file and line, named by its column."""
        field = exc.field
        for prefix, column in _COLUMNS.items():
            if field == prefix or field.startswith(prefix + ".") or field.startswith(prefix + "["):
                field = column
                break
        return InputError(field, exc.value, exc.allowed, source=self.source or exc.source, line=self.row if self.source else exc.line)


@overload
def _num(
    row: Mapping[str, str | None], key: str, i: int, source: str, kind: type[_N], lo: float = ..., hi: float = ..., optional: Literal[False] = ...
) -> _N: ...


@overload
def _num(
    row: Mapping[str, str | None], key: str, i: int, source: str, kind: type[_N], lo: float = ..., hi: float = ..., *, optional: Literal[True]
) -> _N | None: ...


def _num(
    row: Mapping[str, str | None],
    key: str,
    i: int,
    source: str,
    kind: type[_N],
    lo: float = 0.0,
    hi: float = 1e12,
    optional: bool = False,
) -> _N | None:
    cell = row.get(key)
    raw = (cell if isinstance(cell, str) else "").strip()
    if raw == "":
        if optional:
            return None
        raise InputError(key, None, "missing (a number is required)", source=source, line=i)
    try:
        x = float(raw)
    except ValueError:
        raise InputError(key, shown_cell(raw), "not a number", source=source, line=i) from None
    if not math.isfinite(x) or not lo < x <= hi:
        raise InputError(key, shown_cell(raw), f"must be a number in ({lo:g}, {hi:g}]", source=source, line=i)
    if kind is int:
        if x != int(x):
            raise InputError(key, shown_cell(raw), "must be a whole number", source=source, line=i)
        return kind(int(x))
    return kind(x)


def _name(row: Mapping[str, str | None], key: str, i: int, source: str, default: str | None = None) -> str:
    cell = row.get(key)
    text = (cell if isinstance(cell, str) else "").strip()
    if text:
        return text
    if default is not None:
        return default
    raise InputError(key, None, "missing (a catalog name is required)", source=source, line=i)


def shown_cell(raw: str) -> str:
    """A cell as an error message shows it: printable, and short."""
    text = raw.encode("ascii", "backslashreplace").decode() if not raw.isprintable() else raw
    return text if len(text) <= 60 else text[:57] + "..."


def read_text(path: Path, what: str) -> str:
    if is_pipe(path):
        raise InputError("file", str(path), f"is a pipe or a socket, not {what}")
    try:
        return path.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise InputError("file", str(path), f"is a folder, not {what}") from None
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise InputError(
            f"byte {exc.start + 1:,}", f"0x{exc.object[exc.start]:02x}", f"not UTF-8 text; save it as UTF-8 {what}", source=str(path), line=line
        ) from None
    except OSError as exc:
        raise InputError("file", str(path), f"cannot be read: {exc.strerror or exc}") from None


def read_csv(path: str | Path) -> list[Measurement]:
    path = Path(path)
    text = read_text(path, "a CSV file")
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise InputError("NUL byte", None, "a CSV file is text, without NUL bytes", source=str(path), line=line)
    reader = csv.DictReader(text.splitlines())
    try:
        return _rows(reader, str(path))
    except csv.Error as exc:
        raise InputError("CSV", None, f"not readable: {exc}", source=str(path), line=reader.line_num or 1) from None


def _rows(reader: csv.DictReader[str], source: str) -> list[Measurement]:
    path = source
    cols = set(reader.fieldnames or [])
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise InputError(
            "columns",
            ", ".join(sorted(cols)) or "none",
            f"missing {', '.join(missing)}; required: {', '.join(REQUIRED)} and one of {', '.join(MEASURES)}",
            source=str(path),
            line=1,
        )
    if not any(m in cols for m in MEASURES):
        raise InputError("columns", ", ".join(sorted(cols)), f"no measurement column: give {' and/or '.join(MEASURES)}", source=str(path), line=1)
    out = []
    for row in reader:
        i = reader.line_num  # the line the row ends on (a quoted cell may span lines)
        tpot = _num(row, "tpot_ms", i, str(path), float, hi=1e6, optional=True)
        ttft = _num(row, "ttft_ms", i, str(path), float, hi=1e7, optional=True)
        if tpot is None and ttft is None:
            raise InputError("tpot_ms/ttft_ms", None, "no measurement (give tpot_ms or ttft_ms)", source=str(path), line=i)
        tp = _num(row, "tp", i, str(path), int, hi=1024)
        pp = _num(row, "pp", i, str(path), int, hi=1024, optional=True) or 1
        out.append(
            Measurement(
                row=i,
                model=_name(row, "model", i, str(path)),
                gpu=_name(row, "gpu", i, str(path)),
                count=_num(row, "count", i, str(path), int, hi=100000, optional=True) or tp * pp,
                tp=tp,
                pp=pp,
                weights=_name(row, "weights", i, str(path)),
                kv_cache=_name(row, "kv_cache", i, str(path)),
                batch=_num(row, "batch", i, str(path), int, hi=1e6),
                prompt_tokens=_num(row, "prompt_tokens", i, str(path), int, hi=1e8),
                output_tokens=_num(row, "output_tokens", i, str(path), int, hi=1e8),
                tpot_s=tpot / 1e3 if tpot else None,
                ttft_s=ttft / 1e3 if ttft else None,
                engine=_name(row, "engine", i, str(path), default="vllm"),
                source=str(path),
            )
        )
    if not out:
        raise InputError("rows", 0, "the CSV has a header but no measurements", source=str(path), line=1)
    return out


def read_vllm_bench(path: str | Path, *, model: str | None, gpu: str, tp: int, weights: str | None, kv_cache: str, pp: int = 1) -> list[Measurement]:
    """The JSON `vllm bench serve --save-result` writes: mean TTFT/TPOT at its
    concurrency, average prompt and output lengths from its totals. The model is the
    file's `model_id` unless given, and the weight format the published checkpoint of
    that id is stored in (else 16-bit) unless given: what the file holds is not asked again."""
    text = read_text(Path(path), "a vllm bench JSON file")
    try:
        data = json.loads(text, parse_constant=no_json_constant)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
        raise InputError("file", str(path), f"is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InputError("file", str(path), f"holds a JSON {type(data).__name__}; expected the object `vllm bench serve --save-result` writes")
    need = ["mean_ttft_ms", "mean_tpot_ms", "completed", "total_input_tokens", "total_output_tokens"]
    missing = [k for k in need if k not in data]
    if missing:
        raise InputError("file", str(path), f"missing {', '.join(missing)} (expected `vllm bench serve --save-result` output)")
    bounds = {
        "mean_ttft_ms": 1e7,
        "mean_tpot_ms": 1e6,
        "completed": 1e9,
        "total_input_tokens": 1e15,
        "total_output_tokens": 1e15,
        "max_concurrency": 1e6,
    }
    for key, hi in bounds.items():
        v = data.get(key)
        if key == "max_concurrency" and v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= hi:
            raise InputError(key, shown_cell(repr(v)), f"must be a number in (0, {hi:g}]", source=str(path))
    if model is None:
        model_id = data.get("model_id")
        if not isinstance(model_id, str) or not model_id.strip():
            raise InputError("model_id", shown_cell(repr(model_id)), "the file names no model: give --model", source=str(path))
        model = model_id.strip()
    if weights is None:
        weights = checkpoint_format(model) or "bf16"
    n = max(1, int(data["completed"]))
    conc = max(1, int(data["max_concurrency"])) if data.get("max_concurrency") else _in_flight(data, path)
    return [
        Measurement(
            row=1,
            model=model,
            gpu=gpu,
            count=tp * pp,
            tp=tp,
            pp=pp,
            weights=weights,
            kv_cache=kv_cache,
            batch=conc,
            prompt_tokens=max(1, round(data["total_input_tokens"] / n)),
            output_tokens=max(1, round(data["total_output_tokens"] / n)),
            tpot_s=data["mean_tpot_ms"] / 1e3,
            ttft_s=data["mean_ttft_ms"] / 1e3,
        )
    ]


def _in_flight(data: dict, path: str | Path) -> int:
    """A run at a request rate (no max_concurrency): the requests in flight on average,
    by Little's law — completed requests per second × mean seconds each (vllm bench's
    request_throughput and mean_e2el_ms)."""
    rate, e2e_ms = data.get("request_throughput"), data.get("mean_e2el_ms")
    for key, v in (("request_throughput", rate), ("mean_e2el_ms", e2e_ms)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < 1e9:
            raise InputError(
                key,
                shown_cell(repr(v)),
                "must be a number in (0, 1e9): a run at a request rate (no max_concurrency) needs it to count the requests in flight",
                source=str(path),
            )
    return max(1, round(rate * e2e_ms / 1e3))  # type: ignore[operator]


def checkpoint_format(model_id: str) -> str | None:
    """The weight format of the published checkpoint a Hugging Face id names
    (catalogs/models.yaml `published`), or None when the catalog lists no such checkpoint."""
    from solver.catalog import default_catalog

    wanted = model_id.lower()
    for m in default_catalog().models:
        for c in m.published:
            if c.hf_id.lower() == wanted and c.container == "safetensors":
                return str(c.format)
    return None


def no_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")
