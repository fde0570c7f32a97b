"""Ask NVIDIA aiconfigurator (AIC) for its predictions on our validation points.

Run with the separate venv that has aiconfigurator installed (never the project env):

    python3 -m venv /tmp/aicvenv && /tmp/aicvenv/bin/pip install aiconfigurator==0.12.0 pyyaml
    /tmp/aicvenv/bin/python bench/aiconfigurator_predictions.py

Reads tests/validation/points.yaml, and for each point AIC covers (engine -> AIC backend,
GPU -> AIC system, model -> an AIC-supported architecture, precision -> AIC quant modes)
calls aiconfigurator.cli.api.cli_estimate (the SDK behind `aiconfigurator cli estimate`)
and writes tests/validation/aiconfigurator.yaml. Points it cannot cover are listed under
`skipped` with the reason.

Mapping rules (one line each, so the comparison stays honest):
  * engine vllm / trtllm / sglang -> the AIC backend of that name; mlperf / llama.cpp / others -> skipped.
  * GPUs h100-sxm, h200, a100-80gb, b200, gb200, l40s -> AIC systems with a perf database; a100-pcie /
    h100-pcie -> skipped (AIC 0.12.0 lists the system but ships no database for it); others -> skipped.
  * TRT-LLM v0.5/v0.6 numbers came from static batching (gptSessionBenchmark) -> AIC
    'static' mode; serving benchmarks (vLLM benchmark_serving, trtllm-bench) -> AIC 'agg'
    (in-flight batching) with batch_size = concurrency.
  * Max-load throughput points without a fixed batch -> agg sweep over batch sizes 1..4096, best
    tokens/s among those that AIC says fit in the KV cache (capped at the run's num_requests).
  * Request-rate runs without a fixed concurrency (TTFT/TPOT), speculative decoding (MTP: acceptance
    unknown), attention-DP runs and multi-replica runs -> skipped.
  * Prompt/output lengths given as strings ("~1024 (real dataset)", "random, up to 1024") -> skipped
    (AIC takes one fixed ISL/OSL); only plain numbers are used, for batch/concurrency too.
  * Throughput in the point's measured unit: tokens_per_s_per_gpu -> AIC tokens/s of the instance
    divided by its GPUs (tokens_per_second_per_gpu); tokens_per_s -> the whole TP instance.
  * Model names go through SAME_AS of bench/validation_points.py (HF id -> catalog name) first.
  * Models AIC bundles (Meta-Llama-3.1-8B/70B/405B, DeepSeek-R1, Qwen3 8B/32B/30B-A3B/235B-A22B)
    are used by HF id. Mixtral-8x7B/8x22B: AIC ships their config.json in model_configs but not in
    its default list, so that file is passed as a local model path.
  * Llama-2, Mistral-7B-v0.3 (the Llama architecture, no sliding window) and Qwen2/2.5 are
    AIC-supported architectures (LlamaForCausalLM / Qwen2ForCausalLM -> AIC family LLAMA) but not
    bundled; HF is not reachable here, so a config.json is written from catalogs/models.yaml and
    passed as a local model path (AIC's documented option).
  * fp16 is modelled as bfloat16 (AIC has no fp16 GEMM mode; same tensor-core rate).
  * fp4 -> nvfp4 GEMM/MoE on Blackwell (b200/gb200) only; kv dtype not stated -> fp8 (as for fp8).
  * DeepSeek-R1 fp8 is its native block-scaled FP8 -> fp8_block GEMM/MoE; its MLA FMHA mode is left
    to AIC (no fp8 context-MLA data). MoE models: moe_ep = conditions.ep when given (moe_tp = tp/ep),
    else moe_tp = tp (no expert parallelism, the engines' default), noted in `how`.
  * int4-awq / int4-gptq / other formats -> skipped.
"""

from __future__ import annotations

import ast
import datetime
import json
import logging
import os
import sys
import tempfile
import warnings
from pathlib import Path

import yaml

warnings.filterwarnings("ignore")
os.environ.setdefault("AICONFIGURATOR_LOG_LEVEL", "ERROR")

ROOT = Path(__file__).resolve().parent.parent
POINTS = ROOT / "tests" / "validation" / "points.yaml"
MODELS = ROOT / "catalogs" / "models.yaml"
OUT = ROOT / "tests" / "validation" / "aiconfigurator.yaml"
VALIDATION_POINTS = ROOT / "bench" / "validation_points.py"

