"""A plan exactly at its target is kept, and one over it by more than float noise is
refused, by solve, pareto, fleet and evaluate alike (optimise/targets.meets_time and
time_us: one rule, the model's integers derived from it)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from solver.cli.main import main
from solver.optimise.targets import TIME_TOLERANCE, ceil_us, floor_us, meets_time, time_us

ROOT = Path(__file__).resolve().parents[2]

seconds = st.floats(min_value=1e-5, max_value=100.0, allow_nan=False, allow_infinity=False)


@given(seconds, seconds)
def test_the_coefficient_meets_the_rounded_limit_exactly_when_the_time_meets_the_target(value, limit):
    assert (time_us(value, limit) <= floor_us(limit)) == meets_time(value, limit)


@given(seconds, st.floats(min_value=-1e-10, max_value=1e-10))
def test_a_time_at_its_target_within_float_noise_meets_it(limit, noise):
    value = limit * (1 + noise)
    assert meets_time(value, limit) and time_us(value, limit) <= floor_us(limit)


def test_a_time_off_the_microsecond_grid():
    limit = 0.0123454  # 12,345.4 µs: no whole microsecond
    assert time_us(limit, limit) <= floor_us(limit)  # its own value: kept
    assert time_us(math.nextafter(limit, 1.0), limit) <= floor_us(limit)  # one ulp over: noise
    # 0.2 µs over: rounding both up (12,346 ≤ 12,346) would keep it; it is refused
    assert ceil_us(0.0123456) == math.ceil(limit * 1e6)
    assert time_us(0.0123456, limit) > floor_us(limit)
    assert time_us(limit * (1 + 100 * TIME_TOLERANCE), limit) > floor_us(limit)
    assert time_us(0.0123449, limit) == 12_345  # under it: rounded up, as before


def test_without_a_limit_a_time_rounds_up():
    assert time_us(0.0123454, None) == 12_346
    assert time_us(0.05, None) == 50_000  # a hair of float noise never costs a microsecond


# Through the commands, as a user would: the plan's own figure, as its JSON prints it.


def _run(argv: list[object], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = main([str(a) for a in argv])
    out, _ = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}


def _with(spec: dict, tmp_path: Path, name: str, **sla: float) -> Path:
    data = json.loads(json.dumps(spec))
    # with its unit, written exactly (repr round-trips a float): a plain number over 1 s is refused
    data.setdefault("sla", {}).update({k: f"{v!r}s" for k, v in sla.items()})
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _key(plan: dict | None) -> tuple | None:
    if plan is None:
        return None
    return tuple(plan[k] for k in ("gpu", "platform", "tp", "pp", "replicas", "batch_per_replica", "weights", "kv_cache"))


def _solve(path: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    code, data = _run(["solve", path, "--format", "json", "--no-explain"], capsys)
    assert code == (0 if data["plan"] else 3)  # never 4: the validator re-checks every plan
    return data


@pytest.mark.parametrize("name", ["latency-critical-8b", "rag-128k"])
def test_solve_keeps_a_plan_at_its_own_tpot_and_ttft_and_refuses_it_one_percent_below(name, tmp_path, capsys):
    spec = yaml.safe_load((ROOT / "specs" / f"{name}.yaml").read_text())
    base = _solve(_with(spec, tmp_path, "base.yaml"), capsys)
    plan = base["plan"]
    own = {"max_tpot": plan["tpot_s"], "max_ttft": plan["ttft_s"]}
    for targets in ({"max_tpot": own["max_tpot"]}, {"max_ttft": own["max_ttft"]}, own):
        at = _solve(_with(spec, tmp_path, "at.yaml", **targets), capsys)
        assert _key(at["plan"]) == _key(plan), targets
        assert at["plan"]["cost_usd_per_hour"] == plan["cost_usd_per_hour"]
        assert at["objective_value"] == base["objective_value"]
    for target, value in own.items():
        lower = _solve(_with(spec, tmp_path, "lower.yaml", **{target: value * 0.99}), capsys)
        assert _key(lower["plan"]) != _key(plan), target
        # less than a microsecond over, yet far above float noise: refused too
        hair = _solve(_with(spec, tmp_path, "hair.yaml", **{target: value * (1 - 1e-7)}), capsys)
        assert _key(hair["plan"]) != _key(plan), target
        figure = {"max_tpot": "tpot_s", "max_ttft": "ttft_s"}[target]
        for got in (lower, hair):
            if got["plan"]:
                assert got["plan"][figure] <= got["spec"][f"{target}_s"]


def test_evaluate_agrees_at_the_limit(tmp_path, capsys):
    spec = yaml.safe_load((ROOT / "specs" / "latency-critical-8b.yaml").read_text())
    plan = _solve(_with(spec, tmp_path, "base.yaml"), capsys)["plan"]
    w = spec["workload"]

    def evaluate(tpot: float, ttft: float) -> dict:
        argv = ["evaluate", "--model", spec["model"], "--gpu", plan["gpu"], "--platform", plan["platform"], "--tp", plan["tp"], "--pp", plan["pp"]]
        argv += ["--count", plan["gpus"], "--weights", plan["weights"], "--kv-cache", plan["kv_cache"], "--users", w["users"]]
        argv += [
            "--context",
            w["context_tokens"],
            "--prompt",
            w["prompt_tokens"],
            "--max-tpot",
            repr(tpot),
            "--max-ttft",
            repr(ttft),
            "--format",
            "json",
        ]
        code, data = _run(argv, capsys)
        assert code == 0
        return {v["constraint"]: v for v in data["verdicts"]}

    at = evaluate(plan["tpot_s"], plan["ttft_s"])
    assert (at["max_tpot"]["value"], at["max_ttft"]["value"]) == (plan["tpot_s"], plan["ttft_s"])  # the same figures
    assert at["max_tpot"]["ok"] is True and at["max_ttft"]["ok"] is True
    lower = evaluate(plan["tpot_s"] * 0.99, plan["ttft_s"] * 0.99)
    assert lower["max_tpot"]["ok"] is False and lower["max_ttft"]["ok"] is False


def test_pareto_keeps_a_frontier_point_at_its_own_latency(tmp_path, capsys):
    spec = yaml.safe_load((ROOT / "specs" / "latency-critical-8b.yaml").read_text())
    spec["search"]["gpus"] = ["rtx-6000-ada", "rtx-5090", "mi300x", "l40s"]  # a few, to be quick

    def pareto(**sla: float) -> dict:
        code, data = _run(["pareto", _with(spec, tmp_path, "p.yaml", **sla), "--format", "json"], capsys)
        assert code == 0
        return data

    def first(data: dict, axis: str) -> tuple:
        p = data[axis]["points"][0]
        return (p["plan"], p["cost_usd_per_hour"])

    base = pareto()
    # The TPOT frontier holds the TTFT target: at its first point's own TTFT, the same point.
    p = base["tpot"]["points"][0]
    assert first(pareto(max_ttft=p["ttft_s"]), "tpot") == first(base, "tpot")
    assert first(pareto(max_ttft=p["ttft_s"] * 0.99), "tpot") != first(base, "tpot")
    # The users frontier holds both: its first point (the spec's users at least cost) at its
    # own TPOT and TTFT costs the same (plans of equal cost may trade places: it has no tie-break).
    u = base["users"]["points"][0]
    at = pareto(max_tpot=u["tpot_s"], max_ttft=u["ttft_s"])["users"]["points"][0]
    assert (at["value"], at["cost_usd_per_hour"]) == (u["value"], u["cost_usd_per_hour"])
    below = pareto(max_tpot=u["tpot_s"] * 0.99, max_ttft=u["ttft_s"])["users"]["points"]
    assert all(p["plan"] != u["plan"] and p["tpot_s"] <= u["tpot_s"] * 0.99 for p in below)


def test_fleet_keeps_a_replica_at_its_own_tpot(tmp_path, capsys):
    # specs/fleet-split-shapes.yaml: one TP 1 replica of 21 users and one TP 2 replica.
    spec = yaml.safe_load((ROOT / "specs" / "fleet-split-shapes.yaml").read_text())
    chat = spec["workloads"][0]

    def fleet(max_tpot: float | None = None) -> dict:
        data = json.loads(json.dumps(spec))
        if max_tpot is not None:
            data["workloads"][0]["sla"]["max_tpot"] = max_tpot
        path = tmp_path / "fleet.yaml"
        path.write_text(yaml.safe_dump(data))
        code, out = _run(["fleet", path, "--format", "json"], capsys)
        assert code == 0
        return out

    base = fleet()
    tp1 = next(a for a in base["assignments"] if "TP1" in a["plan"])
    # The TPOT of a TP 1 replica holding its users, as evaluate prints it.
    w = chat["workload"]
    argv = ["evaluate", "--model", chat["model"], "--gpu", tp1["gpu"], "--tp", 1, "--weights", "bf16", "--kv-cache", "bf16"]
    argv += ["--users", tp1["users_per_replica"], "--context", w["context_tokens"], "--prompt", w["prompt_tokens"], "--format", "json"]
    _, ev = _run(argv, capsys)
    own = ev["decode"]["tpot_s"]

    def tp1_users(out: dict) -> int | None:
        return next((a["users_per_replica"] for a in out["assignments"] if "TP1" in a["plan"]), None)

    at = fleet(own)
    assert tp1_users(at) == tp1["users_per_replica"] and at["cost_usd_per_hour"] == base["cost_usd_per_hour"]
    below = tp1_users(fleet(own * 0.99))
    assert below is None or below < tp1["users_per_replica"]
