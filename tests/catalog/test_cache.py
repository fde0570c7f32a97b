"""The on-disk cache (solver/catalog/cache.py) only ever costs or saves speed: whatever
is in the cache folder — corrupt, foreign, edited, wrong-shaped, unwritable, full,
raced — the user gets the catalog and the topology answers the inputs give, and no
traceback. Every expectation here comes from the inputs without the cache
(`load_catalog(use_cache=False)`, `topology._compute_ring`), never from a cached copy."""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os
import pickle
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import solver.catalog.load as load
import solver.catalog.topology as topo
from solver.catalog import cache, load_catalog
from solver.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def snapshot(cat: load.Catalog) -> tuple:
    """Everything a Catalog holds, as comparable values."""
    return (
        list(cat.devices),
        list(cat.platforms),
        list(cat.models),
        list(cat.precisions),
        list(cat.engines),
        cat.prices,
        cat.ownership,
        cat.default_factors,
        cat.fitted_on,
    )


@pytest.fixture(scope="module")
def expected() -> tuple:
    return snapshot(load_catalog(use_cache=False))


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A private, empty cache folder, and a topology with nothing in memory."""
    where = tmp_path / "cache"
    monkeypatch.setenv("PLAN_OPT_CACHE_DIR", str(where))
    monkeypatch.setattr(topo, "_loaded", None)
    topo.tp_ring.cache_clear()
    topo.scale_up_domain_size.cache_clear()
    yield where
    topo.tp_ring.cache_clear()
    topo.scale_up_domain_size.cache_clear()


def entries(folder: Path, kind: str) -> list[Path]:
    return sorted(folder.glob(f"{kind}-*.json"))


def the_entry(folder: Path, kind: str) -> Path:
    (path,) = entries(folder, kind)
    return path


def key_of(path: Path) -> str:
    return path.name.split("-", 1)[1].removesuffix(".json")


def leftovers(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.tmp")) if folder.exists() else []


def is_whole(path: Path, kind: str) -> bool:
    return cache.load(kind, key_of(path)) is not None


def cached_catalog_data(folder: Path) -> dict:
    """The catalog entry's body (the files' parsed YAML)."""
    head, _, body = the_entry(folder, "catalog").read_bytes().partition(b"\n")
    return json.loads(body)


def times_ten(data: dict) -> dict:
    """Every offer's prices times ten."""
    data = json.loads(json.dumps(data))
    for offer in data["prices"]["offers"]:
        for k in ("usd_per_gpu_hour", "instance_usd_per_hour"):
            if offer.get(k) is not None:
                offer[k] *= 10
    return data


# --------------------------------------------------------------------------- the catalog


def test_a_warm_cache_skips_the_yaml_and_gives_the_same_catalog(folder, expected, monkeypatch):
    assert snapshot(load_catalog()) == expected
    path = the_entry(folder, "catalog")
    assert path.read_bytes().startswith(b'{"format":"plan-opt-cache","version":2,"kind":"catalog"')
    assert not list(folder.glob("*.pickle")) and not leftovers(folder)

    def no_yaml(*a: object) -> None:
        raise AssertionError("a cache hit parsed the YAML")

    monkeypatch.setattr(load, "_validate_file", no_yaml)
    assert snapshot(load_catalog()) == expected


def test_an_entry_is_only_for_the_bytes_it_was_made_from(folder, expected, tmp_path):
    load_catalog()
    # A comment changes the bytes, not the data: a second entry, the same catalog.
    changed = _copy_of_catalogs(tmp_path / "catalogs", ("ownership.yaml", b"pue: 1.58", b"pue: 1.58  # a comment"))
    assert snapshot(load_catalog(changed)) == expected
    assert len(entries(folder, "catalog")) == 2


