"""Request lengths from a file a user brings (a log of their own traffic): CSV with a
`prompt_tokens,output_tokens` header (or a request trace's `ContextTokens,GeneratedTokens`,
the Azure LLM inference traces' layout), or JSON Lines of `{"prompt_tokens": P,
"output_tokens": O}`. Read at the edge, like a spec: every value a whole number in
range, refused at its line; each request's two lengths are drawn together."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from solver.errors import InputError
from solver.spec.fields import MAX_TOKENS, WorkloadIn
from solver.spec.text_file import read_text_file

MAX_FILE_BYTES = 256 * 2**20
"""A log of a million requests is about 20 MB as CSV."""
MAX_ROWS = 2_000_000
COLUMNS = ("prompt_tokens", "output_tokens")
TRACE_COLUMNS = ("ContextTokens", "GeneratedTokens")
"""A CSV with these (the Azure LLM inference traces' layout) and not the two above gives its lengths by them."""
JSONL_SUFFIXES = (".jsonl", ".ndjson")
"""A file so named is JSON Lines whatever its first line holds (one not an object is refused at its line)."""


def _whole(value: object, key: str, source: str, line: int, text: bool = True) -> int:
    """A whole number of tokens; from JSON (`text` False) only a JSON integer."""
    if isinstance(value, bool) or (not text and not isinstance(value, int)):
        raise InputError(key, value, f"must be a whole number from 1 to {MAX_TOKENS:,}", source=source, line=line)
    try:
        x = float(value) if isinstance(value, str | int | float) else float("nan")
    except ValueError:
        raise InputError(key, value, f"must be a whole number from 1 to {MAX_TOKENS:,}", source=source, line=line) from None
    if not (1 <= x <= MAX_TOKENS) or x != int(x):
        raise InputError(key, value, f"must be a whole number from 1 to {MAX_TOKENS:,}", source=source, line=line)
    return int(x)


def read_lengths(path: Path, field: str = "workload.lengths_file") -> tuple[tuple[int, int], ...]:
    """(prompt, output) tokens of every request in the file, in file order."""
    source = str(path)
    text = read_text_file(path, field, "a CSV or JSON Lines file", MAX_FILE_BYTES, f"sample it to at most {MAX_ROWS:,} requests")
    if "\x00" in text:
        raise InputError("NUL byte", None, "a lengths file is text", source=source, line=text.count("\n", 0, text.index("\x00")) + 1)
    if text.count("\n") > MAX_ROWS + 1:
        raise InputError(field, source, f"holds over {MAX_ROWS:,} requests; at most {MAX_ROWS:,} (sample it)")
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    jsonl = path.suffix.lower() in JSONL_SUFFIXES or first.lstrip()[:1] in ("{", "[")
    pairs = _jsonl(lines, source) if jsonl else _csv(lines, source)
    if not pairs:
        raise InputError(field, source, "holds no requests")
    if len(pairs) > MAX_ROWS:
        raise InputError(field, source, f"holds {len(pairs):,} requests; at most {MAX_ROWS:,} (sample it)")
    return tuple(pairs)


def _csv(lines: list[str], source: str) -> list[tuple[int, int]]:
    reader = csv.DictReader(lines)
    try:
        fieldnames = reader.fieldnames  # the header is read here: a cell past the csv module's limit fails in it
    except csv.Error as exc:
        raise InputError(
            "CSV header", None, f"not readable: {exc}; a CSV lengths file starts prompt_tokens,output_tokens", source=source, line=1
        ) from None
    names = dict(zip(COLUMNS, COLUMNS, strict=True))
    if fieldnames and all(c in fieldnames for c in TRACE_COLUMNS) and not any(c in fieldnames for c in COLUMNS):
        names = dict(zip(COLUMNS, TRACE_COLUMNS, strict=True))  # a request trace's lengths (spec/trace_file.py)
    missing = [c for c in names.values() if c not in (fieldnames or [])]
    if missing:
        raise InputError(
            "columns",
            ", ".join(fieldnames or [])[:200] or "none",
            f"missing {', '.join(missing)}; a CSV lengths file has prompt_tokens,output_tokens",
            source=source,
            line=1,
        )
    out = []
    try:
        for row in reader:
            n = reader.line_num
            if None in row:
                raise InputError("CSV", None, f"{len(row[None])} cell(s) beyond the header's columns", source=source, line=n)
            p, o = names["prompt_tokens"], names["output_tokens"]
            out.append((_whole(row.get(p), p, source, n), _whole(row.get(o), o, source, n)))
    except csv.Error as exc:
        raise InputError("CSV", None, f"not readable: {exc}", source=source, line=reader.line_num + 1) from None
    return out


def _jsonl(lines: list[str], source: str) -> list[tuple[int, int]]:
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=lambda c: float("nan"))
        except (ValueError, RecursionError):
            raise InputError("JSON Lines", None, "each line must be one JSON object", source=source, line=n) from None
        if not isinstance(obj, dict):
            raise InputError(
                "JSON Lines", None, 'each line must be an object such as {"prompt_tokens": 812, "output_tokens": 240}', source=source, line=n
            )
        out.append(
            (_whole(obj.get("prompt_tokens"), "prompt_tokens", source, n, False), _whole(obj.get("output_tokens"), "output_tokens", source, n, False))
        )
    return out


def lengths_digest(pairs: tuple[tuple[int, int], ...]) -> str:
    """Tells two files' lengths apart (the pairs themselves are too many to compare)."""
    import hashlib

    return hashlib.sha256(repr(pairs).encode()).hexdigest()[:16]


def with_lengths(w: WorkloadIn, base_dir: Path | None) -> tuple[WorkloadIn, tuple[tuple[int, int], ...]]:
    """The workload with its means (and, unless given, its context: the longest request
    in the file) taken from its lengths file, and the file's (prompt, output) pairs."""
    assert w.lengths_file is not None
    path = Path(w.lengths_file)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    pairs = read_lengths(path)
    prompt = max(1, round(sum(p for p, _ in pairs) / len(pairs)))
    output = max(1, round(sum(o for _, o in pairs) / len(pairs)))
    longest = max(p + o for p, o in pairs)
    context = w.context_tokens if w.context_tokens is not None else longest
    if context > MAX_TOKENS:
        raise InputError("workload.lengths_file", str(path), f"its longest request ({longest:,} tokens) is over {MAX_TOKENS:,}")
    if longest > context:
        n = sum(1 for p, o in pairs if p + o > context)
        raise InputError(
            "workload.context_tokens", context, f"{n:,} requests in {path} are longer ({longest:,} tokens at most); raise it or leave it out"
        )
    return w.model_copy(update={"prompt_tokens": prompt, "output_tokens": output, "context_tokens": context}), pairs
