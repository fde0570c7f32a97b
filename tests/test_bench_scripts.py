"""The benchmarks of issue 44's per-spec and aiconfigurator figures ask what they say
they ask: bench/bench_vs_aiconfigurator.py's spec is the issue's question, and without
aiconfigurator it prints plan-opt's time and says so (no failure); bench/bench_specs.py
measures every spec `solve` takes and marks the rate form."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from solver.spec.solve_spec import parse_spec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import bench_specs  # noqa: E402
import bench_vs_aiconfigurator as vs_aic  # noqa: E402
import fit_cv  # noqa: E402


def test_the_spec_is_the_issues_question() -> None:
    """Llama-3.1-70B on at most 8 × H200, ISL 2048, OSL 6144, TTFT 500 ms, TPOT 40 ms (issue 44)."""
    spec = parse_spec(yaml.safe_load(vs_aic.spec_text(256)))
    assert spec.model == "llama-3.1-70b"
    assert (spec.workload.users, spec.workload.prompt_tokens, spec.workload.output_tokens) == (256, 2048, 6144)
    assert (spec.sla.max_ttft, spec.sla.max_tpot) == (0.5, 0.04)
    assert spec.search.gpus == ["h200"] and spec.search.max_gpus == 8
    assert set(spec.search.serving) == {"aggregated", "disaggregated"}
    # aiconfigurator is asked the same: 8 GPUs of h200_sxm, the same lengths and targets in ms
    args = dict(zip(vs_aic.AIC_ARGS[::2], vs_aic.AIC_ARGS[1::2]))
    assert args == {
        "--model-path": "meta-llama/Meta-Llama-3.1-70B",
        "--system": "h200_sxm",
        "--total-gpus": "8",
        "--isl": "2048",
        "--osl": "6144",
        "--ttft": "500",
        "--tpot": "40",
    }


def test_without_aiconfigurator_plan_opt_is_timed_alone(tmp_path: Path) -> None:
    missing = tmp_path / "no-venv" / "bin" / "python"
    assert vs_aic.aic_found(missing) is None
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_vs_aiconfigurator.py"), "--runs", "1", "--aic-python", str(missing)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "plan-opt solve (256 users" in done.stdout
    assert f"aiconfigurator: not installed at {missing}" in done.stdout


def test_every_spec_solve_takes_is_measured_and_the_rate_form_marked() -> None:
    specs = bench_specs.solve_specs(ROOT)
    on_disk = {f"specs/{p.name}" for p in (ROOT / "specs").glob("*.yaml") if not p.name.startswith("fleet-") and not p.stem.endswith("-profile")}
    assert on_disk <= set(specs) and not any("fleet-" in s for s in specs)
    rate = {s for s in specs if bench_specs.is_rate(ROOT, s)}
    assert "specs/chat-70b-at-20-rps.yaml" in rate and "specs/chat-llama70b.yaml" not in rate
    for s in rate:
        assert "requests_per_s" in yaml.safe_load((ROOT / s).read_text())["workload"]


def test_fit_cv_repository_key_by_hand() -> None:
    """A GitHub repository's documents at any revision are one repository; an issue or pull
    request (another reporter each) its own; a gist's or a Hugging Face page's owner, a site's host."""
    key = fit_cv.repository_key
    assert key("https://github.com/ree2raz/inference-bench/blob/3f89896") == "https://github.com/ree2raz/inference-bench"
    assert key("https://github.com/ree2raz/inference-bench/tree/6437e83") == "https://github.com/ree2raz/inference-bench"
    assert key("https://github.com/vllm-project/vllm/issues/16300") == "https://github.com/vllm-project/vllm/issues/16300"
    assert key("https://gist.github.com/jiangLLM/e95756b") == "https://gist.github.com/jiangLLM"
    assert key("https://huggingface.co/Tengyunw/qwen3_8b_eagle3") == "https://huggingface.co/Tengyunw"
    assert key("https://www.amd.com/zh-cn/developer/performance-results.html") == "www.amd.com"


