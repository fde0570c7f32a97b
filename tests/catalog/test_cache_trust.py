"""What the cache trusts (issue 43 item 9): an entry edited with its digest recomputed
changes no plan, a figure no catalog file may hold (a price of 1e308) is never used,
and an entry is keyed on every input it was made from. Expectations come from the
inputs without the cache (a first, cold run; `load_catalog(use_cache=False)`) or from
the ranges' own bounds, never from what a cached copy gives."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

import solver
import solver.catalog.load as load
import solver.catalog.topology as topo
from solver.catalog import cache, load_catalog
from solver.catalog.files import catalog_cache_key
from solver.catalog.prices import Offer
from solver.cli.main import main
from solver.errors import InputError
from solver.spec import solve_spec

ROOT = Path(__file__).resolve().parents[2]
SPEC = str(ROOT / "specs" / "budget-capped.yaml")
"""A spec whose plan is bought within a budget: its plan moves with the prices."""


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("PLAN_OPT_CACHE_DIR", str(where))
    monkeypatch.setattr(topo, "_loaded", None)
    monkeypatch.setattr(load, "_cached", None)
    return where


def _solve(capsys, monkeypatch) -> tuple[int, str, str]:
    """A new run of `solve` (nothing kept in memory from the last one)."""
    monkeypatch.setattr(load, "_cached", None)
    code = main(["solve", SPEC, "--no-explain"])
    out, err = capsys.readouterr()
    return code, out, err


def _entry(folder: Path) -> Path:
    (path,) = folder.glob("catalog-*.json")
    return path


def _rewrite(path: Path, edit) -> None:
    """Edit the entry's body and recompute every digest its header carries that a
    script without the folder's secret can compute: the size and each 64-hex field
    (as SHA-256 of the body)."""
    head, _, body = path.read_bytes().partition(b"\n")
    data = json.loads(body)
    edit(data)
    new = json.dumps(data, separators=(",", ":")).encode()
    header = json.loads(head)
    header["size"] = len(new)
    for k, v in header.items():
        if isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v):
            header[k] = hashlib.sha256(new).hexdigest()
    path.write_bytes(json.dumps(header, separators=(",", ":")).encode() + b"\n" + new)


def _prices_times(factor: float):
    def edit(data: dict) -> None:
        for offer in data["prices"]["offers"]:
            offer["usd_per_gpu_hour"] *= factor

    return edit


def _prices_at(value: float):
    def edit(data: dict) -> None:
        for offer in data["prices"]["offers"]:
            offer["usd_per_gpu_hour"] = value

    return edit


def test_an_entry_edited_with_its_digest_recomputed_changes_no_plan(folder, capsys, monkeypatch):
    cold = _solve(capsys, monkeypatch)  # from the files: the plan the inputs give
    assert cold[0] == 0 and "Plan" in cold[1]
    _rewrite(_entry(folder), _prices_times(10))  # every GPU ten times dearer: the budget buys less
    assert _solve(capsys, monkeypatch) == cold
    assert _solve(capsys, monkeypatch) == cold  # and on every later run


def test_a_price_of_1e308_in_an_entry_is_no_internal_error(folder, capsys, monkeypatch):
    cold = _solve(capsys, monkeypatch)
    _rewrite(_entry(folder), _prices_at(1e308))
    assert _solve(capsys, monkeypatch) == cold
    # Signed with the folder's own secret (what only this user can do): the catalog's
    # range for a price ($0.001 to $1,000 per GPU-hour) still refuses it, and the entry
    # is rebuilt from the files.
    path = _entry(folder)
    key = path.name.removeprefix("catalog-").removesuffix(".json")
    data = cache.load("catalog", key)
    assert isinstance(data, dict)
    _prices_at(1e308)(data)
    cache.store("catalog", key, cache.encode(data) or b"")
    assert _solve(capsys, monkeypatch) == cold
    assert cache.load("catalog", key)["prices"]["offers"][0]["usd_per_gpu_hour"] < 1000  # type: ignore[index]


def test_a_signed_forgery_changes_nothing_a_catalog_file_could_not(folder):
    """The documented limit: the user's own account can sign an entry. Such an entry is
    validated by the same rules as the files, so every figure stays in its range."""
    load_catalog()
    path = _entry(folder)
    key = path.name.removeprefix("catalog-").removesuffix(".json")
    data = cache.load("catalog", key)
    assert isinstance(data, dict)
    for field, value in [("memory_bytes", 10**300), ("memory_bandwidth_bytes_per_s", 1e-300), ("tdp_w", -5)]:
        forged = json.loads(json.dumps(data))
        forged["devices"]["devices"][0][field] = value
        cache.store("catalog", key, cache.encode(forged) or b"")
        got = load_catalog()
        assert got.devices.entries[data["devices"]["devices"][0]["name"]].memory_bytes == data["devices"]["devices"][0]["memory_bytes"]
        assert cache.load("catalog", key) == data, field  # rebuilt from the files


def _catalog_copy(where: Path, name: str, old: bytes, new: bytes) -> Path:
    shutil.copytree(load.catalog_dir(), where)
    raw = (where / name).read_bytes()
    assert old in raw
    (where / name).write_bytes(raw.replace(old, new, 1))
    return where


def test_a_price_of_1e308_in_prices_yaml_is_bad_input_naming_the_range(tmp_path, folder):
    first = re.search(rb"usd_per_gpu_hour: ([0-9.]+)", (load.catalog_dir() / "prices.yaml").read_bytes())
    assert first
    changed = _catalog_copy(tmp_path / "cat", "prices.yaml", first.group(0), b"usd_per_gpu_hour: 1e308")
    with pytest.raises(InputError) as info:
        load_catalog(changed)
    assert "usd_per_gpu_hour" in str(info.value) and "$0.001 to $1,000 per GPU-hour" in str(info.value)


def test_the_catalog_and_the_overrides_obey_one_range():
    """One Bound object, not two copies that may drift apart."""
    offer_meta = Offer.__annotations__["usd_per_gpu_hour"]
    assert "GPU_HOUR_USD" in str(offer_meta)
    assert solve_spec.GPU_HOUR_USD is __import__("solver.catalog.ranges", fromlist=["GPU_HOUR_USD"]).GPU_HOUR_USD


def test_the_key_covers_every_file_and_the_versions(monkeypatch):
    raw = {k: (load.catalog_dir() / fname).read_bytes() for k, (fname, _) in load.CATALOG_FILES.items()}
    base = catalog_cache_key(raw)
    for k in raw:
        assert catalog_cache_key({**raw, k: raw[k] + b"\n"}) != base, k
    monkeypatch.setattr(solver, "__version__", "999.0")
    assert catalog_cache_key(raw) != base


def test_an_entry_copied_from_another_cache_folder_is_not_believed(tmp_path, monkeypatch):
    """Another folder (another machine) has another secret: its entries, however whole,
    read as missing here."""
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("PLAN_OPT_CACHE_DIR", str(a))
    expected = load_catalog(use_cache=False)
    load_catalog()
    entry = _entry(a)
    key = entry.name.removeprefix("catalog-").removesuffix(".json")
    monkeypatch.setenv("PLAN_OPT_CACHE_DIR", str(b))
    cache.store("probe", "k", b"{}")  # b gets its own secret
    assert (a / cache.SECRET_NAME).read_bytes() != (b / cache.SECRET_NAME).read_bytes()
    (b / entry.name).write_bytes(entry.read_bytes())
    assert cache.load("catalog", key) is None
    assert list(load_catalog().prices.offers) == list(expected.prices.offers)


def test_a_damaged_secret_is_replaced_and_its_entries_rebuilt(folder):
    load_catalog()
    secret = folder / cache.SECRET_NAME
    key = _entry(folder).name.removeprefix("catalog-").removesuffix(".json")
    assert cache.load("catalog", key) is not None
    secret.write_bytes(b"short")
    assert cache.load("catalog", key) is None  # nothing verifies against a damaged secret
    load_catalog()
    assert len(secret.read_bytes()) == 32
    assert cache.load("catalog", key) is not None


@pytest.mark.parametrize(
    "name,old,new,field",
    [
        # config.json's own range for a model's layers (hf_bounds.MAX_LAYERS = 1,000)
        ("models.yaml", rb"num_layers: (\d+)", b"num_layers: 100000000000000000000", "num_layers"),
        # a link's bandwidth has no range of its own: the catalog-wide MAX_FIGURE (1e18)
        ("platforms.yaml", rb"bandwidth_bytes_per_s: ([0-9.e+]+)", b"bandwidth_bytes_per_s: 1e300", "bandwidth_bytes_per_s"),
    ],
)
def test_a_catalog_figure_past_every_range_is_bad_input(tmp_path, name, old, new, field):
    """A signed entry found this: 10**19 layers overflowed to an internal error."""
    first = re.search(old, (load.catalog_dir() / name).read_bytes())
    assert first
    changed = _catalog_copy(tmp_path / "cat", name, first.group(0), new)
    with pytest.raises(InputError) as info:
        load_catalog(changed, use_cache=False)
    assert field in str(info.value)


@pytest.mark.parametrize("bandwidth", [1e-300, 1e300, 1.0])
def test_a_signed_topology_answer_the_platform_could_not_give_is_recomputed(folder, catalog, bandwidth):
    """A ring's bandwidth is one of the platform's links' (times the parallel rings): a
    signed entry with any other (1e-300 overflowed a plan's integer costs) is rebuilt."""
    plat = catalog.platform("hgx-hopper-8gpu")
    fresh = topo._compute_ring(plat, 8)
    topo.tp_ring.cache_clear()
    topo.tp_ring(plat, 8)
    for path in folder.glob("topology-*.json"):
        key = path.name.removeprefix("topology-").removesuffix(".json")
        entry = cache.load("topology", key)
        if isinstance(entry, dict) and isinstance(entry["answer"], list):
            entry["answer"][0] = bandwidth
            cache.store("topology", key, cache.encode(entry) or b"")
    topo._loaded = None
    topo.tp_ring.cache_clear()
    assert topo.tp_ring(plat, 8) == fresh
    topo.tp_ring.cache_clear()
