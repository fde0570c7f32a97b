"""The config.json fields plan-opt reads, checked before any arithmetic touches them.

A config.json is read in three steps, each failing with one InputError that names
the file (and, where it can be found cheaply, the line):

1. `read_config`: the bytes (a path that is missing, a folder, runs through a file,
   is too long or unreadable), the encoding (UTF-8), the JSON (NaN and Infinity,
   which Python's json would accept, are refused) and its shape (one JSON object).
2. `ConfigFields`: the type and range of every field the import reads, strict
   (a JSON integer where a count goes, `true`/`false` where a flag goes), each
   bounded. Keys plan-opt does not read are ignored, as config.json files carry
   many.
3. The checks across fields (MLA's dimensions, heads dividing, experts routed)
   and the parameter bound, in `hf_config.py`, once the types are known.

The bounds (`hf_bounds.py`, which the catalog's models share) sit well above every
published model (so no real config meets them) and well below where the physics or
the CP-SAT model's 64-bit coefficients would overflow; each says which published
model it was measured against.
"""

from __future__ import annotations

import errno
import json
import math
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from solver.catalog.hf_bounds import (
    MAX_FILE_BYTES,
    MAX_LAYERS,
    Context,
    DenseLayers,
    Experts,
    HeadDim,
    Heads,
    Hidden,
    Intermediate,
    Layers,
    Rank,
    Shared,
    Vocab,
    Window,
)
from solver.errors import InputError, is_pipe

_DEEP = "the deepest published models have about 130 layers"
_HEADS = "published models have at most 128 heads"
_HEAD_DIM = "published heads are 64 to 256 wide"
_EXPERTS = "published MoE models route among at most a few hundred experts"
_CONTEXT = "the longest published context is about 10 million tokens"
_WHY = {
    "num_hidden_layers": _DEEP,
    "first_k_dense_replace": _DEEP,
    "sliding_window_pattern": _DEEP,
    "hidden_size": "the widest published models have hidden_size about 20,000",
    "intermediate_size": "the widest published MLPs are about 75,000 wide",
    "moe_intermediate_size": "the widest published MLPs are about 75,000 wide",
    "num_attention_heads": _HEADS,
    "num_key_value_heads": _HEADS,
    "head_dim": _HEAD_DIM,
    "qk_nope_head_dim": _HEAD_DIM,
    "qk_rope_head_dim": _HEAD_DIM,
    "v_head_dim": _HEAD_DIM,
    "kv_lora_rank": "published latent ranks are a few thousand at most",
    "q_lora_rank": "published latent ranks are a few thousand at most",
    "vocab_size": "published vocabularies are at most about 262,000 tokens",
    "num_local_experts": _EXPERTS,
    "n_routed_experts": _EXPERTS,
    "num_experts": _EXPERTS,
    "num_experts_per_tok": _EXPERTS,
    "experts_per_token": _EXPERTS,
    "n_shared_experts": "published MoE models share at most a few experts",
    "max_position_embeddings": _CONTEXT,
    "sliding_window": _CONTEXT,
}


