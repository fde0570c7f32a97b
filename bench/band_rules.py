"""Band rules built from a decomposition of the error, set against fit_bands.py's rule
(P10/P90 widened by split conformal over campaigns) campaign left out on the FIT half
(`python bench/fit_bands.py --check`). None is the default (issue 42 item 8, 2026-12-06;
the figures are in fit_bands.py's docstring).

Each metric's log ratio x = log(measured / predicted) is read as a campaign's offset (its
host, build and harness: one level for all its runs) plus the shape of its runs about
that offset. With G campaigns, campaign i's offset cᵢ the median of its logs and μ the
median of the offsets (each campaign once):

- robust (`mad_band`): σ_c = 1.4826 · median |cᵢ − μ| and σ_s = 1.4826 · median |x − cᵢ|
  over the points of campaigns of SHAPE_MIN_POINTS or more (1.4826 = 1 / Φ⁻¹(0.75): a
  MAD read as a normal's standard deviation); the band μ ± t₀.₉(G − 1) · √(1 + 1/G) ·
  √(σ_c² + σ_s²), the normal prediction interval for one new campaign's run with the
  centre estimated from G campaigns (Student's t on G − 1 degrees of freedom).
- normal random effects (`moments_band`): the same with means and standard deviations,
  the variance of the offsets (campaign means) less the within-campaign variance each
  carries (σ_s² / nᵢ, one-way ANOVA's method of moments), floored at 0.
- convolution (`convolution_band`): no distribution assumed: the P10 and P90 of
  (cᵢ − μ) + (x − cⱼ) over every offset i and every shape residual of a campaign j of
  SHAPE_MIN_POINTS or more (each campaign's residuals weighing 1 / its points), about μ,
  times √(1 + 1/G).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

MAD_TO_SD = 1.4826
"""1 / Φ⁻¹(0.75): a normal's standard deviation over its median absolute deviation."""
SHAPE_MIN_POINTS = 3
"""Campaigns of fewer points give no shape residuals (bench_validation.py's offset and
shape take the same: in one of one point the residual is 0 by construction)."""
LEVEL = 0.9
"""The band's upper quantile (P10–P90: 0.9 each side of a symmetric band)."""

Logs = dict[str, list[float]]
"""campaign → its points' log(measured / predicted)."""


def t_cdf(t: float, nu: int) -> float:
    """Student's t distribution function on nu (≥ 1, whole) degrees of freedom, by the
    finite series of Abramowitz and Stegun 26.7.3 (nu odd) and 26.7.4 (nu even) in
    θ = atan(t / √nu)."""
    if nu < 1:
        raise ValueError(f"Student's t needs at least 1 degree of freedom, not {nu}")
    theta = math.atan(abs(t) / math.sqrt(nu))
    s, c = math.sin(theta), math.cos(theta)
    term, total = (c, c) if nu % 2 else (1.0, 1.0)
    for k in range(3 if nu % 2 else 2, nu - 1, 2):
        term *= c * c * (k - 1) / k
        total += term
    if nu % 2:
        inside = 2 / math.pi * (theta + (s * total if nu > 1 else 0.0))
    else:
        inside = s * total
    return (1 + inside) / 2 if t >= 0 else (1 - inside) / 2


def t_quantile(p: float, nu: int) -> float:
    """The p-quantile (0.5 ≤ p < 1) of Student's t on nu degrees of freedom, by bisection
    of t_cdf to 1e-12."""
    if not 0.5 <= p < 1:
        raise ValueError(f"a t quantile between 0.5 and 1, not {p}")
    lo, hi = 0.0, 1.0
    while t_cdf(hi, nu) < p:
        hi *= 2
    while hi - lo > 1e-12:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, nu) < p else (lo, mid)
    return (lo + hi) / 2