METRICS = {"ttft", "decode_tpot_batch1", "decode_tpot_batched", "throughput"}
GPU_TO_SYSTEM = {"h100-sxm": "h100_sxm", "h200": "h200_sxm", "a100-80gb": "a100_sxm", "b200": "b200_sxm", "gb200": "gb200", "l40s": "l40s"}
NO_DATABASE = {"a100-pcie-80gb": "a100_pcie", "h100-pcie": "h100_pcie"}  # system listed, no perf data
BLACKWELL = {"b200_sxm", "gb200"}
ENGINE_TO_BACKEND = {"vllm": "vllm", "trtllm": "trtllm", "sglang": "sglang"}


def same_as() -> dict[str, str]:
    """SAME_AS of bench/validation_points.py, read as a literal (that module needs the project env)."""
    for node in ast.parse(VALIDATION_POINTS.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SAME_AS" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


# our model name -> (AIC model path or None, catalog entry for a local config, HF architecture)
BUNDLED = {
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
    "meta-llama/Meta-Llama-3.1-8B": "meta-llama/Meta-Llama-3.1-8B",
    # Llama-3.3-70B has exactly the Llama-3.1-70B shape (catalogs/models.yaml).
    "llama-3.3-70b": "meta-llama/Meta-Llama-3.1-70B",
    "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
    "llama-3.1-405b": "meta-llama/Meta-Llama-3.1-405B",
    "deepseek-r1": "deepseek-ai/DeepSeek-R1",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
}
# Config files AIC ships (aiconfigurator_core/model_configs) for models outside its default list.
AIC_CONFIG = {
    "mixtral-8x7b": "mistralai--Mixtral-8x7B-v0.1_config.json",
    "mixtral-8x22b": "mistralai--Mixtral-8x22B-v0.1_config.json",
}
MOE = {"deepseek-r1", "qwen3-30b-a3b", "qwen3-235b-a22b", "mixtral-8x7b", "mixtral-8x22b"}
LOCAL = {
    # point model -> (catalog name with identical shape, architecture)
    "meta-llama/Llama-2-7b-hf": ("llama-2-7b", "LlamaForCausalLM"),
    "meta-llama/Llama-2-70b-hf": ("llama-2-70b", "LlamaForCausalLM"),
    "meta-llama/Llama-2-70b-chat-hf": ("llama-2-70b", "LlamaForCausalLM"),
    # Qwen2-7B(-Instruct) and Qwen2-72B have the Qwen2.5-7B / -72B shapes.
    "Qwen/Qwen2-7B-Instruct": ("qwen2.5-7b", "Qwen2ForCausalLM"),
    "qwen2.5-7b": ("qwen2.5-7b", "Qwen2ForCausalLM"),
    "qwen2.5-32b": ("qwen2.5-32b", "Qwen2ForCausalLM"),
    "Qwen/Qwen2-72B": ("qwen2.5-72b", "Qwen2ForCausalLM"),
    "llama-2-7b": ("llama-2-7b", "LlamaForCausalLM"),
    "llama-2-70b": ("llama-2-70b", "LlamaForCausalLM"),
    "qwen2.5-72b": ("qwen2.5-72b", "Qwen2ForCausalLM"),
    # Mistral-7B-v0.3: Llama architecture (GQA, no sliding window), shape from the catalog.
    "mistral-7b": ("mistral-7b", "LlamaForCausalLM"),
}

MAX_LOAD_BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096]


def local_model_dir(catalog_name: str, arch: str, tmp: Path) -> Path:
    cat = {m["name"]: m for m in yaml.safe_load(MODELS.read_text())["models"]}
    m = cat[catalog_name]
    d = tmp / f"{catalog_name}-{arch}"
    d.mkdir(parents=True, exist_ok=True)
    cfg = {
        "architectures": [arch],
        "model_type": "qwen2" if arch.startswith("Qwen2") else "llama",
        "hidden_size": m["hidden_size"],
        "intermediate_size": m["intermediate_size"],
        "num_attention_heads": m["num_attention_heads"],
        "num_hidden_layers": m["num_layers"],
        "num_key_value_heads": m["num_kv_heads"],
        "head_dim": m["head_dim"],
        "vocab_size": m["vocab_size"],
        "max_position_embeddings": m["max_context_tokens"],
        "tie_word_embeddings": bool(m["tie_word_embeddings"]),
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6 if arch.startswith("Qwen2") else 1e-5,
        "torch_dtype": "bfloat16",
    }
    (d / "config.json").write_text(json.dumps(cfg, indent=1))
    return d


