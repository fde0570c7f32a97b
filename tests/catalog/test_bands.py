"""The default prediction bands (catalogs/bands.yaml, bench/fit_bands.py): the quantile
rule, the widening, the Wilson interval and the pessimistic factors, each by hand."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from solver.catalog import default_catalog
from solver.catalog.bands import METRICS, BandsFile, band_for, quantile, slow_edge, slowed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import fit_bands  # noqa: E402

LOGS = [0.5, -0.3, 0.1, -0.1, 0.0, 0.3, 0.05, 0.2, -0.2, 0.15]
"""Ten log errors, out of order. Sorted: −0.3, −0.2, −0.1, 0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5."""


def test_quantile_interpolates_between_order_statistics():
    # type 7: h = (n − 1)q. P10: h = 0.9, −0.3 + 0.9 × (−0.2 − −0.3) = −0.21.
    # P90: h = 8.1, 0.3 + 0.1 × (0.5 − 0.3) = 0.32. P50: h = 4.5, (0.05 + 0.1) / 2 = 0.075.
    assert quantile(LOGS, 0.1) == pytest.approx(-0.21)
    assert quantile(LOGS, 0.9) == pytest.approx(0.32)
    assert quantile(LOGS, 0.5) == pytest.approx(0.075)
    assert quantile([7.0], 0.9) == 7.0
    with pytest.raises(ValueError):
        quantile([], 0.5)


def test_entry_is_the_ratios_p10_and_p90_widened_about_the_median():
    ratios = [math.exp(x) for x in LOGS]
    e = fit_bands.entry(ratios)
    assert (e["lo"], e["hi"], e["points"]) == (round(math.exp(-0.21), 4), round(math.exp(0.32), 4), 10)
    # widened ×2 about the median log 0.075: 0.075 + 2(−0.21 − 0.075) = −0.495; 0.075 + 2(0.32 − 0.075) = 0.565
    w = fit_bands.entry(ratios, 2.0)
    assert (w["lo"], w["hi"]) == (round(math.exp(-0.495), 4), round(math.exp(0.565), 4))


def test_wilson_interval_by_hand():
    # 8 of 10, z = 1.96: centre (0.8 + 3.8416/20) / (1 + 3.8416/10) = 0.71674;
    # half 1.96 / 1.38416 × √(0.016 + 3.8416/400) = 0.22658 → 0.4902 to 0.9433
    lo, hi = fit_bands.wilson(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4)
    assert hi == pytest.approx(0.9433, abs=1e-4)
    assert fit_bands.wilson(0, 0) == (0.0, 1.0)


def _file(**metrics):
    return TypeAdapter(BandsFile).validate_python({"made_by": "a test", "as_of": "2026-12-05", "metrics": metrics})


def test_a_group_with_its_own_band_wins_else_the_pooled_one():
    f = _file(tpot={"pooled": {"lo": 0.8, "hi": 1.3, "points": 90}, "groups": {"vllm.hbm": {"lo": 0.9, "hi": 1.1, "points": 40}}})
    own, other = band_for(f, "tpot", "vllm", "hbm"), band_for(f, "tpot", "sglang", "hbm")
    assert (own.lo, own.hi, own.points, own.group) == (0.9, 1.1, 40, "vllm.hbm")
    assert (other.lo, other.hi, other.points, other.group) == (0.8, 1.3, 90, "pooled")
    assert band_for(f, "ttft", "vllm", "hbm") is None
    assert own.of(10.0) == pytest.approx((9.0, 11.0))


def test_bands_file_refuses_an_unknown_metric_and_an_upside_down_band():
    with pytest.raises(ValidationError, match="unknown metric"):
        _file(latency={"pooled": {"lo": 0.8, "hi": 1.2, "points": 3}})
    with pytest.raises(ValidationError, match="above hi"):
        _file(tpot={"pooled": {"lo": 1.2, "hi": 0.8, "points": 3}})


def test_shipped_bands_cover_every_metric_and_straddle_one():
    bands = default_catalog().bands
    assert bands is not None and set(bands.metrics) == set(METRICS)
    for m in ("tpot1", "tpot", "ttft", "throughput"):
        e = bands.metrics[m].pooled
        assert e.lo < 1 < e.hi and e.points >= 20  # a band that excludes the prediction itself says the fit is off


def test_slow_edge_never_speeds_a_plan_up():
    f = _file(tpot={"pooled": {"lo": 0.6, "hi": 0.9, "points": 30}})
    assert slow_edge(band_for(f, "tpot", "vllm", "hbm")) == 1.0
    assert slow_edge(None) == 1.0


def test_slowed_factors_by_hand():
    base = default_catalog().default_factors
    f = slowed(base, 1.5, 2.0)
    assert f.bandwidth_efficiency == pytest.approx(base.bandwidth_efficiency / 1.5)
    assert f.compute_efficiency == pytest.approx(base.compute_efficiency / 2.0)  # the larger edge: both phases run matmuls
    assert f.step_overhead_s == pytest.approx(base.step_overhead_s * 1.5)
    assert f.layer_overhead_s == pytest.approx(base.layer_overhead_s * 1.5)
    assert f.request_overhead_s == pytest.approx(base.request_overhead_s * 2.0)
    assert f.memory_utilization == base.memory_utilization  # memory is not a time


def test_shipped_bands_rest_on_the_fit_splits_predicted_points():
    # catalogs/bands.yaml is bench/fit_bands.py's output on today's physics: each metric's
    # band counts the fit points predicted now (a change to the physics or the points that
    # moves them means `python bench/fit_bands.py --write` must be re-run).
    rows = fit_bands.ratios(fit_bands.load_points(), "fit")
    bands = default_catalog().bands
    for m in METRICS:
        assert bands.metrics[m].pooled.points == sum(1 for _, k, _, _ in rows if k == m), m
    assert all(r > 0 for *_, r in rows)
