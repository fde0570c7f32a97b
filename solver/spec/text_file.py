"""A user's data file read as UTF-8 text at the edge, one way for every reader (lengths,
profile, trace): a FIFO or socket refused before it is opened (a read would wait for a
writer), the size capped (a device such as /dev/zero is read only that far), and every
failure one InputError naming the field and the path."""

from __future__ import annotations

from pathlib import Path

from solver.errors import InputError, is_pipe


def read_text_file(path: str | Path, field: str, kind: str, max_bytes: int, too_big: str) -> str:
    """The file's text (a leading BOM dropped). `kind` says what to give ("a CSV file"),
    `too_big` what to do when it is over `max_bytes`."""
    source = str(path)
    try:
        if is_pipe(path):
            raise InputError(field, source, f"is a pipe or a socket; give {kind}")
        with Path(path).open("rb") as f:
            raw = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise InputError(field, source, "no such file") from None
    except IsADirectoryError:
        raise InputError(field, source, f"is a folder, not {kind}") from None
    except (OSError, ValueError) as exc:
        raise InputError(field, source, f"cannot be read ({type(exc).__name__})") from None
    if len(raw) > max_bytes:
        raise InputError(field, source, f"over {max_bytes // 2**20} MiB; {too_big}")
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"byte {exc.start + 1:,}", f"0x{raw[exc.start]:02x}", "not UTF-8 text", source=source, line=raw.count(b"\n", 0, exc.start) + 1
        ) from None
