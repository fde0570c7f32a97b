"""The points measured under a request rate (`*_at_rate`, scored by
bench/bench_traffic_validation.py) carry the conditions their runs' own logs give: the
KV cache a log prints is the run's, not a prediction, so the bench simulates that one."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import validation_points as vp  # noqa: E402

RATE_POINTS = [p for p in vp.load_points() if p["metric"].endswith("_at_rate")]


def _logged_kv_tokens(p: dict) -> int | None:
    """The KV cache the run's log quoted in the point's note: vLLM V0's "# GPU blocks: N"
    times the run's block size, TensorRT-LLM's "Using N total tokens in paged KV cache"."""
    note = str(p.get("note", ""))
    blocks = re.search(r"\b(\d+) GPU blocks\b", note)
    if blocks and p["engine"] == "vllm":
        return int(blocks.group(1)) * int(p["conditions"]["block_size"])
    tokens = re.search(r"Using (\d+) total tokens in paged KV cache", note)
    if tokens and p["engine"] == "trtllm":
        return int(tokens.group(1))
    return None


def test_a_rate_point_whose_log_gives_its_kv_cache_carries_it() -> None:
    """zhjunqin/LLM-Learning's vLLM 0.4.1 runs on one RTX 3090 logged "# GPU blocks: 2358"
    at block size 16: 2358 x 16 = 37,728 tokens (the catalog's memory model gives 40,320 for
    that run, 7 % more); its TensorRT-LLM runs logged 31,616."""
    logged = {p["id"]: _logged_kv_tokens(p) for p in RATE_POINTS}
    logged = {k: v for k, v in logged.items() if v is not None}
    assert sum(k.startswith("vllm-zhjunqin-") for k in logged) == 20
    assert sum(k.startswith("trtllm-zhjunqin-") for k in logged) == 20
    assert logged["vllm-zhjunqin-llama3-8b-rtx3090-sharegpt-r5-ttft-p99"] == 37_728
    by_id = {p["id"]: p for p in RATE_POINTS}
    for pid, tokens in logged.items():
        assert by_id[pid]["conditions"].get("kv_cache_tokens") == tokens, pid


def test_the_traffic_bench_simulates_the_logged_kv_cache() -> None:
    import bench_traffic_validation as btv

    p = next(p for p in RATE_POINTS if p["id"] == "vllm-zhjunqin-llama3-8b-rtx3090-sharegpt-r1-ttft-p99")
    run = btv.simulate_run(p, 100, 0)
    assert run.why is None and run.limits.kv_capacity_tokens == 2358 * 16


def test_a_figure_drawn_many_times_is_scored_with_its_5_to_95_interval() -> None:
    """From 20 draws the interval is their 5th-95th percentile, linear between order
    statistics: for the draws 0, 1, ..., 19 the 5th sits at (20 - 1) x 0.05 = 0.95 and the
    95th at 19 x 0.95 = 18.05; fewer draws give their range."""
    import bench_traffic_validation as btv

    assert btv.draws_interval([float(x) for x in range(20)]) == pytest.approx((0.95, 18.05))
    assert btv.draws_interval([3.0, 1.0, 2.0]) == (1.0, 3.0)
    assert btv.interval_name(20) == "5–95 % interval" and btv.interval_name(19) == "range"


def test_the_traffic_bench_scores_only_the_metrics_asked() -> None:
    """--metric ttft_p99_at_rate simulates only the runs that measured a P99 TTFT (the
    test half's six, one RTX 3090 campaign: vLLM and TensorRT-LLM at rates 1, 2 and 5
    under saturation) and prints a row for none of the others; a name it does not score
    is refused by name."""
    import subprocess

    bench = str(BENCH / "bench_traffic_validation.py")
    done = subprocess.run([sys.executable, bench, "--metric", "ttft_p99_at_rate", "--seeds", "2"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    stable = done.stdout.split("\npast saturation (")[0]
    rows = {m.group(1): int(m.group(2)) for m in re.finditer(r"^  (P\d\d TTFT|P50 TPOT|throughput) +(\d+)", stable, re.M)}
    assert rows["P99 TTFT"] == 6 and rows["P50 TTFT"] == 0 and rows["throughput"] == 0
    assert "of 6 within the draws' range" in done.stdout
    refused = subprocess.run([sys.executable, bench, "--metric", "ttft_p90"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--metric: invalid choice: 'ttft_p90'" in refused.stderr and refused.stdout == ""