def test_fit_cv_folds_keep_a_repository_together() -> None:
    import hashlib

    sources = ["https://github.com/o/r/blob/1", "https://github.com/o/r/blob/2", "https://x.org/a", "https://y.org/b"]
    # by campaign: each in the fold the first 8 bytes of sha256("seed:name") give modulo the folds
    fold = {s: int.from_bytes(hashlib.sha256(f"0:{s}".encode()).digest()[:8], "big") % 2 for s in sources}
    want = [{s for s in sources if fold[s] == i} for i in (0, 1)]
    assert fit_cv.fold_sets(sources, 2, 0) == [f for f in want if f]
    assert fit_cv.fold_sets(sources, 0) == [{s} for s in sorted(sources)]
    # by repository, each left out: o/r's two revisions one fold, the two sites one each
    assert fit_cv.fold_sets(sources, 0, group="repository") == [set(sources[:2]), {"https://x.org/a"}, {"https://y.org/b"}]
    for fold in fit_cv.fold_sets(sources, 2, 0, group="repository"):
        assert (sources[0] in fold) == (sources[1] in fold)


def test_fit_cv_folds_stay_put_when_a_campaign_is_added() -> None:
    # a new campaign joins a fold; no campaign already dealt changes fold (a shuffle of
    # the sorted names re-dealt them all, so CV before and after a data batch differed)
    sources = [f"https://example.org/c{i}" for i in range(30)]
    before = {s: i for i, fold in enumerate(fit_cv.fold_sets(sources, 5, 0)) for s in fold}
    after_folds = fit_cv.fold_sets([*sources, "https://example.org/new"], 5, 0)
    together = {s: frozenset(fold) - {"https://example.org/new"} for fold in after_folds for s in fold}
    for s in sources:
        assert together[s] == frozenset(x for x in sources if before[x] == before[s])


def test_fit_cv_reports_the_moe_prompts_apart(monkeypatch) -> None:
    """Issue 42: the held-out errors of mixture-of-experts TTFTs are listed apart (and
    summarised), those of MoE decode steps and of dense prompts not among them."""
    from types import SimpleNamespace

    terms = [
        SimpleNamespace(source="a", kind="ttft", moe_layers=58, measured_s=0.1),  # predicted +20 %
        SimpleNamespace(source="a", kind="ttft", moe_layers=0, measured_s=0.1),  # dense: +10 %
        SimpleNamespace(source="b", kind="tpot", moe_layers=58, measured_s=0.01),  # MoE decode: −30 %
        SimpleNamespace(source="b", kind="ttft", moe_layers=32, measured_s=0.2),  # −40 %
    ]
    off = {id(terms[0]): 1.2, id(terms[1]): 1.1, id(terms[2]): 0.7, id(terms[3]): 0.6}
    monkeypatch.setattr(fit_cv, "predict_from", lambda train, test: [t.measured_s * off[id(t)] for t in test])
    errs = fit_cv.held_out(terms, [{"a"}, {"b"}])
    assert errs["moe_ttft"] == [pytest.approx(0.2), pytest.approx(0.4)]
    assert errs["moe"] == [pytest.approx(0.3)]
    assert "MoE TTFT  30.0% (n 2)" in fit_cv._summary(errs)


