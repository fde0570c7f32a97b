"""Every file a command writes (sweep's -o, --parquet and --plot, calibrate's -o, pareto's
and simulate's --plot), checked before any work and written so that it cannot hurt what
is there:

- a regular file, or a name with nothing there, is written whole or not at all: into a
  temporary file beside it, then renamed over it (keeping the old file's permissions);
- a character device (/dev/null, a terminal) or a FIFO is written as a stream, never
  replaced; a FIFO must have its reader already (else the write would wait for ever);
- a symbolic link is written through: the file it points to is written as above (or
  streamed, if it is a device or FIFO), the link itself stays;
- a folder, a block device, a socket, a link to nothing, a read-only file or folder, a
  folder that does not exist, and an output that is one of the command's inputs (the
  same file, compared by device and inode) are refused: one line naming the flag.

A stream is never read back: only a regular file is (sweep's resume, `read_back`)."""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from solver.errors import InputError

NEW, FILE, STREAM = "new", "file", "stream"
REFUSED = {stat.S_IFDIR: "is a folder; give a file name", stat.S_IFBLK: "is a block device", stat.S_IFSOCK: "is a socket"}


def kind_of(st: os.stat_result | None) -> str:
    """How a path is written, from its os.stat (links followed; None: nothing there):
    NEW or FILE (whole, by rename), STREAM (character device or FIFO), or the reason
    it is refused."""
    if st is None:
        return NEW
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return STREAM
    return REFUSED.get(stat.S_IFMT(mode), "is not a regular file, a device or a FIFO")


@dataclass
class Target:
    """A checked output: where its bytes go, and how."""

    flag: str
    given: str
    kind: str
    path: Path
    """The file renamed over (links resolved), or the stream's path as given."""
    fd: int | None = field(default=None, repr=False)
    """A FIFO's write end, opened at the check so that a missing reader is refused before any work."""
    written: bool = False

    def refuse(self, why: str) -> InputError:
        return InputError(self.flag, self.given, why)


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def check(given: str, flag: str, inputs: Iterable[str | Path] = (), others: Iterable[Target] = ()) -> Target:
    """The output `given` checked, before any work: one line naming `flag` if it cannot
    be written, is one of `inputs`, or is the same file as another output."""
    if not given or "\x00" in given:
        raise InputError(flag, given, "give a file name")
    try:
        link = os.lstat(given)
    except FileNotFoundError:
        link = None
    except OSError as exc:
        raise InputError(flag, given, f"cannot be written: {exc.strerror or exc}") from None
    st = _stat(given) if link is not None else None
    if link is not None and st is None and not Path(os.path.realpath(given)).parent.is_dir():
        raise InputError(flag, given, f"is a link to nothing ({os.readlink(given)}: its folder does not exist); give a file name")
    kind = kind_of(st)
    if kind not in (NEW, FILE, STREAM):
        raise InputError(flag, given, kind)
    target = Target(flag, given, kind, Path(given))
    if kind in (NEW, FILE):
        real = Path(os.path.realpath(given))
        if kind == FILE and not _same(_stat(str(real)), st):  # a link the folder tree cannot name (/proc/self/fd/1 to a deleted file)
            target.kind = STREAM
        else:
            target.path = real
    if target.kind == STREAM:
        _open_stream(target, st)
    else:
        _writable(target, st)
    for source in inputs:
        if _same(_stat(str(source)), st):
            raise InputError(flag, given, f"is {source}, one of the command's inputs: writing it would destroy it; give another file")
    for other in others:
        if other.kind != STREAM and (other.path == target.path or _same(_stat(str(other.path)), st)):
            raise InputError(flag, given, f"is the same file as {other.flag} {other.given}; give each output its own file")
    return target


def _same(a: os.stat_result | None, b: os.stat_result | None) -> bool:
    return a is not None and b is not None and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _writable(target: Target, st: os.stat_result | None) -> None:
    folder = target.path.parent
    if not folder.is_dir():
        raise target.refuse(f"its folder {Path(target.given).parent} does not exist")
    if st is not None and not os.access(target.path, os.W_OK):
        raise target.refuse("is read-only")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise target.refuse(f"its folder {folder} is not writable (the file is written beside it, then renamed)")