def quant_modes(point: dict, system: str, model: str) -> tuple[dict, str] | str:
    w = (point.get("weights") or "").lower()
    kv = (point.get("kv_cache") or "").lower() if point.get("kv_cache") else None
    if w == "fp4":
        if system not in BLACKWELL:
            return f"fp4 weights on {system}: AIC's nvfp4 GEMM is Blackwell-only"
        kvq = "fp8" if kv in (None, "fp8") else "bfloat16"
        note = "" if kv else " (kv dtype not stated: fp8 assumed)"
        return (
            {"gemm_quant_mode": "nvfp4", "moe_quant_mode": "nvfp4", "kvcache_quant_mode": kvq, "fmha_quant_mode": kvq},
            f"nvfp4 gemm, {kvq} kv{note}",
        )
    if w == "fp8" and model == "deepseek-r1":
        if system == "a100_sxm":
            return "A100 (SM80) has no FP8 in AIC"
        kvq = "fp8" if kv in (None, "fp8") else "bfloat16"
        note = "" if kv else " (kv dtype not stated: fp8 assumed)"
        return (
            {"gemm_quant_mode": "fp8_block", "moe_quant_mode": "fp8_block", "kvcache_quant_mode": kvq},
            f"fp8_block gemm/moe (DeepSeek native FP8), {kvq} kv{note}, fmha auto",
        )
    if w == "fp8":
        if system == "a100_sxm":
            return "A100 (SM80) has no FP8 in AIC"
        # KV dtype not stated -> fp8, as the NVIDIA FP8 checkpoints / TRT-LLM FP8 builds use it
        # (AIC's own nvidia/Llama-3.1-70B-Instruct-FP8 hf_quant_config has kv_cache_quant_algo FP8).
        kvq = "fp8" if kv in (None, "fp8") else "bfloat16"
        note = "" if kv else " (kv dtype not stated: fp8 assumed)"
        return ({"gemm_quant_mode": "fp8", "moe_quant_mode": "fp8", "kvcache_quant_mode": kvq, "fmha_quant_mode": kvq}, f"fp8 gemm, {kvq} kv{note}")
    if w in ("bf16", "fp16"):
        note = " (fp16 modelled as bf16)" if w == "fp16" else ""
        return (
            {"gemm_quant_mode": "bfloat16", "moe_quant_mode": "bfloat16", "kvcache_quant_mode": "bfloat16", "fmha_quant_mode": "bfloat16"},
            f"bf16{note}",
        )
    return f"precision {w!r} not mapped"


def is_static_batching(point: dict) -> bool:
    ev = str(point.get("conditions", {}).get("engine_version", ""))
    return point.get("engine") == "trtllm" and ("v0.5" in ev or "v0.6" in ev or "static" in ev)


def per_gpu_unit(point: dict) -> bool:
    """True when the measured throughput is per GPU (its unit says so), else per TP instance."""
    return (point.get("measured") or {}).get("unit") == "tokens_per_s_per_gpu"


