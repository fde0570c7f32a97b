"""`plan-opt serve`: the HTTP API (solver/api/app.py) on uvicorn."""

from __future__ import annotations

import argparse
import os

from solver.errors import EXIT_OK, InputError

PORT_RANGE = (1, 65535)


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="serve solve, evaluate, pareto and fleet as an HTTP API (JSON out, YAML or JSON in)",
        description="An HTTP API with the commands as endpoints: POST /solve, /evaluate, /pareto and /fleet take the "
        "same spec as the CLI (YAML or JSON body) and answer the JSON of --format json; a bad input is a 422 naming "
        "the field, the value and what is allowed. GET /health; GET /docs and /openapi.json describe it. Bound to "
        "127.0.0.1 unless told otherwise. A request may not name files on the server (a config.json model, a "
        "lengths_file). Needs the serve extra: pip install 'plan-opt[serve]'.",
        epilog="Examples:\n  plan-opt serve\n  curl -s --data-binary @specs/chat-llama70b.yaml localhost:8000/solve | jq .plan\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--time-limit", type=float, default=10.0, metavar="S", help="most CP-SAT time per solve a request may ask (default 10 s)")
    p.add_argument(
        "--work-limit",
        type=float,
        metavar="S",
        help="most time one request's work may take: its simulations stop there and it gets a 504 (default 3 × --time-limit)",
    )
    p.add_argument("--max-body-bytes", type=int, default=1 << 20, metavar="N", help="largest request body (default 1 MiB)")
    p.add_argument("--concurrency", type=int, default=os.cpu_count() or 1, metavar="N", help="requests run at once (default: the CPUs)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not PORT_RANGE[0] <= args.port <= PORT_RANGE[1]:
        raise InputError("--port", args.port, f"a TCP port, {PORT_RANGE[0]} to {PORT_RANGE[1]}")
    if not 0 < args.time_limit <= 3600:
        raise InputError("--time-limit", args.time_limit, "seconds, more than 0 and at most 3600")
    if args.work_limit is not None and not 0 < args.work_limit <= 3600:
        raise InputError("--work-limit", args.work_limit, "seconds, more than 0 and at most 3600")
    if not 1024 <= args.max_body_bytes <= 64 << 20:
        raise InputError("--max-body-bytes", args.max_body_bytes, "1,024 bytes to 64 MiB")
    if not 1 <= args.concurrency <= 1024:
        raise InputError("--concurrency", args.concurrency, "1 to 1,024 requests at once")
    try:
        import uvicorn
    except ImportError:
        raise InputError("serve", None, "needs FastAPI and uvicorn: pip install 'plan-opt[serve]'") from None
    from solver.api.app import Limits, create_app
    from solver.traffic.budget import stop_all

    class Server(uvicorn.Server):
        """On SIGTERM or SIGINT, stop the simulations in flight first (each answers a 503),
        so the graceful shutdown has nothing long to wait for."""

        def handle_exit(self, sig: int, frame: object) -> None:
            stop_all()
            super().handle_exit(sig, frame)  # type: ignore[arg-type]

    app = create_app(Limits(args.max_body_bytes, args.time_limit, args.concurrency, args.work_limit))
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=5)
    Server(config).run()
    return EXIT_OK
