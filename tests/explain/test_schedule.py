"""`plan-opt schedule` end to end: bad input refused with one message naming the field
(exit 2), the bundled daily profile planned, and the command's invariants against solve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from solver.cli.main import main
from solver.spec.schedule_spec import parse_schedule
from tests.solve_helpers import schedule_spec_of

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, spec: dict, capsys, *flags: str) -> tuple[int, str, str]:
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(spec))
    code = main(["schedule", str(f), *flags])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("profile", "field", "says"),
    [
        ({"slot": "1h", "requests_per_s": [1, -2]}, "traffic_profile.requests_per_s[1]", "0.000001 to 1,000,000"),
        ({"slot": "1h", "requests_per_s": [0]}, "traffic_profile.requests_per_s[0]", "0.000001 to 1,000,000"),
        ({"slot": "1h", "requests_per_s": [".nan"]}, "traffic_profile.requests_per_s[0]", "0.000001"),
        ({"slot": "1h", "requests_per_s": []}, "traffic_profile.requests_per_s", "at least 1"),
        ({"slot": "30s", "requests_per_s": [1]}, "traffic_profile.slot", "1 min to 7 days"),
        ({"slot": "1h"}, "traffic_profile", "give requests_per_s"),
        ({"slot": "1h", "csv": "missing.csv"}, "traffic_profile.csv", "no such file"),
        ({"slot": "1h", "requests_per_s": [1], "growth": {"per_month": 0.1, "months": -1}}, "traffic_profile.growth.months", "0 to 120"),
    ],
)
def test_a_bad_profile_is_refused_naming_the_field(tmp_path, capsys, profile, field, says):
    spec = schedule_spec_of([1.0])
    spec["traffic_profile"] = profile
    code, out, err = _run(tmp_path, spec, capsys)
    assert code == 2 and out == "" and "Traceback" not in err
    assert field in err and says in err, err


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("slot_start,requests_per_s\n00:00,1\n01:00,abc\n", "day.csv:3: requests_per_s = abc"),
        ("slot_start,requests_per_s\n00:00,1\n02:00,2\n", "must follow the previous slot"),
        ("start,rate\n00:00,1\n", "must be slot_start,requests_per_s"),
        ("slot_start,requests_per_s\n00:00,1,2\n", "two cells"),
        ("slot_start,requests_per_s\n", "holds no slots"),
    ],
)
def test_a_malformed_csv_is_refused_at_its_line(tmp_path, capsys, text, says):
    (tmp_path / "day.csv").write_text(text)
    spec = schedule_spec_of([1.0])
    spec["traffic_profile"] = {"slot": "1h", "csv": "day.csv"}
    code, _, err = _run(tmp_path, spec, capsys)
    assert code == 2 and says in err and "Traceback" not in err, err


def test_a_csv_profile_reads_as_the_same_list(tmp_path):
    (tmp_path / "day.csv").write_text("slot_start,requests_per_s\n22:00,1.5\n23:00,2\n00:00,3\n")
    spec = schedule_spec_of([1.0])
    spec["traffic_profile"] = {"slot": "1h", "csv": "day.csv", "growth": {"per_month": 0.1, "months": 2}}
    ss = parse_schedule(spec, base_dir=tmp_path)
    # grown by 1.1^2 = 1.21: 1.5 → 1.815, 2 → 2.42, 3 → 3.63; the workload at the peak
    assert ss.profile.rates_per_s == pytest.approx((1.815, 2.42, 3.63))
    assert ss.spec.workload.requests_per_s == pytest.approx(3.63)


def test_a_rate_in_the_workload_is_refused(tmp_path, capsys):
    spec = schedule_spec_of([1.0])
    spec["workload"]["requests_per_s"] = 5
    code, _, err = _run(tmp_path, spec, capsys)
    assert code == 2 and "workload.requests_per_s" in err and "traffic_profile" in err


def test_the_daily_profile_beats_peak_provisioning_and_keeps_every_slot(cli_once):
    out, _, code = cli_once(["schedule", "specs/daily-chat-profile.yaml", "--json"])  # the golden file's run, read by both
    assert code == 0
    d = json.loads(out)
    assert d["status"] == "optimal" and not d["violations"]
    assert d["cost_usd"] <= d["on_demand_only_usd"] + 1e-9  # on-demand only is one of its schedules
    assert d["cost_usd"] < d["peak_all_day"]["cost_usd"]
    assert d["one_more_failure_usd"] >= d["cost_usd"] and d["one_more_reserved_replica_usd"] >= d["cost_usd"]
    assert d["without_survive_usd"] <= d["cost_usd"]
    for row in d["per_slot"]:  # every slot covers its need plus the failures it survives
        assert row["capacity_replicas"] >= row["need_replicas"] + d["survive_replicas"] - 1e-9


def test_plot_draws_a_picture(tmp_path, capsys):
    spec = schedule_spec_of([2.0, 6.0], tiers=["reserved_1y", "on_demand"])
    code, _, err = _run(tmp_path, spec, capsys, "--plot", str(tmp_path / "day.svg"))
    assert code == 0 and (tmp_path / "day.svg").read_text().startswith("<?xml")


@pytest.mark.parametrize(
    ("extra", "field", "says"),
    [
        ({"spot": {"interruptions_per_gpu_hour": -1}}, "spot.interruptions_per_gpu_hour", "0 to 1 per GPU-hour"),
        ({"readiness": {"storage_bytes_per_s": 0}}, "readiness.storage_bytes_per_s", "1 MB/s to 10 TB/s"),
        ({"readiness": {"provisioning_s": "2 days"}}, "readiness.provisioning_s", "0 s to 1 day"),
        ({"tiers": ["reserved_1y", "reserved_3y"]}, "tiers", "one reserved tier"),
        ({"tiers": ["on_demand", "lease"]}, "tiers[1]", "spot"),
        ({"availability": {"survive": -1}}, "availability.survive", "0 to 100"),
        ({"min_replicas": 1.5}, "min_replicas", "whole number"),
        ({"pricing": {"tier": "spot"}}, "pricing.tier", "list tiers"),
    ],
)
def test_a_bad_schedule_field_is_refused_naming_it(tmp_path, capsys, extra, field, says):
    code, out, err = _run(tmp_path, schedule_spec_of([1.0], **extra), capsys)
    assert code == 2 and out == "" and "Traceback" not in err
    assert field in err and says in err, err


def test_solve_on_a_profile_points_to_schedule(capsys):
    code = main(["solve", str(ROOT / "specs" / "daily-chat-profile.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and "daily-chat-profile.yaml:" in err and "traffic_profile" in err and "plan-opt schedule" in err, err
