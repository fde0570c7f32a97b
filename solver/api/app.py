"""`plan-opt serve`: the commands as an HTTP API. Each endpoint takes the same spec as
the CLI, in YAML or JSON, and answers the same JSON as `--format json`; a bad input is
a 422 naming the field, the value and what is allowed, as the CLI's one line does.

A request may not make the server read its own disk: a model given as a config.json
path and a workload's lengths_file are refused (send a catalog model, or its figures in
overrides.model). Every request is bounded: the body's size, the solver's time (the
spec's own limit, at most the server's), and the requests in flight (past the limit a
request waits its time limit for a place, then gets a 503). Its whole work is bounded
too: a simulation past the work limit (Limits.work_s) stops where it is, frees its
place and answers a 504, and on shutdown every run in flight stops with a 503.
"""

import dataclasses
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator

from solver.api.errors import error_body, internal_error_body, log_internal_error
from solver.errors import InputError

DEFAULT_MAX_BODY_BYTES = 1 << 20
DEFAULT_TIME_LIMIT_S = 10.0


@dataclass(frozen=True)
class Limits:
    """What one request may take."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    """The solver's limit per solve, and the wait for a place when the server is full."""
    concurrency: int = 2
    work_limit_s: float | None = None
    """The most one request's work may take (its simulations stop past it); None: 3 × time_limit_s."""

    @property
    def work_s(self) -> float:
        return self.work_limit_s if self.work_limit_s is not None else 3 * self.time_limit_s


class Refused(Exception):
    """A request the server will not run, with its HTTP status."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status, self.field, self.message = status, field, message


def parse_body(body: bytes, limits: Limits, what: str) -> tuple[dict, dict]:
    """The request's YAML or JSON (YAML reads both) as a mapping, with its lines."""
    from solver.catalog.yaml_lines import load_yaml_text

    if len(body) > limits.max_body_bytes:
        raise Refused(413, "body", f"{len(body):,} bytes: a request holds at most {limits.max_body_bytes:,}")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("body", None, "not UTF-8 text") from None
    data, lines = load_yaml_text(text, source="request")
    if not isinstance(data, dict):
        raise InputError(what, None, f"expected a YAML or JSON mapping (the {what} file's contents)", source="request", line=1)
    return data, lines


MAX_SETS = 16


def with_sets(data: dict, sets: list[str] | None) -> dict:
    """The spec with each `PATH=VALUE` applied (the page's sliders move a target this
    way: `sla.max_tpot=40ms`); VALUE is read as YAML, as evaluate's --set reads it."""
    from solver.catalog.yaml_lines import load_yaml_text
    from solver.spec.paths import set_path

    if not sets:
        return data
    if len(sets) > MAX_SETS:
        raise InputError("set", f"{len(sets)} settings", f"at most {MAX_SETS} in one request")
    out = json.loads(json.dumps(data))  # a deep copy of plain data
    for item in sets:
        if "=" not in item:
            raise InputError("set", item, "expected PATH=VALUE, e.g. sla.max_tpot=40ms")
        path, raw = item.split("=", 1)
        keys = [k for k in path.strip().split(".") if k]
        if not keys or len(keys) > 8:
            raise InputError("set", item, "PATH is dotted field names, e.g. sla.max_tpot (at most 8)")
        value, _ = load_yaml_text(raw, source="set")
        set_path(out, ".".join(keys), value)
    return out


def run_validate(data: dict, lines: dict, limits: Limits) -> tuple[int, str]:
    """The spec checked as solve reads it (the pydantic models the JSON Schema is
    printed from) and against the catalog, without solving: the page's editor calls it
    as the user types."""
    from solver.catalog import default_catalog
    from solver.spec.solve_spec import parse_spec

    _no_local_files(data, default_catalog())
    spec = parse_spec(data, lines, "request")
    _problem(spec, lines)
    return 200, json.dumps({"ok": True})


