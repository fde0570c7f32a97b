"""One error shape for every answer that is not a result — a bad input (422), a body too
large (413), an unknown path (404) or method (405), the server's limits (503, 504), a bug
(500) — and its OpenAPI description, so the document says what the server returns."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorDetail(BaseModel):
    field: str = Field(description="The input the error is about: a dotted spec path, a query parameter, body, path, method, server.")
    value: str | None = Field(description="The value given (cut at 200 characters), or null.")
    message: str = Field(description="One line: the field, the value and what is allowed.")
    line: int | None = Field(description="The line of the request body the field is on (YAML or JSON), or null.")


class ErrorOut(BaseModel):
    error: ErrorDetail


class LimitsOut(BaseModel):
    max_body_bytes: int
    time_limit_s: float
    concurrency: int


class HealthOut(BaseModel):
    ok: bool
    limits: LimitsOut


class ValidOut(BaseModel):
    ok: bool = Field(description="true: solve would read the spec as it is (a bad one is a 422).")


def error_body(field: str, value: object, message: str, line: int | None = None) -> dict[str, Any]:
    return {"error": {"field": field, "value": None if value is None else str(value)[:200], "message": message, "line": line}}


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "No such path (field `path`)."},
    405: {"model": ErrorOut, "description": "The path does not take this method (field `method`; the Allow header lists those it takes)."},
    413: {"model": ErrorOut, "description": "The body is over the server's limit (field `body`)."},
    422: {"model": ErrorOut, "description": "Bad input: the field, the value and what is allowed, with the body's line."},
    500: {"model": ErrorOut, "description": "A bug (field `server`), said in one line; the server stays up."},
    503: {"model": ErrorOut, "description": "The server is shutting down, or every worker is busy past the wait (field `server`)."},
    504: {"model": ErrorOut, "description": "The work passed the server's work limit (field `server`)."},
}
"""The error answers, in the OpenAPI document (FastAPI's own 422 schema replaced)."""

INTERNAL_ERROR = "internal error: a bug, not your input; the server logged its traceback and stays up (please report it)"
"""The one message of a 500: generic, so an answer never carries the server's internals."""

COMMAND_ERRORS = (413, 422, 500, 503, 504)
"""What a POST command route answers besides its result: a body too large, a bad input
(the body or a query parameter), a bug, the server full or stopping, the work limit."""

UNMATCHED = (
    "An unknown path answers 404 (field `path`) and a path's unlisted method 405 (field `method`, with an Allow header), in the same ErrorOut shape."
)
"""404 and 405 belong to no operation (no route matched): the document says so once, in its description."""


EVERY_ROUTE_ERRORS = (500,)
"""What any operation may answer, a bug (the app's `responses=`, merged into each route's own)."""


def errors_for(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The error answers one route gives, for its `responses=`: only those it can return."""
    return {s: ERROR_RESPONSES[s] for s in statuses}


def internal_error_body() -> dict[str, Any]:
    return error_body("server", None, INTERNAL_ERROR)


def log_internal_error(where: str, exc: BaseException) -> None:
    """The traceback on the server's log (the answer says only INTERNAL_ERROR)."""
    import logging

    logging.getLogger("solver.api").error("internal error in %s", where, exc_info=exc)


def add_error_handlers(app: Any) -> None:
    """404 and 405 (and any other HTTP error Starlette raises) in the one shape; and any
    exception a route lets out (a bug) as a 500 in the same shape with a generic message,
    instead of Starlette's plain-text "Internal Server Error"."""
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException
    from starlette.requests import Request

    @app.exception_handler(Exception)
    async def crash(request: Request, exc: Exception) -> JSONResponse:
        # Starlette re-raises the exception after this answer, so the server (uvicorn)
        # logs its traceback once; logging it here too would print it twice.
        return JSONResponse(internal_error_body(), status_code=500)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 404:
            body = error_body("path", request.url.path, f"no such path: {request.url.path} (GET /openapi.json lists the paths)")
        elif exc.status_code == 405:
            body = error_body("method", request.method, f"{request.url.path} does not take {request.method}")
        else:
            body = error_body("request", None, str(exc.detail))
        return JSONResponse(body, status_code=exc.status_code, headers=getattr(exc, "headers", None))
