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