def _no_local_files(data: dict, catalog: Any, prefix: str = "") -> None:
    """A model must come from the catalog, and no lengths file may be named: the
    server's disk is not the caller's."""
    model = data.get("model")
    if isinstance(model, str):
        try:
            catalog.model(model)
        except InputError:
            raise InputError(
                f"{prefix}model",
                model,
                "over HTTP a model is a catalog name or a Hugging Face id the catalog knows (`plan-opt list models`); "
                "a config.json path would be read from the server's disk, which a request may not name",
            ) from None
    workload = data.get("workload")
    if isinstance(workload, dict) and workload.get("lengths_file") is not None:
        raise InputError(
            f"{prefix}workload.lengths_file",
            workload["lengths_file"],
            "over HTTP no file may be named (it would be read from the server's disk); give the lengths as distributions",
        )
    for i, w in enumerate(data.get("workloads") or []):
        if isinstance(w, dict):
            _no_local_files(w, catalog, f"{prefix}workloads[{i}].")


def _capped(spec: Any, limits: Limits) -> Any:
    """The spec with its solver time limit at most the server's."""
    if spec.solver.time_limit_s <= limits.time_limit_s:
        return spec
    return spec.model_copy(update={"solver": spec.solver.model_copy(update={"time_limit_s": limits.time_limit_s})})


PROBLEMS = 32
"""Problems kept (the physics of their shapes memoised): a re-solve that moves only the
targets reuses them — the "what if I relax TPOT by 10 %" loop answers in milliseconds."""
_problems: OrderedDict[str, Any] = OrderedDict()
_problems_lock = threading.Lock()


def _problem(spec: Any, lines: dict) -> Any:
    """The spec's problem, from the cache when only its targets, its solver limit or its
    Pareto and tie-break settings differ from one built before: those change no shape
    and no physics (a workload from a rate is rebuilt: Little's law reads the targets)."""
    from solver.catalog import default_catalog
    from solver.optimise.shapes import build_problem
    from solver.physics.resolve import targets_of

    key = json.dumps(spec.model_dump(mode="json", exclude={"sla", "solver", "pareto", "prefer"}), sort_keys=True)
    with _problems_lock:
        cached = _problems.get(key)
        if cached is not None:
            _problems.move_to_end(key)
    if cached is not None and spec.workload.requests_per_s is None:
        return dataclasses.replace(cached, spec=spec, targets=targets_of(spec.sla))
    try:
        problem = build_problem(spec, default_catalog())
    except InputError as exc:
        raise exc.located(lines, "request") from None
    with _problems_lock:
        _problems[key] = problem
        while len(_problems) > PROBLEMS:
            _problems.popitem(last=False)
    return problem


def run_solve(data: dict, lines: dict, limits: Limits, explain: bool = True) -> tuple[int, str]:
    from solver.catalog import default_catalog
    from solver.explain.solve import solve
    from solver.report.solve_json import to_json
    from solver.spec.solve_spec import parse_spec

    _no_local_files(data, default_catalog())
    spec = _capped(parse_spec(data, lines, "request"), limits)
    result = solve(_problem(spec, lines), explain=explain)
    if result.violations:
        raise RuntimeError("the plan breaks " + "; ".join(f"{v.rule}: {v.detail}" for v in result.violations))
    return 200, to_json(result)


def run_deploy(data: dict, lines: dict, limits: Limits, engine: str | None, variant: str) -> tuple[int, str]:
    """`plan-opt deploy --format json`: the plan's launch (report/deploy_json.py)."""
    from solver.catalog import default_catalog
    from solver.explain.solve import solve
    from solver.report.deploy_json import default_engine, deploy_json, emit_checked
    from solver.spec.solve_spec import parse_spec

    _no_local_files(data, default_catalog())
    spec = _capped(parse_spec(data, lines, "request"), limits)
    result = solve(_problem(spec, lines), explain=False)
    if result.solution.candidate is None:
        raise InputError("spec", None, "no plan meets the spec: POST /solve says why")
    try:
        dep = emit_checked(result, default_engine(spec.engine.name, engine), variant, spec.engine.name)
    except InputError as exc:
        raise exc.relabel("engine") if exc.field == "--engine" else exc from None
    return 200, json.dumps(deploy_json(dep), indent=2)


