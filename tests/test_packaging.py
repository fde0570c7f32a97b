"""The catalogs ship inside the package: a wheel, unpacked away from the source tree,
still finds and loads them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_carries_the_catalogs_and_loads_them(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    wheel = next(tmp_path.glob("plan_opt-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for f in ("devices.yaml", "models.yaml", "platforms.yaml", "precisions.yaml"):
        assert f"solver/catalogs/{f}" in names
    for f in ("index.html", "app.js", "pick.js", "compare.js", "style.css"):  # the page `plan-opt serve` answers at /
        assert f"solver/api/static/{f}" in names
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = "import solver.catalog.load as c; cat = c.load_catalog(); assert 'site' in str(c.catalog_dir()), c.catalog_dir(); print(len(cat.devices))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(site)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 25


def test_wheel_carries_every_bundled_spec_and_get_specs_reads_them_there(tmp_path):
    # issue 45 item 6: GET /specs reads the example specs from the installed package
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    wheel = next(tmp_path.glob("plan_opt-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = sorted(p.name for p in (ROOT / "specs").glob("*.yaml"))
    assert shipped and all(f"solver/bundled_specs/{f}" in names for f in shipped)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = "import solver.api.spec_routes as s; assert 'site' in str(s.bundled_specs_dir()), s.bundled_specs_dir(); print(len(s.bundled_specs()))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(site)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(shipped)
