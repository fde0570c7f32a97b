"""What the commands share: the catalog with a user's calibration, and --set paths."""

from __future__ import annotations


def catalog_for(args):
    from solver.catalog import default_catalog
    from solver.catalog.calibration import with_calibration

    return with_calibration(default_catalog(), getattr(args, "calibration", None))


def set_path(data: dict, path: str, value) -> None:
    keys = path.split(".")
    node = data
    for k in keys[:-1]:
        if not isinstance(node.get(k), dict):
            node[k] = {}
        node = node[k]
    node[keys[-1]] = value


def problem_from(spec, lines, path: str, catalog):
    """The spec's problem; an error a catalog lookup raises names the spec's file and line."""
    from pathlib import Path

    from solver.errors import InputError
    from solver.optimise.shapes import build_problem

    try:
        return build_problem(spec, catalog, Path(path).parent)
    except InputError as exc:
        raise exc.located(lines, path) from None
