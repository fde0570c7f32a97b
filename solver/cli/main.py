"""The `plan-opt` command line: the parser, one subcommand per module beside this one,
and the one place bad input and bugs become exit codes."""

from __future__ import annotations

import argparse
import os
import sys

from solver import __version__
from solver.cli import (
    calibrate,
    deploy,
    evaluate,
    fleet,
    listing,
    pareto,
    schema,
    solve,
)
from solver.errors import EXIT_BAD_INPUT, EXIT_OK, InputError

EXIT_INTERNAL = 70


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="plan-opt",
        description="What hardware serves this model to these users at this latency, and what will it cost? "
        "plan-opt checks memory capacity, memory bandwidth, compute and interconnect.",
    )
    parser.add_argument("--version", action="version", version=f"plan-opt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (solve, pareto, fleet, deploy, evaluate, calibrate, schema, listing):
        command.add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return args.func(args)
    except InputError as exc:
        print(f"plan-opt: error: {exc.message()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug, not bad input: say so in one line
        if os.environ.get("PLAN_OPT_DEBUG"):
            raise
        print(
            f"plan-opt: internal error: {type(exc).__name__}: {exc} (set PLAN_OPT_DEBUG=1 for the traceback; please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
