"""Cross-validation of the fit inside the FIT split, grouped by source: the fit split's
campaigns dealt into K folds (seeded), each fold predicted from a fit on the others
(bench/fit_defaults.py's fit_model, its fallbacks for groups a fold's training lacks),
and the held-out median error printed per kind, over all terms, and as the median of
the campaigns' own medians (each campaign counted once) — for the fixed-cost caps the
fit uses and for others given on the command line. This is how a cap or threshold of the
fit is chosen without looking at the test split.

    python bench/fit_cv.py [--folds 5] [--seed 0] [--caps 2.5e-3:2e-5 1e-3:1e-5 5e-3:4e-5]
                           [--unhidden 0 0.3 0.6 1] [--prefill-unhidden 0 0.5 1] [--balance 0 0.5 1]
                           [--prefill-expert fitted none] [--prefill-expert-form expert moe_layer layer tile]
                           [--attention-share held fitted]
                           [--pull 0.1 0.3 1 3] [--group campaign|repository]
                           [--decode-expert-share all chunk none]
                           [--expert-layer-families none fp4 fp4:1 fp4,int4] [--expert-pull 1e-3 1e-4]
                           [--rank-pull 1e-4 3e-5] [--maturity on off] [--spread]
                           [--partial-keys none e e,s3,a] [--expert-pool 1e-3 1e-4]

Each summary line ends with the mean over campaigns of each campaign's signed held-out
offset, the median log(predicted / measured) of its mixture-of-experts terms and of its
FP4 terms (MoE offset, FP4 offset; negative: predicted fast; issue 42).

--folds 0 leaves one campaign out at a time (no seed: every campaign is a fold).
--spread prints, for each setting compared, how far the folds' fits move the shared
constants (TRACKED: per group the bandwidth efficiency, utilisation, costs per MoE layer
and TP rank; the formats' shares) and which fold moves each most: a well-conditioned fit
moves them little. With --folds 0 a fold is one campaign (drop-one-campaign leverage).
--group repository deals a repository's campaigns into one fold (repository_key: a
GitHub repository's documents at every revision, a gist's or a Hugging Face page's
owner, a site's host), a coarser unit than the fit/test split's, which is by campaign
(validation_points.source_key); campaign (the default) is the split's own unit.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fit_defaults as fit  # noqa: E402
from validation_points import load_points  # noqa: E402

from solver.catalog import default_catalog  # noqa: E402

TRACKED = (
    (("serving", "amd.hbm"), ("e", "c", "s3", "s3:fp4", "s4")),
    (("serving", "hbm"), ("e", "c", "s0", "s3", "s3:fp4", "s4")),
    (("trtllm", "hbm"), ("e", "c", "s0", "s3", "s4")),
    (("serving", "gddr"), ("e", "c", "s3", "s4")),
    (("llama.cpp", "gddr"), ("e", "c", "s3", "s3:fp4")),
    ("fp8", ("sc", "sx")),
    ("mxfp4", ("sb", "sc", "sx")),
    ("nvfp4", ("sb", "sc", "sx")),
    (("defaults", "all"), ("sp",)),
)
"""The constants --spread follows across the folds' fits (a group's as a fold's fit
resolves it: its own, its tie's or its fallback's)."""
FITS: list[tuple[frozenset[str], dict[str, float]]] = []
"""With --spread, each fold's training campaigns left out and its fit's TRACKED values."""
SPREAD = False
LEVERAGE = 3
"""How many folds --spread names per constant, those whose leaving-out moves it most."""
POINTS: dict[str, tuple[float, str]] = {}
"""The last held_out's points: "id kind" → (predicted / measured, campaign)."""
MOVERS = 0
"""With --movers N, each setting's N held-out points whose prediction moved most against
the fit's own setting (the first run), by |log| of the ratio."""
BASELINE: dict[str, tuple[float, str]] = {}
GROUPINGS = ("campaign", "repository")
"""How campaigns are dealt into folds: each alone (the fit/test split's unit), or a
repository's together."""


