"""Fuzz cases: the bundled inputs, mutated by type, value, structure and encoding.

A case is the files it writes and the command line that reads them. The mutators
take a `random.Random`, so the same seed gives the same case; hypothesis drives them
in `test_fuzz.py`, and `bench/fuzz.py` runs as many as it is asked for.
"""

from __future__ import annotations

import copy
import json
import math
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
SEEDS = Path(__file__).resolve().parent / "seeds"

SOLVE_SPECS = sorted(p for p in (ROOT / "specs").glob("*.yaml") if not p.name.startswith("fleet-"))
FLEET_SPECS = sorted((ROOT / "specs").glob("fleet-*.yaml"))
EVALUATE_INPUTS = sorted((ROOT / "examples").glob("seed-*.yaml")) + [ROOT / "examples" / "chat-llama70b-h100.yaml"]
HF_CONFIGS = sorted((ROOT / "tests" / "fixtures" / "hf_configs").glob("*.json"))
MEASUREMENTS = SEEDS / "measurements.csv"

# Values of every kind a careless or hostile user might put anywhere.
EDGE_NUMBERS: list[Any] = [0, -1, -0.0, 1, 2, 7, 1e-300, 1e308, 10**30, 2**63, math.inf, -math.inf, math.nan, 0.5, 1023, 1025, 10**7]
EDGE_STRINGS = [
    "",
    " ",
    "all",
    "none",
    "010",
    "1:30",
    "0b100",
    "0x10",
    "1e999",
    "-5ms",
    "10 ms",
    "5us",
    "3h",
    "nan",
    "inf",
    "∞",
    "\x00\x07",
    "é" * 3,
    "x" * 5000,
]
EDGE_OTHER: list[Any] = [None, True, False, [], {}, [1, 2], {"a": 1}, [[[]]], "[all]"]
TYPES = EDGE_NUMBERS + EDGE_STRINGS + EDGE_OTHER


@dataclass
class Case:
    """Files to write (name → bytes) and the argv that reads them ({dir} is their folder)."""

    kind: str
    files: dict[str, bytes]
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    what: str = ""


MAX_PATHS = 20_000
"""A mutation picks among the first paths only (each can be hundreds of keys long): "wrap" and "duplicate_list" share
subtrees, so a few rounds can make the paths (not the document) run to millions."""


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path in a nested document (the first MAX_PATHS), leaves and branches alike,
    in document order; without recursion, since "deep" mutations stack hundreds of
    levels, and a child at a time, since "duplicate_list" makes lists of millions."""
    out: list[tuple] = [prefix]

    def children(node: Any, path: tuple) -> Iterator[tuple[Any, tuple]]:
        if isinstance(node, dict):
            return ((v, path + (k,)) for k, v in node.items())
        if isinstance(node, list):
            return ((v, path + (n,)) for n, v in enumerate(node))
        return iter(())

    stack = [children(doc, prefix)]
    while stack and len(out) < MAX_PATHS:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        node, path = step
        out.append(path)
        stack.append(children(node, path))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _delete(doc: Any, path: tuple) -> Any:
    if not path:
        return None
    parent = _get(doc, path[:-1])
    del parent[path[-1]]
    return doc


def _nudge(value: Any, rng: random.Random) -> Any:
    """A value near the one there: scaled, negated, off by one, or as text."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return rng.choice(
            [
                value * 10 ** rng.randint(1, 12),
                -value,
                value + 1,
                value - 1,
                value / 1e9,
                str(value),
                float(value),
                int(value) if math.isfinite(value) else 0,
            ]
        )
    if isinstance(value, str):
        return rng.choice(
            [value.upper(), value + "x", value[:-1], value * 2, value.replace("ms", "s"), value.replace("ms", ""), " " + value, value + "\n"]
        )
    return rng.choice(TYPES)