CORRUPTIONS = {
    "truncated": lambda b: b[: len(b) // 2],
    "header only": lambda b: b.partition(b"\n")[0] + b"\n",
    "one byte short": lambda b: b[:-1],
    "empty": lambda b: b"",
    "not UTF-8": lambda b: b.replace(b'"devices"', b'"d\xffvices"', 1),
    "not UTF-8 header": lambda b: b"\xff\xfe" + b,
    "garbage": lambda b: os.urandom(4096),
    "pickle of a dict": lambda b: pickle.dumps({"devices": []}),
    "pickle of None": lambda b: pickle.dumps(None),
    "json list": lambda b: b"[1, 2, 3]\n[]",
    "deep nesting": lambda b: b"[" * 100_000 + b"\n" + b"[" * 100_000,
    "a byte flipped in the body": lambda b: b[:-10] + bytes([b[-10] ^ 1]) + b[-9:],
}


@pytest.mark.parametrize("how", list(CORRUPTIONS))
def test_a_corrupt_entry_is_rebuilt(folder, expected, how):
    load_catalog()
    path = the_entry(folder, "catalog")
    path.write_bytes(CORRUPTIONS[how](path.read_bytes()))
    assert snapshot(load_catalog()) == expected
    assert is_whole(path, "catalog")  # rewritten whole
    assert snapshot(load_catalog()) == expected


def _copy_of_catalogs(where: Path, edit: tuple[str, bytes, bytes] | None = None) -> Path:
    where.mkdir()
    for f in load.catalog_dir().glob("*.yaml"):
        raw = f.read_bytes()
        if edit and f.name == edit[0]:
            assert edit[1] in raw
            raw = raw.replace(edit[1], edit[2], 1)
        (where / f.name).write_bytes(raw)
    return where


def test_a_foreign_entry_is_not_believed(folder, expected, catalog, tmp_path):
    load_catalog()
    path = the_entry(folder, "catalog")
    # Another kind's entry, whole and valid, under this entry's name.
    topo.tp_ring(catalog.platform("hgx-hopper-8gpu"), 8)
    path.write_bytes(entries(folder, "topology")[0].read_bytes())
    assert snapshot(load_catalog()) == expected
    # A whole catalog entry made from other files (PUE 1.9), under this entry's name.
    other = load_catalog(_copy_of_catalogs(tmp_path / "other", ("ownership.yaml", b"pue: 1.58", b"pue: 1.9")))
    assert other.ownership.pue == 1.9
    (foreign,) = [p for p in entries(folder, "catalog") if p != path]
    path.write_bytes(foreign.read_bytes())
    assert snapshot(load_catalog()) == expected
    # A file some other program wrote.
    path.write_text("# not ours\nkey: value\n")
    assert snapshot(load_catalog()) == expected
    assert is_whole(path, "catalog")


def test_an_entry_is_written_only_when_it_reads_back_as_the_yaml_did(folder, expected, monkeypatch):
    real_decode = cache.decode
    monkeypatch.setattr(cache, "decode", lambda body: times_ten(real_decode(body)))  # a lossy round trip
    assert snapshot(load_catalog()) == expected
    assert not entries(folder, "catalog") and not leftovers(folder)


def test_a_body_too_deep_to_parse_is_no_error(folder, expected):
    load_catalog()
    path = the_entry(folder, "catalog")
    cache.store("catalog", key_of(path), b"[" * 100_000 + b"]" * 100_000)
    assert cache.load("catalog", key_of(path)) is None
    assert snapshot(load_catalog()) == expected


def test_a_symlink_fifo_or_folder_in_the_entrys_place_is_not_read_and_does_not_block(folder, expected):
    load_catalog()
    path = the_entry(folder, "catalog")
    path.unlink()
    path.symlink_to("/etc/hostname" if Path("/etc/hostname").exists() else sys.executable)
    assert snapshot(load_catalog()) == expected
    path.unlink()
    if hasattr(os, "mkfifo"):
        os.mkfifo(path)  # a blocking open would hang here
        got: list[tuple] = []
        t = threading.Thread(target=lambda: got.append(snapshot(load_catalog())), daemon=True)
        t.start()
        t.join(timeout=60)
        assert got == [expected], "reading a FIFO in the entry's place blocked"
        assert is_whole(path, "catalog")  # the FIFO was replaced by the entry
        path.unlink()
    path.mkdir()  # cannot be replaced: the cache only costs speed
    assert snapshot(load_catalog()) == expected
    assert not leftovers(folder)


def test_prices_edited_times_ten_give_the_right_prices(folder, expected):
    load_catalog()
    path = the_entry(folder, "catalog")
    head, _, body = path.read_bytes().partition(b"\n")
    edited = json.dumps(times_ten(json.loads(body)), separators=(",", ":")).encode()
    path.write_bytes(head + b"\n" + edited)  # the header's digest no longer matches
    assert snapshot(load_catalog()) == expected
    # Even with the size in the header made to fit, the SHA-256 does not.
    header = json.loads(head)
    header["size"] = len(edited)
    path.write_bytes(json.dumps(header, separators=(",", ":")).encode() + b"\n" + edited)
    cat = load_catalog()
    assert snapshot(cat) == expected
    assert [o.usd_per_gpu_hour for o in cat.prices.offers] == [o.usd_per_gpu_hour for o in expected[5].offers]
    assert cached_catalog_data(folder) == json.loads(body)  # rebuilt from the files


def _wrong_shapes(data: dict) -> dict[str, object]:
    no_prices = {k: v for k, v in data.items() if k != "prices"}
    bad_memory = json.loads(json.dumps(data))
    bad_memory["devices"]["devices"][0]["memory_bytes"] = "a lot"
    negative = json.loads(json.dumps(data))
    negative["prices"]["offers"][0]["usd_per_gpu_hour"] = -1.0
    unknown_gpu = json.loads(json.dumps(data))
    unknown_gpu["prices"]["offers"][0]["gpu"] = "no-such-gpu"  # passes the schema, not the catalog's checks
    extra_field = json.loads(json.dumps(data))
    extra_field["devices"]["devices"][0]["flux_capacitor"] = True
    return {
        "null": None,
        "list": [],
        "string": "catalog",
        "number": 3,
        "empty dict": {},
        "a file missing": no_prices,
        "an extra file": {**data, "extra": {}},
        "a file of the wrong type": {**data, "devices": [1, 2]},
        "a field of the wrong type": bad_memory,
        "a value out of range": negative,
        "a device no catalog has": unknown_gpu,
        "an unknown field": extra_field,
    }


def test_a_well_formed_entry_of_the_wrong_shape_is_rebuilt(folder, expected):
    load_catalog()
    path = the_entry(folder, "catalog")
    key, data = key_of(path), cached_catalog_data(folder)
    for name, payload in _wrong_shapes(data).items():
        body = cache.encode(payload)
        assert body is not None
        cache.store("catalog", key, body)  # a valid header and digest: only the content is wrong
        assert cache.load("catalog", key) == payload
        assert snapshot(load_catalog()) == expected, name
        assert cached_catalog_data(folder) == data, name  # rebuilt


@pytest.mark.parametrize("how", ["truncated", "pickle of a dict", "not UTF-8"])
def test_the_command_line_never_shows_a_traceback_for_a_bad_cache(folder, how, capsys, monkeypatch):
    monkeypatch.setattr(load, "_cached", None)
    assert main(["list", "devices"]) == 0
    good, err = capsys.readouterr()
    assert err == ""
    path = the_entry(folder, "catalog")
    path.write_bytes(CORRUPTIONS[how](path.read_bytes()))
    monkeypatch.setattr(load, "_cached", None)
    assert main(["list", "devices"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (good, "")


def test_a_bad_entry_in_a_new_process_is_no_error(folder, expected):
    load_catalog()
    path = the_entry(folder, "catalog")
    path.write_bytes(pickle.dumps([1, 2, 3]))
    env = {**os.environ, "PLAN_OPT_CACHE_DIR": str(folder)}
    proc = subprocess.run([sys.executable, "-m", "solver.cli.main", "list", "devices"], env=env, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0 and proc.stderr == "" and "h100-sxm" in proc.stdout
    assert is_whole(path, "catalog")


# --------------------------------------------------------------------------- writing


def test_an_unwritable_folder_only_costs_speed(tmp_path, monkeypatch, expected):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PLAN_OPT_CACHE_DIR", str(blocker / "cache"))  # mkdir fails (ENOTDIR), even as root
    assert snapshot(load_catalog()) == expected
    assert snapshot(load_catalog()) == expected
    assert blocker.read_text() == "not a folder"


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() == 0, reason="root writes anywhere")
def test_a_read_only_folder_only_costs_speed(tmp_path, monkeypatch, expected):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    monkeypatch.setenv("PLAN_OPT_CACHE_DIR", str(ro))
    try:
        assert snapshot(load_catalog()) == expected
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o700)


def test_a_failed_rename_leaves_no_temporary_file(folder, expected, monkeypatch):
    def refuse(src: object, dst: object) -> None:
        raise PermissionError(errno.EACCES, "refused")

    monkeypatch.setattr(cache.os, "replace", refuse)
    assert snapshot(load_catalog()) == expected
    assert not leftovers(folder) and not entries(folder, "catalog")


def test_a_full_disk_leaves_no_partial_file(folder, expected, monkeypatch, catalog):
    real_write = os.write

    def full_after_half(fd: int, data: bytes) -> None:
        real_write(fd, bytes(data[: len(data) // 2]))  # some bytes land, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(cache, "_write_all", full_after_half)
    assert snapshot(load_catalog()) == expected
    fresh = topo._compute_ring(catalog.platform("hgx-hopper-8gpu"), 8)
    assert topo.tp_ring(catalog.platform("hgx-hopper-8gpu"), 8) == fresh
    assert folder.exists()
    assert not leftovers(folder)
    assert not list(folder.iterdir())  # neither a partial entry nor a temporary file
    monkeypatch.undo()
    monkeypatch.setenv("PLAN_OPT_CACHE_DIR", str(folder))
    assert snapshot(load_catalog()) == expected  # space again: the entry is written
    assert is_whole(the_entry(folder, "catalog"), "catalog")


def test_a_failure_other_than_the_disks_still_removes_the_temporary_file(folder, monkeypatch):
    def interrupted(fd: int, data: bytes) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cache, "_write_all", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cache.store("test", "k", b"{}")
    assert not leftovers(folder)


def test_racing_threads_each_see_a_whole_entry_or_none(folder):
    body = cache.encode({"answer": list(range(20_000))})
    assert body is not None
    stop = threading.Event()
    stored = threading.Event()  # the reads start once an entry exists: a busy machine may not write before 300 reads
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            while not stop.is_set():
                cache.store("race", "k", body)
                stored.set()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        assert stored.wait(30)
        seen = [cache.load("race", "k") for _ in range(300)]
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors
    assert all(s is None or s == {"answer": list(range(20_000))} for s in seen)
    assert any(s is not None for s in seen)
    assert cache.load("race", "k") == {"answer": list(range(20_000))}
    assert not leftovers(folder)


WRITER = """
import sys
from solver.catalog import cache
body = cache.encode({"answer": list(range(20_000)), "by": sys.argv[1]})
for _ in range(300):
    cache.store("race", "k", body)
"""


def test_racing_processes_each_see_a_whole_entry_or_none(folder):
    env = {**os.environ, "PLAN_OPT_CACHE_DIR": str(folder)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, name], env=env, cwd=ROOT, stderr=subprocess.PIPE) for name in ("a", "b")]
    seen = []
    while any(p.poll() is None for p in procs):
        seen.append(cache.load("race", "k"))
    for p in procs:
        _, err = p.communicate()
        assert p.returncode == 0 and err == b""
    whole = [{"answer": list(range(20_000)), "by": by} for by in ("a", "b")]
    assert all(s is None or s in whole for s in seen)
    assert cache.load("race", "k") in whole
    assert not leftovers(folder)


def test_two_processes_building_the_catalog_at_once(folder, expected):
    env = {**os.environ, "PLAN_OPT_CACHE_DIR": str(folder)}
    probe = "from solver.catalog import load_catalog; print(len(load_catalog().devices))"
    procs = [subprocess.Popen([sys.executable, "-c", probe], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        out, err = p.communicate()
        assert p.returncode == 0 and err == b"" and int(out) == len(expected[0])
    assert is_whole(the_entry(folder, "catalog"), "catalog")
    assert not leftovers(folder)
    assert snapshot(load_catalog()) == expected


# --------------------------------------------------------------------------- where


@pytest.fixture
def no_writes(monkeypatch):
    """Fail the test if the cache tries to create a file anywhere."""

    def refuse(*a: object, **k: object) -> None:
        raise AssertionError("the cache wrote a file")

    monkeypatch.setattr(cache.tempfile, "mkstemp", refuse)


@pytest.mark.parametrize("home", [None, "", "relative/home", ".", "/", "//", "/.."])
def test_no_home_means_no_cache_never_the_working_folder_or_the_root(home, tmp_path, monkeypatch, expected, catalog, no_writes):
    monkeypatch.delenv("PLAN_OPT_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    if home is None:
        monkeypatch.delenv("HOME", raising=False)
    else:
        monkeypatch.setenv("HOME", home)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(topo, "_loaded", None)
    topo.tp_ring.cache_clear()
    assert cache.cache_dir() is None
    assert snapshot(load_catalog()) == expected
    plat = catalog.platform("hgx-hopper-8gpu")
    assert topo.tp_ring(plat, 8) == topo._compute_ring(plat, 8)
    assert list(tmp_path.iterdir()) == []
    topo.tp_ring.cache_clear()


def test_a_relative_xdg_cache_home_is_ignored_for_home(tmp_path, monkeypatch):
    monkeypatch.delenv("PLAN_OPT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "cache")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / ".cache" / "plan-opt"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "plan-opt"


@pytest.mark.parametrize("value", ["relative", "./cache", "/"])
def test_a_relative_or_root_cache_dir_is_refused_with_one_message(value, tmp_path, monkeypatch, capsys, expected, no_writes):
    monkeypatch.setenv("PLAN_OPT_CACHE_DIR", value)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(cache, "_refused", set())
    monkeypatch.chdir(tmp_path)
    assert snapshot(load_catalog()) == expected
    assert snapshot(load_catalog()) == expected
    err = capsys.readouterr().err
    assert err.count("PLAN_OPT_CACHE_DIR") == 1 and "nothing is cached" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # neither ./relative nor $HOME/.cache


def test_the_digest_is_no_signature_so_a_folder_others_can_write_is_not_used(folder, expected):
    """A forger with the user's own rights can recompute the digest (the module says
    so); a folder other users can write is therefore never read."""
    load_catalog()
    path = the_entry(folder, "catalog")
    forged = cache.encode(times_ten(cached_catalog_data(folder)))
    assert forged is not None
    cache.store("catalog", key_of(path), forged)
    cat = load_catalog()  # the control: in the user's own folder, a forgery is read
    assert cat.prices.offers[0].usd_per_gpu_hour == pytest.approx(10 * expected[5].offers[0].usd_per_gpu_hour)
    folder.chmod(0o777)
    try:
        assert cache.load("catalog", key_of(path)) is None
        assert snapshot(load_catalog()) == expected
    finally:
        folder.chmod(0o700)


def test_a_new_folder_is_private(folder):
    cache.store("test", "k", b"{}")
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0
    assert stat.S_IMODE(the_entry(folder, "test").stat().st_mode) & 0o077 == 0


# --------------------------------------------------------------------------- topology


PLATFORMS = [("pcie-nvlink-pairs-8gpu", 4), ("hgx-hopper-8gpu", 8)]


def _fresh(catalog, name: str, size: int) -> tuple:
    plat = catalog.platform(name)
    return plat, topo._compute_ring(plat, size), topo._compute_domain(plat)


def _new_process() -> None:
    topo._loaded = None
    topo.tp_ring.cache_clear()
    topo.scale_up_domain_size.cache_clear()


@pytest.mark.parametrize("name,size", PLATFORMS)
def test_corrupt_or_edited_topology_entries_are_recomputed(folder, catalog, name, size):
    plat, ring, domain = _fresh(catalog, name, size)
    assert topo.tp_ring(plat, size) == ring and topo.scale_up_domain_size(plat) == domain
    paths = entries(folder, "topology")
    assert len(paths) == 2
    originals = {p: p.read_bytes() for p in paths}
    for how, corrupt in [
        *CORRUPTIONS.items(),
        ("bandwidth times ten", lambda b: b.replace(str(ring.bandwidth_bytes_per_s).encode(), str(10 * ring.bandwidth_bytes_per_s).encode())),
        ("domain plus one", lambda b: b.replace(f'"answer":{domain}}}'.encode(), f'"answer":{domain + 1}}}'.encode())),
    ]:
        for p, raw in originals.items():
            p.write_bytes(corrupt(raw))
        _new_process()
        assert topo.tp_ring(plat, size) == ring, how
        assert topo.scale_up_domain_size(plat) == domain, how
        assert all(is_whole(p, "topology") for p in paths), how


@pytest.mark.parametrize(
    "answer",
    [
        "x",
        [1, 2],
        [-1.0, 0.0, [], 1],
        [math.inf, 0.0, ["nvlink"], 1],
        [1e9, -1.0, ["nvlink"], 1],
        [1e9, 0.0, "nvlink", 1],
        [1e9, 0.0, [1], 1],
        [1e9, 0.0, ["nvlink"], 0],
        [1e9, 0.0, ["nvlink"], True],
        [True, 0.0, ["nvlink"], 1],
        {"bandwidth": 1e9},
    ],
)
def test_a_wrong_shaped_topology_answer_is_recomputed(folder, catalog, answer):
    plat, ring, domain = _fresh(catalog, "hgx-hopper-8gpu", 8)
    topo.tp_ring(plat, 8)
    topo.scale_up_domain_size(plat)
    for path in entries(folder, "topology"):
        for payload in ({"answer": answer}, answer, {"answer": 8, "extra": 1}, None):
            body = cache.encode(payload)
            assert body is not None
            cache.store("topology", key_of(path), body)
            _new_process()
            assert topo.tp_ring(plat, 8) == ring
            assert topo.scale_up_domain_size(plat) == domain
    for wrong_domain in (0, -8, 8.5, True, None, [8]):
        for path in entries(folder, "topology"):
            if cache.load("topology", key_of(path)) == {"answer": domain}:
                cache.store("topology", key_of(path), cache.encode({"answer": wrong_domain}) or b"")
        _new_process()
        assert topo.scale_up_domain_size(plat) == domain


def test_a_platform_that_cannot_join_that_many_gpus_is_cached_as_such(folder, catalog):
    plat = catalog.platform("hgx-hopper-8gpu")
    plat = dataclasses.replace(plat, max_nodes=1)
    for _ in range(2):
        with pytest.raises(ValueError, match="cannot join 16"):
            topo.tp_ring(plat, 16)
        _new_process()
