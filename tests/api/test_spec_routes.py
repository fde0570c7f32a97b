"""Issue 45 item 6: GET /specs lists every bundled spec (specs/*.yaml) with its text, its
one-line description and the command it is for; a bad filter is a 422 in the one error
shape. The command each spec is for is read independently from the golden files, which
record every bundled spec under the command that reads it (tests/golden/record.py:
solve-NAME.json, fleet-NAME.json, schedule-NAME.json)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from solver.api.app import Limits, create_app  # noqa: E402
from solver.api.spec_routes import command_of, description_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "specs").glob("*.yaml"))
GOLDEN = ROOT / "tests" / "golden"


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(Limits(concurrency=2)))


def _recorded_command(name: str) -> str:
    found = [c for c in ("solve", "fleet", "schedule") if (GOLDEN / f"{c}-{name}.json").exists()]
    assert len(found) == 1, (name, found)
    return found[0]


def test_every_bundled_spec_is_listed_with_its_text_and_the_command_that_reads_it(client):
    r = client.get("/specs")
    assert r.status_code == 200
    listed = {s["name"]: s for s in r.json()}
    assert sorted(listed) == sorted(p.stem for p in SPECS)
    for p in SPECS:
        s = listed[p.stem]
        assert s["text"] == p.read_text(encoding="utf-8")
        assert s["command"] == _recorded_command(p.stem), p.name
        assert s["description"] and "\n" not in s["description"]
        assert p.read_text().splitlines()[0].lstrip("# ").startswith(s["description"][:40])


def test_the_filter_keeps_one_commands_specs(client):
    solves = client.get("/specs", params={"command": "solve"}).json()
    assert solves and all(s["command"] == "solve" for s in solves)
    assert {s["name"] for s in solves} == {p.stem for p in SPECS if _recorded_command(p.stem) == "solve"}
    assert {s["name"] for s in client.get("/specs", params={"command": "fleet"}).json()} == {p.stem for p in SPECS if p.stem.startswith("fleet-")}


def test_a_bad_filter_is_a_422_in_the_one_error_shape(client):
    r = client.get("/specs", params={"command": "pareto"})
    assert r.status_code == 422
    assert r.json() == {"error": {"field": "command", "value": "pareto", "message": "command = pareto: one of solve, fleet, schedule", "line": None}}
    assert client.get("/specs/nope").json()["error"]["field"] == "path"  # an unknown path: the same shape


def test_the_rule_and_the_description():
    assert command_of({"workloads": []}) == "fleet"
    assert command_of({"model": "x", "traffic_profile": {}}) == "schedule"
    assert command_of({"model": "x", "workload": {}}) == "solve"
    # the first sentence, on one line: a stop inside brackets or after e.g. does not end it
    text = "# A spec (at $3.99/h. roughly) for\n# chat, e.g. this. Second sentence.\nmodel: x\n"
    assert description_of(text) == "A spec (at $3.99/h. roughly) for chat, e.g. this."
    assert description_of("# no stop here\nmodel: x\n") == "no stop here"
    assert description_of("model: x\n") == ""


def test_the_route_is_in_the_openapi_document(client):
    doc = client.get("/openapi.json").json()
    assert "/specs" in doc["paths"] and "422" in doc["paths"]["/specs"]["get"]["responses"]
