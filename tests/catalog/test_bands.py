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


def test_conformal_level_by_hand():
    # ⌈(G + 1)·0.8⌉ / G: 22 campaigns ⌈18.4⌉ = 19 → 19/22; 9: ⌈8.0⌉ = 8 → 8/9; 4: ⌈4.0⌉ = 4 → 4/4;
    # 3: ⌈3.2⌉ = 4 > 3 → 1 (too few campaigns for a guarantee below all of them)
    assert fit_bands.conformal_level(22, 0.8) == pytest.approx(19 / 22)
    assert fit_bands.conformal_level(9, 0.8) == pytest.approx(8 / 9)
    assert fit_bands.conformal_level(4, 0.8) == 1.0
    assert fit_bands.conformal_level(3, 0.8) == 1.0
    with pytest.raises(ValueError):
        fit_bands.conformal_level(0, 0.8)


def test_finite_sample_quantile_of_a_toy_sample():
    scores = [0.5, 3.0, 1.0, 2.0]  # sorted 0.5, 1, 2, 3
    ones = [1.0] * 4
    # split conformal on 4 scores at 80 %: the ⌈5 × 0.8⌉ = 4th smallest, 3.0; at 50 %: ⌈2.5⌉ = 3rd, 2.0
    assert fit_bands.weighted_level(scores, ones, fit_bands.conformal_level(4, 0.8)) == 3.0
    assert fit_bands.weighted_level(scores, ones, fit_bands.conformal_level(4, 0.5)) == 2.0
    # without the correction, 50 % of 4 is the 2nd smallest, 1.0
    assert fit_bands.weighted_level(scores, ones, 0.5) == 1.0
    # weighted (0.5 weighs 2, 3.0 1, 1.0 0.5, 2.0 0.5; 4 in all): 50 % (2) is reached at 0.5 alone,
    # 60 % (2.4) at 1.0 (2.5), 75 % (3) at 2.0 (3.0)
    weights = [2.0, 1.0, 0.5, 0.5]
    assert [fit_bands.weighted_level(scores, weights, q) for q in (0.5, 0.6, 0.75)] == [0.5, 1.0, 2.0]


def test_needed_widening_by_hand():
    # band logs: median 0.1, P10 −0.14, P90 0.34. 0.4 needs (0.4 − 0.1)/(0.34 − 0.1) = 1.25;
    # −0.2 needs (0.1 + 0.2)/(0.1 + 0.14) = 1.25; the median itself 0; no width on a side: inf
    assert fit_bands.needed(0.1, -0.14, 0.34, 0.4) == pytest.approx(1.25)
    assert fit_bands.needed(0.1, -0.14, 0.34, -0.2) == pytest.approx(1.25)
    assert fit_bands.needed(0.1, -0.14, 0.34, 0.1) == 0.0
    assert fit_bands.needed(0.1, 0.1, 0.34, 0.0) == math.inf


def _rows(logs_by_campaign: dict[str, list[float]]) -> tuple[list, dict[str, str]]:
    rows, groups = [], {}
    for c, logs in logs_by_campaign.items():
        for i, x in enumerate(logs):
            rows.append((f"{c}-{i}", "tpot1", "vllm.hbm", math.exp(x)))
            groups[f"{c}-{i}"] = c
    return rows, groups


def test_a_large_campaign_does_not_outvote_the_others():
    # Campaign A: ten points, five at log −0.1 and five at +0.1; B one at +0.5, C one at −0.5.
    # Each left out in turn against the other campaigns' points (type-7 quantiles):
    #   A out: {−0.5, 0.5}: median 0, P10 −0.4, P90 0.4; A's points need 0.1/0.4 = 0.25
    #   B out: {−0.5, −0.1 ×5, 0.1 ×5}: median x₅ = −0.1, P10 x₁ = −0.1, P90 x₉ = 0.1;
    #          B needs (0.5 + 0.1)/(0.1 + 0.1) = 3
    #   C out: {−0.1 ×5, 0.1 ×5, 0.5}: median x₅ = 0.1, P10 x₁ = −0.1, P90 x₉ = 0.1; C needs 0.6/0.2 = 3
    # Each campaign once (A's points 1/10 each): 80 % of 3 campaigns is 2.4, reached only at 3.
    # Each point once: 80 % of 12 points is 9.6, reached by A's ten at 0.25 → floored at 1.
    rows, groups = _rows({"A": [-0.1] * 5 + [0.1] * 5, "B": [0.5], "C": [-0.5]})
    assert fit_bands.widening(rows, groups) == {"tpot1": 3.0}
    assert fit_bands.widening(rows, groups, by_point=True) == {"tpot1": 1.0}
    # the band: all 12 points, median (x₅ + x₆)/2 = 0, P10 (h 1.1) −0.1, P90 (h 9.9) 0.1; ×3: ±0.3
    e = fit_bands.entry([r for *_, r in rows], 3.0)
    assert (e["lo"], e["hi"]) == (round(math.exp(-0.3), 4), round(math.exp(0.3), 4))