def test_fit_tile_units_by_hand(build_deployment) -> None:
    """bench/fit_defaults.py's row-tile form (PREFILL_EXPERT_FORM "tile", tried for issue
    42): MoE layers × experts reached × each one's rows padded to 64. DeepSeek-R1 (58 MoE
    layers, 256 experts, 8 a token): 1,024 tokens reach all 256 (1 − (31/32)^1024 = 1 −
    7.6e-15) at 32 rows each, one tile: 58 × 256 = 14,848; 8,192 tokens give 256 rows,
    4 tiles: 59,392. Mixtral (32 layers, 8 experts, 2 a token) at 2,048 tokens: 512 rows,
    8 tiles: 32 × 8 × 8 = 2,048. A dense model: none."""
    import fit_defaults

    def units(model: str, prompt: int) -> float:
        d, _, _ = build_deployment(model, "h200", users=1, prompt=prompt, output=1, tp=8, weights="fp8")
        return fit_defaults._tile_units(d, prompt)

    assert fit_defaults.MOE_BLOCK_M == 64
    assert units("deepseek-r1", 1024) == pytest.approx(14848, rel=1e-9)
    assert units("deepseek-r1", 8192) == pytest.approx(59392, rel=1e-9)
    assert units("mixtral-8x7b", 2048) == pytest.approx(2048, rel=1e-9)
    assert units("llama-3.1-70b", 2048) == 0.0


def test_fit_cv_names_the_points_a_setting_moves_most() -> None:
    """--movers: by |log| of (predicted / measured) after over before. By hand: p1 1.10 ->
    0.90 is |log(0.9 / 1.1)| = 0.20, p2 1.00 -> 1.30 is 0.26, p3 0.95 -> 0.96 is 0.01."""
    before = {"p1 tpot": (1.10, "https://github.com/o/r/issues/7"), "p2 ttft": (1.00, "https://x.org/a"), "p3 tpot": (0.95, "https://x.org/a")}
    after = {"p1 tpot": (0.90, before["p1 tpot"][1]), "p2 ttft": (1.30, before["p2 ttft"][1]), "p3 tpot": (0.96, before["p3 tpot"][1])}
    lines = fit_cv.movers_report(before, after, 2).splitlines()
    assert [line.split()[1] for line in lines] == ["p2", "p1"]
    assert "+0.0% ->  +30.0%  x.org" in lines[0]
    assert lines[1].endswith("r#7") and "+10.0% ->  -10.0%" in lines[1]


def test_fit_cv_short_names_and_families() -> None:
    assert fit_cv.short_name("https://github.com/SemiAnalysisAI/InferenceX/pull/3318") == "InferenceX#3318"
    assert fit_cv.short_name("https://github.com/NVIDIA/TensorRT-LLM/blob/v0.9.0/docs/x.md") == "NVIDIA/TensorRT-LLM@v0.9.0"
    assert fit_cv.short_name("https://www.amd.com/x") == "www.amd.com"
    assert fit_cv._families("fp4,int4:1") == (("fp4", "int4"), 1)
    assert fit_cv._families("none") == ((), 2)
    with pytest.raises(Exception, match="give none"):
        fit_cv._families("fp8")


def test_fit_cv_counts_refuse_what_is_not_a_whole_number_in_range() -> None:
    import argparse

    parse = fit_cv.whole_number(0, 1000)
    assert parse("0") == 0 and parse("1000") == 1000
    for bad in ("-2", "1.5", "1001", "nan", "inf", "x", "", "²"):
        with pytest.raises(argparse.ArgumentTypeError, match="whole number from 0 to 1000"):
            parse(bad)
    folds = fit_cv.whole_number(2, 1000, also=(0,))
    assert folds("0") == 0 and folds("2") == 2
    with pytest.raises(argparse.ArgumentTypeError, match="must be 0 or a whole number from 2 to 1000"):
        folds("1")


def test_offset_features_date_line_by_hand() -> None:
    """bench/offset_features.py (issue 42): the Theil-Sen line through five campaigns' offsets
    on their years, y = 0.1 x but the last at 2.0: the ten pairwise slopes are 0.1 six times
    and (2.0 − 0.1 i) / (4 − i) for i = 0..3 (0.5, 0.633, 0.9, 1.7), so the median is 0.1 and
    the intercept the median of y − 0.1 x, 0; least squares gives Sxy / Sxx = 4.2 / 10."""
    import offset_features as of

    xy = [(0.0, 0.0), (1.0, 0.1), (2.0, 0.2), (3.0, 0.3), (4.0, 2.0)]
    a, b, lo, hi = of._line(xy)
    assert (a, b, lo, hi) == pytest.approx((0.0, 0.1, 0.0, 4.0))
    a, b, _, _ = of._line(xy, robust=False)
    assert b == pytest.approx(0.42) and a == pytest.approx(0.52 - 0.42 * 2)
    assert of._line([(1.0, 0.1), (1.0, 0.3)]) is None  # one date: no slope