def repository_key(source: str) -> str:
    """A campaign's repository (source: validation_points.source_key's string): a GitHub
    repository's files at any revision are one (https://github.com/owner/repo), a gist's
    or a Hugging Face page's owner one, any other site its host; an issue or pull-request
    thread (another reporter each) stays its own."""
    parts = source.split("/")
    if len(parts) > 6 and parts[2] == "github.com" and parts[5] in ("blob", "tree", "raw"):
        return "/".join(parts[:5])
    if len(parts) > 3 and parts[2] in ("gist.github.com", "huggingface.co"):
        return "/".join(parts[:4])
    if len(parts) > 2 and parts[0] in ("http:", "https:") and parts[2] != "github.com":
        return parts[2]
    return source


def fold_of(name: str, folds: int, seed: int = 0) -> int:
    """A group's fold from a hash of the seed and its own name alone, so that adding a
    campaign moves no other campaign's fold. Until 2026-12-06 the sorted names were
    shuffled by the seed and dealt round-robin, which re-dealt every campaign when one
    was added: batch '2026-12-06d' (one new fit campaign, no new TPOT point) moved the
    held-out TPOT 8.3 → 11.9 % at seed 0 with the same TPOT points. Folds may be unequal."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % folds


def fold_sets(sources: list[str], folds: int, seed: int = 0, group: str = "campaign") -> list[set[str]]:
    """The campaigns (source keys) of each fold: each group (a campaign, or a repository
    with --group repository) in fold_of its name, the empty folds dropped; folds <= 0:
    each group a fold of its own, in sorted order. A group's campaigns share a fold."""
    key = repository_key if group == "repository" else (lambda s: s)
    names = sorted({key(s) for s in sources})
    if folds > 0:
        dealt = {n: fold_of(n, folds, seed) for n in names}
    else:
        dealt = {n: i for i, n in enumerate(names)}
    out: list[set[str]] = [set() for _ in range(max(dealt.values(), default=-1) + 1)]
    for s in sources:
        out[dealt[key(s)]].add(s)
    return [fold for fold in out if fold]


def predict_from(train: list, test: list) -> np.ndarray:
    """The test terms' times (s) as a fit on the train terms predicts them, a group the
    train terms lack taking its fallback's values (fit_defaults.fallback)."""
    with contextlib.redirect_stdout(io.StringIO()):
        model = fit.fit_model(train)
    return predict_with(model, test)


def predict_with(model, test: list) -> np.ndarray:
    """The test terms' times (s) as a fitted model predicts them (predict_from)."""
    fitted = {k[0] for k in model.free(fit.MIN_POINTS, fit.MIN_FORMAT_POINTS) if isinstance(k[0], tuple) and k[0] not in (fit.SERVED, fit.GLOBAL)}
    check = fit.Model(test)
    check.tie = {}  # the values copied in are already resolved
    for key in list(check.values):
        owner, name = key
        if isinstance(owner, tuple) and owner not in (fit.SERVED, fit.GLOBAL):
            src = owner if owner in fitted else fit.fallback(owner, fitted)
            if src is not None and (src, name) in model.values:
                check.values[key] = model.value(src, name)
        elif key in model.values:
            check.values[key] = model.value(owner, name)
    check.release = model.release  # a line without fit campaigns takes the pooled value (none)
    check.maturity_ref = model.maturity_ref  # MATURITY's reference: the training runs' newest
    if SPREAD:
        FITS.append((frozenset(t.source for t in test), tracked_values(model, fitted)))
    return check.predict()


def tracked_values(model, fitted: set) -> dict[str, float]:
    """The TRACKED constants of a fit (a group it did not fit, which takes its fallback's
    values, and a key the run does not have, such as s3:fp4 without
    --expert-layer-families: skipped; their spread is the fit's conditioning, not the
    fallback's)."""
    out = {}
    for owner, keys in TRACKED:
        for key in keys:
            if owner == fit.GLOBAL:
                if (owner, key) in model.values:
                    out[f"{owner[0]} {key}"] = model.value(owner, key)
            elif isinstance(owner, tuple):
                if owner in fitted and (owner, key) in model.values:
                    out[f"{owner[0]} {owner[1]} {key}"] = model.value(owner, key)
            elif (owner, key) in model.values:
                out[f"{owner} {key}"] = model.value(owner, key)
    return out


