"""The bundled specs over HTTP: GET /specs lists `specs/*.yaml` (the examples the README
solves), each with its one-line description and the command it is for, so the page can
offer them to pick. They ship in the wheel as `solver/bundled_specs/` (pyproject maps the
top-level `specs/` there); a source checkout or editable install reads `specs/` itself."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from solver.errors import InputError

Command = Literal["solve", "fleet", "schedule"]
COMMANDS: tuple[str, ...] = ("solve", "fleet", "schedule")


class BundledSpecOut(BaseModel):
    name: str = Field(description="The file's name without .yaml, e.g. latency-critical-8b.")
    description: str = Field(description="The first sentence of the file's leading comment, on one line.")
    command: Command = Field(description="fleet: it has `workloads`; schedule: it has `traffic_profile`; else solve.")
    text: str = Field(description="The file's text, as `plan-opt <command>` reads it.")


def bundled_specs_dir() -> Path:
    """Where the bundled specs are: in the installed package, else the checkout's specs/."""
    here = Path(__file__).resolve().parent.parent  # the solver package
    for candidate in (here / "bundled_specs", here.parent / "specs"):
        if any(candidate.glob("*.yaml")):
            return candidate
    raise InputError("specs", str(here), "the bundled specs are missing from this installation; reinstall plan-opt")


def command_of(data: Any) -> Command:
    """The rule: a fleet spec lists `workloads`, a schedule spec has a `traffic_profile`
    (spec/fleet_spec.py, spec/schedule_spec.py); every other spec is solve's."""
    if isinstance(data, dict) and "workloads" in data:
        return "fleet"
    if isinstance(data, dict) and "traffic_profile" in data:
        return "schedule"
    return "solve"


_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)(?<!vs)[.!?](?=\s|$)")


def description_of(text: str) -> str:
    """The leading comment's first sentence on one line (a full stop inside brackets,
    as in `(e.g. 3.99)`, does not end it); the whole comment if it has no full stop."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    comment = " ".join(x for x in lines if x)
    depth = 0
    for i, ch in enumerate(comment):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if depth <= 0 and _SENTENCE_END.match(comment, i):
            return comment[: i + 1]
    return comment


def bundled_specs(command: str | None = None) -> list[BundledSpecOut]:
    """Every bundled spec, by name; only one command's when `command` is given."""
    if command is not None and command not in COMMANDS:
        raise InputError("command", command, f"one of {', '.join(COMMANDS)}")
    out = []
    for path in sorted(bundled_specs_dir().glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        kind = command_of(yaml.safe_load(text))
        if command is None or kind == command:
            out.append(BundledSpecOut(name=path.stem, description=description_of(text), command=kind, text=text))
    return out


def add_spec_routes(app: Any) -> None:
    from fastapi import Query
    from fastapi.responses import JSONResponse

    from solver.api.errors import error_body, errors_for

    @app.get(
        "/specs",
        response_model=list[BundledSpecOut],
        responses=errors_for(422),
        summary="the bundled example specs (specs/*.yaml): name, description, command, text",
    )
    def specs(command: str | None = Query(None, description="only the specs of this command: solve, fleet or schedule")) -> Any:
        try:
            return bundled_specs(command)
        except InputError as exc:
            return JSONResponse(error_body(exc.field, exc.value, exc.message()), status_code=422)
