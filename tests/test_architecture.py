"""The rules docs/architecture.md says the tree keeps, read from the source itself: data
flows one way through the stages, the HTTP front end (`api`) stands beside the CLI and
reads neither it nor a later stage, and no module imports another's private name."""

from __future__ import annotations

import ast
from pathlib import Path

SOLVER = Path(__file__).resolve().parent.parent / "solver"
STAGES = ["catalog", "spec", "physics", "traffic", "optimise", "explain", "report", "cli"]
"""The pipeline of docs/architecture.md, in order."""
RANK = {**{stage: i for i, stage in enumerate(STAGES)}, "api": STAGES.index("cli")}
"""`api` is the CLI's sibling: it may read every stage before the CLI, not the CLI."""


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """Every `solver.*` import of a module (at the top or inside a function), with the
    names it takes."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("solver."):
            found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names if a.name.startswith("solver.")]
    return found


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in RANK) else None


def _modules() -> list[Path]:
    return sorted(p for p in SOLVER.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_stages_are_the_folders():
    folders = {p.name for p in SOLVER.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(RANK)


def test_no_stage_imports_a_later_one_and_api_reads_no_cli_module():
    wrong = []
    for path in _modules():
        here = path.relative_to(SOLVER).parts[0]
        if here not in RANK:
            continue  # errors.py, units.py, bisect.py: base modules every stage may use
        for line, module, _ in _imports(path):
            there = _stage(module)
            if there is None or there == here:
                continue
            if RANK[there] > RANK[here] or (here == "api" and there == "cli"):
                wrong.append(f"{path.relative_to(SOLVER)}:{line} imports {module}")
    assert wrong == []


def test_base_modules_import_no_stage():
    for name in ("errors.py", "units.py", "bisect.py"):
        assert [m for _, m, _ in _imports(SOLVER / name) if _stage(m) is not None] == [], name


def test_no_module_imports_another_modules_private_name():
    wrong = [
        f"{path.relative_to(SOLVER)}:{line} {module}.{name}"
        for path in _modules()
        for line, module, names in _imports(path)
        for name in names
        if name.startswith("_")
    ]
    assert wrong == []


def test_the_rules_catch_what_they_forbid():
    """The checks above find a later-stage import, a cli import from api and a private
    name when one is there (so an empty list means the tree, not a blind check)."""
    source = "from solver.optimise.model import build\nfrom solver.cli.simulate import _narrowed\n"
    tree = [(n.lineno, n.module, [a.name for a in n.names]) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)]
    later = [m for _, m, _ in tree if RANK[_stage(m)] > RANK["physics"]]
    assert later == ["solver.optimise.model", "solver.cli.simulate"]
    assert [m for _, m, _ in tree if _stage(m) == "cli"] == ["solver.cli.simulate"]  # api may not read it
    assert [n for _, _, names in tree for n in names if n.startswith("_")] == ["_narrowed"]


def _module_name(path: Path) -> str:
    return ".".join(("solver", *path.relative_to(SOLVER).with_suffix("").parts)).removesuffix(".__init__")


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other in a loop (strongly connected, more than one), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def _import_graph(folder: str) -> dict[str, set[str]]:
    """Which modules of `solver/<folder>/` each imports (at the top or inside a function:
    an import kept in a function to dodge a loop is still the loop)."""
    modules = {_module_name(p): p for p in _modules() if p.relative_to(SOLVER).parts[0] == folder}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        for _, module, names in _imports(path):
            targets = [t for t in (module, *(f"{module}.{n}" for n in names)) if t in modules and t != name]
            edges.setdefault(name, set()).update(targets)
    return edges


def test_optimise_modules_import_each_other_in_no_loop():
    """Data flows one way inside optimise too (docs/architecture.md, its row): candidates
    reads disaggregated and traffic_candidates, they read candidate, and it capacity."""
    assert _circles(_import_graph("optimise")) == []


def test_the_circle_check_finds_a_loop():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert _circles(edges) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
