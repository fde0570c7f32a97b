"""The API behaves as one product: every answer that is not a result has the one error
shape and the OpenAPI document says so; /docs works with no network; the catalog and a
plan's launch read the same data as the CLI's JSON; /metrics counts what was answered."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from solver.api.app import create_app  # noqa: E402
from solver.cli.main import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHAPE = {"field", "value", "message", "line"}


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def test_an_unknown_path_and_a_wrong_method_answer_in_the_one_error_shape(client):
    r = client.get("/no-such-route")
    assert r.status_code == 404 and set(r.json()) == {"error"} and set(r.json()["error"]) == SHAPE
    assert r.json()["error"]["field"] == "path" and r.json()["error"]["value"] == "/no-such-route"
    r = client.delete("/solve")
    assert r.status_code == 405 and r.json()["error"]["field"] == "method" and r.json()["error"]["value"] == "DELETE"
    assert "POST" in r.headers["allow"]


def test_the_openapi_document_describes_the_errors_returned(client):
    doc = client.get("/openapi.json").json()
    assert set(doc["components"]["schemas"]["ErrorDetail"]["properties"]) == SHAPE
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            for status in (s for s in op["responses"] if s[0] in "45"):  # those it returns (tests/api/test_answers.py)
                ref = op["responses"][status]["content"]["application/json"]["schema"]["$ref"]
                assert ref == "#/components/schemas/ErrorOut", (path, method, status)
    assert doc["paths"]["/solve"]["post"]["responses"]["422"]


def test_docs_load_from_the_server_itself(client):
    for page in ("/docs", "/redoc"):
        html = client.get(page).text
        assert not re.search(r"(src|href)=\"https?://", html), page  # no CDN: an air-gapped host shows it
        for asset in re.findall(r"(?:src|href)=\"(/[^\"]+\.(?:js|css))\"", html):
            assert client.get(asset).status_code == 200, asset


@pytest.mark.parametrize("what", ["devices", "models", "prices"])
def test_catalog_reads_are_plan_opt_list_as_json(client, capsys, what):
    assert main(["list", what, "--format", "json"]) == 0
    assert client.get(f"/{what}").json() == json.loads(capsys.readouterr().out)


def test_the_price_book_takes_the_cli_s_choices_and_refuses_others_by_name(client, capsys):
    assert main(["list", "prices", "--format", "json", "--gpu", "h100-sxm", "--tier", "spot"]) == 0
    assert client.get("/prices?gpu=h100-sxm&tier=spot").json() == json.loads(capsys.readouterr().out)
    for query, field in (("tier=bogus", "tier"), ("statistic=mean", "statistic"), ("gpu=h999", "gpu")):
        r = client.get(f"/prices?{query}")
        assert r.status_code == 422 and r.json()["error"]["field"] == field, query


def test_deploy_answers_the_cli_s_json(client, capsys):
    spec = ROOT / "specs" / "consumer-small-model.yaml"
    assert main(["deploy", str(spec), "--format", "json", "--engine", "sglang"]) == 0
    cli = json.loads(capsys.readouterr().out)
    r = client.post("/deploy?engine=sglang", content=spec.read_bytes())
    assert r.status_code == 200 and r.json() == cli
    r = client.post("/deploy?engine=tgi", content=spec.read_bytes())
    assert r.status_code == 422 and r.json()["error"]["field"] == "engine"


def test_metrics_count_requests_by_route_and_status():
    client = TestClient(create_app())  # its own registry: counts start at zero
    client.get("/health")
    client.get("/health")
    client.get("/nowhere")
    text = client.get("/metrics").text
    assert 'plan_opt_requests_total{method="GET",route="/health",status="200"} 2.0' in text
    assert 'plan_opt_requests_total{method="GET",route="other",status="404"} 1.0' in text  # unknown paths share one label
    assert "plan_opt_request_seconds_bucket" in text and "plan_opt_requests_in_flight" in text


def test_request_bodies_are_the_input_models_with_a_bundled_example(client):
    from solver.spec.evaluate_input import parse_input
    from solver.spec.fleet_spec import FleetSpec
    from solver.spec.solve_spec import parse_spec

    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    text = json.dumps(doc)
    assert all(ref in schemas for ref in re.findall(r'"#/components/schemas/([^"]+)"', text))  # every reference resolves
    for path, model in (
        ("/solve", "Spec"),
        ("/pareto", "Spec"),
        ("/simulate", "Spec"),
        ("/deploy", "Spec"),
        ("/fleet", "FleetSpec"),
        ("/evaluate", "EvaluateInput"),
    ):
        body = doc["paths"][path]["post"]["requestBody"]["content"]
        assert body["application/json"]["schema"] == {"$ref": f"#/components/schemas/{model}"}, path
        assert set(schemas[model]["properties"]) >= {"model"} or model == "FleetSpec"
        example = body["application/json"]["example"]  # every route shows one (a checkout has specs/ and examples/)
        parse = {"FleetSpec": FleetSpec.model_validate, "EvaluateInput": parse_input}.get(model, parse_spec)
        parse(example)  # the bundled file it shows is one the route takes
        assert body["application/yaml"]["example"].strip()


def test_every_route_s_answer_has_a_typed_schema_and_deploy_s_json_is_it(client):
    from solver.report.deploy_json import DeployOut

    doc = client.get("/openapi.json").json()
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            if path == "/metrics":
                continue  # Prometheus' text format
            schema = op["responses"]["200"]["content"]["application/json"]["schema"]
            assert "$ref" in schema or schema.get("type") == "array", (path, method, schema)
    for golden in sorted((ROOT / "tests" / "golden").glob("deploy-*.json")):  # every bundled spec's deploy JSON
        text = golden.read_text()  # the command's stdout, then its exit line
        if text.startswith("{"):  # (a spec with no plan prints its reason instead)
            DeployOut.model_validate_json(text[: text.rindex("\nexit ")])  # no field the schema lacks (extra forbidden), none missing


def _boom(*args, **kwargs):
    raise RuntimeError("secret internals /srv/plan-opt")


def test_a_crash_on_a_get_or_post_route_answers_the_one_error_shape(monkeypatch, caplog):
    """A bug is a 500 in ErrorOut with a generic message (not Starlette's plain text, not
    the exception's text); the traceback goes to the server's log."""
    import solver.api.app as app_module
    import solver.report.catalog_json as catalog_json
    from solver.api.errors import INTERNAL_ERROR, ErrorOut

    monkeypatch.setattr(catalog_json, "devices_out", _boom)  # read when the app is built: GET /devices raises
    monkeypatch.setattr(app_module, "run_solve", _boom)  # inside the command's guard
    monkeypatch.setattr(app_module, "_read", _boom)  # before it: an exception out of the route itself
    client = TestClient(create_app(), raise_server_exceptions=False)
    spec = (ROOT / "specs" / "chat-llama70b.yaml").read_bytes()
    for method, path in (("GET", "/devices"), ("POST", "/solve"), ("POST", "/fleet")):
        r = client.request(method, path, content=spec if method == "POST" else None)
        assert r.status_code == 500 and r.headers["content-type"] == "application/json", (method, path, r.text)
        err = ErrorOut.model_validate(r.json()).error
        assert (err.field, err.message) == ("server", INTERNAL_ERROR) and "secret" not in r.text, (method, path)
    # the escaped exceptions (GET /devices, POST /fleet) reach the server, which logs them (Starlette re-raises):
    with pytest.raises(RuntimeError, match="secret"):
        TestClient(create_app()).get("/devices")
    # the one the command's guard catches is logged there, with its traceback
    monkeypatch.setattr(app_module, "_read", _readable)
    with caplog.at_level("ERROR", logger="solver.api"):
        assert TestClient(create_app()).post("/solve", content=spec).status_code == 500
    assert any(rec.exc_info and "secret" in str(rec.exc_info[1]) for rec in caplog.records)


async def _readable(request, limit):
    return await request.body()
