"""Band rules from a decomposition of the error into campaign offsets and shapes
(bench/band_rules.py), compared with fit_bands.py's rule campaign left out: Student's
t, each rule on a toy of three campaigns and the left-out scoring, each by hand."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import band_rules  # noqa: E402

TOY = {"A": [0.0, 0.1, 0.2], "B": [0.3], "C": [-0.3, -0.2]}
"""Three campaigns' log ratios: A's offset (median) 0.1, B's 0.3, C's −0.25; only A has
the three points a campaign needs to give shape residuals (−0.1, 0, 0.1)."""
K3 = 4 * math.sqrt(2) / 3 * math.sqrt(4 / 3)
"""Three campaigns: t₀.₉ on 2 degrees of freedom, t/√(2 + t²) = 0.8 → t² = 32/9, t = 4√2/3,
times the prediction interval's √(1 + 1/3)."""


def test_t_quantile_by_hand_and_from_the_table():
    # 1 degree of freedom (Cauchy): tan(π(0.9 − 0.5)) = tan(0.4π) = 3.0777; 2: 4√2/3 (above)
    assert band_rules.t_quantile(0.9, 1) == pytest.approx(math.tan(0.4 * math.pi), abs=1e-9)
    assert band_rules.t_quantile(0.9, 2) == pytest.approx(4 * math.sqrt(2) / 3, abs=1e-9)
    # Student's t tables (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2): t₀.₉ 1.638 on 3, 1.533 on 4,
    # 1.397 on 8; t₀.₉₇₅ 2.228 on 10; many degrees of freedom → the normal's 1.2816
    for nu, p, want in ((3, 0.9, 1.638), (4, 0.9, 1.533), (8, 0.9, 1.397), (10, 0.975, 2.228)):
        assert band_rules.t_quantile(p, nu) == pytest.approx(want, abs=5e-4), nu
    assert band_rules.t_quantile(0.9, 2001) == pytest.approx(1.2816, abs=1e-3)
    assert band_rules.t_cdf(0.0, 5) == 0.5
    assert band_rules.t_cdf(-1.0, 3) == pytest.approx(1 - band_rules.t_cdf(1.0, 3))
    with pytest.raises(ValueError):
        band_rules.t_quantile(0.4, 3)


def test_robust_band_of_three_campaigns_by_hand():
    # μ = median(0.1, 0.3, −0.25) = 0.1; |offset − μ| 0, 0.2, 0.35: MAD 0.2, σ_c = 1.4826 × 0.2;
    # A's |residuals| 0.1, 0, 0.1: median 0.1, σ_s = 1.4826 × 0.1 (B and C give none)
    half = K3 * 1.4826 * math.sqrt(0.2**2 + 0.1**2)
    assert band_rules.mad_band(TOY) == pytest.approx((0.1 - half, 0.1 + half))
    assert half == pytest.approx(0.7218, abs=1e-4)


def test_normal_random_effects_band_of_three_campaigns_by_hand():
    # means 0.1, 0.3, −0.25: μ = 0.05, their variance (0.05² + 0.25² + 0.3²)/2 = 0.0775;
    # within: A (0.01 + 0 + 0.01) + C (0.0025 + 0.0025) over 2 + 0 + 1 degrees of freedom = 0.025/3;
    # mean 1/n = (1/3 + 1 + 1/2)/3 = 11/18: between 0.0775 − (0.025/3)(11/18)
    within = 0.025 / 3
    half = K3 * math.sqrt(0.0775 - within * 11 / 18 + within)
    assert band_rules.moments_band(TOY) == pytest.approx((0.05 - half, 0.05 + half))


def test_convolution_band_of_three_campaigns_by_hand():
    # offsets − μ: 0, 0.2, −0.35, each plus A's residuals −0.1, 0, 0.1 (weight 1/3 each; 3 in all):
    # sorted −0.45, −0.35, −0.25, −0.1, 0, 0.1, 0.1, 0.2, 0.3. P10 (weight 0.3): the first, −0.45;
    # P90 (2.7): the ninth (3 ≥ 2.7; the eighth 8/3 falls short), 0.3; about μ = 0.1, × √(4/3)
    root = math.sqrt(4 / 3)
    assert band_rules.convolution_band(TOY) == pytest.approx((0.1 - 0.45 * root, 0.1 + 0.3 * root))


def test_a_rule_needs_two_campaigns():
    with pytest.raises(ValueError, match="two campaigns"):
        band_rules.mad_band({"A": [0.0, 0.1, 0.2]})


def test_left_out_scores_each_campaign_against_the_others_by_hand():
    # One point each: A 0, B 0.2, C 1. Two campaigns left: t₀.₉ on 1 is tan(0.4π), × √(3/2);
    #   A out: offsets 0.2, 1: μ 0.6, MAD 0.4 → half k·1.4826·0.4 = 2.235: A inside
    #   B out: 0, 1: μ 0.5, MAD 0.5 → 2.794: B inside
    #   C out: 0, 0.2: μ 0.1, MAD 0.1 → 0.559: 1 is outside (0.1 + 0.559 = 0.659)
    k = math.tan(0.4 * math.pi) * math.sqrt(1.5)
    share, inside, count, width = band_rules.left_out({"A": [0.0], "B": [0.2], "C": [1.0]}, band_rules.mad_band)
    assert (share, inside, count) == (pytest.approx(2 / 3), 2, 3)
    assert width == pytest.approx(sum(math.exp(2 * k * 1.4826 * mad) for mad in (0.4, 0.5, 0.1)) / 3)
    assert k * 1.4826 * 0.1 == pytest.approx(0.559, abs=1e-3)
    # two campaigns leave one to fit on: nothing is scored
    assert band_rules.left_out({"A": [0.0], "B": [0.2]}, band_rules.mad_band) is None