def short_name(source: str) -> str:
    """A campaign's name for a report: on GitHub the repository and the issue or pull
    request's number, or the revision's first 7 characters; else the site's host."""
    parts = source.split("/")
    if len(parts) > 4 and parts[2] == "github.com":
        if len(parts) > 6 and parts[5] in ("issues", "pull"):
            return f"{parts[4]}#{parts[6]}"
        return f"{parts[3]}/{parts[4]}" + (f"@{parts[6][:7]}" if len(parts) > 6 else "")
    return parts[2] if len(parts) > 2 else source


def spread_report(terms: list) -> str:
    """The TRACKED constants over the folds' fits (FITS): the fit on every term, the folds'
    range, and the fold whose leaving-out moves each most (its campaigns, shortened)."""
    with contextlib.redirect_stdout(io.StringIO()):
        whole = fit.fit_model(terms)
    fitted = {k[0] for k in whole.free(fit.MIN_POINTS, fit.MIN_FORMAT_POINTS) if isinstance(k[0], tuple) and k[0] not in (fit.SERVED, fit.GLOBAL)}
    full = tracked_values(whole, fitted)
    lines = []
    for name, v in full.items():
        folds = [(left, vals[name]) for left, vals in FITS if name in vals]
        if not folds:
            continue
        xs = [x for _, x in folds]
        scale = 1e6 if name.split()[-1].startswith("s") and name.split()[-1] not in ("sb", "sc", "sx") else 1.0
        unit = " µs" if scale == 1e6 else ""
        movers = sorted(folds, key=lambda f: -abs(f[1] - v))[:LEVERAGE]
        who = "; ".join(
            f"{'+'.join(sorted(short_name(s) for s in left)[:2])}{'+…' if len(left) > 2 else ''} {far * scale:.4g}"
            for left, far in movers
            if far != v
        )
        lines.append(
            f"    {name:<24} all {v * scale:8.4g}{unit}  folds {min(xs) * scale:8.4g} to {max(xs) * scale:8.4g}{unit}"
            f" ({len(FITS) - len(folds)} unfitted)  most moved without: {who or '-'}"
        )
    FITS.clear()
    return "\n".join(lines)


def held_out(terms: list, folds: list[set[str]]) -> dict[str, list[float]]:
    errs: dict[str, list[float]] = {"tpot": [], "ttft": [], "campaign": [], "moe": [], "moe_ttft": [], "offset_moe": [], "offset_fp4": []}
    for fold in folds:
        train = [t for t in terms if t.source not in fold]
        test = [t for t in terms if t.source in fold]
        if not test:
            continue
        ratio = np.asarray(predict_from(train, test)) / np.array([t.measured_s for t in test])
        ape = np.abs(ratio - 1)
        for t, r in zip(test, ratio):
            POINTS[f"{getattr(t, 'pid', '')} {t.kind}"] = (float(r), getattr(t, "source", ""))
        for t, e in zip(test, ape):
            errs["ttft" if t.kind == "ttft" else "tpot"].append(float(e))
            if t.moe_layers and t.kind != "ttft":
                errs["moe"].append(float(e))  # the mixture-of-experts decode steps apart (the test split's largest gap)
            if t.moe_layers and t.kind == "ttft":
                errs["moe_ttft"].append(float(e))  # and their prefills (issue 42)
        by_source: dict[str, list[float]] = {}
        for t, e in zip(test, ape):
            by_source.setdefault(t.source, []).append(float(e))
        errs["campaign"] += [float(np.median(v)) for v in by_source.values()]
        for name, chosen in (("offset_moe", lambda t: bool(t.moe_layers)), ("offset_fp4", _fp4)):
            signed: dict[str, list[float]] = {}
            for t, r in zip(test, ratio):
                if chosen(t):
                    signed.setdefault(t.source, []).append(math.log(r))
            errs[name] += [float(np.median(v)) for v in signed.values()]  # each campaign's signed offset (issue 42)
    return errs


