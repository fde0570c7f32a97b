"""What the commands share: the catalog with a user's calibration, --set paths, and
writing the files a user asks for."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from solver.errors import InputError

if TYPE_CHECKING:
    from solver.catalog import Catalog
    from solver.optimise.problem import Problem
    from solver.spec.solve_spec import Spec


def catalog_for(args: argparse.Namespace) -> Catalog:
    from solver.catalog import default_catalog
    from solver.catalog.calibration import with_calibration

    return with_calibration(default_catalog(), getattr(args, "calibration", None))


def problem_from(spec: Spec, lines: dict[tuple, int], path: str, catalog: Catalog) -> Problem:
    """The spec's problem; an error a catalog lookup raises names the spec's file and line."""
    from pathlib import Path

    from solver.errors import InputError
    from solver.optimise.shapes import build_problem

    try:
        return build_problem(spec, catalog, Path(path).parent)
    except InputError as exc:
        raise exc.located(lines, path) from None


def write_output(path: str, text: str, flag: str) -> None:
    """Write a file the user asked for, whole or not at all: into a temporary file
    beside it, then renamed over it. A failure is one line naming the flag and path."""
    target = Path(path)
    if target.is_dir():
        raise InputError(flag, path, "is a folder; give a file name")
    folder = target.parent
    if not folder.is_dir():
        raise InputError(flag, path, f"its folder {folder} does not exist")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise InputError(flag, path, f"cannot be written: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
