"""The benchmark reports users already have, read into the measurement records
`plan-opt calibrate` fits (spec/measurements.py): GuideLLM's benchmarks.json and
NVIDIA genai-perf's profile export (JSON or CSV); a vLLM /metrics scrape is
spec/prometheus_scrape.py. None says which GPU ran it, so the replica comes from flags.

Every reader keeps calibrate's meaning of each figure: the mean TTFT, the mean time
between output tokens after the first (the decode step: GuideLLM's
inter_token_latency_ms, genai-perf's inter_token_latency, vllm bench's TPOT), the mean
prompt and output lengths, and the requests in flight as the batch.

Schemas, as read on 2026-12-05:
- GuideLLM v0.7.3 (tag of 2026-07-31), src/guidellm/benchmark/schemas/report.py
  (GenerativeBenchmarksReport: metadata.version 2, benchmarks[]), benchmark.py
  (GenerativeBenchmark: config.backend, metrics), schemas/metrics.py (GenerativeMetrics:
  request_totals, request_concurrency, prompt_token_count, output_token_count,
  time_to_first_token_ms, inter_token_latency_ms), src/guidellm/schemas/statistics.py
  (StatusDistributionSummary: successful/errored/incomplete/total, each with mean),
  backends/openai/http.py (backend args: target, model).
- genai-perf 0.0.16 (triton-inference-server/perf_analyzer, genai-perf/), export_data/
  json_exporter.py (profile_export_genai_perf.json: each metric {unit, avg, p50, ...}
  and input_config), metrics/llm_metrics.py (time_to_first_token, inter_token_latency,
  input_sequence_length, output_sequence_length in ms and tokens), metrics/metrics.py
  (request_latency, request_throughput), config/input/config_command.py (model_names,
  perf_analyzer.stimulus concurrency or request_rate), export_data/csv_exporter.py and
  exporter_utils.py (profile_export_genai_perf.csv: `Metric,avg,...` rows named
  `Time To First Token (ms)`, values formatted `1,234.56`, then `Metric,Value` rows).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solver.errors import InputError
from solver.spec.measurements import Measurement, checkpoint_format, no_json_constant, read_text, shown_cell

KINDS = ("csv", "vllm-bench", "guidellm", "genai-perf", "genai-perf-csv", "prometheus")
"""What calibrate reads; `--kind` names one where detection would not."""


@dataclass(frozen=True)
class Replica:
    """What a benchmark report does not say: the hardware it ran on (calibrate's flags);
    the model and weights where given override the file's."""

    gpu: str
    tp: int = 1
    pp: int = 1
    model: str | None = None
    weights: str | None = None
    kv_cache: str = "bf16"


def point(
    r: Replica,
    source: str,
    row: int,
    model: str | None,
    batch: float,
    prompt_tokens: float,
    output_tokens: float,
    tpot_s: float | None,
    ttft_s: float | None,
    what: str,
) -> Measurement:
    """One measured point of a report, on the flags' replica."""
    name = r.model or (model.strip() if isinstance(model, str) and model.strip() else None)
    if name is None:
        raise InputError("--model", None, f"{what} names no model: give --model", source=source)
    return Measurement(
        row=row,
        model=name,
        gpu=r.gpu,
        count=r.tp * r.pp,
        tp=r.tp,
        pp=r.pp,
        weights=r.weights or checkpoint_format(name) or "bf16",
        kv_cache=r.kv_cache,
        batch=max(1, round(batch)),
        prompt_tokens=max(1, round(prompt_tokens)),
        output_tokens=max(1, round(output_tokens)),
        tpot_s=tpot_s,
        ttft_s=ttft_s,
        source=source,
    )


def number(v: object, field: str, hi: float, source: str, lo: float = 0.0) -> float:
    """A figure of a report: a finite number in (lo, hi], else refused by its field."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not lo < v <= hi:
        raise InputError(field, shown_cell(repr(v)), f"must be a number in ({lo:g}, {hi:g}]", source=source)
    return float(v)


def _at(data: object, path: str, source: str, what: str, prefix: str = "") -> Any:
    """The value at a dotted path (below `prefix`), or one message naming the first key missing."""
    here, walked = data, [prefix] if prefix else []
    for key in path.split("."):
        if not isinstance(here, dict) or key not in here:
            shape = "" if isinstance(here, dict) else f" (it is a JSON {type(here).__name__}, not an object)"
            raise InputError(".".join([*walked, key]), None, f"missing{shape}: {what} has it", source=source)
        here = here[key]
        walked.append(key)
    return here


def _json(path: str | Path, what: str) -> Any:
    text = read_text(Path(path), what)
    try:
        return json.loads(text, parse_constant=no_json_constant)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
        raise InputError("file", str(path), f"is not valid JSON ({exc}); expected {what}") from None


GUIDELLM = "GuideLLM's benchmarks.json (guidellm run --output kind=json)"


def read_guidellm(path: str | Path, r: Replica) -> list[Measurement]:
    """Each benchmark of the report (a sweep has several: one point each) from its
    successful requests: mean TTFT and inter-token latency, mean prompt and output
    lengths, and the mean requests in flight as the batch."""
    source = str(path)
    data = _json(path, GUIDELLM)
    benches = _at(data, "benchmarks", source, GUIDELLM)
    if not isinstance(benches, list) or not benches:
        raise InputError("benchmarks", shown_cell(repr(benches)), "must be a non-empty list of benchmarks", source=source)
    out = []
    for i, b in enumerate(benches):
        at = f"benchmarks[{i}]"

        def mean(metric: str, hi: float, b: object = b, at: str = at) -> float:
            field = f"{at}.metrics.{metric}.successful.mean"
            return number(_at(b, f"metrics.{metric}.successful.mean", source, GUIDELLM, at), field, hi, source)

        ok = _at(b, "metrics.request_totals.successful", source, GUIDELLM, at)
        number(ok, f"{at}.metrics.request_totals.successful", 1e9, source)  # no successful request: nothing measured
        backend = b.get("config", {}).get("backend", {}) if isinstance(b.get("config"), dict) else {}
        out.append(
            point(
                r,
                source,
                i + 1,
                backend.get("model") if isinstance(backend, dict) else None,
                batch=mean("request_concurrency", 1e6),
                prompt_tokens=mean("prompt_token_count", 1e8),
                output_tokens=mean("output_token_count", 1e8),
                tpot_s=mean("inter_token_latency_ms", 1e6) / 1e3,
                ttft_s=mean("time_to_first_token_ms", 1e7) / 1e3,
                what=f"{at}.config.backend",
            )
        )
    return out


GENAI_PERF = "genai-perf's profile_export_genai_perf.json"
_STREAMING = "genai-perf reports it only for a streaming run: profile with --streaming"


def read_genai_perf(path: str | Path, r: Replica) -> list[Measurement]:
    """profile_export_genai_perf.json: the averages of TTFT, inter-token latency and the
    sequence lengths; the concurrency from input_config, else by Little's law
    (request_throughput × request_latency, the requests in flight on average)."""
    source = str(path)
    data = _json(path, GENAI_PERF)
    if not isinstance(data, dict):
        raise InputError("file", source, f"holds a JSON {type(data).__name__}; expected {GENAI_PERF}")

    def avg(metric: str, unit: str, hi: float) -> float:
        stat = data.get(metric)
        if metric in ("time_to_first_token", "inter_token_latency") and stat is None:
            raise InputError(metric, None, f"missing: {_STREAMING}", source=source)
        got = _at(data, f"{metric}.unit", source, GENAI_PERF)
        if got != unit:
            raise InputError(f"{metric}.unit", shown_cell(repr(got)), f"must be {unit!r}", source=source)
        return number(_at(stat, "avg", source, GENAI_PERF, metric), f"{metric}.avg", hi, source)

    ttft_ms = avg("time_to_first_token", "ms", 1e7)
    itl_ms = avg("inter_token_latency", "ms", 1e6)
    config = data.get("input_config") if isinstance(data.get("input_config"), dict) else {}
    assert isinstance(config, dict)
    stimulus = config.get("perf_analyzer", {}).get("stimulus") if isinstance(config.get("perf_analyzer"), dict) else None
    conc = (stimulus or {}).get("concurrency") if isinstance(stimulus, dict) else config.get("concurrency")
    if conc is not None:
        batch = number(conc, "input_config.perf_analyzer.stimulus.concurrency", 1e6, source)
    else:
        batch = avg("request_throughput", "requests/sec", 1e9) * avg("request_latency", "ms", 1e9) / 1e3
    names = config.get("model_names", config.get("model"))
    model = names[0] if isinstance(names, list) and names else names if isinstance(names, str) else None
    return [
        point(
            r,
            source,
            1,
            model,
            batch=batch,
            prompt_tokens=avg("input_sequence_length", "tokens", 1e8),
            output_tokens=avg("output_sequence_length", "tokens", 1e8),
            tpot_s=itl_ms / 1e3,
            ttft_s=ttft_ms / 1e3,
            what="input_config.model_names",
        )
    ]


GENAI_PERF_CSV = "genai-perf's profile_export_genai_perf.csv"
_CSV_ROWS = {
    "Time To First Token (ms)": 1e7,
    "Inter Token Latency (ms)": 1e6,
    "Input Sequence Length (tokens)": 1e8,
    "Output Sequence Length (tokens)": 1e8,
    "Request Latency (ms)": 1e9,
    "Request Throughput (per sec)": 1e9,
}


def read_genai_perf_csv(path: str | Path, r: Replica) -> list[Measurement]:
    """profile_export_genai_perf.csv: each row's avg (the first value column); the
    concurrency by Little's law, as the CSV does not state it; the model from --model."""
    source = str(path)
    rows = list(csv.reader(read_text(Path(path), GENAI_PERF_CSV).splitlines()))
    if not rows or not rows[0] or rows[0][0] != "Metric":
        raise InputError(
            "header", shown_cell(",".join(rows[0]) if rows else ""), f"must start `Metric,avg,...` ({GENAI_PERF_CSV})", source=source, line=1
        )
    avg: dict[str, float] = {}
    for line, row in enumerate(rows, start=1):
        if len(row) < 2 or row[0] not in _CSV_ROWS:
            continue
        try:
            value = float(row[1].replace(",", ""))
        except ValueError:
            raise InputError(row[0], shown_cell(row[1]), "not a number", source=source, line=line) from None
        hi = _CSV_ROWS[row[0]]
        if not math.isfinite(value) or not 0 < value <= hi:
            raise InputError(row[0], shown_cell(row[1]), f"must be a number in (0, {hi:g}]", source=source, line=line)
        avg[row[0]] = value
    missing = [k for k in _CSV_ROWS if k not in avg]
    if missing:
        hint = f"; {_STREAMING}" if any("Token" in k for k in missing) else ""
        raise InputError("rows", None, f"missing {', '.join(missing)}{hint}", source=source)
    return [
        point(
            r,
            source,
            1,
            None,
            batch=avg["Request Throughput (per sec)"] * avg["Request Latency (ms)"] / 1e3,
            prompt_tokens=avg["Input Sequence Length (tokens)"],
            output_tokens=avg["Output Sequence Length (tokens)"],
            tpot_s=avg["Inter Token Latency (ms)"] / 1e3,
            ttft_s=avg["Time To First Token (ms)"] / 1e3,
            what=f"{GENAI_PERF_CSV} (it has no model field)",
        )
    ]


def detect_kind(path: str | Path) -> str:
    """The file's kind from its contents: JSON by its keys, genai-perf's CSV by its
    `Metric` header, a Prometheus scrape by its vllm: series; else calibrate's CSV."""
    text = read_text(Path(path), "a measurement file")
    head = text.lstrip()
    if head.startswith(("{", "[")):
        try:
            data = json.loads(text, parse_constant=no_json_constant)
        except (ValueError, RecursionError) as exc:
            raise InputError("file", str(path), f"is not valid JSON ({exc})") from None
        if isinstance(data, dict):
            if "benchmarks" in data:
                return "guidellm"
            if "mean_ttft_ms" in data:
                return "vllm-bench"
            if "input_config" in data or isinstance(data.get("time_to_first_token"), dict):
                return "genai-perf"
        raise InputError(
            "file",
            str(path),
            "a JSON file calibrate does not know: expected `vllm bench serve --save-result` output (mean_ttft_ms), "
            f"{GUIDELLM} (benchmarks) or {GENAI_PERF} (input_config); or name the kind with --kind",
        )
    if head.startswith("Metric,"):
        return "genai-perf-csv"
    if any(line.startswith(("vllm:", "# TYPE vllm:")) for line in text.splitlines()):
        return "prometheus"
    return "csv"