def _fp4(t) -> bool:
    """Whether a term's weights are a 4-bit float format (fit_defaults.format_family "fp4")."""
    name = getattr(t, "weights", "")
    return bool(name) and fit.format_family(name) == "fp4"


def _summary(errs: dict[str, list[float]]) -> str:
    both = errs["tpot"] + errs["ttft"]
    return (
        f"TPOT {np.median(errs['tpot']):6.1%} (n {len(errs['tpot'])})  TTFT {np.median(errs['ttft']):6.1%} (n {len(errs['ttft'])})  "
        f"all {np.median(both):6.1%}  campaigns' medians {np.median(errs['campaign']):6.1%}"
        + (f"  MoE TPOT {np.median(errs['moe']):6.1%} (n {len(errs['moe'])})" if errs["moe"] else "")
        + (f"  MoE TTFT {np.median(errs['moe_ttft']):6.1%} (n {len(errs['moe_ttft'])})" if errs["moe_ttft"] else "")
        + "".join(
            f"  {label} offset {np.mean(errs[key]):+.3f} ({len(errs[key])} campaigns)"
            for key, label in (("offset_moe", "MoE"), ("offset_fp4", "FP4"))
            if errs.get(key)
        )
    )


def _number_in(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite number from low to high, or one clear error naming the range."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"{text!r}: must be a number from {low:g} to {high:g}")
        return value

    return parse


def whole_number(low: int, high: int, also: tuple[int, ...] = ()) -> Callable[[str], int]:
    """An argparse type: a whole number from low to high (or one of `also`), written in
    ASCII digits, or one clear error naming what is allowed (a sign, a fraction, a word or
    a digit int() refuses, such as '²', included). offset_features.py's counts too."""
    allowed = " or ".join([*(str(a) for a in also), f"a whole number from {low} to {high}"])

    def parse(text: str) -> int:
        value = int(text) if text.isascii() and text.isdigit() else -1
        if not (low <= value <= high or value in also):
            raise argparse.ArgumentTypeError(f"{text!r}: must be {allowed}")
        return value

    return parse


def _release(text: str) -> tuple[str, float, str]:
    """An argparse type: SHAPE[:SHRINK][/GROUPING] for --release, or one clear error."""
    shape_k, _, grouping = text.partition("/")
    shape, _, k = shape_k.partition(":")
    try:
        shrink = float(k) if k else 2.0
    except ValueError:
        shrink = math.nan
    if shape not in ("none", "scale", "step", "layer", "rank") or not (math.isfinite(shrink) and shrink >= 0) or grouping not in ("", "line", "v0"):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give SHAPE[:SHRINK][/GROUPING], SHAPE none, scale, step, layer or rank, SHRINK a number >= 0, GROUPING line or v0"
        )
    return ("" if shape == "none" else shape), shrink, grouping or "line"


def _partial(text: str) -> str:
    """An argparse type: none, or group keys joined by commas for --partial-keys."""
    if text != "none" and not all(k in fit.GROUP_KEYS for k in text.split(",")):
        raise argparse.ArgumentTypeError(f"{text!r}: give none, or keys of {', '.join(fit.GROUP_KEYS)} joined by commas")
    return text


def _caps(text: str) -> tuple[float, float]:
    """An argparse type: S0:S1 for --caps, the step's cap (BOUNDS["s0"]'s top, above 0: the
    fit's grid runs up to it) and the held per-layer cost, seconds, or one clear error."""
    s0, sep, s1 = text.partition(":")
    try:
        cap, layer = float(s0), float(s1)
    except ValueError:
        cap = layer = math.nan
    if not (sep and math.isfinite(cap) and math.isfinite(layer) and 0 < cap <= 1 and 0 <= layer <= 1):
        raise argparse.ArgumentTypeError(f"{text!r}: give S0:S1 in seconds, S0 above 0 and at most 1, S1 from 0 to 1 (e.g. 0.0005:5e-5)")
    return cap, layer


