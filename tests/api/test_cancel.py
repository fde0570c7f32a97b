"""The server stops work past its limit and frees the place it held; on SIGTERM it
stops the work in flight and exits promptly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from solver.api.app import Limits, create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SPEC = (ROOT / "specs" / "chat-70b-at-20-rps.yaml").read_bytes()
BIG = "/simulate?replicas=10000&requests=200000&routing=jsq"


def test_a_simulation_past_the_work_limit_stops_with_a_504_and_frees_its_place():
    client = TestClient(create_app(Limits(concurrency=1, time_limit_s=5.0, work_limit_s=0.5)))
    started = time.monotonic()
    r = client.post(BIG, content=SPEC)
    took = time.monotonic() - started
    assert r.status_code == 504, r.text
    assert "work limit" in r.json()["error"]["message"]
    assert took < 30  # the simulation alone would take minutes (5 seeds of 200,000 requests)
    # the one place is free again: the next request runs (it would wait 5 s, then 503)
    ok = client.post("/validate", content=SPEC)
    assert ok.status_code == 200, ok.text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_sigterm_stops_the_work_in_flight_and_the_server():
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "solver.cli", "serve", "--port", str(port), "--time-limit", "60", "--concurrency", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/health", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        answers: list[int] = []

        def post() -> None:
            req = urllib.request.Request(url + BIG, data=SPEC, method="POST")
            try:
                answers.append(urllib.request.urlopen(req, timeout=120).status)
            except urllib.error.HTTPError as e:
                answers.append(e.code)
                assert "shutting down" in json.loads(e.read())["error"]["message"]
            except OSError:
                answers.append(-1)

        threads = [threading.Thread(target=post) for _ in range(2)]
        for t in threads:
            t.start()
        time.sleep(4)  # both in their simulations (each would run minutes)
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        proc.wait(timeout=30)
        assert time.monotonic() - started < 30
        for t in threads:
            t.join(timeout=10)
        assert answers and all(a in (503, -1) for a in answers), answers
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
