"""Fuzz cases: the bundled inputs, mutated by type, value, structure and encoding.

A case is the files it writes and the command line that reads them. The mutators
take a `random.Random`, so the same seed gives the same case; hypothesis drives them
in `test_fuzz.py`, and `bench/fuzz.py` runs as many as it is asked for.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import os
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
SEEDS = Path(__file__).resolve().parent / "seeds"

SOLVE_SPECS = sorted(p for p in (ROOT / "specs").glob("*.yaml") if not p.name.startswith("fleet-") and not p.stem.endswith("-profile"))
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
    specials: dict[str, str] = field(default_factory=dict)
    """Name → what the runner makes there in the case's folder: 'fifo', 'null' or 'zero' (a
    character device node like /dev/null, /dev/zero: made only there, never the real one),
    or 'link:TARGET' (a symbolic link; {dir} in TARGET is the folder)."""
    kept: tuple[str, ...] = ()
    """Files (of `files`) the command reads and must leave byte for byte as they were."""


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


CACHE_SECRET = bytes(range(32))
"""The fuzzed cache folder's own secret (solver/catalog/cache.py SECRET_NAME): a case
signs some entries with it, as only the user's own account could."""


@functools.lru_cache(maxsize=1)
def _catalog_entry_base() -> tuple[str, dict[str, Any]]:
    """The catalog cache entry's key and body for the bundled catalogs, made the way
    solver/catalog/load.py makes them (their parsed YAML, as JSON)."""
    from solver.catalog import cache
    from solver.catalog.files import CATALOG_FILES, catalog_cache_key
    from solver.catalog.load import catalog_dir
    from solver.catalog.yaml_lines import load_yaml_text

    raw = {k: (catalog_dir() / fname).read_bytes() for k, (fname, _) in CATALOG_FILES.items()}
    data = {k: load_yaml_text(raw[k].decode(), source=fname)[0] for k, (fname, _) in CATALOG_FILES.items()}
    return catalog_cache_key(raw), json.loads(cache.encode(data) or b"null")


