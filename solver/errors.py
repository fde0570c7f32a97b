"""Errors a user can act on: one message naming the field, the value and what is allowed."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_DOES_NOT_FIT = 3
EXIT_INVALID_PLAN = 4  # the solver-free check found the plan breaks a constraint: a bug

MAX_VALUE_CHARS = 80
"""A value longer than this is cut, with "…", when a message shows it."""
MAX_FIELD_CHARS = 160
"""A field's path longer than this (a hostile key) is cut likewise."""
MAX_ALLOWED_CHARS = 1000
"""What is allowed, cut past this (it may quote the input: a did-you-mean, a parser's complaint)."""


def printable(text: str) -> str:
    """The text with every character that is not printable escaped as Python writes it
    (a newline as \\n, NUL as \\x00, U+2028 as \\u2028), so it stays on one line and
    shows what was there."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def shorten(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """At most `limit` characters: the start, then "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(value: object) -> str:
    if isinstance(value, str):
        text = value
    else:
        try:
            text = repr(value)
        except ValueError:  # an int past Python's int-to-text limit (4,300 digits)
            text = f"<an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits>" if isinstance(value, int) else "<a value>"
    # cut before escaping (a 100 KB value is not escaped only to be cut), again after
    return shorten(printable(text[: 2 * MAX_VALUE_CHARS]))


class InputError(Exception):
    """Bad input: a field, the value given, and what is allowed. The CLI prints it
    on one line and exits with EXIT_BAD_INPUT, never with a traceback."""

    def __init__(self, field: str, value: object, allowed: str, *, source: str | None = None, line: int | None = None):
        self.field = field
        self.value = value
        self.allowed = allowed
        self.source = source
        self.line = line
        super().__init__(self.message())

    def message(self) -> str:
        """One line, whatever its parts hold: control characters and line breaks are
        escaped, and a long value (or field name) is cut with "…"."""
        where = ""
        if self.source:
            where = printable(str(self.source))
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        field = shorten(printable(str(self.field)[: 2 * MAX_FIELD_CHARS]), MAX_FIELD_CHARS)
        allowed = shorten(printable(str(self.allowed)[: 2 * MAX_ALLOWED_CHARS]), MAX_ALLOWED_CHARS)
        if self.value is None:
            return f"{where}{field}: {allowed}"
        return f"{where}{field} = {_shown(self.value)}: {allowed}"

    def relabel(self, field: str) -> InputError:
        """The same error, named by the path the user wrote (a catalog lookup knows only
        `precision`; the spec knows it was `search.kv_cache[1]`)."""
        return InputError(field, self.value, self.allowed, source=self.source, line=self.line)

    def located(self, lines: dict[tuple, int] | None, source: str | None) -> InputError:
        """With the file and the YAML line of its field, where the spec has them."""
        if self.source or not source:
            return self
        path: list[object] = []
        for part in self.field.replace("]", "").split("."):
            name, *idx = part.split("[")
            path.append(name)
            path += [int(i) for i in idx if i.isdigit()]
        line = None
        for n in range(len(path), 0, -1):
            if lines and tuple(path[:n]) in lines:
                line = lines[tuple(path[:n])]
                break
        return InputError(self.field, self.value, self.allowed, source=source, line=line)

    @classmethod
    def from_validation(
        cls,
        exc: ValidationError,
        lines: dict[tuple, int] | None = None,
        *,
        source: str | None = None,
        schema: type | None = None,
        fields_hint: str = "check its spelling",
    ) -> InputError:
        """The first pydantic error, said in the user's terms (dotted field, YAML line).
        An unknown field is matched against the fields `schema` (the pydantic model that
        was validated) allows at that place, for a "did you mean"; `fields_hint` says
        where that kind of file's fields are listed."""
        errors = exc.errors()
        err = errors[0]
        if err.get("type") in ("missing", "missing_argument"):
            # a required field misspelled is also an unknown field beside it: that one
            # carries the "did you mean" (`modle:` is the missing `model`)
            parent = tuple(err.get("loc", ()))[:-1]
            unknown = [e for e in errors if e.get("type") in ("extra_forbidden", "unexpected_keyword_argument")]
            err = next((e for e in unknown if tuple(e.get("loc", ()))[:-1] == parent), err)
        loc = tuple(err.get("loc", ()))
        # pydantic reports union branches and validators as extra loc parts; keep
        # the path the user wrote.
        path = tuple(p for p in loc if isinstance(p, int) or not str(p).startswith(("function-", "union", "length-")))
        field = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path).replace(".[", "[") or "input"
        kind = err.get("type", "")
        msg = err.get("msg", "invalid").removeprefix("Value error, ")
        if kind in ("extra_forbidden", "unexpected_keyword_argument"):
            value = None
            near = _near_names(schema, path) if schema is not None and path else []
            guess = f"did you mean {near[0]}? " if near else ""
            msg = f"unknown field ({guess}{fields_hint})"
        elif kind in ("missing", "missing_argument"):
            value = None
            msg = "required field is missing"
        elif kind in ("model_type", "dataclass_type", "dict_type", "model_attributes_type"):
            value = err.get("input")
            msg = "must be a section of `key: value` lines (a mapping)"
        else:
            value = err.get("input")
            if isinstance(value, dict | list):
                value = None
        line = None
        if lines:
            for n in range(len(path), 0, -1):
                if path[:n] in lines:
                    line = lines[path[:n]]
                    break
            else:  # a field missing from the top mapping: where that mapping starts
                line = min(lines.values())
        return cls(field, value, msg, source=source, line=line)


def _fields_at(schema: object, path: tuple) -> set[str]:
    """The field names (and aliases) a pydantic model allows at `path` (its parents'
    names and list indices), following lists, dicts and unions; empty where the path
    leaves the models."""
    import typing

    models = [schema]
    for part in path:
        step: list[object] = []
        for m in models:
            if isinstance(part, int):
                step.append(m)  # a list's element: the list was unwrapped below
                continue
            fields = getattr(m, "model_fields", None)
            if fields is None:
                step.append(m)  # a dict's value type: any key
                continue
            f = next((f for n, f in fields.items() if part in (n, f.alias)), None)
            if f is not None:
                step.append(f.annotation)
        models = []
        todo = step
        while todo:  # unwrap Optional, unions, Annotated, list[X], dict[K, X] to models
            t = todo.pop()
            args = typing.get_args(t)
            if hasattr(t, "model_fields"):
                models.append(t)
            elif args:
                todo += list(args[1:]) if typing.get_origin(t) is dict else list(args)
    names = set()
    for m in models:
        for name, f in m.model_fields.items():  # type: ignore[attr-defined]
            names |= {name, f.alias} - {None}
    return names


def _near_names(schema: object, path: tuple) -> list[str]:
    """The allowed name closest to the last part of `path`, if one is close."""
    import difflib

    if not isinstance(path[-1], str):
        return []
    return difflib.get_close_matches(path[-1], sorted(_fields_at(schema, path[:-1])), n=1, cutoff=0.6)


def is_pipe(path: object) -> bool:
    """Whether a path names a FIFO or a socket: opening one to read waits for a writer,
    so every reader refuses it first (a character device such as /dev/zero is read up
    to the reader's size limit instead)."""
    import os
    import stat

    try:
        mode = os.stat(str(path)).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