def mutate_doc(doc: Any, rng: random.Random, rounds: int = 0) -> tuple[Any, str]:
    """One to three structural or value mutations at random paths."""
    doc = copy.deepcopy(doc)
    notes = []
    for _ in range(rounds or rng.choice([1, 1, 1, 2, 3])):
        paths = _paths(doc)
        op = rng.choice(["type", "type", "nudge", "nudge", "nudge", "edge", "edge", "delete", "add", "wrap", "deep", "duplicate_list"])
        leaves = [p for p in paths if p and not isinstance(_get(doc, p), (dict, list))]
        path = rng.choice(leaves if op in ("nudge", "edge") and leaves else paths)
        try:
            if op == "type":
                doc = _set(doc, path, rng.choice(TYPES))
            elif op == "edge":
                doc = _set(doc, path, rng.choice(EDGE_NUMBERS))
            elif op == "nudge":
                doc = _set(doc, path, _nudge(_get(doc, path), rng))
            elif op == "delete":
                doc = _delete(doc, path)
            elif op == "add":
                target = _get(doc, path)
                if isinstance(target, dict):
                    target[rng.choice(["extra", "users", "tp", "gpus", "max_tpot", "0", "", "model"])] = rng.choice(TYPES)
                elif isinstance(target, list):
                    target.append(rng.choice(TYPES))
                else:
                    doc = _set(doc, path, {"value": target})
            elif op == "wrap":
                doc = _set(doc, path, [_get(doc, path)] * rng.randint(1, 3))
            elif op == "deep":
                nested: Any = _get(doc, path)
                for _ in range(rng.choice([5, 50, 200])):
                    nested = [nested]
                doc = _set(doc, path, nested)
            elif op == "duplicate_list":
                target = _get(doc, path)
                if isinstance(target, list) and target:
                    target.extend(target * rng.randint(1, 50))
        except (KeyError, IndexError, TypeError):
            continue
        notes.append(f"{op}@{'.'.join(map(str, path)) or '<root>'}")
    return doc, " ".join(notes)


def _dump_yaml(doc: Any) -> bytes:
    # "deep" mutations stack (600 levels and more): PyYAML's emitter recurses a few frames a level.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode()
    finally:
        sys.setrecursionlimit(limit)


