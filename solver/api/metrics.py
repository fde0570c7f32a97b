"""Prometheus metrics of the server (GET /metrics, the text exposition format): requests
by route and status, their seconds, and the work in flight. Each app keeps its own
registry, so two apps in one process (tests) count apart."""

from __future__ import annotations

import time
from typing import Any


def add_metrics(app: Any) -> None:
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
    from starlette.requests import Request
    from starlette.responses import Response

    registry = CollectorRegistry()
    requests = Counter("plan_opt_requests", "Requests answered, by route and status.", ["method", "route", "status"], registry=registry)
    seconds = Histogram(
        "plan_opt_request_seconds",
        "Seconds from request to answer, by route.",
        ["method", "route"],
        buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        registry=registry,
    )
    in_flight = Gauge("plan_opt_requests_in_flight", "Requests being answered now.", registry=registry)

    @app.middleware("http")
    async def count(request: Request, call_next: Any) -> Any:
        route = _route(request)
        in_flight.inc()
        started = time.monotonic()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            return response
        finally:
            in_flight.dec()
            seconds.labels(request.method, route).observe(time.monotonic() - started)
            requests.labels(request.method, route, str(status)).inc()

    @app.get("/metrics", response_class=Response, summary="Prometheus metrics: requests by route and status, their seconds, the work in flight")
    def metrics() -> Any:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def _route(request: Any) -> str:
    """The route's path template, or "other" (an unknown path is not a label of its own:
    a scan of random paths cannot grow the metrics without bound)."""
    for r in request.app.router.routes:
        path = getattr(r, "path", None)
        if path is not None and r.matches(request.scope)[0].name == "FULL":
            return str(path)
    return "other"