def _spread(by: Logs) -> tuple[float, float]:
    """The prediction interval's multiplier t₀.₉(G − 1) · √(1 + 1/G) and G."""
    g = len(by)
    if g < 2:
        raise ValueError("a band from campaigns' spread needs two campaigns or more")
    return t_quantile(LEVEL, g - 1) * math.sqrt(1 + 1 / g), g


def mad_band(by: Logs) -> tuple[float, float]:
    """(lo, hi) logs: μ ± t · √(1 + 1/G) · √(σ_c² + σ_s²), the scales from MADs (module doc)."""
    k, _ = _spread(by)
    offsets = {c: statistics.median(xs) for c, xs in by.items()}
    mu = statistics.median(offsets.values())
    sigma_c = MAD_TO_SD * statistics.median(abs(o - mu) for o in offsets.values())
    shape = [abs(x - offsets[c]) for c, xs in by.items() if len(xs) >= SHAPE_MIN_POINTS for x in xs]
    sigma_s = MAD_TO_SD * statistics.median(shape) if shape else 0.0
    half = k * math.hypot(sigma_c, sigma_s)
    return mu - half, mu + half


def moments_band(by: Logs) -> tuple[float, float]:
    """(lo, hi) logs: the normal random-effects band by the method of moments (module doc)."""
    k, g = _spread(by)
    means = {c: statistics.fmean(xs) for c, xs in by.items()}
    mu = statistics.fmean(means.values())
    df = sum(len(xs) - 1 for xs in by.values())
    within = sum((x - means[c]) ** 2 for c, xs in by.items() for x in xs) / df if df else 0.0
    between = max(0.0, statistics.variance(means.values()) - within * statistics.fmean(1 / len(xs) for xs in by.values()))
    half = k * math.sqrt(between + within)
    return mu - half, mu + half


def convolution_band(by: Logs) -> tuple[float, float]:
    """(lo, hi) logs: P10 and P90 of every offset plus every shape residual (module doc)."""
    k, g = _spread(by)
    offsets = {c: statistics.median(xs) for c, xs in by.items()}
    mu = statistics.median(offsets.values())
    residuals = [(x - offsets[c], 1 / len(xs)) for c, xs in by.items() if len(xs) >= SHAPE_MIN_POINTS for x in xs] or [(0.0, 1.0)]
    sums = sorted((o - mu + r, w) for o in offsets.values() for r, w in residuals)
    total = sum(w for _, w in sums)

    def level(q: float) -> float:
        """The least sum whose weight at or below it is q of the whole."""
        seen = 0.0
        for v, w in sums:
            seen += w
            if seen >= q * total - 1e-9:
                return v
        return sums[-1][0]

    root = math.sqrt(1 + 1 / g)
    return mu + root * level(1 - LEVEL), mu + root * level(LEVEL)


RULES: dict[str, Callable[[Logs], tuple[float, float]]] = {
    "robust (MAD) offset + shape": mad_band,
    "normal random effects": moments_band,
    "convolution offset + shape": convolution_band,
}


def left_out(by: Logs, band: Callable[[Logs], tuple[float, float] | None]) -> tuple[float, int, int, float] | None:
    """Each campaign left out in turn, its points against band(the other campaigns'
    logs) (lo, hi logs; None where the rule cannot be fitted), each rule fitted on two
    campaigns or more: (the mean over campaigns of the share of a campaign's points
    inside, points inside, points, the mean hi/lo of the bands they met); None where no
    campaign could be scored."""
    shares, widths, inside, count = [], [], 0, 0
    for c in sorted(by) if len(by) > 2 else []:
        b = band({o: xs for o, xs in by.items() if o != c})
        if b is None:
            continue
        k = sum(b[0] <= x <= b[1] for x in by[c])
        shares.append(k / len(by[c]))
        widths.append(math.exp(b[1] - b[0]))
        inside, count = inside + k, count + len(by[c])
    return (statistics.mean(shares), inside, count, statistics.mean(widths)) if shares else None