class ConfigFields(BaseModel):
    """Every field `hf_config` reads, after a multimodal config's text_config is laid
    over the top level. Null is the same as absent, as the import has always read it.
    Its validator (and TopLevel's) is built on the first config.json read (defer_build):
    every process that loads the catalog imports this module, few read a config.json,
    and building both was 0.02 s of a solve's CPU."""

    model_config = ConfigDict(strict=True, extra="ignore", allow_inf_nan=False, frozen=True, defer_build=True)

    num_hidden_layers: Layers | None = None
    hidden_size: Hidden | None = None
    num_attention_heads: Heads | None = None
    intermediate_size: Intermediate | None = None
    vocab_size: Vocab | None = None
    num_key_value_heads: Heads | None = None
    head_dim: HeadDim | None = None
    model_type: str | None = None
    tie_word_embeddings: bool | None = None
    attention_bias: bool | None = None
    max_position_embeddings: Context | None = None
    # MLA (DeepSeek): present with kv_lora_rank.
    kv_lora_rank: Rank | None = None
    q_lora_rank: Rank | None = None
    qk_nope_head_dim: HeadDim | None = None
    qk_rope_head_dim: HeadDim | None = None
    v_head_dim: HeadDim | None = None
    # MoE: the experts under each family's name, the first one set wins.
    num_local_experts: Experts | None = None
    n_routed_experts: Experts | None = None
    num_experts: Experts | None = None
    num_experts_per_tok: Experts | None = None
    experts_per_token: Experts | None = None
    n_shared_experts: Shared | None = None
    moe_intermediate_size: Intermediate | None = None
    first_k_dense_replace: DenseLayers | None = None
    # Sliding-window attention.
    sliding_window: Window | None = None
    use_sliding_window: bool | None = None
    sliding_window_pattern: Layers | None = None
    layer_types: Annotated[list[str], Field(max_length=MAX_LAYERS)] | None = None
    # Read by no formula here, but transformers' config classes take only an object
    # (or null) for these, so anything else means a damaged file.
    rope_scaling: dict[str, Any] | None = None
    quantization_config: dict[str, Any] | None = None


class TopLevel(BaseModel):
    """The fields read from the top level only."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, defer_build=True)

    text_config: dict[str, Any] | None = None
    name_or_path: Annotated[str, Field(max_length=1_000, pattern=r"^[^\x00-\x1f\x7f-\x9f]*$")] | None = Field(None, alias="_name_or_path")


# --------------------------------------------------------------------------- messages


def shown(text: object, limit: int = 160) -> str:
    """Text safe for a one-line message: control characters escaped, long text cut."""
    s = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return s if len(s) <= limit else f"{s[: limit // 2]}…{s[-limit // 3 :]} ({len(s):,} characters)"


def shown_value(value: object) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return shown(text, 60)


_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:\n]')


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The line of each key of the top-level object and of the objects directly in it
    (the last one where a key repeats, as json keeps the last value)."""
    lines: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...] | None] = []  # an object's key path; None: an array, or deeper
    pending: tuple[str, ...] | None = ()
    last = ""
    line = 1
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok == "\n":
            line += 1
        elif tok[0] == '"':
            last = tok
        elif tok == ":":
            parent = stack[-1] if stack else None
            if parent is not None and last:
                path = (*parent, json.loads(last))
                if len(path) <= 2:
                    lines[path] = line
                pending = path if len(path) <= 1 else None
            last = ""
        elif tok == "{":
            stack.append(pending)
            pending = None
        elif tok == "[":
            stack.append(None)
            pending = None
        elif stack:
            stack.pop()
    return lines


def _allowed(err: Any, key: str) -> str:
    kind, ctx = err.get("type", ""), err.get("ctx") or {}
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "must be a whole number (a JSON integer)"
    if kind == "bool_type":
        return "must be true or false"
    if kind == "string_type":
        return "must be a string"
    if kind in ("dict_type", "model_type"):
        return "must be a JSON object (or null)"
    if kind == "list_type":
        return "must be a list (or null)"
    if kind == "greater_than_equal":
        return f"must be ≥ {ctx['ge']:,}"
    if kind == "less_than_equal":
        why = _WHY.get(key)
        return f"must be ≤ {ctx['le']:,}" + (f" ({why})" if why else "")
    if kind == "too_long":
        return f"must hold at most {ctx.get('max_length', MAX_LAYERS):,} entries"
    if kind in ("string_pattern_mismatch", "string_unicode"):
        return "must be printable text"
    return str(err.get("msg", "invalid"))


def field_error(exc: ValidationError, source: str, text: str, prefix: dict[str, str]) -> InputError:
    """The first pydantic error as one line: the file and line, the key as the file
    spells it (text_config.… where the key came from there), the value and the rule."""
    err = exc.errors()[0]
    loc = tuple(err.get("loc", ()))
    key = str(loc[0]) if loc else "config"
    where = prefix.get(key, "")
    field = where + key + "".join(f"[{p}]" for p in loc[1:] if isinstance(p, int))
    path = tuple(where.rstrip(".").split(".")) + (key,) if where else (key,)
    return InputError(field, shown_value(err.get("input")), _allowed(err, key), source=source, line=key_lines(text).get(path))