def corrupt_text(text: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Damage the bytes themselves: truncation, bad encodings, YAML tricks."""
    op = rng.choice(["truncate", "latin1", "nul", "tabs", "alias_bomb", "dup_key", "yaml11", "flow_garbage", "bom", "empty", "huge_line"])
    if op == "truncate":
        return text[: rng.randint(0, len(text))], op
    if op == "latin1":
        return text + b"\nnote: caf\xe9\xff\xfe\n", op
    if op == "nul":
        i = rng.randint(0, len(text))
        return text[:i] + b"\x00" + text[i:], op
    if op == "tabs":
        return text.replace(b"  ", b"\t", 1), op
    if op == "alias_bomb":
        bomb = b"a: &a [x, x, x, x, x, x, x, x, x]\n"
        for i in range(1, 9):  # nine times as many items per level: 9^9 at the last
            prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
            bomb += f"{cur}: &{cur} [{', '.join(['*' + prev] * 9)}]\n".encode()
        return bomb + text, op
    if op == "dup_key":
        first = text.split(b"\n", 1)[0] if not text.startswith(b"#") else b"model: llama-3.1-8b"
        return text + b"\n" + first + b"\n", op
    if op == "yaml11":
        return text.replace(b"users: ", b"users: 0", 1).replace(b"tp: ", b"tp: 0b", 1), op
    if op == "flow_garbage":
        return text + b"\n{[}: ]\n", op
    if op == "bom":
        return b"\xef\xbb\xbf" + text, op
    if op == "empty":
        return b"", op
    return text + b"\nx: " + b"y" * 200_000 + b"\n", op


def _yaml_case(kind: str, seed_file: Path, argv: list[str], rng: random.Random) -> Case:
    doc = yaml.safe_load(seed_file.read_text())
    if rng.random() < 0.8:
        doc, what = mutate_doc(doc, rng)
        data = _dump_yaml(doc)
    else:
        data, what = corrupt_text(seed_file.read_bytes(), rng)
    return Case(kind, {"input.yaml": data}, argv, what=f"{seed_file.name}: {what}")


def solve_case(rng: random.Random) -> Case:
    command = rng.choice(
        [["solve"], ["solve", "--format", "json"], ["solve", "--no-explain"], ["pareto", "--format", "json"], ["deploy"], ["deploy", "--emit", "k8s"]]
    )
    return _yaml_case("solve", rng.choice(SOLVE_SPECS), command + ["{dir}/input.yaml"], rng)


def fleet_case(rng: random.Random) -> Case:
    return _yaml_case("fleet", rng.choice(FLEET_SPECS), ["fleet", "--format", rng.choice(["json", "text"]), "{dir}/input.yaml"], rng)


def evaluate_case(rng: random.Random) -> Case:
    return _yaml_case("evaluate", rng.choice(EVALUATE_INPUTS), ["evaluate", "--format", rng.choice(["json", "text"]), "{dir}/input.yaml"], rng)


def config_case(rng: random.Random) -> Case:
    """A solve spec whose model is a mutated local config.json."""
    source = rng.choice(HF_CONFIGS)
    if rng.random() < 0.85:
        cfg, what = mutate_doc(json.loads(source.read_text()), rng)
        data = json.dumps(cfg, allow_nan=True).encode()
    else:
        data, what = corrupt_text(source.read_bytes(), rng)
    spec = {
        "model": "{dir}/config.json",
        "workload": {"users": 8, "context_tokens": 4096, "prompt_tokens": 1024},
        "sla": {"max_tpot": "50ms"},
        "search": {"gpus": ["h100-sxm", "l40s"], "tp": [1, 2, 4, 8], "weights": ["bf16", "fp8"], "kv_cache": ["bf16"]},
    }
    command = rng.choice(
        [
            ["solve", "--no-explain"],
            ["solve", "--format", "json"],
            [
                "evaluate",
                "--format",
                "json",
                "--gpu",
                "h100-sxm",
                "--users",
                "4",
                "--context",
                "2048",
                "--prompt",
                "512",
                "--model",
                "{dir}/config.json",
            ],
        ]
    )
    argv = command if command[0] == "evaluate" else command + ["{dir}/spec.yaml"]
    return Case("config", {"config.json": data, "spec.yaml": _dump_yaml(spec)}, argv, what=f"{source.name}: {what}")


def measurements_case(rng: random.Random) -> Case:
    """A calibration CSV with damaged cells, rows or bytes."""
    lines = MEASUREMENTS.read_bytes().split(b"\n")
    op = rng.choice(["cell", "cell", "cell", "row", "header", "bytes"])
    if op == "bytes":
        data, what = corrupt_text(MEASUREMENTS.read_bytes(), rng)
    else:
        rows = [line.split(b",") for line in lines if line]
        i = rng.randrange(len(rows)) if op != "header" else 0
        if op == "row":
            rows[i] = rows[i][: rng.randint(0, len(rows[i]))] + [b"extra"] * rng.randint(0, 2)
        else:
            j = rng.randrange(len(rows[i]))
            rows[i][j] = str(rng.choice(TYPES)).encode("utf-8", "surrogateescape")
        data = b"\n".join(b",".join(r) for r in rows) + b"\n"
        what = f"{op}@{i}"
    out = rng.choice(["{dir}/cal.yaml", "{dir}/missing/cal.yaml", "{dir}", "/proc/cal.yaml"])
    return Case("calibrate", {"m.csv": data}, ["calibrate", "{dir}/m.csv", "-o", out], what=f"measurements: {what} → {out}")


def jsq_case(rng: random.Random) -> Case:
    """A rate spec at a high rate simulated with join-the-shortest-queue on many replicas
    (issue 43 item 6: JSQ scanned every replica per request and took minutes): it must
    answer within the case's time, or refuse past the work budget with one line."""
    rate = rng.choice([100.0, 300.0])  # higher rates: bench/bench_simulate.py (the solve alone takes seconds)
    spec = {
        "model": rng.choice(["llama-3.1-8b", "llama-3.1-70b"]),
        "workload": {
            "requests_per_s": rate,
            "prompt_tokens": {"dist": "lognormal", "mean": rng.choice([200, 1000]), "p99": 2000},
            "output_tokens": {"dist": "lognormal", "mean": rng.choice([100, 300]), "p99": 1000},
        },
        "sla": {"ttft": {"p99": "2s"}, "tpot": {"p90": "50ms"}},
        "search": {"gpus": ["h100-sxm"], "tp": [8], "weights": ["fp8"], "kv_cache": ["fp8"]},
        "simulation": {"routing": "jsq", "requests": 100},
    }
    replicas = rng.choice([1, 7, 100, 1_000, 10_000])
    requests = rng.choice([100, 500, 2_000])
    argv = ["simulate", "{dir}/input.yaml", "--one-seed", "--routing", "jsq", "--replicas", str(replicas), "--requests", str(requests)]
    argv += rng.choice([[], ["--format", "json"]])
    what = f"jsq at {rate:g} req/s, {replicas:,} replicas, {requests:,} requests"
    return Case("jsq", {"input.yaml": yaml.safe_dump(spec).encode()}, argv, what=what)


KINDS = {
    "solve": solve_case,
    "fleet": fleet_case,
    "evaluate": evaluate_case,
    "config": config_case,
    "calibrate": measurements_case,
    "jsq": jsq_case,
}
