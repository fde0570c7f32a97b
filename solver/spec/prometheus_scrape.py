"""A scrape of vLLM's /metrics (Prometheus text format 0.0.4: `name{label="v",...} value`
lines, `# HELP`/`# TYPE` comments) read as one measured point for `plan-opt calibrate`.

The series, as vLLM's V1 engine names them (vllm-project/vllm docs/design/metrics.md,
"v1 Metrics", and vllm/v1/metrics/loggers.py, read 2026-12-05):
- vllm:time_to_first_token_seconds (histogram): TTFT;
- vllm:inter_token_latency_seconds (histogram): the time between output tokens, the
  decode step; before 0.11 vllm:time_per_output_token_seconds (the same observations,
  its deprecated name), read when the new name is absent;
- vllm:num_requests_running (gauge): the requests in the running batch, summed over
  the engines of a data-parallel server;
- vllm:request_prompt_tokens and vllm:request_generation_tokens (histograms): the
  lengths of finished requests; else the counters vllm:prompt_tokens_total and
  vllm:generation_tokens_total over vllm:request_success_total.

A histogram's mean is its `_sum` over its `_count` (exact: the observations' own sum),
pooled over every label set (engines); its `_bucket` series are checked to be
cumulative (never falling as `le` grows) and to end at `le="+Inf"` equal to `_count`.
The counters are cumulative since the server started: scrape a server that served only
the benchmark, while it runs (the running gauge is the batch at that moment)."""

from __future__ import annotations

import math
import re
from pathlib import Path

from solver.errors import InputError
from solver.spec.bench_files import Replica, point
from solver.spec.measurements import Measurement, read_text, shown_cell

WHAT = "a Prometheus scrape of vLLM's /metrics"
TTFT = "vllm:time_to_first_token_seconds"
STEP = ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")
RUNNING = "vllm:num_requests_running"

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')

Series = dict[str, list[tuple[dict[str, str], float]]]


def parse(text: str, source: str) -> Series:
    """Every sample by metric name: its labels and value; a line that is not a sample
    or a comment is refused at its line."""
    out: Series = {}
    for i, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            raise InputError("line", shown_cell(line), 'not a sample: expected `name{label="value",...} number`', source=source, line=i)
        name, labels_text, value_text = m.groups()
        labels: dict[str, str] = {}
        rest = labels_text or ""
        while rest.strip():
            lm = _LABEL.match(rest)
            if lm is None:
                raise InputError(f"{name} labels", shown_cell(labels_text), 'expected label="value" pairs, comma-separated', source=source, line=i)
            labels[lm.group(1)] = lm.group(2)
            rest = rest[lm.end() :]
        try:
            value = float(value_text)  # Prometheus writes +Inf, -Inf and NaN as Python reads them
        except ValueError:
            raise InputError(name, shown_cell(value_text), "not a number", source=source, line=i) from None
        out.setdefault(name, []).append((labels, value))
    return out


def _total(series: Series, name: str, source: str) -> float | None:
    """A metric's samples summed over its label sets (engines, finish reasons), or None
    when the scrape lacks it; a negative or non-finite one is refused."""
    samples = series.get(name)
    if not samples:
        return None
    for _, v in samples:
        if not math.isfinite(v) or v < 0:
            raise InputError(name, shown_cell(repr(v)), "must be a finite number, 0 or more", source=source)
    return sum(v for _, v in samples)


