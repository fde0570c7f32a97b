"""Where plan-opt keeps what it has already worked out (the validated catalog, the
topology answers), keyed by the exact inputs and the code that produced them. Best
effort: a read-only home or a full disk only costs speed, never correctness."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir() -> Path:
    """$PLAN_OPT_CACHE_DIR, else $XDG_CACHE_HOME/plan-opt, else ~/.cache/plan-opt."""
    if os.environ.get("PLAN_OPT_CACHE_DIR"):
        return Path(os.environ["PLAN_OPT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "plan-opt"


def digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:24]


def source_digest(*module_files: str) -> str:
    """A key that changes whenever the code that computes a cached answer changes."""
    return digest(*(Path(f).read_bytes() for f in module_files))


def read_bytes(name: str) -> bytes | None:
    try:
        return (cache_dir() / name).read_bytes()
    except OSError:
        return None


def write_bytes(name: str, data: bytes) -> None:
    path = cache_dir() / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError:
        pass
