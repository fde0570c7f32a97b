"""`plan-opt schema`: the JSON Schemas of the spec and the result."""

from __future__ import annotations

import argparse
import json

from solver.errors import EXIT_OK


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of the spec (or of solve's JSON output)")
    p.add_argument("--result", action="store_true", help="the schema of `solve --format json` instead of the spec")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.result:
        from solver.report.solve_json import result_json_schema

        print(json.dumps(result_json_schema(), indent=2))
    else:
        from solver.spec.solve_spec import spec_json_schema

        print(json.dumps(spec_json_schema(), indent=2))
    return EXIT_OK
