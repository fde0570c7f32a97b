"""`plan-opt serve`: the HTTP API answers what the CLI answers, byte for byte (the
golden files), names a bad input's field and line in a 422, and bounds every request:
no local files, the body's size, the solver's time, the requests in flight."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from solver.api.app import Gate, Limits, Refused, create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(Limits(concurrency=2)))


def _golden(name: str) -> str:
    text = (GOLDEN / f"{name}.json").read_text()
    return text[: text.rindex("\nexit ")]


@pytest.mark.parametrize("spec", ["chat-llama70b", "long-prompts-disaggregated", "impossible"])
def test_solve_answers_the_clis_json(client, spec):
    r = client.post("/solve", content=(ROOT / "specs" / f"{spec}.yaml").read_bytes())
    assert r.status_code == 200
    assert r.text.rstrip("\n") == _golden(f"solve-{spec}")


def test_a_warm_problem_with_other_targets_answers_as_a_fresh_one(client):
    import yaml

    text = (ROOT / "specs" / "chat-llama70b.yaml").read_text()
    spec = yaml.safe_load(text)
    relaxed = {**spec, "sla": {"max_ttft": "2s", "max_tpot": "80ms"}}
    first = client.post("/solve", json=relaxed)  # builds (or reuses) the problem with other targets
    assert first.status_code == 200 and first.json()["spec"]["max_tpot_s"] == pytest.approx(0.08)
    again = client.post("/solve", content=text)  # the cached problem, the spec's own targets
    assert again.text.rstrip("\n") == _golden("solve-chat-llama70b")


def test_evaluate_pareto_and_fleet_answer_the_clis_json(client):
    for endpoint, path, golden in (
        ("/evaluate", ROOT / "examples" / "seed-step1-llama8b-rtx4090.yaml", "evaluate-seed-step1-llama8b-rtx4090"),
        ("/pareto", ROOT / "specs" / "chat-llama70b.yaml", "pareto-chat-llama70b"),
        ("/fleet", ROOT / "specs" / "fleet-split-shapes.yaml", "fleet-fleet-split-shapes"),
    ):
        r = client.post(endpoint, content=path.read_bytes())
        assert r.status_code == 200, (endpoint, r.text[:300])
        assert r.text.rstrip("\n") == _golden(golden), endpoint


def test_a_bad_input_is_a_422_naming_the_field_the_value_and_the_line(client):
    r = client.post("/solve", content="model: llama-3.1-8b\nworkload: {users: -1, context_tokens: 100, prompt_tokens: 10}\n")
    assert r.status_code == 422
    e = r.json()["error"]
    assert (e["field"], e["value"], e["line"]) == ("workload.users", "-1", 2)
    assert "whole number from 1" in e["message"]
    r = client.post("/solve", content="[1, 2]")
    assert r.status_code == 422 and "mapping" in r.json()["error"]["message"]
    r = client.post("/solve", content="model: [unclosed\n")
    assert r.status_code == 422 and r.json()["error"]["field"] == "yaml"


def test_a_request_may_not_name_a_file_on_the_server(client, tmp_path):
    config = tmp_path / "config.json"
    config.write_text("{}")
    for model in (str(config), "./config.json"):
        r = client.post("/solve", json={"model": model, "workload": {"users": 1, "context_tokens": 100, "prompt_tokens": 10}})
        assert r.status_code == 422 and r.json()["error"]["field"] == "model" and "server's disk" in r.json()["error"]["message"]
    fleet = {"workloads": [{"name": "a", "model": str(config), "workload": {"users": 1, "context_tokens": 100, "prompt_tokens": 10}}]}
    r = client.post("/fleet", json=fleet)
    assert r.status_code == 422 and r.json()["error"]["field"] == "workloads[0].model"
    rate = {"model": "llama-3.1-8b", "workload": {"requests_per_s": 1, "lengths_file": "/etc/passwd"}}
    r = client.post("/solve", json=rate)
    assert r.status_code == 422 and r.json()["error"]["field"] == "workload.lengths_file"


def test_the_body_is_bounded():
    small = TestClient(create_app(Limits(max_body_bytes=2048)))
    r = small.post("/solve", content=b"# " + b"x" * 4096)
    assert r.status_code == 413 and "2,048" in r.json()["error"]["message"]


def test_the_solver_time_is_the_servers_at_most(client):
    from solver.api.app import _capped
    from solver.spec.solve_spec import parse_spec

    spec = parse_spec(
        {"model": "llama-3.1-8b", "workload": {"users": 1, "context_tokens": 100, "prompt_tokens": 10}, "solver": {"time_limit_s": 600}}
    )
    assert _capped(spec, Limits(time_limit_s=5)).solver.time_limit_s == 5
    assert _capped(spec, Limits(time_limit_s=900)).solver.time_limit_s == 600


def test_past_the_concurrency_a_request_waits_its_time_limit_then_gets_a_503():
    gate = Gate(Limits(concurrency=1, time_limit_s=0.2))
    inside, release = threading.Event(), threading.Event()

    def slow():
        inside.set()
        release.wait(5)
        return 200, "{}"

    t = threading.Thread(target=gate.run, args=(slow,))
    t.start()
    inside.wait(5)
    started = time.monotonic()
    with pytest.raises(Refused) as exc:
        gate.run(lambda: (200, "{}"))
    assert exc.value.status == 503 and 0.15 < time.monotonic() - started < 2
    release.set()
    t.join(5)
    assert gate.run(lambda: (200, "ok")) == (200, "ok")  # the place is free again


def test_the_api_describes_itself(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/solve", "/evaluate", "/pareto", "/fleet", "/health"} <= set(paths)
    assert client.get("/health").json()["ok"] is True


def test_simulate_answers_the_clis_json_and_names_a_bad_query(client, cli_once):
    body = (ROOT / "specs" / "chat-70b-at-20-rps.yaml").read_bytes()
    r = client.post("/simulate", content=body)
    assert r.status_code == 200
    out, err, code = cli_once(["simulate", "specs/chat-70b-at-20-rps.yaml", "--format", "json"])  # the CLI in-process, once a session
    cli = f"{out}{err}exit {code}\n"  # as the golden files' runner writes it
    assert r.text.rstrip("\n") == cli[: cli.rindex("\nexit ")]
    r = client.post("/simulate?gpu=nope", content=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "gpu" and r.json()["error"]["value"] == "nope"
    r = client.post("/simulate?tp=0", content=body)  # a degree of 0: the field and the value the query gave
    assert r.status_code == 422 and (r.json()["error"]["field"], r.json()["error"]["value"]) == ("tp", "0")
    r = client.post("/simulate", content=(ROOT / "specs" / "chat-llama70b.yaml").read_bytes())
    assert r.status_code == 422 and r.json()["error"]["field"] == "workload.requests_per_s"


def test_simulate_of_a_plan_given_whole_answers_the_clis_json_without_a_solve(client, monkeypatch):
    # One shape left by the query and its replicas given: nothing for solve to choose
    # (tests/cli/test_cli_simulate.py), here as there.
    import sys

    import solver.explain.solve

    sys.path.insert(0, str(GOLDEN))
    import record

    flags = ["--gpu", "h100-sxm", "--tp", "4", "--weights", "fp8", "--kv-cache", "bf16", "--replicas", "2", "--requests", "1000", "--one-seed"]
    cli = record.run(["simulate", "specs/chat-70b-at-20-rps.yaml", *flags, "--format", "json"])

    def no_solve(*args: object, **kwargs: object) -> None:
        raise AssertionError("a plan given whole was solved")

    monkeypatch.setattr(solver.explain.solve, "solve", no_solve)
    query = "gpu=h100-sxm&tp=4&weights=fp8&kv_cache=bf16&replicas=2&requests=1000&one_seed=true"
    r = client.post(f"/simulate?{query}", content=(ROOT / "specs" / "chat-70b-at-20-rps.yaml").read_bytes())
    assert r.status_code == 200 and r.text.rstrip("\n") == cli[: cli.rindex("\nexit ")]


def test_a_bad_query_parameter_is_said_as_every_other_bad_input(client):
    body = (ROOT / "specs" / "chat-llama70b.yaml").read_bytes()
    r = client.post("/solve?explain=maybe", content=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "explain" and "maybe" in r.json()["error"]["message"]
    r = client.post("/pareto?axes=bogus", content=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "axes"
    r = client.post("/solve?set=nope", content=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "set"


@pytest.mark.parametrize("value", ["yes", "on", "1", "0", "no", "", "maybe"])
def test_a_query_switch_takes_true_or_false_only_as_a_specs_switch_does(client, value):
    """FastAPI's own bool reads yes/on/1 as true; a spec's Flag refuses them, so the query does too."""
    body = (ROOT / "specs" / "chat-llama70b.yaml").read_bytes()
    r = client.post(f"/solve?explain={value}", content=body)
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["field"] == "explain" and err["value"] == value and err["message"] == f"explain = {value}: must be true or false"
    r = client.post(f"/simulate?requests=200&one_seed={value}", content=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "one_seed"


@pytest.mark.parametrize(
    ("route", "query", "field"),
    [("/simulate", "requests=0", "requests"), ("/simulate", "routing=", "routing"), ("/pareto", "axes=", "axes")],
)
def test_a_query_parameter_given_empty_or_zero_is_refused_not_read_as_absent(client, route, query, field):
    """`requests=0` is below the 100 a simulation needs, `routing=` names no rule, `axes=`
    no frontier: each is a 422 naming it (they used to fall back to the spec's default)."""
    spec = "chat-70b-at-20-rps.yaml" if route == "/simulate" else "chat-llama70b.yaml"
    r = client.post(f"{route}?{query}", content=(ROOT / "specs" / spec).read_bytes())
    assert r.status_code == 422 and r.json()["error"]["field"] == field


def test_a_query_switch_written_true_or_false_in_any_case_is_read(client):
    body = (ROOT / "specs" / "chat-llama70b.yaml").read_bytes()
    plain = client.post("/solve?explain=FALSE", content=body)
    explained = client.post("/solve?explain=True", content=body)
    assert plain.status_code == explained.status_code == 200
    assert plain.json()["explained"] is False and explained.json()["explained"] is True


def test_a_setting_moves_a_target_and_its_error_is_not_put_on_the_bodys_line(client):
    body = (ROOT / "specs" / "chat-llama70b.yaml").read_bytes()
    r = client.post("/solve?explain=false&set=sla.max_tpot=80ms", content=body)
    assert r.status_code == 200 and r.json()["spec"]["max_tpot_s"] == pytest.approx(0.08)
    line = 1 + body.decode().split("\n").index("  max_tpot: 50ms")
    r = client.post("/solve?set=sla.max_tpot=-5ms", content=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "sla.max_tpot" and r.json()["error"]["line"] != line
