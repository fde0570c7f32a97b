"""Where plan-opt keeps what it has already worked out (the catalog files' parsed YAML,
the topology answers), so that a later run can skip the work. Best effort: the cache
only ever costs or saves speed. It is never believed over the inputs, and nothing in
it is ever an error for the user.

Where. `$PLAN_OPT_CACHE_DIR`, else `$XDG_CACHE_HOME/plan-opt`, else
`$HOME/.cache/plan-opt`; each must be an absolute path and not the filesystem root.
A relative or empty `XDG_CACHE_HOME` is ignored (as the XDG spec says), and so is an
unset, empty, relative or root `HOME`: then nothing is cached, rather than writing
under the working directory or `/`. A relative (or root) `PLAN_OPT_CACHE_DIR` is
refused: nothing is cached, and one line on stderr says so, once per process (the
user asked for a place, so falling back to another one silently would be wrong).
A folder that others may write (world-writable, or owned by another user than this
one or root) is not used either: someone else could plant entries there.

What. One file per entry, `<kind>-<key>.json`, where the key is a digest of every
input that made the entry (the files' bytes, the code, the versions). The file is a
JSON header line — format, version, kind, key, the body's size and its HMAC-SHA256
under the folder's own secret — then the JSON body. The secret (`SECRET_NAME`: 32
random bytes, made with the folder, private to this user) never leaves the folder, so
an entry edited with its SHA-256 recomputed, or copied from another machine's cache,
does not verify. An entry whose header does not match, whose body is truncated or
edited, that is not UTF-8, not JSON, not a regular file, too large, or owned by
someone else reads as missing, silently (the cache only costs or saves speed). The body is data, never code (no pickle), and
the caller validates it like any input before using it (`load_catalog` runs it through
the catalog's pydantic schemas and ranges; the topology checks that each answer is one
the platform's links could give), so a well-formed entry of the wrong shape is rebuilt too.

What it trusts: this user's own account. Someone who can write this user's files can
read the secret and sign an entry; the MAC catches corruption, edits and stray copies,
the ownership checks other users, and the caller's validation (the same ranges the
catalog files obey, catalog/ranges.py) bounds what even a signed forgery can change
to what an edit of the catalog files could.

Writing is atomic: a temporary file in the same folder, then `os.replace`, so a reader
(or a racing writer) sees a whole entry or none; the temporary file is removed on any
failure (a full disk, an unwritable folder)."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import stat
import sys
import tempfile
from pathlib import Path

FORMAT = "plan-opt-cache"
VERSION = 2
"""2: the body is signed (HMAC-SHA256 under the folder's secret), not only digested."""
SECRET_NAME = "secret.key"
_SECRET_BYTES = 32
MAX_ENTRY_BYTES = 32 * 1024 * 1024
"""A larger file is not an entry of ours: it is not read."""
_MAX_HEADER_BYTES = 1024

_refused: set[str] = set()


def _absolute_dir(value: str | None) -> Path | None:
    """`value` as a folder fit for a cache: absolute and not the root, else None."""
    if not value:
        return None
    path = Path(os.path.normpath(value))
    if not path.is_absolute() or path.parent == path:
        return None
    return path


def cache_dir() -> Path | None:
    """$PLAN_OPT_CACHE_DIR, else $XDG_CACHE_HOME/plan-opt, else $HOME/.cache/plan-opt;
    None (no caching) when none of them is an absolute path other than the root."""
    chosen = os.environ.get("PLAN_OPT_CACHE_DIR")
    if chosen:
        path = _absolute_dir(chosen)
        if path is None and chosen not in _refused:
            _refused.add(chosen)
            print(f"plan-opt: PLAN_OPT_CACHE_DIR={chosen!r} is not an absolute folder other than /; nothing is cached", file=sys.stderr)
        return path
    xdg = _absolute_dir(os.environ.get("XDG_CACHE_HOME"))
    if xdg is not None:
        return xdg / "plan-opt"
    home = _absolute_dir(os.environ.get("HOME") or (os.environ.get("USERPROFILE") if os.name == "nt" else None))
    return home / ".cache" / "plan-opt" if home is not None else None


def _ours(st: os.stat_result) -> bool:
    """Owned by this user or root (where the platform has owners)."""
    return not hasattr(os, "getuid") or st.st_uid in (os.getuid(), 0)


def _usable_dir(create: bool) -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
    try:
        if create:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = folder.stat()
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or not _ours(st) or (os.name != "nt" and st.st_mode & stat.S_IWOTH):
        return None
    return folder


def digest(*parts: bytes) -> str:
    """A digest of `parts` (each length-prefixed, so the split between them counts)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:24]


def source_digest(*module_files: str | Path) -> str:
    """A key that changes whenever the code that computes a cached answer changes."""
    return digest(*(Path(f).read_bytes() for f in module_files))


def entry_path(kind: str, key: str) -> Path | None:
    """Where the entry would live (None when nothing is cached)."""
    folder = cache_dir()
    return folder / f"{kind}-{key}.json" if folder is not None else None


def _read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file of ours, at most MAX_ENTRY_BYTES; None otherwise
    (never blocks on a FIFO or a device put in an entry's place)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _ours(st) or st.st_size > MAX_ENTRY_BYTES:
            return None
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > MAX_ENTRY_BYTES:
                return None
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _secret(folder: Path, create: bool) -> bytes | None:
    """The folder's signing secret (read each time: a folder deleted and made again
    gets a new one): read (a regular file of ours, exactly 32 bytes),
    else, when `create`, made (written aside, then linked into place, so racing
    processes agree on one); None when there is none to be had."""
    path = folder / SECRET_NAME
    raw = _read_regular(path)
    if raw is not None and len(raw) == _SECRET_BYTES:
        return raw
    if not create:
        return None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f"{SECRET_NAME}.", suffix=".tmp")
    except OSError:
        return None
    try:
        try:
            _write_all(fd, os.urandom(_SECRET_BYTES))
        finally:
            os.close(fd)
        if raw is None:
            try:
                os.link(tmp, path)  # fails if another process made one meanwhile: that one is read below
            except FileExistsError:
                pass
        else:  # a damaged secret (wrong length): replaced; what it signed no longer verifies
            os.replace(tmp, path)
    except OSError:
        return None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    raw = _read_regular(path)
    if raw is None or len(raw) != _SECRET_BYTES:
        return None
    return raw


def _mac(secret: bytes, kind: str, key: str, body: bytes) -> str:
    """The entry's signature: its kind and key as well as its body, so that a signed
    body moved under another key (its header edited) does not verify."""
    parts = (FORMAT.encode(), str(VERSION).encode(), kind.encode(), key.encode(), body)
    return hmac.new(secret, b"".join(len(p).to_bytes(8, "little") + p for p in parts), hashlib.sha256).hexdigest()


def _header(secret: bytes, kind: str, key: str, body: bytes) -> dict[str, object]:
    return {"format": FORMAT, "version": VERSION, "kind": kind, "key": key, "size": len(body), "hmac_sha256": _mac(secret, kind, key, body)}


def load(kind: str, key: str) -> object:
    """The body stored for (kind, key), as parsed JSON, when the entry is whole and
    is the one asked for; None otherwise (also for a stored null). Still to be
    validated by the caller."""
    folder = _usable_dir(create=False)
    secret = _secret(folder, create=False) if folder is not None else None
    if folder is None or secret is None:
        return None
    raw = _read_regular(folder / f"{kind}-{key}.json")
    if raw is None:
        return None
    head, newline, body = raw.partition(b"\n")
    if not newline or len(head) > _MAX_HEADER_BYTES:
        return None
    try:
        header = json.loads(head.decode("utf-8"))
        if not isinstance(header, dict) or not hmac.compare_digest(str(header.get("hmac_sha256")), _mac(secret, kind, key, body)):
            return None
        if header != _header(secret, kind, key, body):
            return None
        return json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8, not JSON
        return None


def _json_default(value: object) -> str:
    if isinstance(value, dt.date):  # dt.datetime too; YAML reads both
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not cached")


def encode(payload: object) -> bytes | None:
    """The body as stored (dates as ISO text); None when `payload` is not JSON-able."""
    try:
        return json.dumps(payload, default=_json_default, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        return None


def decode(body: bytes) -> object:
    """What `load` would give for `body` (a caller's check that an entry round-trips)."""
    return json.loads(body.decode("utf-8"))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def store(kind: str, key: str, body: bytes) -> None:
    """Store `body` (from `encode`) as the entry for (kind, key), atomically; on any
    OSError (read-only folder, full disk) store nothing and leave nothing behind."""
    folder = _usable_dir(create=True)
    secret = _secret(folder, create=True) if folder is not None else None
    if folder is None or secret is None:
        return
    data = json.dumps(_header(secret, kind, key, body), separators=(",", ":")).encode() + b"\n" + body
    name = f"{kind}-{key}.json"
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f"{name}.", suffix=".tmp")
    except OSError:
        return
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, folder / name)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if not isinstance(exc, OSError):
            raise
