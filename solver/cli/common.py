"""What the commands share: the catalog with a user's calibration, and the spec's problem
(the files a command writes: cli/outputs.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.catalog import Catalog
    from solver.optimise.problem import Problem
    from solver.spec.solve_spec import Spec


def catalog_for(args: argparse.Namespace) -> Catalog:
    from solver.catalog import default_catalog

    path = getattr(args, "calibration", None)
    if not path:  # the catalog as shipped: no calibration's module to load
        return default_catalog()
    from solver.catalog.calibration import with_calibration

    return with_calibration(default_catalog(), path)


def problem_from(spec: Spec, lines: dict[tuple, int], path: str, catalog: Catalog) -> Problem:
    """The spec's problem; an error a catalog lookup raises names the spec's file and line."""
    from pathlib import Path

    from solver.errors import InputError
    from solver.optimise.shapes import build_problem

    try:
        return build_problem(spec, catalog, Path(path).parent)
    except InputError as exc:
        raise exc.located(lines, path) from None
