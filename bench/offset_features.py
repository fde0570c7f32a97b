"""Issue 42: can a campaign's offset be predicted from what a user's spec states?

Most of the test half's error is each campaign's level (bench_validation.py's "offset and
shape"). This asks, feature by feature, whether that level follows something a user knows
when they write a spec: the run's date, the engine, its release line, the GPU's vendor,
generation and memory, dense or mixture-of-experts, the weight format's family, the TP
degree, the model's size and depth, the batch regime, the benchmark client, the kind of
source. Each feature's model is fitted on the FIT half's campaigns only:

- a campaign's offset is the median log(predicted / measured time) of its points of one
  family (decode: batch-1 and batched TPOT and throughput, as its inverse; or TTFT), per
  level of the feature it spans (a "unit": one campaign × one level);
- a categorical feature gives each level the median of its units' offsets (robust, as
  the fit's |log| loss is), shrunk toward 0 by n / (n + SHRINK) (n its campaigns; fewer
  than MIN_CAMPAIGNS: no correction) — the release-line terms' rule of
  bench/fit_defaults.py; "intercept" is one level for all;
- the date is a Theil-Sen line through the units' offsets on their years (the median of
  the pairwise slopes), read at the point's date held inside the fit half's dates (no
  extrapolation forward or back); "date, serving" the same for vLLM, SGLang and
  TensorRT-LLM only (the lead's what-if), the others uncorrected; "..., least squares"
  the least-squares line of validation_points.offset_trend instead.

A point's prediction is then divided by exp(its level's offset) (throughput multiplied).

Two judgements, both out of sample:
- fit CV: the fit half's campaigns dealt into fit_cv.py's folds (seeded); each fold's
  points corrected by a feature model fitted on the other folds' units. The base the
  offsets are read from is, by default, fit_cv.py's held-out predictions on the same
  folds (each point predicted by factors fitted without its campaign: the level a new
  campaign shows), or with --base in-sample the catalog's fitted factors (the fit has
  already absorbed its own campaigns' levels, so those offsets are smaller);
- test: the test half's points (the catalog's factors, as bench_validation.py) corrected
  by the feature model fitted on every fit-half unit of the same base.

Each row gives the median absolute error before → after per kind, and for the whole of
the family (decode or TTFT) the change in the median with its 95 % interval over the
campaigns resampled (2,000 draws, seeded; before and after drawn together).

    python bench/offset_features.py [--base held-out|in-sample] [--folds 5] [--seed 0]
                                    [--features date engine ...] [--levels] [--joint]

--joint adds the date as a term fitted with the engines' factors (fit_defaults.MATURITY),
the test half predicted by the fit with and without it.

Deterministic: the same points, catalog, folds and seed give the same table.

Findings (2026-12-06, 704 fit / 771 test points; held-out base, seeds 0 and 1; Δ decode
is the change of the decode points' median error, with its 95 % interval over campaigns):
no feature improves both the fit half held out and the test half beyond its interval.
- date, serving engines (Theil-Sen, +8.5 %/yr on the held-out offsets, +5.1 %/yr
  in-sample): CV Δ decode +0.3 % (seed 0) / +1.5 % (seed 1), worse; test −0.4 % (−2.4 to
  +1.9) / −0.7 % (−2.2 to +1.3): batch-1 TPOT 16.1 → 13.7 %, throughput 15.0 → 15.3 %.
  The least-squares line (+11.8 %/yr, the lead's what-if) CV +4.4 % / +3.9 %; all
  engines' date CV +3.8 % / +2.4 %. As a term fitted with the factors (--joint,
  fit_defaults.MATURITY) the slope comes out at 0.3 %/yr and fit_cv's held-out TPOT
  worsens (8.3 → 9.1 %, 8.0 → 8.6 %).
- release line: CV +1.2 % / +0.2 %, test −0.2 % (−3.0 to +2.1) / −1.0 % (−3.9 to +0.6);
  only llama.cpp (current), SGLang 0.5.3+ and vLLM 0.8.5-0.14 and 0.17-0.20 hold 3+ fit
  campaigns (vLLM 0.17-0.20 held out −0.26 in log, the others within 0.03).
- dense/MoE (MoE held out −0.10 in log, 18 campaigns): CV +1.9 % / +0.7 %, test −1.6 %
  (−4.4 to +0.9) / +0.0 %.
- engine, vendor, generation, memory, format family, TP, active size, depth, batch,
  client, source type: CV +0.0 to +4.2 % worse on seed 0, none better than −0.2 % on
  seed 1; on the test half none below −0.5 % (each interval across 0); several worse
  (generation +1.4 %, engine +1.2 %).
- TTFT: the fit half has 6-9 TTFT campaigns (17 on the test half), too few for a level
  of 3 campaigns; every correction of it is within noise or worse.
The remaining gap is a campaign's level that what a spec states does not predict: a
user's own calibration (bench_validation.py's LOO columns) is what removes it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fit_cv  # noqa: E402
import fit_defaults as fit  # noqa: E402
from validation_points import (  # noqa: E402
    ENGINE,
    batch_of,
    deployment_for,
    kind_of,
    load_points,
    measured,
    out_of_reach,
    predict,
    run_year,
    source_key,
)

from solver.catalog import default_catalog  # noqa: E402
from solver.errors import InputError  # noqa: E402

SHRINK = 2.0
"""A level's mean offset is shrunk by n / (n + SHRINK), n its fit campaigns (fit_defaults.RELEASE_SHRINK)."""
MIN_CAMPAIGNS = 3
"""A level with fewer fit campaigns gets no correction (fit_defaults.MIN_LINE_CAMPAIGNS)."""
FAMILIES = {"decode": ("tpot1", "tpot", "throughput"), "ttft": ("ttft",)}
KIND_NAMES = {"tpot1": "TPOT b1", "tpot": "TPOT bat", "throughput": "thr", "ttft": "TTFT"}
SERVING = ("vllm", "sglang", "trtllm")
DRAWS = 2000


