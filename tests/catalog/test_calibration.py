"""A user's calibration file (--calibration) is read at the edge like a spec: a file
of the wrong shape, a factor out of its range or a residual that is not a finite
share gets one line naming the file, the field and what is allowed."""

from __future__ import annotations

import math

import pytest
import yaml

from solver.catalog.calibration import with_calibration
from solver.errors import InputError

GOOD = {
    "compute_basis": "matmul_rate",
    "calibration": [
        {
            "gpu": "h100-sxm",
            "engine": "vllm",
            "factors": {"bandwidth_efficiency": 0.7, "step_overhead_s": 0.002},
            "tpot_points": 4,
            "ttft_points": 0,
            "residuals": {"tpot": {"median_ape": 0.03, "max_ape": 0.08, "points": 4}},
            "source": "runs.csv",
            "as_of": "2026-01-01",
        }
    ],
}


def _write(tmp_path, doc) -> str:
    f = tmp_path / "cal.yaml"
    f.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
    return str(f)


def _entry(**changes) -> dict:
    return {"compute_basis": "matmul_rate", "calibration": [{**GOOD["calibration"][0], **changes}]}


def test_a_good_file_sets_the_factors_and_the_band(tmp_path, catalog):
    cat = with_calibration(catalog, _write(tmp_path, GOOD))
    fo = cat.calibration["h100-sxm"]
    assert (fo.bandwidth_efficiency, fo.step_overhead_s) == (0.7, 0.002)
    assert cat.calibration_bands["h100-sxm"] == {"tpot": 0.08}


def test_a_gpu_alias_is_the_catalog_device(tmp_path, catalog):
    cat = with_calibration(catalog, _write(tmp_path, _entry(gpu="H100-SXM")))
    assert set(cat.calibration) == {"h100-sxm"}


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ("", "calibration"),
        ("- 1\n- 2\n", "calibration"),
        ("calibration: x\n", "calibration"),
        ("calibration: [1, 2]\n", "calibration[0]"),
        ({"calibration": [{"gpu": "h100-sxm"}]}, "calibration[0].factors"),
        ({"calibration": [{"factors": {}}]}, "calibration[0].gpu"),
        (_entry(factors=[0.7]), "calibration[0].factors"),
        (_entry(factors={"bandwidth_efficency": 0.7}), "calibration[0].factors.bandwidth_efficency"),
        (_entry(residuals=[1]), "calibration[0].residuals"),
        (_entry(residuals={"tpot": 0.1}), "calibration[0].residuals.tpot"),
        (_entry(residuals={"itl": {"max_ape": 0.1}}), "calibration[0].residuals.itl"),
        (_entry(gpu="h100-sxn"), "calibration[0].gpu"),
        (_entry(extra=1), "calibration[0].extra"),
    ],
)
def test_a_file_of_the_wrong_shape_is_refused_in_one_line(tmp_path, catalog, doc, field):
    path = _write(tmp_path, doc)
    with pytest.raises(InputError) as exc:
        with_calibration(catalog, path)
    assert exc.value.field == field and exc.value.source == path
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("factors", "field", "allowed"),
    [
        ({"bandwidth_efficiency": 1e-300}, "bandwidth_efficiency", "must be a number from 0.01 to 1"),
        ({"bandwidth_efficiency": -0.5}, "bandwidth_efficiency", "must be a number from 0.01 to 1"),
        ({"compute_efficiency": math.nan}, "compute_efficiency", "must be a number from 0.01 to 1"),
        ({"compute_efficiency": True}, "compute_efficiency", "must be a number from 0.01 to 1"),
        ({"step_overhead_s": math.inf}, "step_overhead_s", "must be a time from 0 to 1 s"),
        ({"layer_overhead_s": 1.0}, "layer_overhead_s", "must be a time from 0 to 10 ms"),
        ({"runtime_overhead_bytes": 1e300}, "runtime_overhead_bytes", "must be a whole number from 0 to 1e15 bytes (1,000 TB)"),
        ({"memory_utilization": 0}, "memory_utilization", "must be a number from 0.01 to 1"),
    ],
)
def test_a_fitted_factor_out_of_range_is_refused_naming_its_range(tmp_path, catalog, factors, field, allowed):
    path = _write(tmp_path, _entry(factors=factors))
    with pytest.raises(InputError) as exc:
        with_calibration(catalog, path)
    assert exc.value.field == f"calibration[0].factors.{field}" and str(exc.value).endswith(allowed)
    assert exc.value.line is not None


@pytest.mark.parametrize("max_ape", [math.nan, math.inf, -0.1, 101, True, "wide"])
def test_a_residual_must_be_a_finite_share(tmp_path, catalog, max_ape):
    path = _write(tmp_path, _entry(residuals={"tpot": {"max_ape": max_ape}}))
    with pytest.raises(InputError) as exc:
        with_calibration(catalog, path)
    assert exc.value.field == "calibration[0].residuals.tpot.max_ape" and "must be a number from 0 to 100" in str(exc.value)


def test_factors_at_their_bounds_are_accepted(tmp_path, catalog):
    factors = {"bandwidth_efficiency": 0.01, "compute_efficiency": 1, "step_overhead_s": 1, "layer_overhead_s": 0.01, "reserved_bytes": 0}
    cat = with_calibration(catalog, _write(tmp_path, _entry(factors=factors, residuals={"tpot": {"max_ape": 100}})))
    fo = cat.calibration["h100-sxm"]
    assert (fo.bandwidth_efficiency, fo.compute_efficiency, fo.step_overhead_s) == (0.01, 1.0, 1.0)
    assert cat.calibration_bands["h100-sxm"] == {"tpot": 100.0}


def test_a_bad_calibration_file_is_exit_2_not_an_internal_error(tmp_path, capsys):
    from solver.cli.main import main

    cal = _write(tmp_path, "calibration: [1, 2]\n")
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump({"model": "llama-3.1-8b", "workload": {"users": 4, "context_tokens": 2048, "output_tokens": 128}}))
    assert main(["solve", str(spec), "--calibration", cal]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{cal}:" in err and "calibration[0]" in err


def test_an_older_files_utilisation_over_the_datasheet_peak_is_refused_where_a_share_is_measured(tmp_path, catalog):
    # A file without compute_basis was fitted when utilisation was a share of the
    # datasheet peak; on a device with a measured matmul share (H100 SXM: 0.803) the same
    # number would now mean 0.803 of it, so it is refused rather than reread.
    old = {"calibration": [{**GOOD["calibration"][0], "factors": {"compute_efficiency": 0.6}}]}
    with pytest.raises(InputError) as exc:
        with_calibration(catalog, _write(tmp_path, old))
    assert exc.value.field == "calibration[0].factors.compute_efficiency"
    assert "re-run `plan-opt calibrate`" in str(exc.value) and exc.value.line is not None
    # Its bandwidth factors mean what they meant, and a device without a measured share
    # runs at its datasheet peak as before: both are read.
    assert with_calibration(catalog, _write(tmp_path, {"calibration": GOOD["calibration"]})).calibration["h100-sxm"].bandwidth_efficiency == 0.7
    consumer = {"calibration": [{**GOOD["calibration"][0], "gpu": "rtx-4090", "factors": {"compute_efficiency": 0.6}}]}
    assert with_calibration(catalog, _write(tmp_path, consumer)).calibration["rtx-4090"].compute_efficiency == 0.6
