"""A spec field named by its dotted path (`sla.max_tpot`), set in the data before the
spec is read: evaluate's --set, a sweep's axes, the API's ?set= all write through here."""

from __future__ import annotations


def set_path(data: dict[str, object], path: str, value: object) -> None:
    """Set `path` in `data` (in place), making the mappings on the way."""
    keys = path.split(".")
    node = data
    for k in keys[:-1]:
        child = node.get(k)
        if not isinstance(child, dict):
            child = {}
            node[k] = child
        node = child
    node[keys[-1]] = value