def key_error(source: str, text: str, key: str, value: object, allowed: str, prefix: dict[str, str], near: str | None = None) -> InputError:
    """A check across fields, said against the key the user would change; a key absent
    from the file is placed at the key it goes with (`near`), else the file's first line."""
    lines = key_lines(text)

    def line_of(k: str) -> int | None:
        where = prefix.get(k, "")
        return lines.get((where.rstrip("."), k) if where else (k,))

    line = line_of(key) or (line_of(near) if near else None) or 1
    return InputError(prefix.get(key, "") + key, None if value is None else shown_value(value), allowed, source=source, line=line)


# --------------------------------------------------------------------------- reading


class _NonFinite(ValueError):
    def __init__(self, token: str):
        super().__init__(token)
        self.token = token


def _constant(token: str) -> Any:
    raise _NonFinite(token)


def _finite(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _NonFinite(token)
    return value


def _line_of(text: str, pos: int) -> int | None:
    return text.count("\n", 0, pos) + 1 if pos >= 0 else None


def _read_bytes(path: Path, where: str) -> tuple[bytes, float]:
    def fail(allowed: str) -> InputError:
        return InputError("model", where, allowed)

    if is_pipe(path):
        raise fail("is a pipe or a socket, not a config.json file")
    try:
        with path.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
            mtime = path.stat().st_mtime
    except FileNotFoundError:
        raise fail("no such config.json file") from None
    except IsADirectoryError:
        raise fail("is a folder, not a config.json file") from None
    except NotADirectoryError:
        raise fail("a part of this path before its end is a file, not a folder") from None
    except PermissionError:
        raise fail("config.json cannot be read (permission denied)") from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise fail("the path (or a name in it) is too long for the file system") from None
        raise fail(f"config.json cannot be read ({shown(exc.strerror or type(exc).__name__)})") from None
    except ValueError:  # a NUL character in the path
        raise fail("the path holds a character no file name can (NUL)") from None
    if len(data) > MAX_FILE_BYTES:
        raise fail(f"config.json is over {MAX_FILE_BYTES // 2**20} MiB; published ones are a few kilobytes")
    return data, mtime


def read_config(path: Path) -> tuple[dict[str, Any], str, float]:
    """The file's JSON object, its text and its modification time."""
    where = shown(path)
    data, mtime = _read_bytes(path, where)
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"byte {exc.start + 1:,}", f"0x{data[exc.start]:02x}", "not UTF-8 (a config.json is UTF-8 JSON text)", source=where, line=line
        ) from None
    try:
        raw = json.loads(text, parse_constant=_constant, parse_float=_finite)
    except _NonFinite as exc:
        at = _line_of(text, text.find(exc.token))
        raise InputError(shown(exc.token, 30), None, "not a finite number (JSON has no NaN or Infinity)", source=where, line=at) from None
    except json.JSONDecodeError as exc:
        raise InputError("not valid JSON", None, f"{exc.msg} (column {exc.colno})", source=where, line=exc.lineno) from None
    except RecursionError:
        raise InputError("JSON", None, "nested too deeply (a config.json nests objects a few levels)", source=where) from None
    except ValueError:  # an integer of more digits than Python converts
        m = re.search(r"\d{4000,}", text)
        raise InputError("JSON", None, "a number has thousands of digits", source=where, line=_line_of(text, m.start()) if m else None) from None
    if not isinstance(raw, dict):
        kind = {list: "a list", str: "a string", bool: "true or false", type(None): "null"}.get(type(raw), "a number")
        raise InputError("JSON", None, f"the file holds {kind}; a config.json holds one JSON object", source=where, line=1)
    return raw, text, mtime
