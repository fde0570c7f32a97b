"""Issue 45 item 6, in the browser: a bundled spec picked from the page's list (filled
from GET /specs?command=solve) puts that file's text in the editor and shows its plan;
the list holds solve's specs only (fleet and schedule specs are other commands')."""

from __future__ import annotations

import json
from pathlib import Path

import page_browser
import pytest

browser, server = page_browser.browser, page_browser.server  # the fixtures the page's tests share

SPECS = Path(__file__).resolve().parents[2] / "specs"
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SOLVED = "document.getElementById('status').className === 'ok' || document.getElementById('status').className === 'warn'"


@pytest.fixture()
def pg(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    yield page
    page.close()


def test_picking_a_bundled_spec_loads_its_text_and_shows_its_plan(pg, server):
    pg.goto(server + "/")
    pg.wait_for_selector("#status.ok", timeout=20_000)
    pg.wait_for_function("document.getElementById('pick-spec').options.length > 1", timeout=20_000)
    names = pg.eval_on_selector_all("#pick-spec option", "os => os.map(o => o.value)")
    # solve's specs: those the goldens record under solve (tests/golden/record.py)
    assert names[0] == "" and sorted(names[1:]) == sorted(p.stem for p in SPECS.glob("*.yaml") if (GOLDEN / f"solve-{p.stem}.json").exists())
    assert "fleet-rates" not in names and "daily-chat-profile" not in names

    pg.select_option("#pick-spec", "latency-critical-8b")
    assert pg.input_value("#spec") == (SPECS / "latency-critical-8b.yaml").read_text(encoding="utf-8")
    pg.wait_for_function(SOLVED, timeout=90_000)
    assert pg.get_attribute("#status", "class") == "ok", pg.inner_text("#status")
    pg.wait_for_selector("#plan-line")
    # the plan shown is the one `plan-opt solve specs/latency-critical-8b.yaml` records
    plan = json.JSONDecoder().raw_decode((GOLDEN / "solve-latency-critical-8b.json").read_text())[0]["plan"]
    line = pg.inner_text("#plan-line")
    assert line.startswith(f"{plan['replicas']} × {plan['gpu_display_name']},"), line
    assert f"{plan['gpus']} GPUs, ${plan['cost_usd_per_hour']:.2f}/hour" in line, line
    assert pg.eval_on_selector("#pick-spec", "e => e.value") == "latency-critical-8b"

    # editing the text away from the bundled spec clears the pick
    pg.fill("#spec", pg.input_value("#spec") + "\n# edited\n")
    assert pg.eval_on_selector("#pick-spec", "e => e.value") == ""