def _client(p: dict) -> str:
    """The benchmark client, from the run's recorded `benchmark`: llama-bench, an offline
    or session harness (no HTTP server), a client through the server, or unstated."""
    b = str((p.get("conditions") or {}).get("benchmark", "")).lower()
    if not b or "not stated" in b:
        return "unstated"
    if "llama-bench" in b or "normiebench" in b:
        return "llama-bench"
    if "bench_one_batch_server" in b or any(
        k in b
        for k in (
            "bench_serving",
            "bench serve",
            "benchmark_serving",
            "llmperf",
            "genai-perf",
            "aiperf",
            "guidellm",
            "inferencex",
            "inferencemax",
            "openai",
        )
    ):
        return "server client"
    if any(k in b for k in ("latency", "throughput", "session", "trtllm-bench", "prepare_dataset", "bench_one_batch", "offline", "llm.generate")):
        return "offline harness"
    return "other"


def _source_type(p: dict) -> str:
    """Where the campaign was published: a GitHub issue or pull request, a repository's
    files, a paper, a model page, or another site (a vendor's or a blog)."""
    s = source_key(p)
    parts = s.split("/")
    if len(parts) > 6 and parts[2] == "github.com" and parts[5] in ("issues", "pull", "discussions"):
        return "github thread"
    if len(parts) > 2 and parts[2] in ("github.com", "gist.github.com", "raw.githubusercontent.com"):
        return "github files"
    if "arxiv.org" in s or s.endswith(".pdf"):
        return "paper"
    if "huggingface.co" in s:
        return "hugging face"
    return "site"


def _bucket(x: float, edges: tuple[float, ...], names: tuple[str, ...]) -> str:
    for edge, name in zip(edges, names, strict=False):
        if x <= edge:
            return name
    return names[-1]


