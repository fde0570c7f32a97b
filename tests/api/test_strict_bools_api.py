"""Over HTTP, a switch that is not `true` or `false` (a JSON or YAML body's "yes", 1,
0, "true") is a 422 in the one error shape, naming the field, the value and "true or
false", as the CLI refuses it (tests/spec/test_strict_bools.py lists the switches)."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from solver.api.app import Limits, create_app  # noqa: E402
from tests.spec.test_strict_bools import BASE, SWITCHES, _set  # noqa: E402

ENDPOINT = {"solve": "/validate", "evaluate": "/evaluate", "fleet": "/fleet"}
NARROW = {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]}


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(Limits(concurrency=2)))


def test_every_switch_of_a_request_body_is_covered_here():
    assert {root for root, _ in SWITCHES} - set(ENDPOINT) == {"sweep"}  # a sweep is a CLI file only


@pytest.mark.parametrize("value", ["yes", 1, 0, "true"], ids=repr)
@pytest.mark.parametrize(("root", "path"), sorted(s for s in SWITCHES if s[0] in ENDPOINT))
def test_a_switch_that_is_not_true_or_false_is_a_422_naming_it(client, root, path, value):
    r = client.post(ENDPOINT[root], json=_set(BASE[root], path, value))
    assert r.status_code == 422, r.text[:300]
    e = r.json()["error"]
    assert set(e) == {"field", "value", "message", "line"}
    assert (e["field"], e["value"], e["line"]) == (path, str(value), 1)
    assert f"{path} = {value}: must be true or false" in e["message"]


def test_a_yaml_body_names_the_line_and_reads_true_as_a_switch(client):
    head = "model: llama-3.1-8b\nworkload: {users: 4, context_tokens: 4096, output_tokens: 256}\n"
    search = "search: {gpus: [h100-sxm], tp: [1], weights: [bf16], kv_cache: [bf16]}\n"
    r = client.post("/validate", content=head + search + "engine:\n  name: vllm\n  enforce_eager: on\n")
    assert r.status_code == 422
    e = r.json()["error"]
    assert (e["field"], e["value"], e["line"]) == ("engine.enforce_eager", "on", 6)
    r = client.post("/validate", content=head + search + "engine:\n  name: vllm\n  enforce_eager: true\n")
    assert r.status_code == 200 and r.json() == {"ok": True}


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("path", sorted(p for root, p in SWITCHES if root == "solve"))
def test_true_and_false_pass_validation(client, path, value):
    doc = _set({**BASE["solve"], "search": NARROW}, path, value)
    r = client.post("/validate", json=doc)
    assert r.status_code == 200 and r.json() == {"ok": True}, r.text[:300]


def test_a_set_query_is_held_to_the_same_rule(client):
    r = client.post("/solve", params={"set": "search.allow_cross_vendor_kv=yes", "explain": "false"}, json=BASE["solve"])
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "search.allow_cross_vendor_kv" and "must be true or false" in r.json()["error"]["message"]
