"""The measured points of tests/validation/points.yaml and how plan-opt predicts each,
shared by bench/bench_validation.py (which reports the error) and bench/fit_defaults.py
(which fits the catalog's default factors on the fit split only).

The split is decided once, by source, and recorded in the file (`split: fit|test` on
every point): a source is one measurement campaign (the cited document at its
revision, one issue thread, one log); within each engine, sources are taken largest
first and dealt to the half they balance, so both halves hold every engine and the
largest tables. Points added later (`added: <date>`) are dealt on top of what the
file already holds; no recorded side ever moves. A factor fitted on a point proves nothing about that point, so
accuracy is reported on the test split only.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import heapq
import math
import random
import re
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from solver.catalog import default_catalog  # noqa: E402
from solver.errors import InputError  # noqa: E402
from solver.physics.evaluate import evaluate  # noqa: E402
from solver.physics.resolve import resolve  # noqa: E402
from solver.spec.evaluate_input import parse_input  # noqa: E402

POINTS = ROOT / "tests" / "validation" / "points.yaml"
GiB = 2**30

# Same architecture under another name (config.json dimensions identical).
SAME_AS = {
    "meta-llama/Meta-Llama-3-8B": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3-70B": "llama-3.1-70b",
    "meta-llama/Meta-Llama-3-70B-Instruct": "llama-3.1-70b",
    "Qwen/Qwen2-7B-Instruct": "qwen2.5-7b",
    "Qwen/Qwen2-72B": "qwen2.5-72b",
    "Qwen/QwQ-32B": "qwen2.5-32b",
    "huggyllama/llama-7b": "llama-2-7b",
    "deepseek-ai/DeepSeek-V3.1": "deepseek-v3",  # the same architecture (config.json), new weights
}
# The engine whose rules and fitted factors a point's stack follows.
ENGINE = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm", "mlperf": "trtllm", "llama.cpp": "llama.cpp"}
KINDS = {
    "weights": "weights memory (GiB per GPU)",
    "kv": "KV capacity (tokens)",
    "tpot1": "batch-1 decode TPOT",
    "tpot": "batched decode TPOT",
    "throughput": "throughput",
    "ttft": "TTFT (one prompt)",
}


def load_points() -> list[dict]:
    return yaml.safe_load(POINTS.read_text())["points"]


def source_key(p: dict) -> str:
    """The measurement campaign: the cited address up to its first space, and for a
    GitHub address the repository at its revision (a document and the logs committed
    beside it are one campaign) or the issue or pull-request thread."""
    url = p["source"].split()[0].rstrip(",;—")
    parts = url.split("/")
    if len(parts) > 6 and parts[2] == "github.com" and parts[5] in ("blob", "tree", "raw", "issues", "pull", "discussions"):
        return "/".join(parts[:7])
    return url


def campaign_interval(errors_by_campaign: dict[str, list[float]], draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """The 95 % interval of a median error over campaigns drawn again with replacement:
    a campaign's points share its host, build and harness, so it, not the point, is the
    unit a new measurement resembles. Seeded, so a figure quoted is reproducible."""
    groups = [v for v in errors_by_campaign.values() if v]
    if not groups:
        raise ValueError("no campaign has an error to resample")
    rng = random.Random(seed)
    medians = sorted(statistics.median([e for g in rng.choices(groups, k=len(groups)) for e in g]) for _ in range(draws))
    return medians[int(0.025 * (draws - 1))], medians[int(0.975 * (draws - 1))]


def offset_and_shape(log_errors_by_campaign: dict[str, list[float]], min_points: int = 3) -> tuple[list[float], list[float]]:
    """Each campaign's offset, |exp(median log(predicted / measured)) − 1|, and the errors
    of the points of campaigns with `min_points` or more once their own offset is taken
    out: how much of the error is one level per host, build and harness, and how much
    is the physics' shape across a campaign's runs."""
    offsets, shape = [], []
    for logs in log_errors_by_campaign.values():
        if not logs:
            continue
        mid = statistics.median(logs)
        offsets.append(abs(math.exp(mid) - 1))
        if len(logs) >= min_points:
            shape += [abs(math.exp(x - mid) - 1) for x in logs]
    return offsets, shape


def run_year(p: dict) -> float | None:
    """The run's date (`as_of`) as a year and the fraction of it gone by; a month alone is
    read as its 15th (2025-07 → 2025.54), a year alone as its 15 July; None when undated."""
    s = str(p.get("as_of") or "")
    try:
        year = int(s[:4])
        month = int(s[5:7]) if len(s) >= 7 else 7
        day = int(s[8:10]) if len(s) >= 10 else 15
        return year + (dt.date(year, month, day).timetuple().tm_yday - 1) / 365.25
    except ValueError:
        return None


def offset_trend(campaigns: list[tuple[float, float]]) -> float:
    """How a campaign's offset moves with its date: the least-squares slope of the
    campaigns' median log(predicted / measured time) on their years, as a share per year
    (exp(slope) − 1). Positive: the later a campaign, the more the physics over-predicts
    its time — newer builds run faster than the factors, fitted across the years, say."""
    if len({x for x, _ in campaigns}) < 2:
        raise ValueError("a trend needs campaigns of two dates or more")
    mx = statistics.fmean(x for x, _ in campaigns)
    my = statistics.fmean(y for _, y in campaigns)
    slope = sum((x - mx) * (y - my) for x, y in campaigns) / sum((x - mx) ** 2 for x, _ in campaigns)
    return math.exp(slope) - 1


def offset_trend_interval(campaigns: list[tuple[float, float]], draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """The 95 % interval of offset_trend over the campaigns drawn again with replacement
    (draws of a single date, which have no slope, are drawn again). Seeded."""
    rng = random.Random(seed)
    slopes: list[float] = []
    while len(slopes) < draws:
        sample = rng.choices(campaigns, k=len(campaigns))
        if len({x for x, _ in sample}) >= 2:
            slopes.append(offset_trend(sample))
    slopes.sort()
    return slopes[int(0.025 * (draws - 1))], slopes[int(0.975 * (draws - 1))]


ERA_FROM = {"llama.cpp": "2025-01-01"}
"""Builds of an engine from this date on are a stratum of their own when a batch's new
sources are dealt (see assign_split): llama.cpp's fit half held one 2024 campaign
(XiongjieDai's tables, build 2824) and dealing by engine alone sent every newer
llama.cpp source to the test half until the halves' counts met."""
STRATA_FROM = "2026-12-03"
"""The first batch dealt by stratum (ERA_FROM) rather than by engine; earlier batches
keep the sides the engine-wide rule gave them."""


def stratum(p: dict) -> str:
    """The engine, and for one in ERA_FROM whether its build is from that date on."""
    engine = ENGINE.get(p.get("engine"), p.get("engine") or "?")
    if engine in ERA_FROM:
        return f"{engine} {'from' if str(p.get('as_of', '')) >= ERA_FROM[engine] else 'before'} {ERA_FROM[engine]}"
    return engine


def assign_split(points: list[dict]) -> dict[str, str]:
    """source → 'fit' or 'test'. Points are added in batches (`added:`, the date a batch
    joined the file; the first batch has none), and each batch's new sources are dealt on
    top of the halves the earlier batches left, so a source's side never changes once
    recorded. Within each engine (from batch STRATA_FROM on, each stratum: an engine's
    builds before and from its ERA_FROM date apart), a batch's new sources are taken
    largest first and each goes to the half that leaves the two halves' counts per metric
    closest (ties to fit), so both halves hold every engine and metric. Ties in size are
    broken by the source's address. Sources of runs out of scope are never fitted (test)."""
    split: dict[str, str] = {}
    halves: dict[str, dict[str, dict[str, int]]] = {}  # stratum → half → metric → count
    for batch in sorted({str(p.get("added") or "") for p in points}):
        mine = [p for p in points if str(p.get("added") or "") == batch]
        by_stratum = batch >= STRATA_FROM
        counts: dict[str, dict[str, int]] = {}
        group_of: dict[str, str] = {}
        for p in mine:
            src = source_key(p)
            if out_of_scope(p):
                split.setdefault(src, "test")
                continue
            if src in split:  # a source an earlier batch placed keeps its side
                h = halves.setdefault(stratum(p), {"fit": {}, "test": {}})[split[src]]
                h[p["metric"]] = h.get(p["metric"], 0) + 1
                continue
            counts.setdefault(src, {})
            counts[src][p["metric"]] = counts[src].get(p["metric"], 0) + 1
            engine = ENGINE.get(p.get("engine"), p.get("engine") or "?")
            group_of.setdefault(src, stratum(p) if by_stratum else engine)
        for group in sorted(set(group_of.values())):
            sources = sorted((s for s in counts if group_of[s] == group), key=lambda s: (-sum(counts[s].values()), s))
            # the halves this group is balanced on: its stratum's, or (before STRATA_FROM)
            # every stratum of its engine summed, which is what the engine-wide rule counted
            members = [k for k in halves if k == group or (not by_stratum and k.split(" ")[0] == group)]
            these: dict[str, dict[str, int]] = {"fit": {}, "test": {}}
            for k in members:
                for side in ("fit", "test"):
                    for m, n in halves[k][side].items():
                        these[side][m] = these[side].get(m, 0) + n

            def imbalance(side: str, src: str, these=these, counts=counts) -> int:
                after = {h: dict(c) for h, c in these.items()}
                for m, n in counts[src].items():
                    after[side][m] = after[side].get(m, 0) + n
                metrics = set(after["fit"]) | set(after["test"])
                return sum(abs(after["fit"].get(m, 0) - after["test"].get(m, 0)) for m in metrics)

            for src in sources:
                side = "fit" if imbalance("fit", src) <= imbalance("test", src) else "test"
                split[src] = side
                for m, n in counts[src].items():
                    these[side][m] = these[side].get(m, 0) + n
            for p in mine:  # the placed sources' points, counted where they were dealt
                src = source_key(p)
                if src in counts and group_of[src] == group and not out_of_scope(p):
                    own = stratum(p) if by_stratum or stratum(p).split(" ")[0] == group else group
                    h = halves.setdefault(group if by_stratum else own, {"fit": {}, "test": {}})[split[src]]
                    h[p["metric"]] = h.get(p["metric"], 0) + 1
        for p in mine:
            split.setdefault(source_key(p), "test")
    return split


def out_of_scope(p: dict) -> str | None:
    """Runs of engines plan-opt does not plan for, or of builds that predate what it models."""
    if p.get("engine") not in ENGINE:
        return "engine not planned"
    if p.get("engine") == "llama.cpp" and str(p.get("as_of", "")) < "2024-01-15":
        # Builds before the ggml-backend rewrite (llama.cpp PR #4766, January 2024), which
        # brought --split-mode and today's CUDA kernels: not the engine plan-opt models.
        return "pre-2024 llama.cpp build"
    if p.get("engine") == "vllm" and p["metric"] != "kv_cache_tokens" and str(p.get("as_of", "")) < "2024-01-01":
        # vLLM 0.2 (2023): before CUDA graphs by default, Marlin int4 kernels and chunked
        # prefill; its speed is not what today's vLLM reaches. (Its KV arithmetic is.)
        return "pre-2024 vLLM speed"
    return None


def _cond(p: dict) -> dict:
    return p.get("conditions") or {}


def _num(v, default=None):
    """A condition's number; sources sometimes write "1024 (random)" or a range."""
    if isinstance(v, bool):
        return default
    if isinstance(v, (int, float)):
        return v
    return default


def tokens(p: dict, key: str, default: int) -> int:
    return int(_num(_cond(p).get(key), default) or default)


_RELEASE = {
    "vllm": re.compile(r"vllm\s+[~v]*(\d+\.\d+(?:\.\d+){0,2})", re.IGNORECASE),
    "sglang": re.compile(r"sglang\s+[~v]*(\d+\.\d+(?:\.\d+){0,2})", re.IGNORECASE),
    "trtllm": re.compile(r"tensorrt-llm\s+[~v]*(\d+\.\d+(?:\.\d+){0,2})", re.IGNORECASE),
    "llama.cpp": re.compile(r"build\s+(?:(\d+)\s+\(|[0-9a-f]+\s+\((\d+)\))", re.IGNORECASE),
}


GRAPHS_PROFILED_SINCE = "2026-01-01"
"""No vLLM release before this date counted CUDA graphs before sizing the KV cache."""
V1_DEFAULT_SINCE = "2025-03-18"
"""vLLM's V1 engine became the default with v0.8.0 (PR #15064 docs, "V1 is now enabled by
default", 2025-03-18; catalogs/engine_releases.yaml); before, V1 ran only when asked
(VLLM_USE_V1=1, alpha from v0.7.0, vLLM blog "vLLM V1: A Major Upgrade to vLLM's Core
Architecture", 2025-01-27)."""


def v0_release(catalog=None) -> str:
    """A release of vLLM's V0-scheduler lines (their `recorded` scheduler is v0): the
    first release of the last of them. Every V0 line sets the same defaults (their
    overrides agree, tests/validation/test_points.py checks it), so a run known to be V0
    but of no named release is predicted exactly as any V0 release would be."""
    lines = [ln for ln in (catalog or default_catalog()).releases.of("vllm") if getattr(ln.spec.recorded.get("scheduler"), "value", None) == "v0"]
    return lines[-1].spec.since


def ran_v0(p: dict, version: str) -> bool:
    """A vLLM run of no named release that ran the V0 engine: its record says V0, or it is
    dated before V1 became the default and does not say it asked for V1."""
    if re.search(r"\bV0\b", version):
        return True
    return str(p.get("as_of") or "9999") < V1_DEFAULT_SINCE and not re.search(r"\bV1\b|VLLM_USE_V1=1", version)


def release_of(name: str, engine_version: str) -> str | None:
    """The release a run's conditions.engine_version names, as engine.version takes it
    (catalogs/engine_releases.yaml): "vLLM 0.6.3.post2.dev308+g…" gives 0.6.3, "llama.cpp
    build 4426e298 (2824)" b2824; None where it names none (a commit, "not stated")."""
    m = _RELEASE[name].search(engine_version) if name in _RELEASE else None
    if not m:
        return None
    found = next(g for g in m.groups() if g)
    return f"b{found}" if name == "llama.cpp" else found


TRTLLM_BUILD_INPUT_LEN = 2048
"""max_input_len of a TensorRT-LLM engine built without one: examples/llama/build.py's
--max_input_len default 2048 (the build.py flow of 0.5-0.7, 2023)."""

TRTLLM_FRACTION_KNOBS = ("free_gpu_memory_fraction", "kv_cache_free_gpu_mem_fraction", "kv_cache_free_gpu_memory_fraction")
"""TensorRT-LLM's names for the share of free memory its KV pool takes (KvCacheConfig,
the Triton backend's parameter, trtllm-serve's flag): the spec's gpu_memory_utilization."""


def _trtllm_knobs(cond: dict, release: str | None) -> dict:
    """A TensorRT-LLM run's build limits and KV fraction as the spec's engine knobs:
    max_batch_size is max_num_seqs (the runtime's slots), max_num_tokens is
    max_num_batched_tokens (the engine's token range). An engine built with neither
    max_num_tokens nor a release default for it (before 0.11) takes max_batch_size ×
    max_input_len tokens (tensorrt_llm/models/generation_mixin.py get_profiles_ranges'
    context range; cpp/tensorrt_llm/batch_manager/runtimeBuffers.cpp setMaxBufferSizes:
    maxNumModelTokens.value_or(max(maxBatchSize × maxInputLen, numLogits)), NVIDIA/TensorRT-LLM
    092a5a15d8047f16efd1aeb872cac21bb441188c)."""
    out: dict = {}
    batch = _num(cond.get("max_batch_size"))
    if batch and "max_num_seqs" not in cond:
        out["max_num_seqs"] = int(batch)
    built = _num(cond.get("max_num_tokens"))
    if built and "max_num_batched_tokens" not in cond:
        out["max_num_batched_tokens"] = int(built)
    elif batch and not built and release is not None and _before(release, "0.11.0"):
        out["max_num_batched_tokens"] = int(batch) * int(_num(cond.get("max_input_len"), TRTLLM_BUILD_INPUT_LEN) or TRTLLM_BUILD_INPUT_LEN)
    for knob in TRTLLM_FRACTION_KNOBS:
        if _num(cond.get(knob)):
            out["gpu_memory_utilization"] = cond[knob]
            break
    return out


def _before(release: str, version: str) -> bool:
    """Whether a release ("0.5", "0.19.0") comes before `version` (numeric parts compared)."""
    parts = [int(x) for x in release.split(".")[:3]]
    return parts + [0] * (3 - len(parts)) < [int(x) for x in version.split(".")]


def _engine(p: dict) -> dict:
    """The engine section for a point: the engine and every knob its run reports."""
    cond = _cond(p)
    name = ENGINE.get(p.get("engine"), "vllm")
    engine: dict = {"name": name}
    for knob in ("max_num_seqs", "max_num_batched_tokens", "max_model_len"):
        if _num(cond.get(knob)) is not None:
            engine[knob] = int(cond[knob])
    if isinstance(cond.get("enforce_eager"), bool):
        engine["enforce_eager"] = cond["enforce_eager"]
    version = str(cond.get("engine_version", ""))
    release = release_of(name, version)
    if release is None and name == "vllm" and ran_v0(p, version):
        # No release named, but the V0 engine: the V0 lines' defaults (all alike)
        release = v0_release()
    elif release is None and name == "vllm" and str(p.get("as_of", "")) < GRAPHS_PROFILED_SINCE:
        # No release named: a run published before the change that made vLLM count its
        # CUDA graphs ahead of the KV cache (PR #30515, merged 2025-12, default from v0.21.0)
        # ran a line that did not, the latest of which is 0.17-0.20.
        release = "0.20.0"
    if release is not None:
        engine["version"] = release  # the release line's defaults (catalogs/engine_releases.yaml)
    if isinstance(cond.get("enable_chunked_prefill"), bool):
        engine["enable_chunked_prefill"] = cond["enable_chunked_prefill"]
    elif name == "vllm" and "V0" in version:
        engine["enable_chunked_prefill"] = False  # V0 chunked prefills only when asked (or past 32k)
        engine.setdefault("max_num_seqs", 256)
    if name == "llama.cpp" and cond.get("split_mode") in ("layer", "row"):
        engine["split_mode"] = cond["split_mode"]
    if name == "trtllm":
        engine.update(_trtllm_knobs(cond, release))
    if _num(cond.get("gpu_memory_utilization")):
        engine["gpu_memory_utilization"] = cond["gpu_memory_utilization"]
    elif name == "sglang" and _num(cond.get("mem_fraction_static")):
        # SGLang's name for the same knob (the spec's gpu_memory_utilization is its --mem-fraction-static)
        engine["gpu_memory_utilization"] = cond["mem_fraction_static"]
    return engine


def speculation_of(p: dict) -> dict | None:
    """The spec's `speculative` section for a run that drafted tokens (conditions.speculative,
    method eagle | mtp | draft_model); None for one that did not. The method's default
    acceptance stands: a source's reported acceptance is not the planner's input."""
    sp = _cond(p).get("speculative")
    if not isinstance(sp, dict) or sp.get("method") in (None, "none"):
        return None
    # an EAGLE-3 head is its own method in the engines (vLLM "eagle3", SGLang EAGLE3)
    out = {"method": "eagle3" if sp["method"] == "eagle" and sp.get("variant") == "eagle3" else sp["method"]}
    if isinstance(sp.get("num_tokens"), int):
        out["num_tokens"] = sp["num_tokens"]
    if sp.get("draft_model"):
        out["draft_model"] = sp["draft_model"]
    return out


def deployment_for(
    p: dict, batch: int, prompt: int, output: int, context: int | None = None, batching: str = "isolated", factors: dict | None = None, catalog=None
):
    catalog = catalog or default_catalog()
    model = SAME_AS.get(p.get("model"), p.get("model"))
    engine = _engine(p)
    tp = p.get("tp", 1) or 1
    count = p.get("count", 1) or 1
    if engine["name"] == "llama.cpp" and count > 1 and tp == 1:
        tp = count  # llama.cpp spreads one model over every GPU (as its split mode says)
        engine.setdefault("split_mode", "layer")
    hardware: dict = {"gpu": p["gpu"], "tp": tp}
    pp = int(_num(p.get("pp") or _cond(p).get("pipeline_parallel_size"), 1) or 1)
    if pp > 1:
        hardware["pp"] = pp
    layout = parallelism_of(p)
    if layout != "tp":
        hardware["parallelism"] = layout
    device = catalog.device(p["gpu"])
    need = tp * pp
    if need > 1:  # the first of the device's platforms that holds the group
        for name in device.platforms:
            plat = catalog.platform(name)
            if plat.gpus_per_node >= need and plat.layout != "single":
                hardware["platform"] = name
                break
    data = {
        "model": model,
        "engine": engine,
        "hardware": hardware,
        "precision": {"weights": p.get("weights", "bf16"), "kv_cache": p.get("kv_cache") or "bf16"},
        "workload": {"users": max(1, batch), "prompt_tokens": max(1, prompt), "output_tokens": max(1, output), "batching": batching},
    }
    if context:
        data["workload"]["context_tokens"] = context
    if factors:
        data["overrides"] = {"factors": factors}
    checkpoint = str(_cond(p).get("checkpoint", "")).split(" ")[0]
    if checkpoint and any(c.hf_id == checkpoint for c in catalog.model(model).published):
        # the run's checkpoint, where the catalog knows it (its layout of 16-bit tensors)
        data.setdefault("overrides", {})["model"] = {"checkpoint": checkpoint}
    spec = speculation_of(p)
    if spec:
        data["speculative"] = spec
    return resolve(parse_input(data), catalog)


def batch_of(p: dict) -> int | None:
    cond = _cond(p)
    batch = _num(cond.get("batch")) or _num(cond.get("concurrency"))
    if not batch:
        return None
    replicas = _num(cond.get("replicas"), 1) or 1
    return max(1, round(batch / replicas)) if p["metric"] != "throughput" or "replicas" not in cond else batch


STATIC_BATCH = ("static", "bench_one_batch", "benchmark_latency", "gptSessionBenchmark")
"""Words in a run's engine_version, benchmark or batching that say it ran one batch start to end
(TensorRT-LLM's session benchmark, vLLM's benchmark_latency.py, SGLang's
bench_one_batch): its prompts prefilled together, then decoded, none arriving in flight."""


def in_flight(p: dict) -> bool:
    """Served under concurrency by an engine with in-flight batching (vLLM, SGLang, and
    TensorRT-LLM from v0.7 / MLPerf): prompts are prefilled inside the decode steps. Not
    a run of one static batch (STATIC_BATCH), nor TensorRT-LLM v0.5 (static batching
    only; SGLang's v0.5.x batches in flight)."""
    cond = _cond(p)
    version = str(cond.get("engine_version", ""))
    if p["metric"] == "decode_tpot_batched":
        return True
    said = " ".join(str(cond.get(key, "")) for key in ("engine_version", "benchmark", "batching"))
    static = any(word in said for word in STATIC_BATCH) or (p.get("engine") == "trtllm" and "v0.5" in version)
    return p["metric"] == "throughput" and not static and p.get("engine") != "llama.cpp"


def output_lengths(p: dict, n: int) -> list[int]:
    """The output lengths of a run's n requests, in the order they are sent. SGLang's
    bench_serving `random` dataset draws each uniformly from [max(1, r × L), L], L its
    --random-output-len and r its --random-range-ratio (0 by default); here n evenly
    spaced quantiles of that range, in a fixed scrambled order (nothing random). Every
    other run keeps its recorded length for every request (vLLM's `bench serve` draws
    from L × [1 − r, 1 + r], 0 by default; a dataset like ShareGPT spreads them too, but
    a point records only the mean)."""
    cond = _cond(p)
    out = tokens(p, "output_tokens", 128)
    top = _num(cond.get("random_output_len"))
    bench = str(cond.get("benchmark", "")).lower()
    if not top or "bench_serving" not in bench or "sglang" not in bench or str(cond.get("dataset", "")).lower() != "random":
        return [out] * n
    ratio = _num(cond.get("random_range_ratio"), 0.0)
    low = max(1, int(ratio * top))
    golden = 0.6180339887498949
    return [low + round((top - low) * ((i * golden) % 1.0)) for i in range(n)]


def closed_loop(outputs: list[int], clients: int, tpot_at) -> tuple[float, float]:
    """A closed-loop benchmark: `clients` workers, each sending the next of the run's
    requests (`outputs`, their output lengths in order) when its last one ends. Returns
    its tokens per second and its mean number of requests in flight. The last requests
    finish with fewer in flight, each step at that batch's time (tpot_at: seconds per
    step at a batch); prompts are taken to be prefilled inside the steps (in-flight
    batching)."""
    running = list(outputs[:clients])  # the step at which each in-flight request ends
    heapq.heapify(running)
    waiting = iter(outputs[clients:])
    step, elapsed_s, held_s = 0, 0.0, 0.0
    while running:
        end = running[0]
        span_s = (end - step) * tpot_at(len(running))
        elapsed_s += span_s
        held_s += span_s * len(running)
        step = end
        while running and running[0] == step:
            heapq.heappop(running)
            nxt = next(waiting, None)
            if nxt is not None:
                heapq.heappush(running, step + nxt)
    if not elapsed_s:
        return 0.0, float(clients)
    return sum(outputs) / elapsed_s, held_s / elapsed_s


def fixed_count_run(p: dict, coefficients, batch: int) -> tuple[float, float] | None:
    """An in-flight throughput run that sent a fixed number of requests
    (conditions.num_prompts) through `batch` clients per replica, as closed_loop runs
    it: (its throughput over `batch` sequences held all run, its mean requests in
    flight); None for a run without a count."""
    cond = _cond(p)
    n = _num(cond.get("num_prompts"))
    if not n or kind_of(p) != "throughput" or not in_flight(p):
        return None
    replicas = _num(cond.get("replicas"), 1) or 1
    n = int(n // replicas)
    if n < 1 or batch < 1:
        return None
    clients = min(batch, n)
    lengths = output_lengths(p, n)
    rate, held = closed_loop(lengths, clients, coefficients.tpot_s)
    return (rate / (batch / coefficients.tpot_s(batch)) if rate else 1.0), held


def drain_share(p: dict, coefficients, batch: int) -> float:
    """fixed_count_run's share of a full batch's rate (1 for a run without a count, or
    with requests of one length in whole waves). The run's recorded mean concurrency,
    where a benchmark printed it, is left to check this against (bench_validation.py),
    not used."""
    run = fixed_count_run(p, coefficients, batch)
    return run[0] if run else 1.0


def kind_of(p: dict) -> str | None:
    return {
        "weights_bytes": "weights",
        "kv_cache_tokens": "kv",
        "decode_tpot_batch1": "tpot1",
        "decode_tpot_batched": "tpot",
        "throughput": "throughput",
        "ttft": "ttft",
    }.get(p["metric"])


def measured(p: dict) -> float | None:
    """The measured value in the unit plan-opt predicts: GiB, tokens, ms per token,
    tokens/s, ms. None where the source's unit is not one of these."""
    m = p["measured"]
    value, unit, kind = m["value"], m["unit"], kind_of(p)
    if kind == "weights":
        return value if unit == "GiB" else None
    if kind == "kv":
        if unit == "blocks":
            return value * (_num(_cond(p).get("block_size"), 16) or 16)
        return value if unit == "tokens" else None
    if kind in ("tpot1", "tpot"):
        if unit == "ms_per_token":
            return value
        if unit == "tokens_per_s" and kind == "tpot1":
            return 1e3 / value
        if unit == "ms" and "benchmark_latency" in str(_cond(p).get("batching", "")):
            # vLLM's benchmark_latency.py prints a static batch's whole latency: its
            # prompts' prefill, then output_tokens decode steps. Per step it is the
            # latency over the steps; the prefill left in is at most 1.2 % of it on the
            # rows recorded (128 × 128 prompt tokens against 2,048 steps of a 405B model).
            return value / tokens(p, "output_tokens", 0) if tokens(p, "output_tokens", 0) > 1 else None
        return None
    if kind == "throughput":
        return value if unit in ("tokens_per_s", "tokens_per_s_per_gpu") else None
    if kind == "ttft":
        if unit == "ms":
            return value
        if unit == "tokens_per_s":  # a prompt-processing rate (llama-bench ppN)
            return tokens(p, "prompt_tokens", 512) / value * 1e3
    return None


_LAUNCHES = ("serve_command", "launch_command")
_EP_FLAG = re.compile(r"--(?:ep|ep-size|expert-parallel-size)[ =](\d+)")
_DP_FLAG = re.compile(r"--(?:dp|dp-size|data-parallel-size)[ =](\d+)")


def launched_layout(p: dict) -> tuple[int | None, int]:
    """(the expert-parallel size, the GPUs attention is data-parallel over: 0 for none)
    of the run as its recorded conditions say (enable_attention_dp: over every TP rank),
    else as its recorded SGLang launch command (conditions.serve_command or
    launch_command) sets them: a run's conditions are the fields where they say it, the
    command line it was launched with where they do not. SGLang's --ep/--ep-size N deals
    the experts over N GPUs; --enable-dp-attention runs attention data-parallel over --dp
    ranks, and without --dp over every TP rank (the 0.4 line's server_args.py: `if
    self.enable_dp_attention: self.dp_size = self.tp_size`, sgl-project/sglang
    python/sglang/srt/server_args.py). DP attention over fewer ranks than tp is not what
    dp_ep plans (out of reach, as any DP attention but dp_ep's)."""
    cond = _cond(p)
    tp = p.get("tp", 1) or 1
    if "ep" in cond or "enable_attention_dp" in cond:
        ep = _num(cond.get("ep"))
        return (int(ep) if ep else None), (tp if cond.get("enable_attention_dp") else 0)
    command = " ".join(str(cond.get(k, "")) for k in _LAUNCHES)
    if "sglang" not in command:
        return None, 0
    found, dp = _EP_FLAG.search(command), _DP_FLAG.search(command)
    ranks = (int(dp.group(1)) if dp else tp) if "--enable-dp-attention" in command else 0
    return (int(found.group(1)) if found else None), ranks


def dp_ep(p: dict) -> bool:
    """Data-parallel attention over expert-parallel MoE layers on the run's GPUs, as
    plan-opt's dp_ep plans it: attention DP and the experts split over all tp GPUs."""
    ep, ranks = launched_layout(p)
    tp = p.get("tp", 1) or 1
    return ranks == tp and ep == tp and tp > 1


def parallelism_of(p: dict) -> str:
    """How the run split its MoE model: dp_ep (above); tp_ep, tensor-parallel attention
    with the experts split over expert-parallel ranks (an EP size above 1 and below or at
    tp: TensorRT-LLM's TEP layouts, EP 2/4/8 within TP 8 — the experts' bytes per GPU are
    1/tp either way, whatever TP splits inside them); else tp."""
    if dp_ep(p):
        return "dp_ep"
    tp = p.get("tp", 1) or 1
    ep, ranks = launched_layout(p)
    if ep and 1 < ep <= tp and not ranks and tp % ep == 0:
        return "tp_ep"
    return "tp"


def out_of_reach(p: dict) -> str | None:
    """Why the physics does not model this point (None: it does)."""
    cond = _cond(p)
    kind = kind_of(p)
    if kind is None:
        return "metric"
    scope = out_of_scope(p)
    if scope:
        return scope
    if cond.get("started") is False:
        # The engine refused to start at this configuration (its log's figures, then an
        # error): not a configuration that serves, which is what a plan is.
        return "the engine failed to start"
    if cond.get("serving") in ("aggregated", "disaggregated"):
        return "disaggregation runs (reported apart)"  # bench_validation.py disagg_report; never fitted on
    if kind == "ttft" and ((_num(cond.get("concurrency"), 1) or 1) > 1 or cond.get("scenario") == "Server" or cond.get("request_rate")):
        if closed_loop_wait(p) is None:
            return "queueing"
    if kind == "ttft" and cond.get("enable_prefix_caching"):
        return "prefix-cached"
    if cond.get("split_mode") not in (None, "layer", "row"):
        return "llama.cpp split mode not modelled"
    ep, ranks = launched_layout(p)
    if ((ep or 1) > 1 or ranks) and parallelism_of(p) == "tp":
        return "expert or attention data parallelism"  # TP attention with EP, or a layout not stated: not modelled
    spec, note = cond.get("speculative_decoding"), str(p.get("note", ""))
    if str(spec).lower() not in ("none", "false", "off", "no", "") or (
        spec is None and "MTP" in note and "speculative" in note.lower() and "no mtp" not in note.lower()
    ):
        return "speculative decoding"
    if cond.get("enforce_eager") is True and kind != "kv":
        # Without CUDA graphs (vLLM --enforce-eager, SGLang --disable-cuda-graph) every
        # kernel's launch is on the step's path: a speed plan-opt does not model (its
        # steps are the engines' defaults, graphs captured).
        return "eager mode (no CUDA graphs)"
    if p.get("engine") == "llama.cpp" and str(cond.get("backend", "")).lower() == "vulkan" and kind != "weights":
        # llama.cpp's plans are its CUDA, ROCm and Metal builds (`deploy` runs the
        # server-cuda and server-rocm images): Vulkan's kernels are another backend, 1.8x
        # slower on one RX 6800 XT prompt than ROCm's in the same thread (PR #2059).
        return "llama.cpp Vulkan backend (plans are CUDA, ROCm, Metal)"
    if kind in ("tpot1", "tpot") and batch_of(p) is None:
        return "no batch"
    if measured(p) is None:
        return "unit"
    return None


def served_ttft(p: dict) -> bool:
    """A TTFT measured by a client through the engine's HTTP server (vllm bench serve,
    SGLang's bench_serving, InferenceX, LLMPerf...): it includes the front end
    (request parsing, tokenisation, scheduling, streaming): the physics' request
    overhead (`request_overhead_s`). Session benchmarks without a server (gptSessionBenchmark, trtllm-bench
    latency, llama-bench) measure the prefill alone."""
    if kind_of(p) != "ttft" or p.get("engine") == "llama.cpp":
        return False
    cond = _cond(p)
    bench = str(cond.get("benchmark", "")).lower()
    if "no server" in bench or "session" in bench or ("bench_one_batch" in bench and "server" not in bench):
        return False  # SGLang's bench_one_batch runs the model in-process; bench_one_batch_server does not
    return (
        "concurrency" in cond
        or "max_concurrency" in cond
        or "serve_command" in cond  # the run's server, as launched (vllm serve ...)
        or any(k in bench for k in ("serve", "serving", "llmperf", "genai-perf", "guidellm", "benchmark_serving"))
    )


def kv_wait_s(clients: int, held: int, in_engine_s: float) -> float:
    """Mean wait for a slot in a closed loop of `clients` whose engine runs `held` of
    their requests at once (its KV cache's cap): the engine is never idle, so it
    finishes held / S requests a second (S each one's time inside it), and Little's law
    over the clients, clients = rate × (wait + S), gives wait = S × (clients − held) / held."""
    return in_engine_s * max(0, clients - held) / held


def closed_loop_wait(p: dict, factors=None, catalog=None) -> tuple[object, float] | None:
    """A TTFT measured by `concurrency` clients (no request rate) on an in-flight engine
    whose KV cache holds fewer of their requests than they keep sent: (the evaluation at
    the batch it holds, the mean wait for KV space that every TTFT then includes); None
    when the cache holds them all (an open queueing question, left out of reach) or the
    run is not such a run."""
    cond = _cond(p)
    clients = int(_num(cond.get("concurrency"), 1) or 1)
    if kind_of(p) != "ttft" or clients <= 1 or cond.get("request_rate") or cond.get("scenario") == "Server" or p.get("engine") == "llama.cpp":
        return None
    prompt, output = tokens(p, "prompt_tokens", 128), tokens(p, "output_tokens", 128)
    try:
        d, w, t = deployment_for(p, clients, prompt, output, batching="continuous", factors=factors, catalog=catalog)
        w = dataclasses.replace(w, kv_fill=min(1.0, (prompt + output / 2) / w.context_tokens))
        ev = evaluate(d, w, t, with_remedies=False)
        held = admitted(ev, clients) if ev.valid else clients
        if held >= clients:
            return None
        d, w, t = deployment_for(p, held, prompt, output, batching="continuous", factors=factors, catalog=catalog)
        w = dataclasses.replace(w, kv_fill=min(1.0, (prompt + output / 2) / w.context_tokens))
        ev = evaluate(d, w, t, with_remedies=False)
    except (InputError, KeyError, ValueError):
        return None
    if not ev.valid:
        return None
    in_engine_s = ev.ttft_s + (output - 1) * ev.decode.tpot_s
    return ev, kv_wait_s(clients, held, in_engine_s)


def _saturated_batch(p: dict, prompt: int, output: int, factors, catalog) -> int:
    """A throughput run at maximum load, with no batch given: as many sequences as the
    KV cache holds at their average length, up to the engine's max_num_seqs."""
    d, w, t = deployment_for(p, 1, prompt, output, factors=factors, catalog=catalog)
    w = dataclasses.replace(w, kv_fill=min(1.0, (prompt + output / 2) / w.context_tokens))
    ev = evaluate(d, w, t, with_remedies=False)
    if not ev.valid:
        return 0
    return min(ev.memory.max_batch, d.engine.max_num_seqs)


def too_big(ev) -> bool:
    """The weights alone outgrow the GPU as the run is recorded: a mislabelled run (a
    recipe's "TP 1" for a 410 GB checkpoint on a 288 GB GPU), not a prediction to score.
    (A run that only just misses the physics' whole budget, KV and activations with it,
    stays: it ran, and the budget is what is off.)"""
    return ev.valid and ev.memory.weights_bytes > ev.memory.device_bytes


def admitted(ev, batch: int) -> int:
    """Sequences an in-flight engine runs at once when a benchmark keeps `batch` requests
    in flight: as many as its KV cache holds at their mean length (vLLM, SGLang and
    TensorRT-LLM admit a request only with blocks for it; the others queue). A batch the
    physics cannot hold one sequence of stays as recorded (the run ran: the budget is off)."""
    return min(batch, ev.memory.max_batch) if ev.memory.max_batch >= 1 else batch


def does_not_fit(p: dict, catalog=None) -> bool:
    """Whether predict's None for p is too_big's."""
    try:
        d, w, t = deployment_for(p, 1, 16, 16, catalog=catalog)
        return too_big(evaluate(d, w, t, with_remedies=False))
    except (InputError, KeyError, ValueError):
        return False


def predict(p: dict, factors: dict | None = None, catalog=None) -> float | None:
    """plan-opt's figure for point p in the unit of `measured`; None when the point is
    out of reach (model, GPU or format not in the catalog, or the physics refuses)."""
    if not p.get("gpu") or out_of_reach(p):
        return None
    cond = _cond(p)
    kind = kind_of(p)
    try:
        if kind == "weights":
            from solver.physics.weights import per_gpu_weights_bytes

            d, _, _ = deployment_for(p, 1, 16, 16, factors=factors, catalog=catalog)
            return per_gpu_weights_bytes(d) / GiB  # vLLM prints "GB" for figures in GiB
        if kind == "kv":
            ctx = tokens(p, "max_model_len", 4096)
            d, w, t = deployment_for(p, 1, min(ctx - 1, 512), 1, context=ctx, factors=factors, catalog=catalog)
            if cond.get("block_size"):
                d = d.replace(engine=dataclasses.replace(d.engine, block_size_tokens=cond["block_size"]))
            ev = evaluate(d, w, t, with_remedies=False)
            return float(ev.memory.kv_capacity_tokens) if ev.valid and not too_big(ev) else None
        prompt = tokens(p, "prompt_tokens", 128)
        output = tokens(p, "output_tokens", 128)
        waited = closed_loop_wait(p, factors, catalog) if kind == "ttft" else None
        if waited:  # KV caps the batch: each request waits for space, then is prefilled under load
            ev, wait_s = waited
            return (ev.ttft_s + wait_s) * 1e3
        if kind == "ttft":
            d, w, t = deployment_for(p, 1, prompt, 1, factors=factors, catalog=catalog)
            if not served_ttft(p):  # measured without the server: no front end in it
                d = d.replace(factors=dataclasses.replace(d.factors, request_overhead_s=0.0))
            ev = evaluate(d, w, t, with_remedies=False)
            return ev.prefill.ttft_s * 1e3 if ev.valid and not too_big(ev) else None
        batch = batch_of(p) or _saturated_batch(p, prompt, output, factors, catalog)
        if not batch:
            return None
        flight = in_flight(p)
        d, w, t = deployment_for(p, batch, prompt, output, batching="continuous" if flight else "isolated", factors=factors, catalog=catalog)
        # Sequences hold their prompt and, on average, half their output while decoding.
        w = dataclasses.replace(w, kv_fill=min(1.0, (prompt + output / 2) / w.context_tokens))
        ev = evaluate(d, w, t, with_remedies=False)
        if not ev.valid or too_big(ev):
            return None
        held = admitted(ev, batch) if flight else batch
        if held < batch:  # the rest of the clients' requests wait in the engine's queue
            batch = held
            d, w, t = deployment_for(p, batch, prompt, output, batching="continuous", factors=factors, catalog=catalog)
            w = dataclasses.replace(w, kv_fill=min(1.0, (prompt + output / 2) / w.context_tokens))
            ev = evaluate(d, w, t, with_remedies=False)
        if kind in ("tpot1", "tpot"):
            return ev.decode.tpot_s * 1e3
        replicas = _num(cond.get("replicas"), 1) or 1
        # A batch's wall time: its prompts prefilled (one pass over batch × prompt tokens,
        # compute-bound), then `output` decode steps — or, in flight, prefill inside every step.
        if flight:
            wall_s = output * ev.decode.tpot_s
        else:
            wall_s = ev.prefill.compute_time_s * batch + output * ev.decode.tpot_s
        # a run of a fixed number of requests ends with fewer of them in flight
        total = batch * replicas * output / wall_s * drain_share(p, ev.decode.coefficients, batch)
        if p["measured"]["unit"] == "tokens_per_s_per_gpu":
            return total / (d.tp * d.pp * replicas)
        return total
    except (InputError, KeyError, ValueError, ZeroDivisionError):
        return None
