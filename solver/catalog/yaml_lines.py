"""YAML loading that remembers where each key was written, so errors can name the line.

Every YAML plan-opt reads (specs, fleet files, evaluate inputs, calibration files, the
catalogs) comes through here, so this is where hostile or surprising YAML stops:

- Limits, each refused with one line naming the file: `MAX_BYTES` of text (a file is
  not read past it), `MAX_DEPTH` levels of nesting, `MAX_NODES` values in all.
- No aliases: `*name` is refused (no bundled input uses anchors), so an alias bomb
  ("billion laughs") costs one pass over its text and is then refused.
- YAML 1.2 core schema, not PyYAML's YAML 1.1: only `true`/`false` are booleans
  (`yes`, `no`, `on`, `off` are strings), `010` is the integer 10 (not octal 8),
  `0o17` and `0x1f` are octal and hex integers, `1e3` is a float; `1:30` (1.1's
  sexagesimal 90), `0b100` (1.1's binary 4), `1_000` and dates stay strings, which the
  field's own type check then names. Tags beyond the core ones (`!!binary`,
  `!!timestamp`, `!!set`, `!!python/...`) are refused, as is the `<<` merge.
- A key written twice in one mapping is refused with both lines.

The text is composed once (libyaml's C parser where installed) and the data built
from that node graph; the walk that checks the limits and records the lines uses an
explicit stack, so neither depth nor size can overflow Python's stack.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from solver.errors import InputError, is_pipe

MAX_BYTES = 2 * 1024 * 1024
"""Text over 2 MiB is refused: specs are a few KB, the largest catalog file ~135 KB."""
MAX_DEPTH = 64
"""Mappings and lists nested deeper than this are refused (the catalogs use 6)."""
MAX_NODES = 100_000
"""Values in one document (keys, scalars, mappings, lists); the largest catalog has ~5,000."""

_Base: Any
try:  # libyaml is several times faster; PyYAML falls back to pure Python without it
    _Base = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Base = yaml.SafeLoader

_TAG = "tag:yaml.org,2002:"
# YAML 1.2.2 core schema (section 10.3.2), each pattern matched against the whole scalar.
_NULL = re.compile(r"(?:~|null|Null|NULL|)\Z")
_BOOL = re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z")
_INT = re.compile(r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z")
_FLOAT = re.compile(r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z")
_MAX_INT_DIGITS = 4000  # below Python's int-to-text limit (4300), so any int read can be printed


def _core_resolvers() -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    """First character → (tag, pattern), as PyYAML's resolver looks them up ('' for the empty scalar)."""
    table: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    for tag, pattern, first in (
        ("null", _NULL, ["~", "n", "N", ""]),
        ("bool", _BOOL, list("tTfF")),
        ("int", _INT, list("-+0123456789")),
        ("float", _FLOAT, list("-+.0123456789")),
    ):
        for ch in first:
            table.setdefault(ch, []).append((_TAG + tag, pattern))
    return table


def _int(text: str) -> int | None:
    if not _INT.match(text):
        return None
    sign, digits = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
    base = {"0o": 8, "0x": 16}.get(digits[:2], 10)
    if base != 10:
        digits = digits[2:]
    if len(digits) > _MAX_INT_DIGITS:
        return None
    return sign * int(digits, base)


