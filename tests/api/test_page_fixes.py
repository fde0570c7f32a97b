"""Issue 45 item 6, in the browser: the sliders move a rate spec's percentile targets;
an infeasible answer shows why and clears the old plan; a moving slider hides the
explanation of the plan before it; the link keeps the sliders and solves on open; the
chart has labelled axes; the page fits a phone's width.

The sliders map a position p in 0…1000 to base × 16^(p/1000) / 4 (base: the spec's own
target), so p = 750 is base × 8 / 4 = 2 × base and p = 250 is base × 2 / 4 = base / 2."""

from __future__ import annotations

import base64
import csv
import io
import json
from pathlib import Path

import page_browser
import pytest

browser, server = page_browser.browser, page_browser.server  # the fixtures the page's tests share

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _link(text: str) -> str:
    """The page's own #spec= form: URL-safe base64 without padding."""
    return "#spec=" + base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _slide(pg, name: str, position: int, final: bool) -> None:
    """Move a slider as a hand does: input events while it moves, change when let go."""
    pg.evaluate(
        "([name, p, final]) => { const el = document.getElementById(name); el.value = p;"
        " el.dispatchEvent(new Event('input')); if (final) el.dispatchEvent(new Event('change')); }",
        [name, position, final],
    )


def _limit(pg, constraint: str) -> str:
    """The limit column of one row of the plan's constraint table."""
    return pg.evaluate(
        "(name) => { for (const tr of document.querySelectorAll('#plan table tbody tr'))"
        " if (tr.cells[0].innerText === name) return tr.cells[2].innerText; return null; }",
        constraint,
    )


def _solve(pg, server: str, spec_text: str) -> None:
    pg.goto(server + "/")
    pg.wait_for_selector("#status.ok", timeout=20_000)
    pg.fill("#spec", spec_text)
    pg.wait_for_timeout(700)  # the check the edit starts (300 ms later) has begun
    pg.wait_for_selector("#status.ok", timeout=20_000)
    page_browser.solve_after(pg, lambda: pg.click("#solve"))