def _open_stream(target: Target, st: os.stat_result | None) -> None:
    if st is not None and stat.S_ISFIFO(st.st_mode):
        try:
            fd = os.open(target.given, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise target.refuse("is a FIFO with no reader: start its reader first") from None
            raise target.refuse(f"cannot be written: {exc.strerror or exc}") from None
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        target.fd = fd
    elif not os.access(target.given, os.W_OK):
        raise target.refuse("is a device that cannot be written")


def write(target: Target, fill: Callable[[BinaryIO], Any]) -> None:
    """`fill` writes the output into the file object it is given: a temporary file
    renamed over the target, or the stream itself (once: a stream cannot be rewound)."""
    if target.kind == STREAM:
        if target.written:
            raise RuntimeError(f"{target.flag} {target.given} is a stream: written once")
        target.written = True
        fd, target.fd = target.fd, None
        try:
            with os.fdopen(fd, "wb") if fd is not None else open(target.given, "wb") as f:  # noqa: SIM115
                fill(f)
        except OSError as exc:
            raise target.refuse(f"cannot be written: {exc.strerror or exc}") from None
        return
    tmp = target.path.with_name(f".{target.path.name}.{secrets.token_hex(4)}.tmp")
    try:
        old = _stat(str(target.path))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)  # the umask applies, as to any new file
        with os.fdopen(fd, "wb") as f:
            if old is not None and stat.S_ISREG(old.st_mode):
                os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode))
            fill(f)
        os.replace(tmp, target.path)
    except OSError as exc:
        raise target.refuse(f"cannot be written: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def write_text(target: Target, text: str) -> None:
    write(target, lambda f: f.write(text.encode("utf-8")))


def save_figure(target: Target, fig: Any, fmt: str, dpi: int) -> None:
    """A matplotlib figure in `fmt` (png, svg), written as `write` writes."""
    write(target, lambda f: fig.savefig(f, format=fmt, dpi=dpi))


def read_back(target: Target, max_bytes: int) -> bytes | None:
    """A regular file's bytes (to resume from), at most `max_bytes`; None where there is
    nothing to read. A stream is never read (a zero device never ends, a FIFO waits)."""
    if target.kind != FILE:
        return None
    try:
        with open(target.path, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size > max_bytes:
                raise target.refuse(f"is {st.st_size:,} bytes; a table to resume from is at most {max_bytes:,}: give a new file")
            raw = f.read(max_bytes + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise target.refuse(f"cannot be read to resume: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise target.refuse(f"grew past {max_bytes:,} bytes while read; give a new file")
    return raw


PLOT_FORMATS = ("png", "svg", "pdf", "jpg", "jpeg")


def is_stream(given: str) -> bool:
    """Whether a path (links followed) is a character device or a FIFO."""
    return kind_of(_stat(given) if os.path.lexists(given) else None) == STREAM


def plot_name(given: str, flag: str) -> tuple[str, str]:
    """The file a --plot FILE draws to and its format: FILE as given if its suffix is a
    format, FILE.png if it has none (so --plot cost draws cost.png); a device or FIFO
    as given, in PNG."""
    if not given or given.endswith(("/", ".")) or os.path.isdir(given):
        raise InputError(flag, given, "is a folder; give a file name")
    suffix = Path(given).suffix.lower().lstrip(".")
    if is_stream(given):
        return given, suffix if suffix in PLOT_FORMATS else "png"
    if not suffix:
        return given + ".png", "png"
    if suffix not in PLOT_FORMATS:
        raise InputError(flag, given, f"a picture file: .{', .'.join(PLOT_FORMATS)}, or no suffix for .png")
    return given, suffix


def needs(module: str, flag: str, given: str, extra: str) -> None:
    """An optional package an output needs, checked before any work."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise InputError(flag, given, f"needs {module}: pip install 'plan-opt[{extra}]'")