def _construct_int(loader: SafeConstructor, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    value = _int(text)
    if value is None:
        too_long = len(text) > _MAX_INT_DIGITS and _INT.match(text)
        raise ConstructorError(None, None, "integer too long" if too_long else f"not an integer: {text[:40]!r}", node.start_mark)
    return value


def _construct_float(loader: SafeConstructor, node: yaml.ScalarNode) -> float:
    text = str(loader.construct_scalar(node))
    if _FLOAT.match(text):
        body = text.lstrip("+-").lower()
        if body in (".inf", ".nan"):
            return float(("-" if text[0] == "-" else "") + body[1:])
        return float(text)
    as_int = _int(text)  # `!!float 0x10`
    if as_int is not None and abs(as_int) < 2**1023:
        return float(as_int)
    raise ConstructorError(None, None, f"not a number: {text[:40]!r}", node.start_mark)


def _construct_bool(loader: SafeConstructor, node: yaml.ScalarNode) -> bool:
    text = str(loader.construct_scalar(node))
    if not _BOOL.match(text):
        raise ConstructorError(None, None, f"not a boolean (write true or false): {text[:40]!r}", node.start_mark)
    return text.lower() == "true"


class _Loader(_Base):
    """The C safe loader with the YAML 1.2 core schema and only its constructors."""

    yaml_implicit_resolvers = _core_resolvers()
    yaml_constructors = {
        _TAG + "null": SafeConstructor.construct_yaml_null,
        _TAG + "bool": _construct_bool,
        _TAG + "int": _construct_int,
        _TAG + "float": _construct_float,
        _TAG + "str": SafeConstructor.construct_yaml_str,
        _TAG + "seq": SafeConstructor.construct_yaml_seq,
        _TAG + "map": SafeConstructor.construct_yaml_map,
        None: SafeConstructor.construct_undefined,
    }


def _dotted(path: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "<root>"


def _check_and_map(root: yaml.Node, source: str, max_depth: int, max_nodes: int) -> dict[tuple, int]:
    """Walk the node graph once (explicit stack): refuse aliases, keys that are not
    plain values, duplicate keys, depth and count past the limits; return path → line."""
    lines: dict[tuple, int] = {}
    seen: set[int] = set()
    # (node, its path, its nesting depth, the line to blame if it turns out shared)
    stack: list[tuple[yaml.Node, tuple, int, int]] = [(root, (), 0, root.start_mark.line + 1)]
    count = 0

    def refuse(problem: str, line: int | None) -> InputError:
        return InputError("yaml", None, problem, source=source, line=line)

    while stack:
        node, path, depth, line = stack.pop()
        if id(node) in seen:
            raise refuse("aliases (*name) are not accepted: write the value out in full", line)
        seen.add(id(node))
        count += 1
        if count > max_nodes:
            raise refuse(f"more than {max_nodes:,} values: too large for a plan-opt input", line)
        if isinstance(node, yaml.ScalarNode):
            continue
        if depth >= max_depth:
            raise refuse(f"nested more than {max_depth} levels deep", node.start_mark.line + 1)
        children: list[tuple[yaml.Node, tuple, int, int]] = []
        # An alias's own position is not kept (it is the anchored node): blame the line
        # where the element before it ended, or the container's first line.
        after = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            first_line: dict[tuple[str, str], int] = {}
            for key_node, value_node in node.value:
                if id(key_node) in seen:
                    raise refuse("aliases (*name) are not accepted: write the value out in full", after)
                key_line = key_node.start_mark.line + 1
                if not isinstance(key_node, yaml.ScalarNode):
                    raise refuse("a key must be a plain value, not a list or mapping", key_line)
                seen.add(id(key_node))
                count += 1
                key = key_node.value
                number = _int(key) if key_node.tag == _TAG + "int" else None
                ident = (key_node.tag, key if number is None else str(number))  # 010 and 10 are one key
                if ident in first_line:
                    raise refuse(f"duplicate key {_dotted(path + (key,))} (lines {first_line[ident]} and {key_line}): keep one", key_line)
                first_line[ident] = key_line
                lines[path + (key,)] = key_line
                children.append((value_node, path + (key,), depth + 1, key_line))
                after = value_node.end_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[path + (i,)] = item.start_mark.line + 1
                children.append((item, path + (i,), depth + 1, after))
                after = item.end_mark.line + 1
        stack.extend(reversed(children))
    return lines


def _yaml_error(exc: yaml.YAMLError, text: str, source: str, max_depth: int) -> InputError:
    """PyYAML's error, as one line with its line number (its own text spans several)."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "malformed YAML"
        if problem == "exceeded maximum nesting depth":  # libyaml's own limit, 1,000
            return InputError("yaml", None, f"nested more than {max_depth} levels deep", source=source, line=line)
        return InputError("yaml", None, f"malformed YAML: {problem}", source=source, line=line)
    if isinstance(exc, yaml.reader.ReaderError):
        line = None
        if isinstance(exc.position, int) and 0 <= exc.position <= len(text):
            line = text.count("\n", 0, exc.position) + 1
        char = exc.character
        code = ord(char) if isinstance(char, str) and len(char) == 1 else char if isinstance(char, int) else None
        what = f"character U+{code:04X}" if code is not None else "a character"
        return InputError("yaml", None, f"malformed YAML: {what} is not allowed (control characters cannot appear in YAML)", source=source, line=line)
    return InputError("yaml", None, f"malformed YAML: {type(exc).__name__}", source=source)


def load_yaml_text(
    text: str,
    source: str = "<input>",
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
) -> tuple[object, dict[tuple, int]]:
    """Parse YAML; return the data and a map from key path to 1-based line."""
    if len(text) > max_bytes or (4 * len(text) > max_bytes and len(text.encode("utf-8", "surrogatepass")) > max_bytes):
        raise InputError("yaml", None, f"over {max_bytes:,} bytes: too large for a plan-opt input", source=source)
    try:
        loader = _Loader(text)
    except UnicodeEncodeError as exc:  # a lone surrogate: undecodable bytes in argv (--set), or a caller's str
        line = text.count("\n", 0, exc.start) + 1
        raise InputError("yaml", None, f"not UTF-8 text (character {exc.object[exc.start]!r})", source=source, line=line) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines = _check_and_map(node, source, max_depth, max_nodes)
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, text, source, max_depth) from None
    except RecursionError:  # pragma: no cover - the pure-Python composer, without libyaml
        raise InputError("yaml", None, f"nested more than {max_depth} levels deep", source=source) from None
    finally:
        loader.dispose()
    return data, lines


def load_yaml_file(
    path: Path | str,
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
) -> tuple[object, dict[tuple, int]]:
    path = Path(path)
    if is_pipe(path):
        raise InputError("file", str(path), "is a pipe or a socket, not a YAML file")
    try:
        with path.open("rb") as f:
            raw = f.read(max_bytes + 1)  # never more: /dev/zero or a 10 GB file stops here
        if len(raw) > max_bytes:
            raise InputError("yaml", None, f"over {max_bytes:,} bytes: too large for a plan-opt input", source=str(path))
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"byte {exc.start + 1:,}", f"0x{raw[exc.start]:02x}", "not UTF-8 text; save the file as UTF-8", source=str(path), line=line
        ) from None
    except FileNotFoundError:
        raise InputError("file", str(path), "no such file") from None
    except (IsADirectoryError, PermissionError) as exc:
        raise InputError("file", str(path), f"cannot be read as a YAML file ({type(exc).__name__})") from None
    except OSError as exc:
        raise InputError("file", str(path), f"cannot be read ({type(exc).__name__})") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # as Path.read_text's universal newlines
    return load_yaml_text(text, source=str(path), max_bytes=max_bytes, max_depth=max_depth, max_nodes=max_nodes)
