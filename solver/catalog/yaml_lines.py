"""YAML loading that remembers where each key was written, so errors can name the line."""

from __future__ import annotations

from pathlib import Path

import yaml

from solver.errors import InputError

_Loader: type[yaml.CSafeLoader | yaml.SafeLoader]
try:  # libyaml is several times faster; PyYAML falls back to pure Python without it
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader


def _walk(node: yaml.Node, path: tuple, lines: dict[tuple, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[path + (key,)] = key_node.start_mark.line + 1
            _walk(value_node, path + (key,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[path + (i,)] = item.start_mark.line + 1
            _walk(item, path + (i,), lines)


def load_yaml_text(text: str, source: str = "<input>") -> tuple[object, dict[tuple, int]]:
    """Parse YAML; return the data and a map from key path to 1-based line."""
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "malformed YAML"
        raise InputError("yaml", None, f"malformed YAML: {problem}", source=source, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError("yaml", None, f"malformed YAML: {exc}", source=source) from None
    lines: dict[tuple, int] = {}
    if node is not None:
        _walk(node, (), lines)
    return data, lines


def load_yaml_file(path: Path | str) -> tuple[object, dict[tuple, int]]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file", str(path), "no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise InputError("file", str(path), f"cannot be read as a YAML file ({type(exc).__name__})") from None
    return load_yaml_text(text, source=str(path))