def run_evaluate(data: dict, lines: dict, limits: Limits) -> tuple[int, str]:
    from solver.catalog import default_catalog
    from solver.physics.evaluate import evaluate
    from solver.physics.resolve import resolve
    from solver.report.evaluation_json import to_dict
    from solver.spec.evaluate_input import parse_input

    catalog = default_catalog()
    _no_local_files(data, catalog)
    if isinstance(data.get("engine"), str):  # `engine: vllm` is short for {name: vllm}
        data = {**data, "engine": {"name": data["engine"]}}
    inp = parse_input(data, lines, "request")
    deployment, workload, targets = resolve(inp, catalog)
    ev = evaluate(deployment, workload, targets, precisions=catalog.precisions.entries)
    return 200, json.dumps(to_dict(ev), indent=2)


def run_pareto(data: dict, lines: dict, limits: Limits, axes: str | None = None) -> tuple[int, str]:
    from solver.catalog import default_catalog
    from solver.optimise.pareto import frontiers
    from solver.optimise.pareto_axes import DEFAULT_AXES, chosen_axes
    from solver.report.pareto_report import to_json
    from solver.spec.solve_spec import parse_spec

    _no_local_files(data, default_catalog())
    spec = _capped(parse_spec(data, lines, "request"), limits)
    try:
        chosen = chosen_axes(DEFAULT_AXES if axes is None else axes, spec)
    except InputError as exc:
        raise exc.relabel("axes") from None
    return 200, to_json(frontiers(_problem(spec, lines), chosen))


def run_fleet(data: dict, lines: dict, limits: Limits) -> tuple[int, str]:
    from pydantic import ValidationError

    from solver.catalog import default_catalog
    from solver.catalog.types import USER_INPUT
    from solver.optimise.fleet_classes import build_classes
    from solver.optimise.fleet_traffic import solve_fleet_verified
    from solver.report.fleet_report import to_json
    from solver.spec.fleet_spec import FleetSpec

    catalog = default_catalog()
    _no_local_files(data, catalog)
    try:
        fs = FleetSpec.model_validate(data, context=USER_INPUT)
    except ValidationError as exc:
        raise InputError.from_validation(
            exc, lines, source="request", schema=FleetSpec, fields_hint="`plan-opt fleet --help` shows a fleet's fields"
        ) from None
    if fs.solver.time_limit_s > limits.time_limit_s:
        fs = fs.model_copy(update={"solver": fs.solver.model_copy(update={"time_limit_s": limits.time_limit_s})})
    try:
        classes = build_classes(fs, catalog)
    except InputError as exc:
        raise exc.located(lines, "request") from None
    return 200, to_json(solve_fleet_verified(fs, classes))


def run_simulate(data: dict, lines: dict, limits: Limits, plan: dict[str, Any]) -> tuple[int, str]:
    """`plan-opt simulate`: the query's gpu, tp, weights, kv_cache narrow the search as
    the flags do; replicas, requests, seed and routing as theirs."""
    from pydantic import ValidationError

    from solver.catalog import default_catalog
    from solver.explain.simulated_plan import CHOICES, MAX_REPLICAS, named_by_choice, narrowed, plan_to_simulate
    from solver.explain.verdicts import plan_check
    from solver.report.simulate_report import to_dict
    from solver.spec.solve_spec import MAX_SIMULATED_REQUESTS, Spec, parse_spec
    from solver.traffic.verify import SEEDS, Settings

    _no_local_files(data, default_catalog())
    spec = _capped(parse_spec(data, lines, "request"), limits)
    if spec.workload.requests_per_s is None:
        raise InputError("workload.requests_per_s", None, "simulate serves a request rate: give workload.requests_per_s (and percentile targets)")
    chosen = {name: plan.get(name) for name in CHOICES.values()}
    if plan.get("replicas") is not None and not 1 <= plan["replicas"] <= MAX_REPLICAS:
        raise InputError("replicas", plan["replicas"], f"must be a whole number from 1 to {MAX_REPLICAS:,}")
    sim = spec.simulation
    settings = Settings(
        sim.requests if plan.get("requests") is None else plan["requests"],
        sim.seed if plan.get("seed") is None else plan["seed"],
        sim.routing if plan.get("routing") is None else plan["routing"],
    )
    if not 100 <= settings.requests <= MAX_SIMULATED_REQUESTS:
        raise InputError("requests", settings.requests, f"must be a whole number from 100 to {MAX_SIMULATED_REQUESTS:,}")
    if not 0 <= settings.seed < 2**32:
        raise InputError("seed", settings.seed, "must be a whole number from 0 to 4,294,967,295")

    try:
        if any(v is not None for v in chosen.values()):
            try:
                spec = Spec.model_validate(narrowed(spec.model_dump(mode="json", exclude_unset=True), chosen))
            except ValidationError as exc:
                raise InputError.from_validation(exc) from None
        problem = _problem(spec, lines)
    except InputError as exc:
        raise named_by_choice(exc, chosen, flags=False) from None
    to_simulate = plan_to_simulate(problem, plan.get("replicas"))
    if isinstance(to_simulate, str):
        raise InputError("spec", None, to_simulate)
    shape, replicas = to_simulate
    check = plan_check(problem, shape, replicas, settings, 1 if plan.get("one_seed") else SEEDS)
    return 200, json.dumps(to_dict(check, f"{replicas} × {shape.label}", settings), indent=2, allow_nan=False)


