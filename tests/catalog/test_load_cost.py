"""What loading the catalog costs, without loosening what it checks: the release lines'
overrides are validated by one validator per Engine field, built once (not one per
override), and a catalog served from the cache keys PyYAML by its package file, read,
not imported (the import is most of the key's cost in a process that reads no YAML)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pydantic
import pytest
import yaml

import solver.catalog.files as files
import solver.catalog.releases as releases
from solver.catalog import default_catalog, load
from solver.catalog.files import catalog_cache_key
from solver.catalog.releases import Releases, ReleasesFile
from tests.catalog.test_releases import release_line

ROOT = Path(__file__).resolve().parents[2]


def test_each_overridden_field_gets_one_validator(monkeypatch):
    data = yaml.safe_load((ROOT / "catalogs" / "engine_releases.yaml").read_text())
    overridden = [k for line in data["releases"] for k in (line.get("overrides") or {})]
    assert len(overridden) > len(set(overridden))  # fields overridden on several lines (41 overrides of 10 fields as written)
    file = load._adapter(ReleasesFile).validate_python(data)
    engines = {e.name: e for e in default_catalog().engines}
    releases._field_adapter.cache_clear()
    fresh = Releases(file, engines)  # before any validator is kept
    built = []
    real = pydantic.TypeAdapter
    monkeypatch.setattr(pydantic, "TypeAdapter", lambda t, *a, **k: built.append(t) or real(t, *a, **k))
    releases._field_adapter.cache_clear()
    got = Releases(file, engines)
    assert len(built) == len(set(overridden))  # one a field, not one an override
    assert got.lines == fresh.lines  # the same lines, the same checked values
    built.clear()
    assert Releases(file, engines).lines == fresh.lines
    assert built == []  # kept for the process


def test_a_bad_override_is_refused_with_its_field_after_the_validator_is_kept():
    engines = {e.name: e for e in default_catalog().engines}

    def line(**overrides):
        return ReleasesFile(dt.date(2026, 12, 5), [release_line(**overrides)])

    Releases(line(max_num_seqs=64), engines)  # the field's validator built and kept
    for _ in range(2):
        with pytest.raises(ValueError, match="engine_releases.yaml: vllm line x: max_num_seqs = 'many' is not a valid"):
            Releases(line(max_num_seqs="many"), engines)
        with pytest.raises(ValueError, match="enable_chunked_prefill = 'maybe' is not a valid"):
            Releases(line(enable_chunked_prefill="maybe"), engines)


def test_the_key_reads_pyyamls_version_from_its_package_file(monkeypatch):
    assert f"__version__ = '{yaml.__version__}'" in files.yaml_package_bytes().decode()
    raw = {k: (load.catalog_dir() / fname).read_bytes() for k, (fname, _) in load.CATALOG_FILES.items()}
    base = catalog_cache_key(raw)
    newer = files.yaml_package_bytes().replace(f"'{yaml.__version__}'".encode(), b"'99.0'")
    monkeypatch.setattr(files, "yaml_package_bytes", lambda: newer)
    assert catalog_cache_key(raw) != base  # another PyYAML: another entry


def test_a_catalog_from_the_cache_imports_no_yaml(tmp_path):
    code = "import sys, solver.catalog as c; c.default_catalog(); print('yaml' in sys.modules)"
    env = {**os.environ, "PLAN_OPT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert first.stdout.strip() == "True"  # the YAML parsed once, the entry written
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert second.stdout.strip() == "False"


def test_loading_the_catalog_builds_no_config_json_model(tmp_path):
    """A catalog model's field bounds come from hf_bounds; the config.json import's
    pydantic models (hf_config_schema) load only where a config.json is read."""
    code = "import sys, solver.catalog as c; c.default_catalog(); print('solver.catalog.hf_config_schema' in sys.modules)"
    env = {**os.environ, "PLAN_OPT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.strip() == "False"
