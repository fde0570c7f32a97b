"""Run fuzz cases the way a user runs plan-opt, and sort each outcome into a class.

Each case runs in a forked child of a process that has already imported plan-opt
(so a case costs its own work, not an interpreter start), with its output captured
and a wall-clock limit; a case past the limit is killed and counted as a hang.
"""

from __future__ import annotations

import io
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.cases import Case

EXIT_CLASSES = {0: "ok", 2: "bad input", 3: "impossible"}
_NONFINITE_JSON = re.compile(rb"(?<![\w\"])(NaN|-?Infinity)(?![\w\"])")


@dataclass
class Outcome:
    case: Case
    verdict: str
    """'ok', 'bad input', 'impossible', or a defect: 'internal error', 'hang', ..."""
    exit_code: int | None
    seconds: float
    stderr: str

    @property
    def defect(self) -> bool:
        return self.verdict not in EXIT_CLASSES.values()


def _child(case: Case, folder: Path, out: Path, err: Path) -> None:
    from solver.cli.main import main

    os.environ.update({k: v.replace("{dir}", str(folder)) for k, v in case.env.items()})
    if "PLAN_OPT_CACHE_DIR" in case.env:  # a case with its own cache reads it, as a new process would
        import solver.catalog.load as load
        import solver.catalog.topology as topology

        load._cached = None
        topology._loaded = None
    with open(out, "wb") as o, open(err, "wb") as e:
        os.dup2(o.fileno(), 1)
        os.dup2(e.fileno(), 2)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding=sys.stdout.encoding or "utf-8", errors=sys.stdout.errors or "strict")
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), encoding="utf-8", errors="backslashreplace")
    code = 1
    try:
        code = main([a.replace("{dir}", str(folder)) for a in case.argv])
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 99
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(code)


def _classify(case: Case, code: int | None, stdout: bytes, stderr: str) -> str:
    if code is None:
        return "hang"
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if code == 70:
        return "internal error"
    if code == 4:
        return "validator violation"
    if code not in EXIT_CLASSES:
        return f"exit {code}"
    if code == 2:
        lines = [line for line in stderr.strip().splitlines() if line]
        if len(lines) != 1 and not stderr.startswith("usage:"):
            return "message not one line"
    if "json" in case.argv and code in (0, 3) and _NONFINITE_JSON.search(stdout):
        return "non-finite JSON"
    return EXIT_CLASSES[code]


_PLACE = re.compile(r"^plan-opt: error: (?P<file>[^:\s]+?)(?::(?P<line>\d+))?: ")


def message_place(stderr: str, folder_mark: str = "plan-opt-fuzz-") -> str:
    """Where a bad-input message says the problem is: 'file and line', 'file' (a
    problem with the whole file), or 'flag or none' (a value from the command line)."""
    first = stderr.strip().splitlines()[0] if stderr.strip() else ""
    m = _PLACE.match(first)
    if not m or folder_mark not in m.group("file") and not m.group("file").startswith("/"):
        return "flag or none"
    return "file and line" if m.group("line") else "file"


def _make_special(path: Path, what: str) -> None:
    """A case's FIFO, device node (only in the case's own folder) or link."""
    import stat

    if what == "fifo":
        os.mkfifo(path)
    elif what in ("null", "zero"):
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3 if what == "null" else 5))
    elif what.startswith("link:"):
        path.symlink_to(what.removeprefix("link:"))
    else:
        raise ValueError(f"unknown special {what!r}")


def _clobbered(case: Case, folder: Path) -> str:
    """A FIFO, device node or link the command replaced, or an input it changed; '' if none."""
    import stat

    for name, what in case.specials.items():
        mode = os.lstat(folder / name).st_mode if os.path.lexists(folder / name) else 0
        kind = stat.S_ISLNK if what.startswith("link:") else stat.S_ISFIFO if what == "fifo" else stat.S_ISCHR
        if not kind(mode):
            return f"{name} ({what})"
    for name in case.kept:
        if (folder / name).read_bytes() != case.files[name].replace(b"{dir}", str(folder).encode()):
            return f"input {name}"
    return ""


def run_cases(cases: Iterator[Case], *, timeout_s: float = 10.0, jobs: int = 2) -> Iterator[Outcome]:
    """Run cases `jobs` at a time; yield each outcome as it finishes."""
    running: dict[int, tuple[Case, tempfile.TemporaryDirectory, float]] = {}
    source = iter(cases)
    exhausted = False
    home = tempfile.mkdtemp(prefix="plan-opt-fuzz-home-")
    while running or not exhausted:
        while not exhausted and len(running) < jobs:
            case = next(source, None)
            if case is None:
                exhausted = True
                break
            tmp = tempfile.TemporaryDirectory(prefix="plan-opt-fuzz-")
            folder = Path(tmp.name)
            for name, data in case.files.items():
                (folder / name).write_bytes(data.replace(b"{dir}", str(folder).encode()))
            for name, what in case.specials.items():
                _make_special(folder / name, what.replace("{dir}", str(folder)))
            case.env.setdefault("HOME", home)
            pid = os.fork()
            if pid == 0:
                _child(case, folder, folder / ".stdout", folder / ".stderr")
            running[pid] = (case, tmp, time.monotonic())
        time.sleep(0.002)
        for pid, (case, tmp, start) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            elapsed = time.monotonic() - start
            if not done and elapsed < timeout_s:
                continue
            code: int | None
            if not done:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                code = None
            else:
                code = os.waitstatus_to_exitcode(status)
            folder = Path(tmp.name)
            stdout = (folder / ".stdout").read_bytes() if (folder / ".stdout").exists() else b""
            stderr = (folder / ".stderr").read_bytes().decode("utf-8", "replace") if (folder / ".stderr").exists() else ""
            del running[pid]
            verdict = _classify(case, code, stdout, stderr)
            clobbered = _clobbered(case, folder) if verdict in EXIT_CLASSES.values() else ""
            tmp.cleanup()
            yield Outcome(case, f"clobbered {clobbered}" if clobbered else verdict, code, elapsed, stderr)
