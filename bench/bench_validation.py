"""plan-opt's predictions against the measured points of tests/validation/points.yaml:
per metric, the median and worst absolute percentage error, uncalibrated and with
leave-one-out calibration (bandwidth efficiency + per-step overhead for decode,
compute efficiency for prefill, each fitted on the other points of the same engine
and memory kind — HBM, GDDR or unified — as a user would calibrate their own stack).

    python bench/bench_validation.py [--verbose]

Targets (issue 5): weights memory within 2 %; vLLM KV capacity within 5 %; batch-1
decode TPOT median within 15 % uncalibrated and 10 % calibrated; TTFT median within 15 %.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from solver.calibrate import fit_decode, fit_prefill  # noqa: E402
from solver.catalog import default_catalog  # noqa: E402
from solver.errors import InputError  # noqa: E402
from solver.evaluate import evaluate  # noqa: E402
from solver.evaluate_input import parse_input, resolve  # noqa: E402

GiB = 2**30
# Same architecture under another name (config.json dims identical).
SAME_AS = {
    "meta-llama/Meta-Llama-3-8B": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3-70B": "llama-3.1-70b",
    "Qwen/Qwen2-7B-Instruct": "qwen2.5-7b",
    "Qwen/Qwen2-72B": "qwen2.5-72b",
}
ENGINE = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm", "mlperf": "trtllm", "llama.cpp": "llama.cpp"}


def load_points():
    return yaml.safe_load((ROOT / "tests" / "validation" / "points.yaml").read_text())["points"]


def deployment_for(p, batch: int, prompt: int, output: int, context: int | None = None, batching: str = "isolated"):
    cond = p.get("conditions") or {}
    model = SAME_AS.get(p.get("model"), p.get("model"))
    data = {
        "model": model,
        "engine": ENGINE.get(p.get("engine"), "vllm"),
        "hardware": {"gpu": p["gpu"], "tp": p.get("tp", 1)},
        "precision": {"weights": p.get("weights", "bf16"), "kv_cache": p.get("kv_cache") or "bf16"},
        "workload": {"users": max(1, batch), "prompt_tokens": max(1, prompt), "output_tokens": max(1, output), "batching": batching},
    }
    if context:
        data["workload"]["context_tokens"] = context
    if cond.get("gpu_memory_utilization"):
        data["overrides"] = {"factors": {"memory_utilization": cond["gpu_memory_utilization"]}}
    return resolve(parse_input(data), default_catalog())


def predict(p, factors=None):
    """(predicted, measured, kind) in one unit, or None when the point is out of reach."""
    if not p.get("gpu"):
        return None
    cond = p.get("conditions") or {}
    m = p["measured"]
    metric = p["metric"]
    try:
        if metric == "weights_bytes":
            d, w, t = deployment_for(p, 1, 16, 16)
            from solver.physics.memory import per_gpu_weights_bytes

            # vLLM prints "GB" for figures it computes in GiB (bytes / 2^30).
            return per_gpu_weights_bytes(d) / GiB, m["value"], "weights"
        if metric == "kv_cache_tokens":
            ctx = cond.get("max_model_len") or 4096
            d, w, t = deployment_for(p, 1, min(ctx - 1, 512), 1, context=ctx)
            if cond.get("block_size"):
                d = d.replace(engine=dataclasses.replace(d.engine, block_size_tokens=cond["block_size"]))
            ev = evaluate(d, w, t, with_remedies=False)
            if not ev.valid:
                return None
            value = m["value"] * (cond.get("block_size", 16) if m["unit"] == "blocks" else 1)
            return float(ev.memory.kv_capacity_tokens), value, "kv"
        prompt = cond.get("prompt_tokens", 128) or 1
        output = cond.get("output_tokens", 128) or 1
        if metric in ("decode_tpot_batch1", "decode_tpot_batched", "throughput"):
            batch = cond.get("batch") or cond.get("concurrency")
            if not batch:
                return None
            replicas = cond.get("replicas", 1)
            per_replica = max(1, round(batch / replicas)) if metric != "throughput" or "replicas" not in cond else batch
            # Sequences hold their prompt and, on average, half their output while decoding.
            # Served under concurrency by an engine with in-flight batching (vLLM, and
            # TensorRT-LLM from v0.7 / MLPerf), prompts are prefilled inside the steps.
            version = cond.get("engine_version", "")
            in_flight = metric == "decode_tpot_batched" or (metric == "throughput" and "static" not in version and "v0.5" not in version)
            d, w, t = deployment_for(p, per_replica, prompt, output, batching="continuous" if in_flight else "isolated")
            if factors:
                d = d.replace(factors=dataclasses.replace(d.factors, **factors))
            w = dataclasses.replace(w, kv_fill=(prompt + output / 2) / w.context_tokens)
            ev = evaluate(d, w, t, with_remedies=False)
            if not ev.valid:
                return None
            tpot_ms = ev.decode.tpot_s * 1e3
            if metric == "throughput":
                if m["unit"] != "tokens_per_s":
                    return None
                # A batch's wall time: its prompts prefilled (compute-bound, one pass over
                # batch × prompt tokens), then `output` decode steps at the average context.
                if in_flight:  # prefill already inside every step
                    wall_s = output * ev.decode.tpot_s
                else:
                    prefill_s = ev.prefill.flops * per_replica / ev.prefill.effective_flops_per_s
                    wall_s = prefill_s + output * ev.decode.tpot_s
                predicted = per_replica * replicas * output / wall_s
                return predicted, m["value"], "throughput"
            measured = m["value"] if m["unit"] == "ms_per_token" else 1e3 / m["value"]
            return tpot_ms, measured, "tpot1" if metric == "decode_tpot_batch1" else "tpot"
        if metric == "ttft":
            if (cond.get("concurrency") or 1) > 1 or cond.get("scenario") == "Server":
                return None  # queueing: out of the model's reach (one prompt at a time)
            if cond.get("enable_prefix_caching"):
                return None  # a prefix-cache hit skips prefill work: not a prefill measurement
            d, w, t = deployment_for(p, 1, prompt, 1)
            if factors:
                d = d.replace(factors=dataclasses.replace(d.factors, **factors))
            ev = evaluate(d, w, t, with_remedies=False)
            if not ev.valid:
                return None
            measured = m["value"] if m["unit"] == "ms" else prompt / m["value"] * 1e3
            return ev.prefill.ttft_s * 1e3, measured, "ttft"
    except InputError:
        return None
    return None


def _decode_xy(p):
    """x = bytes read / peak bandwidth, y = measured TPOT − communication, seconds."""
    got = predict(p)
    if not got or got[2] != "tpot1" or got[1] is None:
        return None
    cond = p.get("conditions") or {}
    batch = cond.get("batch") or cond.get("concurrency")
    replicas = cond.get("replicas", 1)
    per_replica = max(1, round(batch / replicas)) if p["metric"] != "throughput" or "replicas" not in cond else batch
    prompt, output = cond.get("prompt_tokens", 128) or 1, cond.get("output_tokens", 128) or 1
    d, w, t = deployment_for(p, per_replica, prompt, output)
    w = dataclasses.replace(w, kv_fill=(prompt + output / 2) / w.context_tokens)
    dec = evaluate(d, w, t, with_remedies=False).decode
    if dec.bound != "bandwidth":
        return None
    return (dec.weight_bytes_read + dec.kv_bytes_read) / dec.bandwidth_bytes_per_s, got[1] / 1e3 - dec.comm_time_s


def group(p) -> tuple[str, str]:
    """Calibration group: the engine and the memory kind (HBM, GDDR, unified), as a
    user calibrating their own stack would fit it."""
    try:
        kind = default_catalog().device(p["gpu"]).memory_kind if p.get("gpu") else "?"
    except InputError:
        kind = "?"
    return ENGINE.get(p.get("engine"), "vllm"), kind


def loo_decode_factors(points, skip):
    xs, ys = [], []
    for q in points:
        if q is skip or group(q) != group(skip):
            continue
        xy = _decode_xy(q)
        if xy:
            xs.append(xy[0])
            ys.append(xy[1])
    if len(xs) < 2:
        return None
    return fit_decode(xs, ys)


def loo_ttft_factors(points, skip):
    xs, ys = [], []
    for q in points:
        if q is skip or q["metric"] != "ttft" or group(q) != group(skip):
            continue
        got = predict(q)
        if not got:
            continue
        cond = q.get("conditions") or {}
        d, w, t = deployment_for(q, 1, cond.get("prompt_tokens", 128) or 1, 1)
        pre = evaluate(d, w, t, with_remedies=False).prefill
        if pre.bound != "compute":
            continue
        xs.append(pre.flops / (pre.tp * pre.peak_flops_per_s))
        ys.append(got[1] / 1e3 - pre.comm_time_s)
    if len(xs) < 2:
        return None
    return fit_prefill(xs, ys)


def peer_comparison(points, ours: dict[str, tuple[float, float, str]], calibrated: dict[str, float]) -> None:
    """aiconfigurator's recorded predictions (tests/validation/aiconfigurator.yaml,
    made by bench/aiconfigurator_predictions.py) against ours on the same points."""
    path = ROOT / "tests" / "validation" / "aiconfigurator.yaml"
    if not path.exists():
        print("aiconfigurator: no recorded predictions (run bench/aiconfigurator_predictions.py in its own venv)")
        return
    peer = yaml.safe_load(path.read_text())
    by_kind: dict[str, list[tuple[float, float, float | None]]] = {}
    for q in peer.get("points", []):
        mine = ours.get(q["id"])
        if not mine:
            continue
        pred_ours, measured, kind = mine
        v, unit = q["predicted"]["value"], q["predicted"]["unit"]
        if kind == "throughput":
            theirs = v if unit == "tokens_per_s" else None
        elif kind == "ttft":
            theirs = v if unit == "ms" else None
        else:
            theirs = v if unit == "ms_per_token" else (1e3 / v if unit == "tokens_per_s" else None)
        if theirs is None:
            continue
        cal = calibrated.get(q["id"])
        by_kind.setdefault(kind, []).append(
            (abs(pred_ours - measured) / measured, abs(theirs - measured) / measured, abs(cal - measured) / measured if cal else None)
        )
    print(f"beside {peer.get('tool', 'aiconfigurator')} on the points it covers (median APE):")
    print(f"  {'metric':<12} {'n':>3}  {'plan-opt':>9} {'plan-opt LOO':>13} {'aiconfigurator':>15}")
    for kind, rows in sorted(by_kind.items()):
        o = statistics.median(a for a, _, _ in rows)
        t = statistics.median(b for _, b, _ in rows)
        cs = [c for _, _, c in rows if c is not None]
        c = f"{statistics.median(cs):12.1%}" if cs else "           —"
        print(f"  {kind:<12} {len(rows):>3}  {o:8.1%} {c:>13} {t:14.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    points = load_points()
    ours: dict[str, tuple[float, float, str]] = {}
    calibrated: dict[str, float] = {}
    rows: dict[str, list[tuple[float, float | None]]] = {}
    skipped = 0
    for p in points:
        got = predict(p)
        if not got or got[1] is None:
            skipped += 1
            continue
        pred, meas, kind = got
        ours[p["id"]] = got
        cal = None
        if kind in ("tpot", "tpot1", "throughput"):
            f = loo_decode_factors(points, p)
            g = predict(p, f) if f else None
            cal = g[0] if g else None
        elif kind == "ttft":
            f = loo_ttft_factors(points, p)
            g = predict(p, f) if f else None
            cal = g[0] if g else None
        ape = abs(pred - meas) / meas
        cape = abs(cal - meas) / meas if cal is not None else None
        if cal is not None:
            calibrated[p["id"]] = cal
        rows.setdefault(kind, []).append((ape, cape))
        if args.verbose:
            c = f"{cal:10.2f}" if cal is not None else "         —"
            print(f"  {p['id'][:52]:<52} {kind:<7} measured {meas:10.2f} predicted {pred:10.2f} calibrated {c}")
    names = {"weights": "weights memory (GiB per GPU)", "kv": "vLLM KV capacity (tokens)", "tpot1": "batch-1 decode TPOT",
             "tpot": "batched decode TPOT", "throughput": "throughput (prefill + decode)", "ttft": "TTFT (one prompt)"}
    print(f"validation: {len(points)} points, {len(points) - skipped} in reach ({skipped} out: model or GPU not in the catalog, queueing, or prefix-cached TTFT)")
    print(f"{'metric':<36} {'n':>3} {'median':>8} {'worst':>8} {'LOO median':>11} {'LOO worst':>10}")
    for kind in ("weights", "kv", "tpot1", "tpot", "throughput", "ttft"):
        r = rows.get(kind, [])
        if not r:
            continue
        apes = [a for a, _ in r]
        capes = [c for _, c in r if c is not None]
        lm = f"{statistics.median(capes):10.1%}" if capes else "         —"
        lw = f"{max(capes):9.1%}" if capes else "        —"
        print(f"{names[kind]:<36} {len(r):>3} {statistics.median(apes):>7.1%} {max(apes):>7.1%} {lm:>11} {lw:>10}")
    print("note: llama.cpp's default efficiencies (catalogs/engines.yaml) come from the same llama-bench table as its")
    print("      points here, so the uncalibrated column is in-sample for those; the LOO column is out-of-sample.")
    peer_comparison(points, ours, calibrated)


if __name__ == "__main__":
    main()
