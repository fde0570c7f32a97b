"""The `plan-opt` command line: the parser, one subcommand per module beside this one,
and the one place bad input, output faults and bugs become exit codes.

Exit codes (every command): 0 done; 2 bad input, or an output that cannot be written
(standard output on a full disk or a closed file, like an `-o FILE` that cannot be
written: one line on stderr); 3 no plan meets the spec; 4 the solver-free check
refused the plan; 70 a bug. A reader that stops early (`| head`) is no fault: exit 0,
quietly.

Standard output and error survive a terminal that cannot show every character
(`PYTHONIOENCODING=ascii`, a C locale): text writes `≤` as `<=`, `×` as `x`, `—` as
`-` (others as `\\u2264`), and JSON writes any character it cannot as a JSON escape
(`\\u00b7`), so the bytes stay valid JSON that decodes to the same strings."""

from __future__ import annotations

import argparse
import codecs
import importlib
import io
import os
import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO, cast

from solver import __version__
from solver.cli.collector import process_ends
from solver.errors import EXIT_BAD_INPUT, EXIT_OK, InputError

EXIT_INTERNAL = 70
EXIT_OUTPUT = EXIT_BAD_INPUT
"""Standard output cannot be written (a full disk, a closed file): the same status as an
`-o FILE` that cannot be written (cli/outputs.py)."""

ASCII_SUBSTITUTES: dict[str, str] = {
    "—": "-",
    "–": "-",
    "−": "-",
    "·": "-",
    "×": "x",
    "≤": "<=",
    "≥": ">=",
    "≈": "~",
    "→": "->",
    "←": "<-",
    "µ": "u",
    "μ": "u",
    "Δ": "delta",
    "±": "+/-",
    "…": "...",
    "∞": "inf",
    "✓": "ok",
    "✗": "no",
    "⌈": "ceil(",
    "⌉": ")",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "\u00a0": " ",
}
"""What the text reports write for the symbols they use, where the terminal's encoding
lacks them."""

TEXT_ERRORS = "plan-opt-text"
JSON_ERRORS = "plan-opt-json"


def _escape(ch: str) -> str:
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def _json_escape(ch: str) -> str:
    n = ord(ch)
    if n < 0x10000:
        return f"\\u{n:04x}"
    n -= 0x10000  # a UTF-16 surrogate pair, as JSON writes characters beyond the BMP
    return f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}"


def _text_errors(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    bad = exc.object[exc.start : exc.end]
    return "".join(ASCII_SUBSTITUTES.get(ch) or _escape(ch) for ch in bad), exc.end


def _json_errors(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    # JSON holds characters beyond ASCII only inside strings, where \uXXXX means the same.
    return "".join(_json_escape(ch) for ch in exc.object[exc.start : exc.end]), exc.end


codecs.register_error(TEXT_ERRORS, _text_errors)
codecs.register_error(JSON_ERRORS, _json_errors)


def _legible(stream: object, errors: str) -> None:
    """Let the stream write what its encoding cannot, the way `errors` says."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is None or getattr(stream, "errors", None) == errors:
        return
    try:
        reconfigure(errors=errors)
    except (ValueError, OSError):  # a closed or detached stream: writing it fails later, and says so
        pass


class OutputError(Exception):
    """Standard output cannot be written: not the command's fault, nor the input's."""

    def __init__(self, cause: OSError):
        self.cause = cause
        super().__init__(cause.strerror or str(cause))


class _GuardedStdout:
    """sys.stdout for the length of a command: a failure to write it raises OutputError,
    told apart from an OSError of the command's own work (a file it reads). A reader
    that went away (BrokenPipeError) passes through as it is."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from exc

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _discard_stdout(stream: TextIO) -> None:
    """After a write to standard output failed: point its descriptor at /dev/null, so
    the interpreter's last flush of what is still buffered cannot fail again (a second
    message, and exit 120)."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        return  # not a file (a test's StringIO): nothing is flushed at exit
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass


def _say(line: str) -> None:
    """One line on stderr; if even that cannot be written, the exit status says it."""
    try:
        print(line, file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class OneLineParser(argparse.ArgumentParser):
    """argparse's usage errors in one line, as every other bad input (its default is
    the whole usage block, then the error); exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (`{self.prog} --help` lists what each flag takes)\n")


COMMANDS = {
    "solve": "solve",
    "simulate": "simulate",
    "pareto": "pareto",
    "schedule": "schedule",
    "fleet": "fleet",
    "sweep": "sweep",
    "deploy": "deploy",
    "evaluate": "evaluate",
    "calibrate": "calibrate",
    "schema": "schema",
    "list": "listing",
    "serve": "serve",
}
"""Each command → its module beside this one (`add(sub)`, `run(args)`), in the order
`--help` lists them."""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; where `argv` starts with a command, that command's alone, so that a
    process imports only the module of the command it runs (`--help`, `--version` and
    anything else get every command)."""
    parser = OneLineParser(
        prog="plan-opt",
        description="What hardware serves this model to these users at this latency, and what will it cost? "
        "plan-opt checks memory capacity, memory bandwidth, compute and interconnect.",
    )
    parser.add_argument("--version", action="version", version=f"plan-opt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = [argv[0]] if argv and argv[0] in COMMANDS else list(COMMANDS)
    for command in wanted:
        importlib.import_module(f"solver.cli.{COMMANDS[command]}").add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    real = sys.stdout
    _legible(real, TEXT_ERRORS)
    _legible(sys.stderr, TEXT_ERRORS)
    sys.stdout = cast(TextIO, _GuardedStdout(real))
    try:
        return _main(argv, real)
    except BrokenPipeError:  # the reader stopped early (`| head`): no fault
        _discard_stdout(real)
        return EXIT_OK
    except OutputError as exc:
        _discard_stdout(real)
        _say(f"plan-opt: error: cannot write to standard output: {exc}")
        return EXIT_OUTPUT
    finally:
        sys.stdout = real
        if argv is None:  # the process's own command line: it ends with this command
            process_ends()


def _main(argv: list[str] | None, real: TextIO) -> int:
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit:  # --help, --version, a usage error: argparse has printed it
        sys.stdout.flush()
        raise
    if not getattr(args, "func", None):
        parser.print_help()
        sys.stdout.flush()
        return EXIT_BAD_INPUT
    if getattr(args, "format", None) == "json":
        _legible(real, JSON_ERRORS)
    try:
        code: int = args.func(args)
        sys.stdout.flush()
        return code
    except InputError as exc:
        _say(f"plan-opt: error: {exc.message()}")
        return EXIT_BAD_INPUT
    except (BrokenPipeError, OutputError):
        raise
    except Exception as exc:  # a bug, not bad input: say so in one line
        if os.environ.get("PLAN_OPT_DEBUG"):
            raise
        _say(f"plan-opt: internal error: {type(exc).__name__}: {exc} (set PLAN_OPT_DEBUG=1 for the traceback; please report it)")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