@pytest.fixture()
def pg(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    yield page
    page.close()


def test_the_sliders_move_a_rate_specs_percentile_targets(pg, server):
    # chat-70b-at-20-rps.yaml: sla.ttft {p99: 2s}, sla.tpot {p90: 50ms}; its search cut to
    # the H100 alone (the page's sliders read the targets, not the search: the same rate
    # spec's percentile targets move, at a fifth of the shapes screened and simulated per solve)
    text = (SPECS / "chat-70b-at-20-rps.yaml").read_text()
    one_gpu = text.replace("gpus: [h100-sxm, h200, a100-80gb, l40s, mi300x]", "gpus: [h100-sxm]")
    assert one_gpu != text
    _solve(pg, server, one_gpu)
    pg.wait_for_selector("#plan-line")
    assert page_browser.solve_after(pg, lambda: _slide(pg, "tpot", 750, final=True)) == "ok", pg.inner_text("#status")  # 2 × 50 ms = 100 ms
    assert pg.inner_text("#tpot-value") == "100.0 ms"
    assert _limit(pg, "max_tpot") == "100.0 ms"
    assert page_browser.solve_after(pg, lambda: _slide(pg, "ttft", 250, final=True)) == "ok", pg.inner_text("#status")  # 2 s / 2 = 1 s
    assert _limit(pg, "max_ttft") == "1.00 s" and _limit(pg, "max_tpot") == "100.0 ms"


def test_an_infeasible_answer_shows_why_and_clears_the_old_plan(pg, server):
    _solve(pg, server, (SPECS / "chat-llama70b.yaml").read_text())
    pg.wait_for_selector("#pareto-svg circle", timeout=60_000)
    pg.locator("#pareto-svg circle").first.click()
    # impossible.yaml: TPOT ≤ 28 ms within $20/hour and 8 GPUs for the 405B model
    pg.fill("#spec", (SPECS / "impossible.yaml").read_text())
    pg.wait_for_timeout(700)
    pg.wait_for_selector("#status.ok", timeout=20_000)
    assert page_browser.solve_after(pg, lambda: pg.click("#solve")) == "warn", pg.inner_text("#status")
    status = pg.inner_text("#status")
    assert "✓" not in status and "no plan" in status and "max_tpot" in status
    assert "max_tpot" in pg.inner_text("#no-plan-reason")
    assert pg.locator("#plan-line").count() == 0
    assert pg.locator("#pareto-svg").count() == 0 and pg.is_hidden("#pareto-title")
    assert pg.inner_text("#point") == "" and pg.inner_text("#details") == ""


def test_a_moving_slider_hides_the_explanation_until_the_solve_returns(pg, server):
    _solve(pg, server, (SPECS / "chat-llama70b.yaml").read_text())
    pg.wait_for_selector("#pareto-svg circle", timeout=60_000)
    assert pg.is_visible("#decided")
    _slide(pg, "tpot", 700, final=False)
    pg.wait_for_selector("#plan .quick", timeout=30_000)  # the quick plan has come
    assert pg.is_hidden("#details") and "stale" in pg.get_attribute("#pareto", "class")
    _slide(pg, "tpot", 700, final=True)
    pg.wait_for_selector("#decided", state="visible", timeout=60_000)
    pg.wait_for_function("!document.getElementById('pareto').classList.contains('stale')", timeout=60_000)
    assert pg.locator("#plan .quick").count() == 0


def test_the_link_keeps_the_sliders_and_solves_on_open(pg, browser, server):
    _solve(pg, server, (SPECS / "chat-llama70b.yaml").read_text())  # max_tpot: 50ms
    pg.wait_for_selector("#plan-line")
    page_browser.solve_after(pg, lambda: _slide(pg, "tpot", 750, final=True))  # 2 × 50 ms
    href = pg.get_attribute("#link", "href")
    opened = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        opened.goto(server + "/" + href)
        opened.wait_for_selector("#plan-line", timeout=60_000)  # solved without a click
        assert opened.input_value("#tpot") == "750" and opened.inner_text("#tpot-value") == "100.0 ms"
        assert _limit(opened, "max_tpot") == "100.0 ms"
        _slide(opened, "tpot", 500, final=True)  # back to the spec's own 50 ms
        opened.wait_for_function("document.getElementById('tpot-value').textContent === '50.0 ms'", timeout=5_000)
    finally:
        opened.close()


def test_an_old_spec_only_link_still_opens(pg, server):
    pg.goto(server + "/" + _link((SPECS / "chat-llama70b.yaml").read_text()))
    pg.wait_for_selector("#plan-line", timeout=60_000)
    assert pg.inner_text("#tpot-value") == "50.0 ms"


def test_the_chart_has_labelled_axes_whose_ticks_agree_with_the_points(pg, server):
    _solve(pg, server, (SPECS / "chat-llama70b.yaml").read_text())
    pg.wait_for_selector("#pareto-svg circle", timeout=60_000)
    assert "TPOT" in pg.text_content("#x-axis .title") and "$/h" in pg.text_content("#y-axis .title")
    read = "(sel) => [...document.querySelectorAll(sel)].map((e) => [Number(e.dataset.value), Number(e.dataset.pos), e.textContent])"
    xt, yt = pg.evaluate(read, "#x-axis .tick"), pg.evaluate(read, "#y-axis .tick")
    assert len(xt) >= 2 and len(yt) >= 2
    assert all(label.strip() for _, _, label in xt + yt)
    points = pg.evaluate(
        "[...document.querySelectorAll('#pareto-svg circle')].map((c) => [Number(c.dataset.tpot), Number(c.dataset.cost), Number(c.getAttribute('cx')), Number(c.getAttribute('cy'))])"
    )
    # the same scale: a point left of a tick has a smaller TPOT; above a tick, a higher cost (SVG y grows down)
    for tpot, cost, cx, cy in points:
        for value, pos, _ in xt:
            assert (tpot < value) == (cx < pos), (tpot, value, cx, pos)
        for value, pos, _ in yt:
            assert (cost > value) == (cy < pos), (cost, value, cy, pos)


@pytest.mark.parametrize("width", [375, 800])
def test_nothing_overflows_sideways_on_a_narrow_screen(browser, server, width):
    pg = browser.new_page(viewport={"width": width, "height": 900})
    try:
        _solve(pg, server, (SPECS / "chat-llama70b.yaml").read_text())
        pg.wait_for_selector("#pareto-svg circle", timeout=60_000)
        pg.wait_for_selector("#decided")
        sizes = pg.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert sizes[0] <= sizes[1], sizes
        right = pg.evaluate(
            "Math.max(...[...document.querySelectorAll('#pareto-svg, #editor, #sliders, #plan-line')].map((e) => e.getBoundingClientRect().right))"
        )
        assert right <= width
    finally:
        pg.close()


def test_the_plan_shown_downloads_as_json_and_csv(pg, server):
    _solve(pg, server, (SPECS / "chat-llama70b.yaml").read_text())
    pg.wait_for_selector("#download-json", timeout=60_000)
    headline = pg.inner_text("#plan-line")  # "… — N GPUs, $X/hour"
    gpus = int(headline.split(" — ")[1].split(" GPUs")[0])
    with pg.expect_download() as got:
        pg.click("#download-json")
    answer = json.loads(Path(got.value.path()).read_text())
    assert answer["plan"]["gpus"] == gpus and f"${answer['plan']['cost_usd_per_hour']:.2f}/hour" in headline
    with pg.expect_download() as got:
        pg.click("#download-csv")
    rows = dict(tuple(r) for r in csv.reader(io.StringIO(Path(got.value.path()).read_text())))
    assert rows["gpus"] == str(gpus) and rows["field"] == "value"
    _slide(pg, "tpot", 700, final=False)  # a moving slider: the files would hold the plan before
    assert pg.locator("#download-json").count() == 0


def test_the_deploy_command_is_the_plan_shown(pg, server):
    _solve(pg, server, (SPECS / "chat-llama70b.yaml").read_text())
    pg.wait_for_selector("#deploy-command", timeout=60_000)
    page_browser.solve_after(pg, lambda: _slide(pg, "tpot", 900, final=True))  # 50 ms × 16^0.9 / 4 = 151.6 ms: another plan
    pg.wait_for_selector("#deploy-command", timeout=60_000)
    headline = pg.inner_text("#plan-line")  # "R × GPU, TP t, …"
    tp = headline.split(", TP ")[1].split(",")[0].split(" ")[0]
    command = pg.inner_text("#deploy-command")
    assert command.startswith("vllm serve ") and f"--tensor-parallel-size {tp} " in command
    assert _limit(pg, "max_tpot") == "151.6 ms"


def test_the_sliders_of_an_infeasible_rate_spec_set_its_percentile_target(pg, server):
    # no plan, so no traffic section in the answer: the spec text names the percentile
    text = (SPECS / "chat-70b-at-20-rps.yaml").read_text().replace("tpot: {p90: 50ms}", "tpot: {p90: 1ms}")
    _solve(pg, server, text)
    assert pg.get_attribute("#status", "class") == "warn"
    status = page_browser.solve_after(pg, lambda: _slide(pg, "tpot", 1000, final=True))  # 1 ms × 16 / 4 = 4 ms
    assert status == "warn", pg.inner_text("#status")  # no plan yet, but no 422
    assert pg.inner_text("#tpot-value") == "4.0 ms" and "sla.tpot.p90=4.000ms" in pg.get_attribute("#link", "href").replace("%3D", "=")
