"""catalogs/datasets.yaml: ShareGPT's prompt lengths reproduce the published histogram
they come from, and a run's draws are conditioned on the benchmark clients' filter
(dropped, as the clients drop them), not clipped to it."""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from solver.catalog.datasets import DatasetLengths, load_dataset_lengths
from solver.errors import InputError

ROOT = Path(__file__).resolve().parents[2]

# sgl-project/sglang PR #1853, the /metrics scrape after 1,003 requests (Llama-3 tokenizer):
# sglang:request_prompt_tokens_bucket le=20: 244, le=50: 392, le=100: 481, le=200: 570,
# le=500: 846, le=1000: 1001, le=2000: 1003 (typed from the source).
PUBLISHED = {20: 244, 50: 392, 100: 481, 200: 570, 500: 846, 1000: 1001}
REQUESTS = 1003

# The histogram's mean, log-uniform within a bucket (a bucket (a, b] holding n requests adds
# n·(b − a)/ln(b/a)), the top bucket ending at the filter's 1,024:
#   244·16/ln 5 = 2425.7; 148·30/ln 2.5 = 4845.5; 89·50/ln 2 = 6419.8; 89·100/ln 2 = 12840.0;
#   276·300/ln 2.5 = 90362; 155·500/ln 2 = 111809; 2·24/ln 1.024 = 2024.0
#   sum 230726 / 1003 = 230.0 tokens
HISTOGRAM_MEAN = 230.0


@pytest.fixture(scope="module")
def sharegpt() -> DatasetLengths:
    return load_dataset_lengths("sharegpt")


def test_the_clients_filter_is_the_published_one(sharegpt: DatasetLengths) -> None:
    """vLLM benchmark_dataset.py is_valid_sequence: min_len 4, max_prompt_len 1024, max_total_len 2048."""
    assert (sharegpt.min_tokens, sharegpt.max_prompt_tokens, sharegpt.max_total_tokens) == (4, 1024, 2048)


def test_the_shares_are_the_published_histogram(sharegpt: DatasetLengths) -> None:
    for upper, count in PUBLISHED.items():
        assert sharegpt.prompt_share(upper) == pytest.approx(count / REQUESTS, abs=1e-12)
    assert sharegpt.prompt_share(4) == 0.0 and sharegpt.prompt_share(1024) == 1.0


def test_a_share_falls_log_uniformly_within_its_bucket(sharegpt: DatasetLengths) -> None:
    """The median lies in (100, 200], between 481 and 570 of 1003 requests:
    100·2^((501.5 − 481)/89) = 100·2^0.23034 = 117.3 tokens."""
    assert sharegpt.prompt_quantile(0.5) == pytest.approx(100 * 2 ** ((501.5 - 481) / 89), rel=1e-9)
    assert sharegpt.prompt_quantile(0.5) == pytest.approx(117.3, abs=0.05)
    for x in (5, 37, 117.3, 640, 1010):
        assert sharegpt.prompt_quantile(sharegpt.prompt_share(x)) == pytest.approx(x, rel=1e-9)


def test_a_run_at_the_histograms_mean_draws_the_histogram(sharegpt: DatasetLengths) -> None:
    """At the histogram's own mean (230.0, derived above) the scale is 1: the draws' shares
    below each bucket's top are the published ones, within what rounding to whole tokens
    moves below a top (the next bucket's lengths under top + ½: at 20 tokens
    148/1003·ln(20.5/20)/ln 2.5 = 0.0040 of the requests, less at the others)."""
    got = sharegpt.prompt_lengths(HISTOGRAM_MEAN, 1024)
    assert statistics.fmean(got) == pytest.approx(HISTOGRAM_MEAN, rel=0.005)
    for upper, count in PUBLISHED.items():
        assert sum(x <= upper for x in got) / len(got) == pytest.approx(count / REQUESTS, abs=0.0045)


def test_the_filter_drops_long_prompts_instead_of_piling_them_at_its_bound(sharegpt: DatasetLengths) -> None:
    """A run whose tokenizer counts 30 % more than the histogram's: clipped, every prompt the
    scale pushes past 1,024 would sit at 1,024 (1 − share(1024/1.3 = 788) = 1 − (0.8435 +
    0.1545·log2(787.7/500)) = 5.5 % of them); the client drops them, so only rounding reaches
    1,024, and the draws keep the run's mean."""
    got = sharegpt.prompt_lengths(1.3 * HISTOGRAM_MEAN, 1024)
    assert statistics.fmean(got) == pytest.approx(1.3 * HISTOGRAM_MEAN, rel=0.005)
    clipped_share = 1 - (846 / 1003 + 155 / 1003 * math.log2(1024 / 1.3 / 500))
    assert clipped_share == pytest.approx(0.055, abs=0.001)
    assert sum(x == 1024 for x in got) / len(got) < 0.002
    assert max(got) <= 1024 and min(got) >= 4


def test_an_engines_shorter_context_bounds_the_prompts(sharegpt: DatasetLengths) -> None:
    got = sharegpt.prompt_lengths(150, 500)
    assert max(got) <= 500 and statistics.fmean(got) == pytest.approx(150, rel=0.005)


def test_a_mean_outside_the_filter_is_refused(sharegpt: DatasetLengths) -> None:
    with pytest.raises(InputError, match="mean_tokens = 2000"):
        sharegpt.prompt_lengths(2000, 1024)


def test_a_histogram_whose_counts_fall_is_refused(sharegpt: DatasetLengths) -> None:
    entry = {
        **{k: getattr(sharegpt, k) for k in DatasetLengths.__dataclass_fields__},
        "prompt_buckets": [{"upper_tokens": 20, "requests": 500}, {"upper_tokens": 50, "requests": 400}],
        "prompt_requests": 400,
    }
    with pytest.raises(ValidationError, match="never fall"):
        TypeAdapter(DatasetLengths).validate_python(entry)


def test_an_unknown_dataset_is_named() -> None:
    with pytest.raises(InputError, match="datasets.yaml: dataset = alpaca: one of sharegpt"):
        load_dataset_lengths("alpaca")


def test_the_validation_bench_draws_sharegpt_prompts_from_the_catalog() -> None:
    """bench/bench_traffic_validation.py: a ShareGPT run's prompts keep its mean and none
    is piled at the filter's 1,024 (the lognormal it replaced, P99 4.5 × a 229-token mean,
    clipped there put 2 of 100 requests at exactly 1,024)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_traffic_validation as btv

    point = {"conditions": {"dataset": "sharegpt", "prompt_tokens": 229.2, "output_tokens": 217.9, "max_model_len": 8192}}
    prompts, outputs = btv.lengths(point)
    assert prompts.dist == "empirical" and prompts.mean_tokens == pytest.approx(229.2, rel=0.005)
    assert sum(x == 1024 for x in prompts.samples) / len(prompts.samples) < 0.002
    assert outputs.dist == "lognormal" and outputs.high_tokens == 2044


@pytest.mark.parametrize(("flag", "value"), [("--seeds", "0"), ("--seeds", "-1"), ("--seeds", "51"), ("--requests", "0")])
def test_the_traffic_bench_refuses_a_count_it_cannot_run(flag: str, value: str) -> None:
    """--seeds 0 or below ran as one seed without a word, and a huge count ran for hours."""
    import subprocess

    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_traffic_validation.py"), flag, value], capture_output=True, text=True)
    assert done.returncode == 2 and f"{flag} {value}:" in done.stderr and done.stdout == ""
