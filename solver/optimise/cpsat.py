"""OR-Tools' CP-SAT Python API (`cp_model`), imported without pandas: the one place
plan-opt imports it (ruff's banned-api rule holds every other module to this one).

Why: `cp_model` does `import pandas as pd` at its top (every ortools 9.x release), and
pandas brings pyarrow: about 0.25 s of CPU in every process that solves, for an API
plan-opt never calls (the `*_series` builders and the `values()` family, which take and
give pandas objects). At import `cp_model` touches only the names `pd.Index` and
`pd.Series` (a type alias and its annotations), so it is imported with a stand-in
`pandas` in `sys.modules` that has just those two classes, and the stand-in is removed
at once: a later `import pandas` (a user's, ray's) loads the real one. If pandas is
already loaded, or `cp_model` already imported, nothing is stood in. If a release ever
touches more of pandas at import, the stand-in import fails and the plain import runs
instead: slower, never wrong (tests/optimise/test_cpsat.py says which happened).

    from solver.optimise.cpsat import cp_model   # inside the function that solves
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

__all__ = ["cp_model", "import_cp_model"]

CP_MODEL = "ortools.sat.python.cp_model"
PANDAS_NAMES = ("Index", "Series")
"""What `cp_model` reads of pandas while it is imported (ortools 9.10-9.15)."""


class _NoPandas:
    """A stand-in pandas class: nothing is an instance of it, and making one says why."""

    def __new__(cls, *args: object, **kwargs: object) -> _NoPandas:
        raise TypeError(f"plan-opt imports cp_model without pandas ({__name__}); its pandas API (pd.{cls.__name__}) is not available")


def _stand_in(names: tuple[str, ...]) -> types.ModuleType:
    module = types.ModuleType("pandas", "plan-opt's stand-in while cp_model is imported (solver/optimise/cpsat.py)")
    for name in names:
        setattr(module, name, type(name, (_NoPandas,), {"__module__": "pandas"}))
    return module


def import_cp_model(pandas_names: tuple[str, ...] = PANDAS_NAMES) -> types.ModuleType:
    """`cp_model`, without loading pandas where it can be; `pandas_names` are the
    stand-in's classes (a test passes fewer to take the fallback)."""
    if CP_MODEL in sys.modules or "pandas" in sys.modules:
        return importlib.import_module(CP_MODEL)
    stand_in = _stand_in(pandas_names)
    sys.modules["pandas"] = stand_in
    try:
        return importlib.import_module(CP_MODEL)
    except Exception:  # a release that reads more of pandas at import: the plain import below
        sys.modules.pop(CP_MODEL, None)
    finally:
        if sys.modules.get("pandas") is stand_in:
            del sys.modules["pandas"]
    return importlib.import_module(CP_MODEL)


if TYPE_CHECKING:
    from ortools.sat.python import cp_model  # the types, for mypy
else:

    def __getattr__(name: str) -> types.ModuleType:
        """`cp_model` on first use, so that importing this module for `import_cp_model`
        alone imports nothing (PEP 562)."""
        if name != "cp_model":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        module = globals()["cp_model"] = import_cp_model()
        return module