def test_offset_features_levels_and_the_date_held_inside_the_fit_dates() -> None:
    """A level's correction is its campaigns' median offset shrunk by n / (n + 2): three
    campaigns at 0.1, 0.2, 0.3 give 0.2 × 3 / 5 = 0.12; a level of two campaigns none. The
    date's line is read at a date past the fit half's as at its newest (no extrapolation)."""
    import offset_features as of

    def row(i, campaign, log_time, engine, year, kind="tpot"):
        feats = {"engine": engine, "date": year}
        return of.Row(f"p{i}", campaign, kind, log_time, 1.0, feats)

    rows = [row(0, "a", 0.1, "x", 2025.0), row(1, "b", 0.2, "x", 2026.0), row(2, "c", 0.3, "x", 2027.0)]
    rows += [row(3, "d", 0.5, "y", 2025.0), row(4, "e", 0.7, "y", 2025.0)]
    level = of.fit_feature(rows, "engine")["decode"]
    assert level("x") == pytest.approx(0.12) and level("y") == 0.0 and level("z") == 0.0
    # --levels prints the same figures the correction applies (one derivation, level_offsets)
    assert of.describe_fit(rows, "engine") == "decode: x +0.120 (3), y · (2); ttft: "
    line = of.fit_feature(rows[:3], "date")["decode"]  # offset = 0.1 + 0.1 (year − 2025)
    assert line(2026.5) == pytest.approx(0.25) and line(2030.0) == pytest.approx(0.3) and line(2020.0) == pytest.approx(0.1)
    assert line(None) == 0.0
    # a throughput's error: predicted time twice the measured is half the rate, −50 %
    thr = of.Row("t", "a", "throughput", math.log(2.0), 1.0, {})
    assert thr.error() == pytest.approx(0.5) and thr.error(math.log(2.0)) == pytest.approx(0.0)


def test_fit_maturity_term_by_hand() -> None:
    """fit_defaults.MATURITY (issue 42, tried and not kept): a serving engine's decode step
    exp(m × (ref − year)) slower for a run dated before ref, 1 at ref and after it, and
    nothing for a term without a date (another engine's, a TTFT)."""
    import dataclasses

    import fit_defaults

    base = fit_defaults.Term("p", "tpot", ("vllm", "hbm"), "bf16", "bf16", 0.01, 0.004, 1.0, 0.001, 0.0, 0.0, 0.0, 32)
    terms = [dataclasses.replace(base, pid="old", year=2025.5), dataclasses.replace(base, pid="new", year=2027.0), base]
    saved = fit_defaults.MATURITY
    try:
        fit_defaults.MATURITY = False
        off = fit_defaults.Model(terms).predict()
        fit_defaults.MATURITY = True
        model = fit_defaults.Model(terms)
        assert model.maturity_ref == 2027.0  # the newest dated run
        model.maturity_ref = 2026.5
        model.values[(fit_defaults.GLOBAL, "m")] = 0.1
        on = model.predict()
    finally:
        fit_defaults.MATURITY = saved
    assert on / off == pytest.approx([math.exp(0.1 * 1.0), 1.0, 1.0])


