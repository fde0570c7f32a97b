"""The catalogs, the page and the bundled specs ship inside the package: a wheel,
unpacked away from the source tree, still finds and loads them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """The wheel built once for this file: its folder (unpacked under site/) and its names."""
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    wheel = next(out.glob("plan_opt-*.whl"))
    zipfile.ZipFile(wheel).extractall(out / "site")
    return out, set(zipfile.ZipFile(wheel).namelist())


def _probe(out: Path, code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=out, env={"PYTHONPATH": str(out / "site")}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_wheel_carries_the_catalogs_and_loads_them(unpacked):
    out, names = unpacked
    for f in ("devices.yaml", "models.yaml", "platforms.yaml", "precisions.yaml"):
        assert f"solver/catalogs/{f}" in names
    for f in ("index.html", "app.js", "pick.js", "compare.js", "style.css"):  # the page `plan-opt serve` answers at /
        assert f"solver/api/static/{f}" in names
    probe = "import solver.catalog.load as c; cat = c.load_catalog(); assert 'site' in str(c.catalog_dir()), c.catalog_dir(); print(len(cat.devices))"
    assert int(_probe(out, probe)) >= 25


def test_wheel_carries_every_bundled_spec_and_get_specs_reads_them_there(unpacked):
    # issue 45 item 6: GET /specs reads the example specs from the installed package
    out, names = unpacked
    shipped = sorted(p.name for p in (ROOT / "specs").glob("*.yaml"))
    assert shipped and all(f"solver/bundled_specs/{f}" in names for f in shipped)
    probe = "import solver.api.spec_routes as s; assert 'site' in str(s.bundled_specs_dir()), s.bundled_specs_dir(); print(len(s.bundled_specs()))"
    assert int(_probe(out, probe)) == len(shipped)
