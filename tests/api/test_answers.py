"""Every command route's answer is typed in the OpenAPI document (issue 45 item 7):
the real answer of /evaluate, /pareto, /fleet and /simulate validates against the model
the document names (extra fields forbidden, so a field the report has and the model
lacks fails), every bundled input's golden JSON does too, and each operation documents
the errors it returns, in the one shape, and no other."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from solver.api.answers import FleetOut, ParetoOut, SimulateOut  # noqa: E402
from solver.api.app import create_app  # noqa: E402
from solver.api.errors import ErrorOut  # noqa: E402
from solver.api.evaluate_answer import EvaluateOut  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


@pytest.fixture(scope="module")
def doc(client):
    return client.get("/openapi.json").json()


def _named(doc: dict, path: str, model: str) -> None:
    schema = doc["paths"][path]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": f"#/components/schemas/{model}"}, (path, schema)
    assert model in doc["components"]["schemas"]


def test_evaluate_answers_its_documented_model_valid_or_not(client, doc):
    _named(doc, "/evaluate", "EvaluateOut")
    body = (ROOT / "examples" / "seed-step1-llama8b-rtx4090.yaml").read_bytes()
    r = client.post("/evaluate", content=body)
    assert r.status_code == 200
    out = EvaluateOut.model_validate_json(r.text)
    assert out.valid and out.memory is not None and out.remedies  # the seed's step 1 does not fit: remedies offered
    # TP 3 does not divide Llama-3.1-8B's 32 heads: not a valid split, so no estimates (their fields absent)
    r = client.post("/evaluate", content=body.replace(b"tp: 1", b"tp: 3"))
    assert r.status_code == 200
    out = EvaluateOut.model_validate_json(r.text)
    assert not out.valid and out.memory is None and out.refusals


def test_pareto_answers_its_documented_model(client, doc):
    _named(doc, "/pareto", "ParetoOut")
    r = client.post("/pareto?axes=tpot,rate", content=(ROOT / "specs" / "chat-70b-at-20-rps.yaml").read_bytes())
    assert r.status_code == 200
    out = ParetoOut.model_validate_json(r.text)
    assert set(out.root) == {"tpot", "rate"}
    assert all(p.basis is not None for p in out.root["rate"].points)  # the rate axis says how each point was judged


def test_fleet_answers_its_documented_model(client, doc):
    _named(doc, "/fleet", "FleetOut")
    r = client.post("/fleet", content=(ROOT / "specs" / "fleet-rates.yaml").read_bytes())
    assert r.status_code == 200
    out = FleetOut.model_validate_json(r.text)
    assert out.assignments and set(out.units.values()) <= {"users", "requests_per_s"}


def test_simulate_answers_its_documented_model(client, doc):
    _named(doc, "/simulate", "SimulateOut")
    r = client.post("/simulate?requests=200&one_seed=true", content=(ROOT / "specs" / "chat-70b-at-20-rps.yaml").read_bytes())
    assert r.status_code == 200
    out = SimulateOut.model_validate_json(r.text)
    assert out.requests == 200 and set(out.percentiles) == {"ttft_s", "tpot_s", "e2e_s"}


@pytest.mark.parametrize(("kind", "model"), [("evaluate", EvaluateOut), ("pareto", ParetoOut), ("fleet", FleetOut)])
def test_every_golden_answer_validates_with_extra_fields_forbidden(kind, model):
    goldens = sorted(GOLDEN.glob(f"{kind}-*.json"))
    assert goldens
    for golden in goldens:
        text = golden.read_text()  # the command's stdout, then its exit line
        if text.startswith("{"):
            model.model_validate_json(text[: text.rindex("\nexit ")])


def test_a_field_the_model_lacks_is_refused():
    """The check above can fail: a report field without its model field is caught."""
    text = (GOLDEN / "fleet-fleet-rates.json").read_text()
    text = text[: text.rindex("\nexit ")]
    with pytest.raises(ValueError, match="extra"):
        FleetOut.model_validate_json(text.replace('"status":', '"new_field": 1, "status":', 1))


COMMANDS = ("/solve", "/validate", "/evaluate", "/pareto", "/simulate", "/deploy", "/fleet")


def test_each_operation_documents_the_errors_it_returns_and_no_other(doc):
    for path, methods in doc["paths"].items():
        for op in methods.values():
            errors = {s for s in op["responses"] if s.startswith(("4", "5"))}
            if path in COMMANDS:  # a body too large, a bad input, a bug, the server full or stopping, the work limit
                assert errors == {"413", "422", "500", "503", "504"}, path
            elif path in ("/prices", "/specs"):  # a bad query parameter, a bug
                assert errors == {"422", "500"}, path
            else:  # /health, /devices, /models, /metrics take no input: only a bug
                assert errors == {"500"}, (path, errors)
            for status in errors:
                ref = op["responses"][status]["content"]["application/json"]["schema"]["$ref"]
                assert ref == "#/components/schemas/ErrorOut", (path, status)
    # 404 and 405 match no operation: the document's description names them, once
    assert "404" in doc["info"]["description"] and "405" in doc["info"]["description"]


def test_the_errors_documented_are_the_shape_returned(client):
    from solver.api.app import Limits

    small = TestClient(create_app(Limits(max_body_bytes=64)))
    spec = (ROOT / "specs" / "chat-llama70b.yaml").read_bytes()
    for path in COMMANDS:
        r = small.post(path, content=spec)
        assert r.status_code == 413, path
        ErrorOut.model_validate(r.json())
        r = client.post(path, content=b"model: [")
        assert r.status_code == 422, path
        ErrorOut.model_validate(r.json())
    for path in ("/nowhere", "/health"):
        r = client.post(path)  # an unknown path, and a method /health does not take
        assert r.status_code in (404, 405)
        ErrorOut.model_validate(r.json())