def describe(p: dict) -> dict[str, object] | None:
    """A point's observable features (what its spec states, and its date); None where the
    catalog cannot build its deployment."""
    try:
        d = deployment_for(p, 1, 16, 16)[0]
    except (InputError, KeyError, ValueError):
        return None
    engine = ENGINE.get(p.get("engine"), p.get("engine") or "?")
    m = d.model
    batch = batch_of(p) or 0
    return {
        "intercept": "all",
        "date": run_year(p),
        "date, serving": run_year(p) if engine in SERVING else None,
        "date, serving, least squares": run_year(p) if engine in SERVING else None,
        "engine": engine,
        "release line": d.engine.release.split(":")[0] if d.engine.release else f"{d.engine.name} current",
        "vendor": d.device.vendor,
        "generation": d.device.family,
        "memory": f"{d.device.vendor.lower()}.{d.device.memory_kind}",
        "dense/MoE": "moe" if m.is_moe else "dense",
        "format family": fit.format_family(d.weights.name),
        "TP": _bucket(d.tp * d.pp, (1, 2, 4), ("1", "2", "4", "8+")),
        "active size": _bucket(m.active_params / 1e9, (10, 40, 100), ("<=10B", "10-40B", "40-100B", ">100B")),
        "depth": _bucket(m.num_layers, (32, 64), ("<=32", "33-64", ">64")),
        "batch": "ttft" if kind_of(p) == "ttft" else _bucket(batch or math.inf, (1, 16, 128), ("1", "2-16", "17-128", ">128 or saturated")),
        "client": _client(p),
        "source type": _source_type(p),
    }


FEATURES = (
    "intercept",
    "date",
    "date, serving",
    "date, serving, least squares",
    "engine",
    "release line",
    "vendor",
    "generation",
    "memory",
    "dense/MoE",
    "format family",
    "TP",
    "active size",
    "depth",
    "batch",
    "client",
    "source type",
)
NUMERIC = ("date", "date, serving", "date, serving, least squares")


class Row:
    """One point: its campaign, kind, family, log(predicted / measured time) and features."""

    def __init__(self, pid: str, campaign: str, kind: str, log_time: float, measured_value: float, features: dict):
        self.pid, self.campaign, self.kind, self.log_time = pid, campaign, kind, log_time
        self.family = "ttft" if kind == "ttft" else "decode"
        self.measured_value = measured_value
        self.features = features

    def error(self, offset: float = 0.0) -> float:
        """|predicted / measured − 1| in the metric's own unit, the prediction's time
        divided by exp(offset) (a throughput's rate multiplied)."""
        x = self.log_time - offset
        return abs(math.exp(-x if self.kind == "throughput" else x) - 1)


def _log_time(kind: str, predicted: float, meas: float) -> float:
    return math.log(meas / predicted) if kind == "throughput" else math.log(predicted / meas)


def rows_of(points: list[dict], base: dict[str, float] | None = None) -> list[Row]:
    """The points in reach as Rows; `base` (point id → log(predicted / measured time)) in
    place of the catalog's prediction where given (a point it lacks is left out)."""
    out = []
    for p in points:
        kind = kind_of(p)
        if kind not in KIND_NAMES or out_of_reach(p):
            continue
        meas = measured(p)
        if base is not None:
            if p["id"] not in base or meas is None:
                continue
            log_time = base[p["id"]]
        else:
            got = predict(p)
            if got is None or meas is None:
                continue
            log_time = _log_time(kind, got, meas)
        feats = describe(p)
        if feats is not None:
            out.append(Row(p["id"], source_key(p), kind, log_time, meas, feats))
    return out


def held_out_base(points: list[dict], folds: int, seed: int) -> tuple[dict[str, float], list[set[str]]]:
    """fit_cv.py's held-out log(predicted / measured time) per fit-half point (each from a
    fit without its fold's campaigns), and the folds (campaign sets)."""
    with contextlib.redirect_stdout(io.StringIO()):
        terms = fit.fit_terms(points, default_catalog())
    sources = sorted({t.source for t in terms})
    dealt = fit_cv.fold_sets(sources, folds, seed)
    fit_cv.POINTS.clear()
    fit_cv.held_out(terms, dealt)
    base = {}
    for key, (ratio, _src) in fit_cv.POINTS.items():
        pid, _, _ = key.rpartition(" ")
        base[pid] = math.log(ratio)  # a throughput point's term is its TPOT: a time too
    return base, dealt


def units(rows: list[Row], feature: str, family: str) -> list[tuple[object, str, float]]:
    """(level, campaign, offset): each campaign's median log time per level it spans."""
    by: dict[tuple[object, str], list[float]] = {}
    for r in rows:
        v = r.features[feature]
        if r.family == family and v is not None:
            by.setdefault((v, r.campaign), []).append(r.log_time)
    return [(v, c, statistics.median(x)) for (v, c), x in sorted(by.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))]