def test_fit_a_group_that_cannot_separate_reads_from_flops_fits_its_reads_and_inherits_the_rest() -> None:
    """fit_defaults.PARTIAL_KEYS (issue 42): AMD-like points all at TP 8 cannot tell their
    utilisation and fixed costs apart (Model.identifiable), but they do set their own
    bandwidth efficiency. NVIDIA-like group: 3 read-bound and 3 FLOP-bound steps at TP 1,
    measured exactly at the priors (e 0.8, c 0.5, no fixed cost: 4 ms / 0.8 + ... = 5 ms).
    AMD-like group: 6 read-bound steps at TP 8, 4 ms of reads measured at 8 ms: e = 4 / 8 =
    0.5 (their 0.4 µs of matmuls at c 0.5 hide under the reads)."""
    import dataclasses

    import fit_defaults

    def term(i, group, reads, flops, measured, tp):
        return fit_defaults.Term(f"{group[1]}{i}", "tpot", group, "bf16", "bf16", measured, reads, 1.0, flops, 0.0, 0.0, 0.0, 0, tp=tp)

    nv, amd = ("serving", "hbm"), ("serving", "amd.hbm")
    terms = [term(i, nv, 0.004, 0.0002, 0.004 / 0.8, 1) for i in range(3)]  # reads at e 0.8: 5 ms
    terms += [term(i + 3, nv, 0.0002, 0.004, 0.004 / 0.5, 1) for i in range(3)]  # FLOPs at c 0.5: 8 ms
    terms += [term(i + 6, amd, 0.004, 0.0002, 0.008, 8) for i in range(6)]
    model = fit_defaults.Model(terms)
    assert model.fitted_groups(fit_defaults.MIN_POINTS) == [nv]
    assert model.partial_groups(fit_defaults.MIN_POINTS) == {amd: nv}
    for key in ("c", "s0", "s2", "s4"):
        assert model.tie[(amd, key)] == (nv, key)
    free = model.free(fit_defaults.MIN_POINTS, fit_defaults.MIN_FORMAT_POINTS)
    assert {(amd, "e"), (amd, "s3"), (amd, fit_defaults.ATTENTION_SHARE)} <= set(free) and (amd, "c") not in free
    model.fit(free)
    assert model.value(amd, "e") == pytest.approx(0.5, rel=0.02)  # its own: the 120-point grid's step is 1.5 %
    assert model.value(nv, "e") == pytest.approx(0.8, rel=0.02)
    assert model.value(amd, "c") == model.value(nv, "c")  # the tied keys are the fallback's
    model.values[(nv, "s4")] = 1e-4  # and move with it: 7 ranks beyond the first
    at_rest = dataclasses.replace(terms[6], tp=1)
    one = fit_defaults.Model([at_rest])
    one.values.update({(amd, k): model.value(amd, k) for k in fit_defaults.GROUP_KEYS})
    one.values[(amd, "s4")] = 0.0
    assert model.predict()[6] - one.predict()[0] == pytest.approx(7e-4, rel=1e-9)


def test_fit_cv_reports_the_moe_and_fp4_campaigns_signed_offsets(monkeypatch) -> None:
    """Issue 42: per campaign, the median log(predicted / measured) of its MoE terms and of
    its FP4 terms; the summary gives their mean over campaigns. Campaign a: MoE at 1.2 and
    0.8 (median of two, the mean of ln 1.2 = 0.18232 and ln 0.8 = -0.22314: -0.02041), a
    dense MXFP4 step at 0.9 (ln 0.9 = -0.10536); campaign b: an MoE MXFP4 step at 0.5
    (ln 0.5 = -0.69315), a dense 16-bit one at 2 (neither). MoE mean (-0.02041 - 0.69315) / 2
    = -0.35678; FP4 mean (-0.10536 - 0.69315) / 2 = -0.39926."""
    from types import SimpleNamespace

    terms = [
        SimpleNamespace(source="a", kind="tpot", moe_layers=58, measured_s=0.01, weights="fp8"),
        SimpleNamespace(source="a", kind="ttft", moe_layers=58, measured_s=0.1, weights="fp8"),
        SimpleNamespace(source="a", kind="tpot", moe_layers=0, measured_s=0.01, weights="mxfp4"),
        SimpleNamespace(source="b", kind="tpot", moe_layers=36, measured_s=0.01, weights="mxfp4"),
        SimpleNamespace(source="b", kind="tpot", moe_layers=0, measured_s=0.01, weights="bf16"),
    ]
    off = dict(zip(map(id, terms), (1.2, 0.8, 0.9, 0.5, 2.0)))
    monkeypatch.setattr(fit_cv, "predict_from", lambda train, test: [t.measured_s * off[id(t)] for t in test])
    errs = fit_cv.held_out(terms, [{"a"}, {"b"}])
    assert errs["offset_moe"] == [pytest.approx(-0.020411, abs=1e-5), pytest.approx(-0.693147, abs=1e-5)]
    assert errs["offset_fp4"] == [pytest.approx(-0.105361, abs=1e-5), pytest.approx(-0.693147, abs=1e-5)]
    text = fit_cv._summary(errs)
    assert "MoE offset -0.357 (2 campaigns)" in text and "FP4 offset -0.399 (2 campaigns)" in text