def _families(text: str) -> tuple[tuple[str, ...], int]:
    """An argparse type: none, or FAMILY[,FAMILY][:SOURCES] for --expert-layer-families."""
    names, _, k = text.partition(":")
    fams = () if names == "none" else tuple(names.split(","))
    if not all(f in ("fp4", "int4") for f in fams) or not (k == "" or k.isascii() and k.isdigit() and int(k) >= 1):
        raise argparse.ArgumentTypeError(f"{text!r}: give none, or fp4 and/or int4 joined by commas, optionally :SOURCES (a whole number >= 1)")
    return fams, int(k) if k else 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--folds",
        type=whole_number(2, 1000, also=(0,)),
        default=5,
        help="campaign folds, 2 to 1000 (1 would leave no campaign to fit on); 0: leave one campaign out",
    )
    ap.add_argument("--seed", type=whole_number(0, 2**32 - 1), default=0)
    ap.add_argument(
        "--caps", nargs="+", type=_caps, default=[], metavar="S0:S1", help="the step's cap and the held per-layer cost to compare, seconds"
    )
    ap.add_argument(
        "--unhidden", nargs="+", type=_number_in(0, 1), default=[], metavar="SHARE", help="kernels' unhidden shares to compare (at the fit's caps)"
    )
    ap.add_argument(
        "--prefill-unhidden", nargs="+", type=_number_in(0, 1), default=[], metavar="SHARE", help="prefill GEMMs' unhidden shares to compare"
    )
    ap.add_argument(
        "--balance",
        nargs="+",
        type=_number_in(0, 1),
        default=[],
        metavar="ALPHA",
        help="campaign balance of the loss to compare (fit_defaults.BALANCE)",
    )
    ap.add_argument(
        "--prefill-expert",
        nargs="+",
        choices=["fitted", "none"],
        default=[],
        help="the prefill's cost per routed expert reached (fit_defaults.GLOBAL_KEYS' sp): fitted, or none (held at 0)",
    )
    ap.add_argument(
        "--prefill-expert-form",
        nargs="+",
        choices=sorted(fit.PREFILL_UNITS),
        default=[],
        help="what the prefill's MoE cost (sp) is charged per (fit_defaults.PREFILL_EXPERT_FORM)",
    )
    ap.add_argument(
        "--attention-share",
        nargs="+",
        choices=["fitted", "held"],
        default=[],
        help="decode attention's KV read share (fit_defaults.ATTENTION_SHARE): fitted, or held at 1",
    )
    ap.add_argument(
        "--release",
        nargs="+",
        type=_release,
        default=[],
        metavar="SHAPE:SHRINK",
        help="per release line decode terms to compare (fit_defaults.RELEASE_SHAPE), e.g. none scale:2 step:1 rank:2/v0 (/v0: vLLM's V0 lines one term, the rest pooled)",
    )
    ap.add_argument(
        "--partial-keys",
        nargs="+",
        type=_partial,
        default=[],
        metavar="KEYS",
        help="group keys an unidentifiable group fits itself (fit_defaults.PARTIAL_KEYS), e.g. none e e,s3",
    )
    ap.add_argument("--pool-expert-layer", nargs="+", choices=["on", "off"], default=[])
    ap.add_argument(
        "--maturity", nargs="+", choices=["on", "off"], default=[], help="the serving engines' decode slower by the run's age (fit_defaults.MATURITY)"
    )
    ap.add_argument(
        "--decode-expert-share",
        nargs="+",
        choices=["all", "chunk", "none"],
        default=[],
        help="which of a decode step's routed-expert FLOPs run at the format's expert share (fit_defaults.DECODE_EXPERT_SHARE)",
    )
    ap.add_argument(
        "--pull", nargs="+", type=_number_in(0, 100), default=[], metavar="PULL", help="the pull toward the priors to compare (fit_defaults.PULL)"
    )
    ap.add_argument(
        "--expert-layer-families",
        nargs="+",
        type=_families,
        default=[],
        metavar="FAMILIES[:SOURCES]",
        help="format families with a cost per MoE layer of their own (fit_defaults.EXPERT_LAYER_FAMILIES), e.g. none fp4 fp4:1 fp4,int4; SOURCES: MIN_FAMILY_SOURCES",
    )
    for flag, what in (
        ("--expert-pull", "the cost per MoE layer's pull scale (fit_defaults.EXPERT_PULL_S)"),
        ("--rank-pull", "the cost per TP rank's pull scale (fit_defaults.RANK_PULL_S)"),
        ("--expert-pool", "the cost per MoE layer's pull toward the groups' pooled value (fit_defaults.EXPERT_POOL_S)"),
    ):
        ap.add_argument(flag, nargs="+", type=_number_in(1e-7, 1), default=[], metavar="S", help=what)
    ap.add_argument(
        "--movers", type=whole_number(0, 10_000), default=0, metavar="N", help="per setting, the N held-out points moved most against the fit's own"
    )
    ap.add_argument("--spread", action="store_true", help="the shared constants' spread over the folds' fits (TRACKED), per setting")
    ap.add_argument("--group", choices=GROUPINGS, default="campaign", help="fold unit: campaign (the split's) or repository")
    args = ap.parse_args()
    global SPREAD, MOVERS
    SPREAD, MOVERS = args.spread, args.movers
    points = [p for p in load_points() if p.get("split") == "fit"]
    with contextlib.redirect_stdout(io.StringIO()):
        terms = fit.fit_terms(points, default_catalog())
    sources = sorted({t.source for t in terms})
    folds = fold_sets(sources, args.folds, args.seed, args.group)
    current = (fit.BOUNDS["s0"][1], fit.LAYER_OVERHEAD_S)
    caps = [current, *args.caps]
    unit = args.group
    how = f"each {unit} left out in turn" if args.folds <= 0 else f"{args.folds} folds by {unit} (seed {args.seed})"
    groups = len({repository_key(s) for s in sources}) if unit == "repository" else len(sources)
    print(f"{len(terms)} fit-split terms from {len(sources)} campaigns ({groups} {unit} groups), {how}; held-out median error:")
    for s0, s1 in caps:
        fit.BOUNDS["s0"], fit.PRIOR["s1"] = (0.0, s0), s1
        errs = held_out(terms, folds)
        mark = "  (the fit's caps)" if (s0, s1) == current else ""
        print(f"  step cap {s0 * 1e3:4.1f} ms, {s1 * 1e6:4.0f} µs/layer: {_summary(errs)}{mark}")
        _spread(terms)
    fit.BOUNDS["s0"], fit.PRIOR["s1"] = (0.0, current[0]), current[1]
    _compare_constants(
        terms,
        folds,
        (
            ("UNHIDDEN", "unhidden share", args.unhidden),
            ("UNHIDDEN_PREFILL", "prefill unhidden share", args.prefill_unhidden),
            ("BALANCE", "campaign balance", args.balance),
            ("PULL", "pull toward the priors", args.pull),
        ),
        lambda v: f"{v:4.2f}",
    )
    keys, held = fit.GLOBAL_KEYS, fit.HELD_GROUP_KEYS
    for names, settings in (
        (
            ("GLOBAL_KEYS",),
            [(f"prefill cost per expert {h}", (keys if h == "fitted" else tuple(k for k in keys if k != "sp"),)) for h in args.prefill_expert],
        ),
        (("PREFILL_EXPERT_FORM",), [(f"prefill MoE cost per {form}", (form,)) for form in args.prefill_expert_form]),
        (
            ("HELD_GROUP_KEYS",),
            [(f"attention read share {h}", (held if h == "fitted" else (*held, fit.ATTENTION_SHARE),)) for h in args.attention_share],
        ),
        (("POOL_EXPERT_LAYER",), [(f"cost per MoE layer pooled {h}", (h == "on",)) for h in args.pool_expert_layer]),
        (
            ("PARTIAL_KEYS",),
            [(f"a group that cannot separate reads from FLOPs fits {k}", (() if k == "none" else tuple(k.split(",")),)) for k in args.partial_keys],
        ),
        (("MATURITY",), [(f"maturity term {h}", (h == "on",)) for h in args.maturity]),
        (("DECODE_EXPERT_SHARE",), [(f"decode experts at the expert share {h}", (h,)) for h in args.decode_expert_share]),
        (
            ("RELEASE_SHAPE", "RELEASE_SHRINK", "RELEASE_GROUPING"),
            [(f"release-line decode term {shape}, shrink {k:g}, by {by}", (shape, k, by)) for shape, k, by in args.release],
        ),
        (
            ("EXPERT_LAYER_FAMILIES", "MIN_FAMILY_SOURCES"),
            [
                (f"cost per MoE layer of its own for {','.join(fams) or 'no family'} ({n}+ campaigns)", (fams, n))
                for fams, n in args.expert_layer_families
            ],
        ),
    ):
        _compare(terms, folds, names, settings)
    _compare_constants(
        terms,
        folds,
        (
            ("EXPERT_PULL_S", "cost per MoE layer pulled per", args.expert_pull),
            ("RANK_PULL_S", "cost per TP rank pulled per", args.rank_pull),
            ("EXPERT_POOL_S", "cost per MoE layer pulled toward the pool per", args.expert_pool),
        ),
        lambda v: f"{v * 1e6:g} µs",
    )


