"""The validation set as a specification: every point sourced and dated, split once by
source into fit and test by the recorded rule, and the catalog's fitted factors
reproducible from the fit points alone — so no figure reported on the test split was
fitted on it."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import yaml

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import fit_defaults  # noqa: E402
import validation_points as vp  # noqa: E402

POINTS = vp.load_points()


def test_every_point_is_sourced_dated_and_split():
    ids = [p["id"] for p in POINTS]
    assert len(ids) == len(set(ids)) >= 150
    for p in POINTS:
        assert p["source"].startswith("http"), p["id"]
        assert str(p["as_of"])[:2] == "20", p["id"]
        assert p["split"] in ("fit", "test"), p["id"]


def test_one_source_lies_wholly_in_one_split():
    split_of: dict[str, set] = {}
    for p in POINTS:
        split_of.setdefault(vp.source_key(p), set()).add(p["split"])
    assert all(len(s) == 1 for s in split_of.values())


def test_the_recorded_split_is_the_rule():
    # Decided once: sources grouped by engine and main metric, largest first, dealt
    # alternately — the file records exactly what the rule gives.
    rule = vp.assign_split(POINTS)
    assert {p["id"]: p["split"] for p in POINTS} == {p["id"]: rule[vp.source_key(p)] for p in POINTS}
    # and both halves hold points of each of the four engines plan-opt plans for
    for engine in ("vllm", "sglang", "trtllm", "llama.cpp"):
        assert {p["split"] for p in POINTS if p["engine"] == engine} == {"fit", "test"}, engine


def test_dealing_alternates_within_a_stratum():
    pts = [{"id": f"{s}-{i}", "engine": "vllm", "metric": "ttft", "source": f"https://x/{s} quote"}
           for s, n in (("a", 5), ("b", 4), ("c", 3), ("d", 1)) for i in range(n)]
    assert vp.assign_split(pts) == {"https://x/a": "fit", "https://x/b": "test", "https://x/c": "fit", "https://x/d": "test"}


def _fitted_from(points):
    catalog = vp.default_catalog()
    terms = [t for t in (fit_defaults.terms_of(p, catalog) for p in points if p.get("split") == "fit") if t]
    model = fit_defaults.Model(terms)
    free = model.free(fit_defaults.MIN_POINTS, fit_defaults.MIN_FORMAT_POINTS)
    model.fit(free)
    return {k: model.values[k] for k in free}


@pytest.fixture(scope="module")
def fitted():
    return _fitted_from(POINTS)


def test_catalog_fitted_factors_are_what_the_fit_points_give(fitted):
    # catalogs/fitted.yaml is the output of bench/fit_defaults.py on the fit split.
    data = yaml.safe_load((vp.ROOT / "catalogs" / "fitted.yaml").read_text())
    names = {"e": "bandwidth_efficiency", "c": "compute_efficiency", "s0": "step_overhead_s",
             "s1": "layer_overhead_s", "s2": "sequence_overhead_s"}
    shares = {"sb": "bandwidth_share", "sc": "compute_share"}
    for (owner, key), value in fitted.items():
        if isinstance(owner, tuple):
            engine, kind = owner
            got = data["engines"][engine][kind][names[key]]
        else:
            got = data["precisions"][owner][shares[key]]
        assert got == pytest.approx(value, rel=1e-3, abs=1e-7), (owner, key)
    assert len(fitted) >= 20


def test_test_points_cannot_move_the_fit(fitted):
    # Scale every test point's measurement by 3: a fit that read them would change.
    altered = copy.deepcopy(POINTS)
    for p in altered:
        if p["split"] == "test":
            p["measured"]["value"] *= 3
    assert _fitted_from(altered) == fitted