def test_fit_expert_pool_value_is_the_median_of_the_groups_own() -> None:
    """fit_defaults.EXPERT_POOL_S (issue 42, tried and not kept): the pooled cost per MoE
    layer is the median of the costs of the groups that fit their own: of 0, 34 and 170 µs,
    34 µs; of none, none."""
    import fit_defaults

    assert fit_defaults.expert_pool_value([0.0, 3.4e-5, 1.7e-4]) == pytest.approx(3.4e-5)
    assert fit_defaults.expert_pool_value([]) is None


@pytest.mark.parametrize(
    ("script", "args", "says"),
    [
        # one fold holds every campaign: the fit had nothing to train on (IndexError before)
        ("fit_cv.py", ["--folds", "1"], "must be 0 or a whole number from 2 to 1000"),
        ("offset_features.py", ["--folds", "1"], "must be 0 or a whole number from 2 to 100"),
        # a digit int() refuses: argparse's bare "invalid parse value" before, naming nothing allowed
        ("offset_features.py", ["--seed", "²"], "must be a whole number from 0 to 4294967295"),
        ("offset_features.py", ["--folds", "²"], "must be 0 or a whole number from 2 to 100"),
    ],
)
def test_fold_options_refuse_one_fold_in_one_clear_message(script: str, args: list[str], says: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"argument {args[0]}: {args[1]!r}: {says}" in done.stderr


@pytest.mark.parametrize("script, flag", [("fit_cv.py", "--maturity"), ("fit_cv.py", "--partial-keys"), ("offset_features.py", "--features")])
def test_a_comparison_flag_given_no_values_is_refused_not_ignored(script: str, flag: str) -> None:
    # given bare, the flag used to compare nothing and print the baseline alone
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), flag], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"argument {flag}: expected at least one argument" in done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        # --caps was split and float()ed in main: one value or a word gave a ValueError traceback
        (["--caps", "5"], "give S0:S1 in seconds"),
        (["--caps", "0.0005:x"], "give S0:S1 in seconds"),
        (["--caps", "nan:5e-5"], "give S0:S1 in seconds"),
        # a cap of 0 leaves the fit's grid for s0 nothing to run up to (geomspace to 0)
        (["--caps", "0:5e-5"], "S0 above 0 and at most 1"),
        # a digit int() refuses: argparse's bare "invalid _families value" before
        (["--expert-layer-families", "fp4:²"], "give none, or fp4 and/or int4"),
    ],
)
def test_fit_cv_refuses_bad_caps_and_families_in_one_clear_message(args: list[str], says: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "fit_cv.py"), *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"argument {args[0]}: {args[1]!r}: " in done.stderr and says in done.stderr


def test_fit_cv_caps_parse_by_hand() -> None:
    assert fit_cv._caps("0.0005:5e-5") == (0.0005, 5e-5)
    assert fit_cv._caps("1:0") == (1.0, 0.0)