def _checked_buckets(series: Series, name: str, count: float, source: str) -> None:
    """Each label set's buckets cumulative, ending at +Inf with the count."""
    by_set: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
    for labels, v in series.get(f"{name}_bucket", []):
        if "le" not in labels:
            raise InputError(f"{name}_bucket", None, 'a bucket without its le="..." label', source=source)
        try:
            le = float(labels["le"])
        except ValueError:
            raise InputError(f"{name}_bucket le", shown_cell(labels["le"]), "must be a number or +Inf", source=source) from None
        key = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
        by_set.setdefault(key, []).append((le, v))
    if not by_set:
        return  # buckets are not needed for the mean
    inf_total = 0.0
    for buckets in by_set.values():
        buckets.sort()
        for (le_a, a), (le_b, b) in zip(buckets, buckets[1:], strict=False):
            if b < a:
                raise InputError(
                    f'{name}_bucket{{le="{le_b:g}"}}',
                    b,
                    f'must be at least the le="{le_a:g}" bucket ({a:g}): buckets count cumulatively',
                    source=source,
                )
        if buckets[-1][0] != math.inf:
            raise InputError(f"{name}_bucket", None, 'missing its le="+Inf" bucket (every observation)', source=source)
        inf_total += buckets[-1][1]
    if inf_total != count:
        raise InputError(f'{name}_bucket{{le="+Inf"}}', inf_total, f"must equal {name}_count ({count:g})", source=source)


def histogram_mean(series: Series, name: str, source: str) -> float | None:
    """The mean observation: `_sum` over `_count`, pooled over label sets; None when the
    scrape lacks the histogram; refused when it counted nothing."""
    total, count = _total(series, f"{name}_sum", source), _total(series, f"{name}_count", source)
    if total is None and count is None:
        return None
    if total is None or count is None:
        missing = f"{name}_sum" if total is None else f"{name}_count"
        raise InputError(missing, None, f"missing beside the rest of {name}: a histogram has _sum, _count and _bucket", source=source)
    if count <= 0:
        raise InputError(f"{name}_count", count, "must be above 0: the server observed nothing yet (scrape after requests finish)", source=source)
    _checked_buckets(series, name, count, source)
    return total / count


def _mean_length(series: Series, histogram: str, counter: str, source: str) -> float:
    mean = histogram_mean(series, histogram, source)
    if mean is not None:
        return mean
    tokens, done = _total(series, counter, source), _total(series, "vllm:request_success_total", source)
    if tokens is None or not done:
        raise InputError(histogram, None, f"missing, and so is {counter} over vllm:request_success_total: the scrape holds no lengths", source=source)
    return tokens / done


def read_prometheus(path: str | Path, r: Replica) -> list[Measurement]:
    """One point: mean TTFT and decode step, the running requests as the batch, the mean
    lengths of finished requests; the model from the series' model_name label."""
    source = str(path)
    series = parse(read_text(Path(path), WHAT), source)
    if not any(name.startswith("vllm:") for name in series):
        raise InputError("file", source, f"has no vllm: series; expected {WHAT}")
    ttft = histogram_mean(series, TTFT, source)
    if ttft is None:
        raise InputError(f"{TTFT}_sum", None, f"missing: {WHAT} has it", source=source)
    step = next((m for m in (histogram_mean(series, name, source) for name in STEP) if m is not None), None)
    if step is None:
        raise InputError(f"{STEP[0]}_sum", None, f"missing (nor its older name {STEP[1]}): {WHAT} has it", source=source)
    running = _total(series, RUNNING, source)
    if running is None:
        raise InputError(RUNNING, None, f"missing: {WHAT} has it", source=source)
    if running < 1:
        raise InputError(
            RUNNING, running, "must be 1 or more: scrape while the benchmark runs (the gauge is the batch at that moment)", source=source
        )
    models = {labels["model_name"] for samples in series.values() for labels, _ in samples if labels.get("model_name")}
    if len(models) > 1 and r.model is None:
        raise InputError("model_name", ", ".join(sorted(models)), "the scrape holds several models: give --model", source=source)
    return [
        point(
            r,
            source,
            1,
            next(iter(models)) if len(models) == 1 else None,
            batch=running,
            prompt_tokens=_mean_length(series, "vllm:request_prompt_tokens", "vllm:prompt_tokens_total", source),
            output_tokens=_mean_length(series, "vllm:request_generation_tokens", "vllm:generation_tokens_total", source),
            tpot_s=step,
            ttft_s=ttft,
            what="the scrape (no model_name label)",
        )
    ]
