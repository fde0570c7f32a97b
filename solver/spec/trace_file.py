"""A request trace's rows (arrival, prompt and output tokens), read at the edge like a
spec (the schedule spec bins them into its profile; traffic/trace.py makes requests of
them), in the column layout of the
public Azure LLM inference traces (github.com/Azure/AzurePublicDataset,
AzureLLMInferenceDataset2023.md and AzureLLMInferenceDataset2024.md, "Schema": TIMESTAMP
"Invocation time", ContextTokens, GeneratedTokens; data/AzureLLMInferenceTrace_conv.csv
begins `TIMESTAMP,ContextTokens,GeneratedTokens` then rows such as
`2023-11-16 18:15:46.6805900,374,44`; read 2026-12-05).

TIMESTAMP is a date and time (`YYYY-MM-DD HH:MM:SS` with any number of fractional
digits, the Azure files have seven) or a plain number of seconds, one form for the whole
file; arrivals are taken from the earliest row (t = 0) and sorted. Other columns beside
the three are ignored. Every bad row is refused with its line, field, value and what is
allowed (InputError: exit 2), never skipped.
"""

from __future__ import annotations

import csv
import io
import math
import re
from datetime import datetime
from pathlib import Path

from solver.errors import InputError
from solver.spec.text_file import read_text_file

COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?$")
_EPOCH = datetime(1970, 1, 1)
_DATETIME_ALLOWED = "a date and time YYYY-MM-DD HH:MM:SS[.fraction] (as the Azure traces) or a number of seconds, one form for the whole file"

Row = tuple[float, int, int]
"""(arrival_s from the first row, prompt tokens, output tokens)."""


MAX_FILE_BYTES = 256 * 2**20
"""The largest trace read (some 8 million rows of the Azure layout): past it, refused by name."""


def read_trace_rows(path: str | Path, field: str = "trace") -> tuple[Row, ...]:
    """The rows of the trace at `path` (InputError naming `field` and the path when it cannot be read)."""
    source = str(path)
    text = read_text_file(
        path, field, f"a CSV file with the columns {','.join(COLUMNS)}", MAX_FILE_BYTES, "cut the trace to the span the profile covers"
    )
    return parse_trace_rows(text, source, field)


def _tokens(value: str, field: str, source: str, line: int) -> int:
    v = value.strip()
    if not v.isdigit() or int(v) < 1:
        raise InputError(field, value, "a whole number of tokens, at least 1", source=source, line=line)
    return int(v)


def _seconds(value: str, form: str, source: str, line: int) -> float:
    """A TIMESTAMP in seconds: from 1970-01-01 for a date and time (the fraction's
    digits all kept; a float near 2e9 s holds about 0.2 µs), else the number itself."""
    v = value.strip()
    if form == "datetime":
        m = _DATETIME.match(v)
        if m:
            day, hh, mm, ss, frac = m.groups()
            try:
                whole = datetime.fromisoformat(f"{day} {hh}:{mm}:{ss}")
            except ValueError:
                whole = None
            if whole is not None:
                return (whole - _EPOCH).total_seconds() + (int(frac) / 10 ** len(frac) if frac else 0.0)
    else:
        try:
            x = float(v)
        except ValueError:
            x = math.nan
        if math.isfinite(x):
            return x
    raise InputError("TIMESTAMP", value, _DATETIME_ALLOWED, source=source, line=line)


def parse_trace_rows(text: str, source: str = "trace", field: str = "trace") -> tuple[Row, ...]:
    """A trace's CSV text (header first) into its rows, in arrival order from 0."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(field, source, f"a CSV file whose header names {','.join(COLUMNS)} (the file is empty)") from None
    names = [h.strip() for h in header]
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise InputError(
            "header",
            ",".join(header),
            f"the columns {','.join(COLUMNS)} (the Azure LLM inference traces' layout); missing {', '.join(missing)}",
            source=source,
            line=1,
        )
    at = [names.index(c) for c in COLUMNS]
    rows: list[tuple[float, int, int]] = []
    form = ""
    for row in reader:
        line = reader.line_num
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(names):
            raise InputError(
                "row", ",".join(row), f"{len(names)} fields as the header has ({','.join(names)}), got {len(row)}", source=source, line=line
            )
        stamp, context, generated = (row[i] for i in at)
        if not form:
            form = "datetime" if _DATETIME.match(stamp.strip()) else "seconds"
        rows.append(
            (
                _seconds(stamp, form, source, line),
                _tokens(context, "ContextTokens", source, line),
                _tokens(generated, "GeneratedTokens", source, line),
            )
        )
    if not rows:
        raise InputError(field, source, "at least one request row below the header")
    rows.sort(key=lambda r: r[0])
    first = rows[0][0]
    return tuple((t - first, p, o) for t, p, o in rows)