def _compare_constants(terms: list, folds: list[set[str]], rows, shown: Callable[[float], str]) -> None:
    """For each (fit_defaults constant, label, values asked): _compare at each value, shown."""
    for name, label, values in rows:
        _compare(terms, folds, (name,), [(f"{label} {shown(value)}", (value,)) for value in values])


def _compare(terms: list, folds: list[set[str]], names: tuple[str, ...], settings: list[tuple[str, tuple]]) -> None:
    """For each (label, values) setting: fit_defaults' constants `names` set to the values,
    the held-out errors printed under the label (the fit's own setting marked) and its
    _spread; the constants restored after."""
    chosen = tuple(getattr(fit, name) for name in names)
    for label, values in settings:
        for name, value in zip(names, values, strict=True):
            setattr(fit, name, value)
        errs = held_out(terms, folds)
        print(f"  {label}: {_summary(errs)}" + ("  (the fit's)" if tuple(values) == chosen else ""))
        _spread(terms)
    for name, value in zip(names, chosen, strict=True):
        setattr(fit, name, value)


def _spread(terms: list) -> None:
    """After each setting's held_out: with --spread its folds' fits (FITS, then cleared),
    with --movers its points against the first setting's. Every setting calls it, or its
    fits would join the next report's (FITS accumulates until spread_report clears it)."""
    if SPREAD:
        print(spread_report(terms))
    if MOVERS and not BASELINE:
        BASELINE.update(POINTS)
    elif MOVERS:
        print(movers_report(BASELINE, POINTS, MOVERS))


def movers_report(before: dict[str, tuple[float, str]], after: dict[str, tuple[float, str]], n: int) -> str:
    """The n held-out points whose predicted / measured moved most from before to after
    (by |log|), each with both ratios and its campaign."""
    moved = sorted((k for k in after if k in before), key=lambda k: -abs(math.log(after[k][0] / before[k][0])))[:n]
    return "\n".join(f"      moved {k:<40} {before[k][0] - 1:+7.1%} -> {after[k][0] - 1:+7.1%}  {short_name(after[k][1])}" for k in moved)


if __name__ == "__main__":
    main()
