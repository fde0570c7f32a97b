"""A plan's launch as data: the commands per node and what they serve, and the
check of every flag against the engine's documented list (catalogs/engine_flags.yaml)."""

from __future__ import annotations

import copy
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from solver.catalog import PublishedCheckpoint, catalog_dir
from solver.catalog.yaml_lines import load_yaml_file


@dataclass
class LaunchStep:
    """One command on one node of a replica, in the order they are started."""

    node: str
    """head, worker 1, ..., or node (a one-node replica)."""
    argv: list[str]
    tool: str
    """Whose flag list the command is checked against (an engine, or ray)."""

    @property
    def command(self) -> str:
        return shell_line(self.argv)


def shell_line(argv: list[str]) -> str:
    """The command as a shell reads it back: a word with quotes, braces or spaces (a
    JSON flag value) single-quoted."""
    return " ".join(shlex.quote(a) if a and not re.fullmatch(r"[\w./:$=,@+-]+", a) else a for a in argv)


@dataclass
class Launch:
    """One replica's launch and how many replicas to start."""

    engine: str
    argv: list[str]
    """The serving command (on the head node of a multi-node replica)."""
    replicas: int
    gpus_per_replica: int
    notes: list[str] = field(default_factory=list)
    nodes_per_replica: int = 1
    gpus_per_node: int = 1
    steps: list[LaunchStep] = field(default_factory=list)
    """The whole launch of one replica: cluster setup, then the engine, per node."""
    checkpoint: PublishedCheckpoint | None = None
    """The published checkpoint served; None: the catalog lists none in the plan's format."""
    model_id: str = ""
    vendor: str = "NVIDIA"
    port: int = 8000
    health_path: str = "/health"
    role: str = ""
    """Disaggregated serving: prefill or decode ('' for a plan of one pool)."""
    prefill: Launch | None = None
    """Disaggregated serving: the prefill pool's launch (this one is the decode pool's)."""
    router: LaunchStep | None = None
    """What routes each request through a prefill and a decode replica, where the engine ships one."""
    benchmark: list[str] = field(default_factory=list)
    """The command that checks the running plan at the spec's load (report/bench_command.py)."""
    benchmark_guidellm: list[str] = field(default_factory=list)
    """The same check with GuideLLM (report/bench_command.py)."""
    reads_format: str = ""
    """The format of the checkpoint the engine reads when it is not the plan's (a 16-bit
    one quantised at load); "" for the plan's own."""
    device: str = ""
    """The catalog device the pool runs on (the GPU product a manifest selects nodes by)."""
    engine_version: str | None = None
    """The engine release the spec names (engine.version, same engine); None: the current one."""
    files: dict[str, str] = field(default_factory=dict)
    """Files the command reads that the plan writes (an options file): path as the command names it -> its text."""

    @property
    def command(self) -> str:
        return shell_line(self.argv)


_FLAG_DATA: dict[tuple[str, int, int], dict[str, Any]] = {}
"""engine_flags.yaml as last read, keyed by its path, mtime and size: a deploy of every
shape reads it hundreds of times, and its line-checked parse was most of that time."""


def flag_data() -> dict[str, Any]:
    """catalogs/engine_flags.yaml, parsed once while the file is unchanged; each caller
    gets its own copy, so nothing one emit does can alter what the next reads."""
    path = catalog_dir() / "engine_flags.yaml"
    try:
        st = path.stat()
        key: tuple[str, int, int] | None = (str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None  # load_yaml_file says what is wrong with the path
    if key is None or key not in _FLAG_DATA:
        data, _ = load_yaml_file(path)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping of engines and their flags")
        if key is None:
            return data
        _FLAG_DATA.clear()
        _FLAG_DATA[key] = data
    return copy.deepcopy(_FLAG_DATA[key])


def flag_table() -> dict[str, Any]:
    return flag_data()["engines"]


def check_flags(dep: Launch) -> list[str]:
    """Flags or values the engine's (or Ray's) documented list does not have, in every
    command of the launch (empty: all fine)."""
    tables = flag_table()
    bad = []
    steps = list(dep.steps or [LaunchStep("node", dep.argv, dep.engine)])
    if dep.prefill is not None:
        steps += dep.prefill.steps or [LaunchStep("node", dep.prefill.argv, dep.prefill.engine)]
    if dep.router is not None:
        steps.append(dep.router)
    for step in steps:
        table = tables[step.tool]["flags"]
        argv = step.argv
        skip = len(tables[step.tool]["command"].split())  # `python -m sglang.launch_server`
        for i, token in enumerate(argv):
            if i < skip or not token.startswith("-") or token[1:2].isdigit():
                continue
            if token not in table:
                bad.append(f"unknown flag {token}")
                continue
            kind = table[token]
            value = argv[i + 1] if i + 1 < len(argv) else None
            if isinstance(kind, list) and value not in kind:
                bad.append(f"{token} {value}: allowed {kind}")
            elif kind == "int" and not (value or "").isdigit():
                bad.append(f"{token} {value}: not an integer")
            elif kind == "float" and not _is_number(value):
                bad.append(f"{token} {value}: not a number")
            elif kind == "str" and (value is None or value.startswith("-")):
                bad.append(f"{token}: needs a value")
    return bad


def _is_number(value: str | None) -> bool:
    if value is None:
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def spelling(engine: str, key: str, version: str | None, n: int | None = None) -> tuple[list[str], str]:
    """How the engine release the spec names spells a renamed flag (catalogs/
    engine_flags.yaml `renamed`): the current spelling when no version is named or the
    named one is at or after `since`; the old spelling otherwise (and wherever `since`
    is unknown, since the old one parses in every release up to its removal). Returns
    the words and a note saying which spelling and why ('' for the current one)."""
    from solver.catalog.releases import parse_version

    entry = flag_table()[engine]["renamed"][key]
    old, new = entry["old"], entry["new"]
    old, new = ([old], [new]) if isinstance(old, str) else (old, new)
    old, new = ([w.replace("{n}", str(n)) for w in ws] for ws in (old, new))
    words, note = new, ""
    if version is not None:
        since, named = entry.get("since"), parse_version(engine, version)
        if since is None or named is None or named < (parse_version(engine, since) or ()):
            words = old
            when = f"from {engine} {since} on" if since else "in a release not yet established"
            note = f"{engine} {version}: {' '.join(old)} (the spelling it accepts; {' '.join(new)} replaces it {when})"
    return words, note