def _line(xy: list[tuple[float, float]], robust: bool = True) -> tuple[float, float, float, float] | None:
    """(intercept, slope, lowest x, highest x) of a line through the units: the Theil-Sen
    line (the median of the pairwise slopes, the intercept the median of y - slope x;
    robust, as the fit's |log| loss is), or least squares (validation_points.offset_trend's);
    None with fewer than two distinct x."""
    xs = [x for x, _ in xy]
    if len(set(xs)) < 2:
        return None
    if robust:
        slope = statistics.median((y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(xy) for x2, y2 in xy[i + 1 :] if x2 != x1)
        return statistics.median(y - slope * x for x, y in xy), slope, min(xs), max(xs)
    mx, my = statistics.fmean(xs), statistics.fmean(y for _, y in xy)
    slope = sum((x - mx) * (y - my) for x, y in xy) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, slope, min(xs), max(xs)


def feature_line(us: list[tuple[object, str, float]], feature: str) -> tuple[float, float, float, float] | None:
    """A numeric feature's line through its units (_line: Theil-Sen, or least squares for a
    "..., least squares" feature)."""
    return _line([(float(v), y) for v, _, y in us], robust=not feature.endswith("least squares"))  # type: ignore[arg-type]


def level_offsets(us: list[tuple[object, str, float]]) -> dict[object, tuple[float | None, int]]:
    """A categorical feature's levels: each its campaigns' median offset shrunk by n / (n +
    SHRINK) (None below MIN_CAMPAIGNS: no correction) and n, its campaigns."""
    levels: dict[object, list[float]] = {}
    for v, _, y in us:
        levels.setdefault(v, []).append(y)
    return {v: (statistics.median(ys) * len(ys) / (len(ys) + SHRINK) if len(ys) >= MIN_CAMPAIGNS else None, len(ys)) for v, ys in levels.items()}


def fit_feature(rows: list[Row], feature: str) -> dict[str, Callable[[object], float]]:
    """Per family, the fitted offset as a function of the feature's value (0 where none)."""
    out: dict[str, Callable[[object], float]] = {}
    for family in FAMILIES:
        us = units(rows, feature, family)
        if feature in NUMERIC:
            line = feature_line(us, feature)
            if line is None:
                out[family] = lambda v: 0.0
                continue
            a, b, lo, hi = line
            out[family] = lambda v, a=a, b=b, lo=lo, hi=hi: 0.0 if v is None else a + b * min(hi, max(lo, float(v)))  # type: ignore[misc]
            continue
        effect = {v: e for v, (e, _) in level_offsets(us).items() if e is not None}
        out[family] = lambda v, e=effect: e.get(v, 0.0)  # type: ignore[misc]
    return out


def corrected(rows: list[Row], model: dict[str, Callable[[object], float]], feature: str) -> dict[str, float]:
    return {r.pid: r.error(model[r.family](r.features[feature])) for r in rows}


def describe_fit(rows: list[Row], feature: str) -> str:
    """The fitted model in words (fit_feature's): the slope, or each level's offset and campaigns."""
    parts = []
    for family in FAMILIES:
        us = units(rows, feature, family)
        if feature in NUMERIC:
            line = feature_line(us, feature)
            if line is not None:
                a, b, lo, hi = line
                parts.append(f"{family}: {math.exp(b) - 1:+.1%}/yr, {a + b * hi:+.3f} at {hi:.2f}, over {len(us)} units of {lo:.1f}-{hi:.1f}")
            continue
        shown = [
            f"{v} {e:+.3f} ({n})" if e is not None else f"{v} · ({n})" for v, (e, n) in sorted(level_offsets(us).items(), key=lambda kv: str(kv[0]))
        ]
        parts.append(f"{family}: " + ", ".join(shown))
    return "; ".join(parts)


def medians(rows: list[Row], errors: dict[str, float]) -> dict[str, float]:
    out = {}
    for kind in KIND_NAMES:
        xs = [errors[r.pid] for r in rows if r.kind == kind]
        if xs:
            out[kind] = statistics.median(xs)
    return out


def change_interval(rows: list[Row], before: dict[str, float], after: dict[str, float], family: str, seed: int) -> tuple[float, float, float]:
    """The family's median error after − before, and its 95 % interval over the campaigns
    drawn again with replacement (both medians from the same draw)."""
    by: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        if r.family == family:
            by.setdefault(r.campaign, []).append((before[r.pid], after[r.pid]))
    groups = [by[c] for c in sorted(by)]
    if not groups:
        return math.nan, math.nan, math.nan
    flat = [x for g in groups for x in g]
    mid = statistics.median(a for _, a in flat) - statistics.median(b for b, _ in flat)
    rng = random.Random(seed)
    diffs = []
    for _ in range(DRAWS):
        draw = [x for g in rng.choices(groups, k=len(groups)) for x in g]
        diffs.append(statistics.median(a for _, a in draw) - statistics.median(b for b, _ in draw))
    diffs.sort()
    return mid, diffs[int(0.025 * (DRAWS - 1))], diffs[int(0.975 * (DRAWS - 1))]


def cv_errors(rows: list[Row], folds: list[set[str]], feature: str) -> dict[str, float]:
    """Each fit-half point's error once corrected by the feature fitted on the other folds."""
    out: dict[str, float] = {}
    for fold in folds:
        train = [r for r in rows if r.campaign not in fold]
        test = [r for r in rows if r.campaign in fold]
        if test:
            out.update(corrected(test, fit_feature(train, feature), feature))
    return out


def joint_fit_report(points: list[dict], seed: int) -> None:
    """The date as a model term rather than a correction afterwards (fit_defaults.MATURITY):
    the factors fitted on the whole fit half without and with it, and the test half's
    points (as the fit's terms: TPOT, in-flight throughput as its TPOT, TTFT) predicted by
    each; the fit half's own held-out judgement is bench/fit_cv.py --maturity off on."""
    catalog = default_catalog()
    by_id = {p["id"]: p for p in points}
    with contextlib.redirect_stdout(io.StringIO()):
        train = fit.fit_terms(points, catalog)
        test = [t for t in (fit.terms_of(p, catalog) for p in points if p.get("split") == "test") if t is not None and t.measured_s > 0]
    errors: dict[bool, dict[str, float]] = {}
    chosen = fit.MATURITY
    for on in (False, True):
        fit.MATURITY = on
        with contextlib.redirect_stdout(io.StringIO()):
            model = fit.fit_model(train)
        known = [t for t in test if t.weights in model.formats]
        ratio = fit_cv.predict_with(model, known) / [t.measured_s for t in known]
        errors[on] = {t.pid: abs(float(r) - 1) for t, r in zip(known, ratio, strict=True)}
        if on:
            m = model.values[(fit.GLOBAL, "m")]
            print(
                f"joint fit (fit_defaults.MATURITY): m {m:.4f} a year (a run a year older than {model.maturity_ref:.2f} {math.exp(m) - 1:+.1%} slower), "
                f"{len(known)} test-half terms of formats the fit knows; median |error| off -> on, Δ with its 95 % interval over campaigns resampled:"
            )
    fit.MATURITY = chosen
    rows = [Row(t.pid, source_key(by_id[t.pid]), kind_of(by_id[t.pid]) or "tpot", 0.0, 0.0, {}) for t in known]
    for kind in KIND_NAMES:
        mine = [r for r in rows if r.kind == kind]
        if mine:
            off = statistics.median(errors[False][r.pid] for r in mine)
            on_ = statistics.median(errors[True][r.pid] for r in mine)
            print(f"  {KIND_NAMES[kind]:<9} n {len(mine):>3}  {off:6.1%} -> {on_:6.1%}")
    for family in FAMILIES:
        mid, lo, hi = change_interval(rows, errors[False], errors[True], family, seed)
        print(f"  {family:<9} Δ {mid:+.1%} ({lo:+.1%} to {hi:+.1%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--base",
        choices=["held-out", "in-sample"],
        default="held-out",
        help="the fit half's offsets: fit_cv.py's held-out predictions, or the catalog's",
    )
    ap.add_argument(
        "--folds",
        type=fit_cv.whole_number(2, 100, also=(0,)),
        default=5,
        help="campaign folds of the fit half (fit_cv.py's), 2 to 100 (1 would leave no campaign to fit on); 0: each campaign alone",
    )
    ap.add_argument("--seed", type=fit_cv.whole_number(0, 2**32 - 1), default=0, help="the folds' and the intervals' seed")
    ap.add_argument(
        "--features",
        nargs="+",
        choices=FEATURES,
        default=list(FEATURES),
        metavar="FEATURE",
        help="features to judge (default all): " + ", ".join(FEATURES),
    )
    ap.add_argument(
        "--joint", action="store_true", help="also the date as a term fitted with the factors (fit_defaults.MATURITY), judged on the test half"
    )
    ap.add_argument(
        "--levels", action="store_true", help="print each feature's fit on the whole fit half (its slope or levels' offsets and campaigns)"
    )
    args = ap.parse_args()
    points = load_points()
    fit_points = [p for p in points if p.get("split") == "fit"]
    test_rows = rows_of([p for p in points if p.get("split") == "test"])
    if args.base == "held-out":
        base, folds = held_out_base(fit_points, args.folds, args.seed)
        fit_rows = rows_of(fit_points, base)
    else:
        fit_rows = rows_of(fit_points)
        folds = fit_cv.fold_sets(sorted({r.campaign for r in fit_rows}), args.folds, args.seed)
    # a campaign the base's terms lacked (no fold): dealt as fit_cv would deal it alone
    dealt = set().union(*folds)
    extra = sorted({r.campaign for r in fit_rows} - dealt)
    folds = [set(f) for f in folds] + [{c} for c in extra]
    n_fit = {f: len({r.campaign for r in fit_rows if r.family == f}) for f in FAMILIES}
    n_test = {f: len({r.campaign for r in test_rows if r.family == f}) for f in FAMILIES}
    print(
        f"campaign offsets by feature (issue 42). fit half ({args.base} base, {args.folds} campaign folds, seed {args.seed}): "
        f"{len(fit_rows)} points, decode {n_fit['decode']} / TTFT {n_fit['ttft']} campaigns; "
        f"test half: {len(test_rows)} points, decode {n_test['decode']} / TTFT {n_test['ttft']} campaigns"
    )
    print("median |error| before -> after per kind; Δ: the family's median change (after − before) with its 95 % interval over campaigns resampled")
    kinds = list(KIND_NAMES)
    head = "  ".join(f"{KIND_NAMES[k]:>13}" for k in kinds)
    none_fit = {r.pid: r.error() for r in fit_rows}
    none_test = {r.pid: r.error() for r in test_rows}
    b_fit, b_test = medians(fit_rows, none_fit), medians(test_rows, none_test)
    print(f"  {'':<14} {'':<5} {head}   {'Δ decode':>26}  {'Δ TTFT':>26}")
    print(
        f"  {'(none)':<14} {'CV':<5} " + "  ".join(f"{b_fit.get(k, math.nan):>13.1%}" for k in kinds) + "\n"
        f"  {'':<14} {'test':<5} " + "  ".join(f"{b_test.get(k, math.nan):>13.1%}" for k in kinds)
    )
    for feature in args.features:
        cv = cv_errors(fit_rows, folds, feature)
        model = fit_feature(fit_rows, feature)
        te = corrected(test_rows, model, feature)
        for label, rows, before, after, b in (("CV", fit_rows, none_fit, cv, b_fit), ("test", test_rows, none_test, te, b_test)):
            a = medians(rows, after)
            cells = "  ".join(f"{b.get(k, math.nan):>5.1%}->{a.get(k, math.nan):>5.1%}" for k in kinds)
            deltas = []
            for family in FAMILIES:
                mid, lo, hi = change_interval(rows, before, after, family, args.seed)
                deltas.append(f"{mid:>+6.1%} ({lo:+.1%} to {hi:+.1%})")
            print(f"  {feature if label == 'CV' else '':<14} {label:<5} {cells}   {deltas[0]:>26}  {deltas[1]:>26}")
        if args.levels:
            print(f"  {'':<14} fit:  {describe_fit(fit_rows, feature)}")
    if args.joint:
        joint_fit_report(points, args.seed)


if __name__ == "__main__":
    main()
