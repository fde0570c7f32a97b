"""The fixtures the page's browser tests share (test_page*.py import them): a server and
a headless chromium (Debian's, driven by playwright). In CI (CI=true) a missing browser
fails the test; elsewhere it skips. Not a conftest.py: tests/ import `conftest` by
name, and a second one would shadow it."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _need(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing: .ci/run installs it")
    pytest.skip(f"{what} is not installed")


@pytest.fixture(scope="module")
def server():
    try:
        import uvicorn
    except ImportError:
        _need("uvicorn")
    from solver.api.app import Limits, create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(create_app(Limits(concurrency=2)), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    for _ in range(200):
        if srv.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    t.join(10)


@pytest.fixture(scope="module")
def browser(server):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need("playwright")
    if CHROMIUM is None:
        _need("chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield browser
        browser.close()


SETTLED = (
    "(n) => state.seq > n && !document.getElementById('solve').disabled"
    " && ['ok', 'warn', 'bad'].includes(document.getElementById('status').className)"
)


def solve_after(pg, act, timeout_ms: int = 60_000) -> str:
    """Do `act` (a pick, a slider let go, a click) and wait until the solve it starts has
    ended, however fast it was; return the status's class. Waiting to see "solving…"
    first missed a solve that came back between two polls (CI, stop 58): the page's
    request counter (state.seq) moving on, and the Solve button enabled again, cannot be
    missed."""
    before = pg.evaluate("state.seq")
    act()
    pg.wait_for_function(SETTLED, arg=before, timeout=timeout_ms)
    return pg.get_attribute("#status", "class")