def _fit_cv_main(monkeypatch, capsys, *args: str) -> list[str]:
    """fit_cv.main's printed lines on three campaigns, leave-one-out (3 folds a setting),
    with a held_out that fits nothing: it adds one fit a fold to FITS and records a point,
    as the real one does, and errors of 10 %; spread_report says how many fits it saw."""
    from types import SimpleNamespace

    terms = [SimpleNamespace(source=s) for s in ("a", "b", "c")]
    errs = {"tpot": [0.1], "ttft": [0.1], "campaign": [0.1], "moe": [], "moe_ttft": [], "offset_moe": [], "offset_fp4": []}

    def held_out(terms, folds):
        fit_cv.FITS.extend((frozenset(f), {}) for f in folds)  # as predict_with adds one per fold
        fit_cv.POINTS["p1 tpot"] = (1.0, "a")  # as the real one records each held-out point
        return errs

    def spread_report(terms):
        seen = len(fit_cv.FITS)
        fit_cv.FITS.clear()
        return f"spread of {seen} fits"

    for name in ("SPREAD", "MOVERS", "FITS", "BASELINE", "POINTS"):
        monkeypatch.setattr(fit_cv, name, type(getattr(fit_cv, name))())
    monkeypatch.setattr(fit_cv, "load_points", lambda: [])
    monkeypatch.setattr(fit_cv, "default_catalog", lambda: None)
    monkeypatch.setattr(fit_cv.fit, "fit_terms", lambda points, catalog: terms)
    monkeypatch.setattr(fit_cv, "held_out", held_out)
    monkeypatch.setattr(fit_cv, "spread_report", spread_report)
    monkeypatch.setattr(fit_cv, "movers_report", lambda before, after, n: "movers")
    monkeypatch.setattr(sys, "argv", ["fit_cv.py", "--folds", "0", *args])
    fit_cv.main()
    return capsys.readouterr().out.splitlines()


def test_fit_cv_spread_and_movers_follow_every_setting(monkeypatch, capsys) -> None:
    """--spread and --movers are per setting: each setting's folds' fits make its own
    report. Before, only the caps, partial keys, families and pull scales printed one, so
    the fits of the settings between (here the unhidden share and the maturity term) were
    left in FITS and joined the next report: the expert pull's counted 3 settings' folds.
    Three campaigns, leave-one-out: 3 folds a setting, 4 settings (the fit's caps first);
    movers against the first setting: 3 reports."""
    out = _fit_cv_main(monkeypatch, capsys, "--spread", "--movers", "2", "--unhidden", "0.5", "--maturity", "on", "--expert-pull", "1e-4")
    assert [line for line in out if line.startswith("spread")] == ["spread of 3 fits"] * 4
    assert out.count("movers") == 3


def test_fit_cv_marks_the_fits_own_setting_and_restores_it(monkeypatch, capsys) -> None:
    """Each comparison marks the fit's own setting, whatever it is (the release-line term
    and the attention share were not marked before), and leaves the constants as they were."""
    fit = fit_cv.fit
    saved = (fit.MATURITY, fit.HELD_GROUP_KEYS, fit.RELEASE_SHAPE, fit.RELEASE_SHRINK, fit.RELEASE_GROUPING)
    own = f"{fit.RELEASE_SHAPE or 'none'}:{fit.RELEASE_SHRINK:g}/{fit.RELEASE_GROUPING}"
    other = "none" if fit.RELEASE_SHAPE else "step"
    args = ["--maturity", "on", "off", "--attention-share", "fitted", "held", "--release", other, own]
    out = _fit_cv_main(monkeypatch, capsys, *args)
    marked = [line.split(":")[0].strip() for line in out if line.endswith("(the fit's)")]
    maturity = "maturity term " + ("on" if fit.MATURITY else "off")
    release = f"release-line decode term {fit.RELEASE_SHAPE}, shrink {fit.RELEASE_SHRINK:g}, by {fit.RELEASE_GROUPING}"
    assert marked == ["attention read share fitted", maturity, release]  # in the order main compares them
    assert (fit.MATURITY, fit.HELD_GROUP_KEYS, fit.RELEASE_SHAPE, fit.RELEASE_SHRINK, fit.RELEASE_GROUPING) == saved