def as_int(v) -> int | None:
    """A condition's plain number; strings ("~1024 (real dataset)") and booleans are not numbers."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return int(v)


def data_sources(res) -> str:
    src = res.per_ops_source or {}
    kinds: dict[str, int] = {}
    for step in src.values():
        if isinstance(step, dict):
            for v in step.values():
                kinds[v] = kinds.get(v, 0) + 1
    if not kinds:
        return "not reported by AIC in static mode"
    return ",".join(f"{k}:{n}" for k, n in sorted(kinds.items()))


def aic_config_dir(model: str, tmp: Path) -> Path:
    import aiconfigurator_core

    src = Path(aiconfigurator_core.__file__).parent / "model_configs" / AIC_CONFIG[model]
    d = tmp / f"aic-{model}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(src.read_text())
    return d


def predict(point: dict, tmp: Path, estimate, same: dict[str, str]) -> dict | str:
    metric = point["metric"]
    if metric not in METRICS:
        return f"metric {metric} is not a latency/throughput metric"
    engine = point.get("engine")
    if engine not in ENGINE_TO_BACKEND:
        return f"engine {engine!r} is not an AIC backend (trtllm/vllm/sglang only)" + (
            "; MLPerf OpenOrca lengths vary per request and the Server scenario needs a queueing model" if engine == "mlperf" else ""
        )
    backend = ENGINE_TO_BACKEND[engine]
    gpu = point.get("gpu")
    if gpu in NO_DATABASE:
        return f"gpu {gpu!r}: AIC 0.12.0 lists system {NO_DATABASE[gpu]} but ships no perf database for it"
    system = GPU_TO_SYSTEM.get(gpu)
    if not system:
        return f"gpu {gpu!r} has no AIC system"
    c = point.get("conditions", {}) or {}
    if c.get("speculative_decoding"):
        return f"speculative decoding ({c['speculative_decoding']}): acceptance rate unknown"
    if c.get("enable_attention_dp"):
        return "attention-DP run: not mapped (AIC batch per DP rank vs the run's concurrency not established here)"
    if c.get("replicas"):
        return "multi-replica run: not mapped"
    model = same.get(point["model"], point["model"])
    if model in BUNDLED:
        model_path, model_desc = BUNDLED[model], BUNDLED[model]
    elif model in AIC_CONFIG:
        model_path = str(aic_config_dir(model, tmp))
        model_desc = f"local copy of AIC's bundled {AIC_CONFIG[model]}"
    elif model in LOCAL:
        cname, arch = LOCAL[model]
        model_path = str(local_model_dir(cname, arch, tmp))
        model_desc = f"local config.json ({arch}, {cname} shape from catalogs/models.yaml)"
    else:
        return f"model {point['model']!r} not bundled with AIC and no architecture mapping here"
    q = quant_modes(point, system, model)
    if isinstance(q, str):
        return q
    qkw, qdesc = q
    if model not in MOE:
        qkw.pop("moe_quant_mode", None)

    tp = int(point.get("tp") or 1)
    for key in ("prompt_tokens", "output_tokens"):
        if c.get(key) is not None and as_int(c.get(key)) is None:
            return f"{key} not a fixed number ({str(c[key])[:60]!r}); AIC takes one ISL/OSL"
    isl = as_int(c.get("prompt_tokens")) or 0
    osl = as_int(c.get("output_tokens")) or 1
    if isl <= 0:
        return "prompt length unknown"
    conc = as_int(c.get("concurrency")) or as_int(c.get("batch"))
    kw = dict(model_path=model_path, system_name=system, backend_name=backend, tp_size=tp, isl=isl, osl=osl, **qkw)
    moe_desc = ""
    if model in MOE:
        ep = as_int(c.get("ep")) or 1
        if tp % ep:
            return f"ep {ep} does not divide tp {tp}"
        kw.update(moe_tp_size=tp // ep, moe_ep_size=ep)
        moe_desc = f", moe_tp={tp // ep}, moe_ep={ep}" + ("" if c.get("ep") else " (ep not stated: none assumed)")
    if backend == "vllm" and isinstance(c.get("gpu_memory_utilization"), (int, float)):
        kw["free_gpu_memory_fraction"] = float(c["gpu_memory_utilization"])

    static = is_static_batching(point)
    mode = "static" if static else "agg"
    if metric == "ttft" and static:
        kw.update(batch_size=as_int(c.get("batch")) or 1, osl=max(1, osl))
    elif metric == "decode_tpot_batch1":
        kw.update(batch_size=1)
    elif metric in ("decode_tpot_batched", "ttft", "throughput") and conc:
        kw.update(batch_size=int(conc))
    elif metric == "throughput":
        mode = "agg-sweep"
    elif c.get("request_rate"):
        return f"request-rate run ({str(c['request_rate'])[:30]}) without a fixed concurrency; AIC agg needs a batch size"
    else:
        return "batch/concurrency unknown"

    if mode == "agg-sweep":
        kw["free_gpu_memory_fraction"] = 0.9  # trtllm-bench kv_cache_free_gpu_mem_fraction 0.90-0.95
        cap = as_int(c.get("num_requests"))
        batches = [b for b in MAX_LOAD_BATCHES if not cap or b <= cap] or [cap]
        best = None
        for bs in batches:
            try:
                r = estimate(mode="agg", batch_size=bs, **kw)
            except Exception as e:  # batch too large for memory etc.
                logging.debug("bs %d failed: %s", bs, e)
                continue
            if r.kv_cache_warning:
                break  # KV need grows with the batch: no larger batch fits either
            if best is None or r.tokens_per_second > best.tokens_per_second:
                best = r
        if best is None:
            return "no batch size fits in AIC's KV-cache estimate"
        res = best
        how_mode = (
            f"agg, max-load: best of batch_size sweep {batches[0]}..{batches[-1]}"
            f"{' (capped at num_requests)' if cap and batches[-1] < MAX_LOAD_BATCHES[-1] else ''}"
            f" that fits KV (free_gpu_memory_fraction 0.9) -> bs={res.batch_size}"
        )
    else:
        res = estimate(mode=mode, **kw)
        how_mode = f"{mode}, batch_size={kw['batch_size']}"
        if mode == "agg" and kw["batch_size"] == 1 and metric in ("ttft", "decode_tpot_batch1"):
            # At concurrency 1 there is no in-flight batching; AIC's agg TTFT adds its IFB
            # scheduling term, so also record the single-pass (static) value for reference.
            st = estimate(mode="static", **kw)
            how_mode += f" (static mode for reference: ttft {st.ttft:.2f} ms, tpot {st.tpot:.3f} ms)"

    if metric == "ttft":
        value, unit = res.ttft, "ms"
    elif metric.startswith("decode_tpot"):
        value, unit = res.tpot, "ms_per_token"
    else:
        per_gpu = per_gpu_unit(point)
        value = res.tokens_per_second_per_gpu if per_gpu else res.tokens_per_second
        unit = "tokens_per_s_per_gpu" if per_gpu else "tokens_per_s"
        how_mode += ", output tokens/s" + ("/gpu" if per_gpu else " (whole TP instance)")

    extra = f", free_gpu_memory_fraction={kw['free_gpu_memory_fraction']}" if "free_gpu_memory_fraction" in kw and mode != "agg-sweep" else ""
    warn = f"; AIC warning: {res.kv_cache_warning.splitlines()[0][:120]}" if res.kv_cache_warning else ""
    how = (
        f"cli_estimate(model={model_desc}, system={system}, backend={backend} {res.backend_version}, "
        f"mode={how_mode}, tp={tp}{moe_desc}, isl={kw['isl']}, osl={kw['osl']}, {qdesc}{extra}, database_mode=SILICON); "
        f"op data sources {data_sources(res)}{warn}"
    )
    return {"value": round(float(value), 3), "unit": unit, "how": how}


def main() -> int:
    from aiconfigurator.cli.api import cli_estimate

    logging.getLogger("aiconfigurator").setLevel(logging.ERROR)
    pts = yaml.safe_load(POINTS.read_text())["points"]
    same = same_as()
    out, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="aic_models_") as t:
        tmp = Path(t)
        for p in pts:
            if p["metric"] not in METRICS:
                continue  # kv_cache_tokens / weights_bytes: not a prediction this comparison covers
            try:
                r = predict(p, tmp, cli_estimate, same)
            except Exception as e:
                r = f"AIC error: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
            if isinstance(r, str):
                skipped.append({"id": p["id"], "reason": r})
                print(f"SKIP {p['id']}: {r}", file=sys.stderr)
                continue
            out.append(
                {
                    "id": p["id"],
                    "metric": p["metric"],
                    "predicted": {"value": r["value"], "unit": r["unit"]},
                    "how": r["how"],
                }
            )
            m = p["measured"]
            print(f"OK   {p['id']}: predicted {r['value']} {r['unit']} vs measured {m['value']} {m['unit']}", file=sys.stderr)
    from importlib.metadata import version

    doc = {
        "tool": f"aiconfigurator {version('aiconfigurator')}",
        "generated": f"{datetime.date.today().isoformat()} by bench/aiconfigurator_predictions.py",
        "points": out,
        "skipped": skipped,
    }
    OUT.write_text(yaml.safe_dump(doc, sort_keys=False, width=4096, allow_unicode=True))
    print(f"wrote {OUT} ({len(out)} points, {len(skipped)} skipped)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