def test_a_repository_held_out_whole_widens_more_than_its_campaigns_one_by_one():
    # Five one-point campaigns: a 0.4 and b 0.4 (one repository, R), c −0.2, d 0, e 0.2.
    # By campaign (each left out against the other four, type 7 on 4 points: median (x₁ + x₂)/2,
    # P10 x₀ + 0.3(x₁ − x₀), P90 x₂ + 0.7(x₃ − x₂)):
    #   a out: {−0.2, 0, 0.2, 0.4}: median 0.1, P10 −0.14, P90 0.34; a needs 0.3/0.24 = 1.25 (b alike)
    #   c out: {0, 0.2, 0.4, 0.4}: median 0.3, P10 0.06, P90 0.4; c needs 0.5/0.24 = 2.083
    #   d out: {−0.2, 0.2, 0.4, 0.4}: median 0.3, P10 −0.08; d needs 0.3/0.38 = 0.789
    #   e out: {−0.2, 0, 0.4, 0.4}: median 0.2 = e: 0
    #   80 % of 5 campaigns is 4: sorted 0, 0.789, 1.25, 1.25 → 1.25
    # By repository (a and b out together, half a group each):
    #   R out: {−0.2, 0, 0.2}: median 0, P10 −0.16, P90 0.16; a and b need 0.4/0.16 = 2.5
    #   80 % of 4 groups is 3.2: 0 (1), 0.789 (2), 2.083 (3), 2.5 (3.5) → 2.5
    logs = {"a": [0.4], "b": [0.4], "c": [-0.2], "d": [0.0], "e": [0.2]}
    rows, by_campaign = _rows(logs)
    by_repository = {pid: ("R" if c in ("a", "b") else c) for pid, c in by_campaign.items()}
    assert fit_bands.widening(rows, by_campaign) == {"tpot1": 1.25}
    assert fit_bands.widening(rows, by_repository) == {"tpot1": 2.5}
    # all five: median 0.2, P10 (h 0.4) −0.12, P90 (h 3.6) 0.4: ×1.25 → −0.2 to 0.45; ×2.5 → −0.6 to 0.7
    for widen, (lo, hi) in ((1.25, (-0.2, 0.45)), (2.5, (-0.6, 0.7))):
        e = fit_bands.entry([r for *_, r in rows], widen)
        assert (e["lo"], e["hi"]) == (round(math.exp(lo), 4), round(math.exp(hi), 4))


def test_nested_coverage_counts_each_campaign_once():
    # A, B, C: two points each at log −0.1 and 0.1; D one at 0.5. Each left out, the rule on the rest:
    #   D out: A, B, C alike, each held out against the other two (−0.1, −0.1, 0.1, 0.1: median 0,
    #          P10 −0.1, P90 0.1) needs 0.1/0.1 = 1 → widened 1; the band of the 6 points is ±0.1,
    #          and D (0.5) is outside: D 0 of 1
    #   A out: B out against C, D ({−0.1, 0.1, 0.5}: median 0.1, P10 −0.06, P90 0.42): B's −0.1 needs
    #          0.2/0.16 = 1.25, its 0.1 none (half a campaign each); C alike; D against B, C
    #          (median 0, P90 0.1) needs 5. 80 % of 3 campaigns (2.4) is reached only at 5; the band of
    #          B, C, D (median 0.1, P10 −0.1, P90 0.34) ×5 runs from −0.9 to 1.3: A 2 of 2 (B, C alike)
    # Each campaign once: (1 + 1 + 1 + 0)/4 = 75 %; each point once: 6 of 7. The bands met, hi/lo:
    # e^0.2 (D's) and e^2.2 three times (A's, B's, C's; each edge rounded to 4 decimals as the file has it).
    rows, groups = _rows({"A": [-0.1, 0.1], "B": [-0.1, 0.1], "C": [-0.1, 0.1], "D": [0.5]})
    share, inside, count, width = fit_bands.nested_coverage(rows, groups)["tpot1"]
    assert (share, inside, count) == (pytest.approx(0.75), 6, 7)
    assert width == pytest.approx((math.exp(0.2) + 3 * math.exp(2.2)) / 4, rel=1e-3)
