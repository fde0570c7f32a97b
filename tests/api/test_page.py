"""The page at / in a real headless browser (Debian's chromium driven by playwright):
it loads, checks the spec as it is edited and marks a bad line, solves and shows the
plan, draws the Pareto frontier, and re-solves when a target's slider moves. The
server and the browser are page_browser.py's; test_page_*.py hold the later fixes."""

from __future__ import annotations

import os

import page_browser
import pytest

browser, server = page_browser.browser, page_browser.server  # the fixtures the page's tests share


@pytest.fixture(scope="module")
def page(browser, server):
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.goto(server + "/")
    yield pg
    pg.close()


def test_the_page_solves_the_spec_and_draws_its_frontier(page):
    page.wait_for_selector("#status.ok", timeout=20_000)  # the default spec reads
    page.click("#solve")
    page.wait_for_selector("#plan-line", timeout=60_000)
    headline = page.inner_text("#plan-line")
    assert "GPUs" in headline and "$" in headline
    assert "max_tpot" in page.inner_text("#plan table")
    assert "What decided it" in page.inner_text("#details")
    page.wait_for_selector("#pareto-svg circle", timeout=60_000)
    assert page.locator("#pareto-svg circle").count() >= 3
    page.locator("#pareto-svg circle").first.click()
    assert "$" in page.inner_text("#point")
    shot = os.environ.get("PLAN_OPT_SCREENSHOT")
    if shot:
        page.screenshot(path=shot, full_page=True)


def test_a_slider_moves_its_target_and_re_solves(page):
    page.wait_for_selector("#sliders:not([hidden])", timeout=20_000)
    before = page.inner_text("#tpot-value")
    page.fill("#tpot", "950")  # near four times the spec's TPOT target
    page.dispatch_event("#tpot", "change")
    page.wait_for_function(f"document.getElementById('tpot-value').textContent !== {before!r}")
    page.wait_for_function("document.querySelector('#plan table') && document.querySelector('#plan table').innerText.includes('max_tpot')")
    assert page.inner_text("#tpot-value") != before


def test_an_error_is_marked_at_its_line(page):
    text = page.input_value("#spec")
    page.fill("#spec", text.replace("users: 96", "users: -3"))
    page.wait_for_selector("#status.bad", timeout=20_000)
    status = page.inner_text("#status")
    line = 1 + text.split("\n").index("  users: 96")
    assert status.startswith(f"line {line}:") and "workload.users" in status
    assert page.inner_text("#gutter .bad") == str(line)
    assert page.get_attribute("#link", "href").startswith("#spec=")