class Gate:
    """At most `limits.concurrency` requests run at once; the next waits up to the
    time limit for a place."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._slots = threading.BoundedSemaphore(limits.concurrency)

    def run(self, fn: Any, *args: Any, **kwargs: Any) -> tuple[int, str]:
        if not self._slots.acquire(timeout=self.limits.time_limit_s):
            raise Refused(503, "server", f"busy: {self.limits.concurrency} requests in flight for {self.limits.time_limit_s:g} s; try again")
        from solver.traffic.budget import deadline

        try:
            with deadline(self.limits.work_s):
                return fn(*args, **kwargs)
        finally:
            self._slots.release()


QUERY_FLAG_VALUES = ("true", "false")
"""What a switch in the query string takes: the words a spec's `true`/`false` are written
with. `yes`, `on`, `1` (which FastAPI's own bool would read as true) are refused, as a
spec's switches refuse them (solver/spec/quantities.Flag)."""


def query_flag(value: object) -> object:
    """A query switch, strictly: `true` or `false` (any case), else a 422 naming it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in QUERY_FLAG_VALUES:
        return value.strip().lower() == "true"
    raise ValueError("must be true or false")


def create_app(limits: Limits | None = None) -> Any:
    """The FastAPI application (imported only here: the CLI's other commands never load it)."""
    from fastapi import Query, Request
    from fastapi.responses import FileResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles
    from fastapi_offline import FastAPIOffline

    from solver.api.answers import FleetOut, ParetoOut, SimulateOut
    from solver.api.catalog_routes import add_catalog_routes
    from solver.api.errors import COMMAND_ERRORS, EVERY_ROUTE_ERRORS, UNMATCHED, HealthOut, ValidOut, add_error_handlers, errors_for
    from solver.api.evaluate_answer import EvaluateOut
    from solver.api.metrics import add_metrics
    from solver.api.request_docs import add_request_schemas
    from solver.api.spec_routes import add_spec_routes
    from solver.traffic.budget import Cancelled

    limits = limits or Limits()
    gate = Gate(limits)
    app = FastAPIOffline(  # /docs and /redoc from files the package ships: they work with no network
        title="plan-opt",
        summary="The cheapest hardware that serves a language model at your latency targets, and which limit decided it.",
        description=f"{__doc__}\n{UNMATCHED}",
        version="0.1.0",
        responses=errors_for(*EVERY_ROUTE_ERRORS),  # a bug, on any route: the 500 in the one shape (add_error_handlers)
    )
    add_error_handlers(app)
    add_metrics(app)
    add_catalog_routes(app)
    add_spec_routes(app)
    add_request_schemas(app)
    fails = errors_for(*COMMAND_ERRORS)  # each command route's error answers
    body_doc = {"requestBody": {"content": {"application/yaml": {"schema": {"type": "string"}}, "application/json": {"schema": {"type": "object"}}}}}

    def answer(fn: Any, request_body: bytes | None, what: str, *args: Any, sets: list[str] | None = None) -> Response:
        started = time.monotonic()
        try:
            if request_body is None:
                raise Refused(413, "body", f"over {limits.max_body_bytes:,} bytes: a request holds at most that")
            data, lines = parse_body(request_body, limits, what)
            if sets:
                data = with_sets(data, sets)
                # a field a setting replaced is not on the line the body had it on
                gone = [tuple(x.split("=", 1)[0].strip().split(".")) for x in sets]
                lines = {k: v for k, v in lines.items() if not any(tuple(k[: len(g)]) == g for g in gone)}
            status, text = gate.run(fn, data, lines, limits, *args)
        except Refused as exc:
            return JSONResponse(error_body(exc.field, None, exc.message), status_code=exc.status)
        except Cancelled as exc:
            if exc.shutting_down:
                return JSONResponse(error_body("server", None, "stopped: the server is shutting down; try again"), status_code=503)
            message = f"stopped after {limits.work_s:g} s, the server's work limit: ask for less (fewer requests or replicas, a lower rate)"
            return JSONResponse(error_body("server", None, message), status_code=504)
        except InputError as exc:
            return JSONResponse(error_body(exc.field, exc.value, exc.message(), exc.line), status_code=422)
        except Exception as exc:  # a bug, not the caller's input: logged here, a generic 500 answered, the server stays up
            log_internal_error(getattr(fn, "__name__", "a command"), exc)
            return JSONResponse(internal_error_body(), status_code=500)
        return Response(text, status_code=status, media_type="application/json", headers={"x-plan-opt-seconds": f"{time.monotonic() - started:.3f}"})

    from fastapi.exceptions import RequestValidationError

    @app.exception_handler(RequestValidationError)
    async def bad_query(request: Request, exc: RequestValidationError) -> Response:
        """A query parameter of the wrong type, said as every other bad input is."""
        err = exc.errors()[0] if exc.errors() else {}
        loc = [str(x) for x in err.get("loc", ()) if x not in ("query", "body")]
        field = ".".join(loc) or "request"
        value = err.get("input")
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        message = f"{field} = {value}: {msg}" if value is not None else f"{field}: {msg}"
        return JSONResponse(error_body(field, value, message), status_code=422)

    static = Path(__file__).resolve().parent / "static"

    @app.get("/", include_in_schema=False)
    def page() -> Response:
        return FileResponse(static / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=static), name="static")

    @app.get("/health", response_model=HealthOut, summary="the server is up, and its limits")
    def health() -> dict[str, Any]:
        return {
            "ok": True,
            "limits": {"max_body_bytes": limits.max_body_bytes, "time_limit_s": limits.time_limit_s, "concurrency": limits.concurrency},
        }

    from solver.report.solve_json import SolveOut

    @app.post(
        "/solve",
        openapi_extra=body_doc,
        responses=fails,
        response_model=SolveOut,  # the schema `plan-opt schema --result` prints, published; the body is solve's own JSON
        summary="plan-opt solve: the cheapest plan and why (the JSON of --format json)",
    )
    async def solve(
        request: Request,
        explain: Annotated[bool, BeforeValidator(query_flag), Query(description="false: the plan only (--no-explain); true or false only")] = True,
        set: list[str] | None = Query(None, description="PATH=VALUE applied to the spec first, e.g. sla.max_tpot=40ms (repeatable)"),  # noqa: A002
    ) -> Response:
        body = await _read(request, limits.max_body_bytes)
        return await _threaded(lambda: answer(run_solve, body, "spec", explain, sets=set))

    @app.post(
        "/validate",
        openapi_extra=body_doc,
        response_model=ValidOut,
        responses=fails,
        summary="the spec checked as solve reads it, without solving: {ok: true} or a 422",
    )
    async def validate(request: Request) -> Response:
        body = await _read(request, limits.max_body_bytes)
        return await _threaded(answer, run_validate, body, "spec")

    @app.post(
        "/evaluate", openapi_extra=body_doc, response_model=EvaluateOut, responses=fails, summary="plan-opt evaluate: one configuration, step by step"
    )
    async def evaluate_(request: Request) -> Response:
        body = await _read(request, limits.max_body_bytes)
        return await _threaded(answer, run_evaluate, body, "input")

    @app.post(
        "/pareto", openapi_extra=body_doc, response_model=ParetoOut, responses=fails, summary="plan-opt pareto: the frontiers of cost against latency"
    )
    async def pareto(
        request: Request,
        axes: str | None = Query(None, description="as --axes, e.g. tpot,ttft,rate"),
        set: list[str] | None = Query(None, description="PATH=VALUE applied to the spec first (repeatable)"),  # noqa: A002
    ) -> Response:
        body = await _read(request, limits.max_body_bytes)
        return await _threaded(lambda: answer(run_pareto, body, "spec", axes, sets=set))

    @app.post(
        "/simulate",
        openapi_extra=body_doc,
        response_model=SimulateOut,
        responses=fails,
        summary="plan-opt simulate: a plan under the spec's request rate, request by request",
    )
    async def simulate(
        request: Request,
        gpu: str | None = Query(None, description="as --gpu: simulate this device instead of solve's plan"),
        tp: int | None = Query(None, description="as --tp"),
        weights: str | None = Query(None, description="as --weights"),
        kv_cache: str | None = Query(None, description="as --kv-cache"),
        replicas: int | None = Query(None, description="as --replicas"),
        requests: int | None = Query(None, description="as --requests"),
        seed: int | None = Query(None, description="as --seed"),
        routing: str | None = Query(None, description="as --routing: round_robin or jsq"),
        one_seed: Annotated[
            bool,
            BeforeValidator(query_flag),
            Query(description="as --one-seed: judge the plan on one draw, not on the 95 % bound over 5 seeds; true or false only"),
        ] = False,
    ) -> Response:
        body = await _read(request, limits.max_body_bytes)
        plan = {
            "gpu": gpu,
            "tp": tp,
            "weights": weights,
            "kv_cache": kv_cache,
            "replicas": replicas,
            "requests": requests,
            "seed": seed,
            "routing": routing,
            "one_seed": one_seed,
        }
        if routing not in (None, "round_robin", "jsq"):
            return JSONResponse(error_body("routing", routing, "routing = " + routing + ": round_robin or jsq"), status_code=422)
        return await _threaded(answer, run_simulate, body, "spec", plan)

    from solver.report.deploy_json import DeployOut

    @app.post(
        "/deploy",
        openapi_extra=body_doc,
        responses=fails,
        response_model=DeployOut,  # the body is deploy's own JSON (report/deploy_json.py)
        summary="plan-opt deploy --format json: the commands that run the spec's plan",
    )
    async def deploy(
        request: Request,
        engine: str | None = Query(None, description="as --engine: vllm, sglang, llama.cpp, trtllm (default: the spec's)"),
        variant: str = Query("instruct", description="as --variant: instruct or base"),
        set: list[str] | None = Query(None, description="PATH=VALUE applied to the spec first, as /solve's (repeatable)"),  # noqa: A002
    ) -> Response:
        if engine not in (None, "vllm", "sglang", "llama.cpp", "trtllm"):
            return JSONResponse(error_body("engine", engine, f"engine = {engine}: vllm, sglang, llama.cpp or trtllm"), status_code=422)
        if variant not in ("instruct", "base"):
            return JSONResponse(error_body("variant", variant, f"variant = {variant}: instruct or base"), status_code=422)
        body = await _read(request, limits.max_body_bytes)
        return await _threaded(lambda: answer(run_deploy, body, "spec", engine, variant, sets=set))

    @app.post("/fleet", openapi_extra=body_doc, response_model=FleetOut, responses=fails, summary="plan-opt fleet: one fleet for several workloads")
    async def fleet(request: Request) -> Response:
        body = await _read(request, limits.max_body_bytes)
        return await _threaded(answer, run_fleet, body, "fleet")

    return app


async def _read(request: Any, limit: int) -> bytes | None:
    """The body, or None as soon as it passes `limit` bytes (never read whole first)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _threaded(fn: Any, *args: Any) -> Any:
    """The CPU-bound work off the event loop, so /health and the gate keep answering."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)