def cache_case(rng: random.Random) -> Case:
    """A catalog cache entry edited: figures in and out of the catalog's ranges, huge
    numbers, wrong types and damaged bytes; signed with the folder's secret (a forgery
    only the user could make), with its SHA-256 recomputed in the signature's place, or
    left as edited. Whatever the entry holds, the run ends as the catalog files say."""
    from solver.catalog import cache

    key, base = _catalog_entry_base()
    doc = copy.deepcopy(base)
    values = [1e308, 10**400, 1e-300, -1.0, 0, math.nan, "1e308", None, "x", [1], 1e6, 1e-6]
    if rng.random() < 0.3:  # one figure in every entry: the plan is sure to meet it
        part, entries, name = rng.choice(
            [
                ("prices", "offers", "usd_per_gpu_hour"),
                ("prices", "offers", "instance_usd_per_hour"),
                ("devices", "devices", "memory_bytes"),
                ("devices", "devices", "memory_bandwidth_bytes_per_s"),
                ("devices", "devices", "purchase_usd"),
                ("devices", "devices", "tdp_w"),
                ("models", "models", "total_params"),
                ("models", "models", "num_layers"),
                ("precisions", "precisions", "bandwidth_share"),
            ]
        )
        value = rng.choice(values)
        scale = not isinstance(value, str) and rng.random() < 0.3  # in range or out: each entry's own figure scaled
        for entry in doc[part][entries]:
            if isinstance(entry.get(name), (int, float)) or not scale:
                entry[name] = entry[name] * 10 ** rng.choice([-3, -1, 1, 3]) if scale else value
        what = f"every {part}.{entries}.{name}={'scaled' if scale else str(value)[:20]}"
    elif rng.random() < 0.6:
        numbers = [
            p
            for p in _paths(doc)
            if p and p[0] in ("prices", "devices", "models", "ownership", "precisions", "engines") and type(_get(doc, p)) in (int, float)
        ]
        notes = []
        for _ in range(rng.choice([1, 1, 2, 5])):
            path = rng.choice(numbers)
            x = _get(doc, path)
            if type(x) not in (int, float):  # an earlier edit of this case replaced it
                continue
            value = rng.choice([x * 1.1, x / 1.1, x * 10, x / 10, x * 1e6, 1e308, 10**400, -x, 0, math.nan, math.inf, str(x), "1e308", None, [x]])
            doc = _set(doc, path, value)
            notes.append(f"{'.'.join(map(str, path))}={str(value)[:20]}")
        what = "numbers " + " ".join(notes)
    else:
        doc, what = mutate_doc(doc, rng)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        body = json.dumps(doc, allow_nan=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    finally:
        sys.setrecursionlimit(limit)
    if rng.random() < 0.1:
        body, how = corrupt_text(body, rng)
        what += f" bytes:{how}"
    signing = rng.choice(["signed", "signed", "sha256 recomputed", "as edited"])
    header = cache._header(CACHE_SECRET, "catalog", key, body)
    if signing == "sha256 recomputed":
        header["hmac_sha256"] = hashlib.sha256(body).hexdigest()
    elif signing == "as edited":
        header = cache._header(CACHE_SECRET, "catalog", key, json.dumps(base, separators=(",", ":")).encode())
    entry = json.dumps(header, separators=(",", ":")).encode() + b"\n" + body
    command = rng.choice(
        [
            ["list", "prices"],
            ["list", "devices"],
            ["evaluate", "--format", "json", str(ROOT / "examples" / "chat-llama70b-h100.yaml")],
            ["solve", "--no-explain", "{dir}/spec.yaml"],
        ]
    )
    spec = {
        "model": "llama-3.1-8b",
        "workload": {"users": 16, "context_tokens": 4096, "prompt_tokens": 1024},
        "sla": {"max_ttft": "1s", "max_tpot": "50ms"},
        "search": {"gpus": ["h100-sxm", "a100-80gb", "l40s", "rtx-4090"], "tp": [1, 2], "weights": ["bf16"], "kv_cache": ["bf16"]},
        "objective": "min_cost",
    }
    files = {cache.SECRET_NAME: CACHE_SECRET, f"catalog-{key}.json": entry, "spec.yaml": _dump_yaml(spec)}
    return Case("cache", files, command, env={"PLAN_OPT_CACHE_DIR": "{dir}"}, what=f"{signing}: {what[:300]}")


OUTPUT_BASE = {
    "model": "llama-3.1-8b",
    "workload": {"users": 32, "context_tokens": 4096, "prompt_tokens": 1024},
    "sla": {"max_tpot": "40ms"},
    "search": {"gpus": ["l40s"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
}
OUTPUT_TARGETS: dict[str, dict[str, str]] = {
    "new.csv": {},
    "fifo": {"fifo": "fifo"},  # no reader: refused, never waited on
    "null": {"null": "null"},  # a device: streamed to, never replaced or read
    "zero": {"zero": "zero"},  # read to resume, it would never end
    "link.csv": {"link.csv": "link:{dir}/real.csv"},
    "link-to-null": {"link-to-null": "link:{dir}/null", "null": "null"},
    "dangling": {"dangling": "link:{dir}/nowhere/t.csv"},
    "link-to-grid": {"link-to-grid": "link:{dir}/grid.yaml"},
    "grid.yaml": {},
    "base.yaml": {},
    "notes.txt": {},
    "missing/t.csv": {},
    "": {},
    ".": {},
}


def output_case(rng: random.Random) -> Case:
    """An output path of every kind (device, FIFO, link, folder, missing folder, one of
    the command's inputs) for sweep's -o, --parquet or --plot, or calibrate's -o."""
    name = rng.choice(sorted(OUTPUT_TARGETS))
    specials = dict(OUTPUT_TARGETS[name])
    if any(v in ("null", "zero") for v in specials.values()) and os.geteuid() != 0:
        specials = {k: "fifo" if v in ("null", "zero") else v for k, v in specials.items()}  # a device node needs root
    files = {
        "base.yaml": _dump_yaml(OUTPUT_BASE),
        "grid.yaml": _dump_yaml({"base": "base.yaml", "axes": {"workload.users": [8, 64]}}),
        "notes.txt": b"not a table\n",
        "real.csv": rng.choice([b"", b"scenario,id,status\n", b"a,b\n1,2\n"]),
        "m.csv": MEASUREMENTS.read_bytes(),
    }
    out = "{dir}/" + name if name not in ("", ".") else name
    if name == ".":
        out = "{dir}"
    flag = rng.choice(["-o", "-o", "--parquet", "--plot", "calibrate"])
    if flag == "calibrate":
        argv = ["calibrate", "{dir}/m.csv", "-o", out]
    else:
        argv = ["sweep", "{dir}/grid.yaml", "--workers", "1", "--quiet", "-o", out if flag == "-o" else "{dir}/t.csv"]
        argv += [] if flag == "-o" else [flag, out]
    # The command's inputs are never replaced; sweep's -o resumes from (and so only replaces) a sweep
    # table, while --parquet and --plot replace whatever regular file they name, as any output does.
    kept = ("m.csv",) if flag == "calibrate" else ("base.yaml", "grid.yaml") + (("notes.txt",) if flag == "-o" else ())
    return Case("output", files, argv, what=f"{flag} {name!r} ({specials})", specials=specials, kept=kept)


def lengths_case(rng: random.Random) -> Case:
    """A lengths file whose first line the csv module cannot read (a cell past its
    131,072 characters) or, as JSON Lines, is not an object."""
    n = 131_073 + rng.randrange(50_000)
    name, text = rng.choice(
        [
            ("log.csv", "p" * n + ",output_tokens\n1,2\n"),
            ("log.csv", '"' + "q" * n + '"\n1,2\n'),
            ("log.csv", "prompt_tokens,output_tokens\n1," + "9" * n + "\n"),
            ("log.jsonl", rng.choice(["[1, 2]", '"x"', "7", "null", "prompt_tokens,output_tokens"]) + '\n{"prompt_tokens": 1, "output_tokens": 2}\n'),
            ("log", "[" + "1," * (n // 2) + "1]\n"),
            ("log.jsonl", '{"prompt_tokens": ' + "1" * n + "}\n"),
        ]
    )
    spec = {
        "model": "llama-3.1-8b",
        "workload": {"requests_per_s": 5, "lengths_file": name},
        "sla": {"ttft": {"p99": "2s"}, "tpot": {"p90": "50ms"}},
        "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
    }
    files = {name: text.encode(), "spec.yaml": _dump_yaml(spec)}
    return Case("lengths", files, ["solve", "--no-explain", "{dir}/spec.yaml"], what=f"{name}: {text[:40]!r}… ({len(text):,} chars)")


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
    "cache": cache_case,
    "output": output_case,
    "lengths": lengths_case,
    "jsq": jsq_case,
}
