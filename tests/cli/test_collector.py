"""The collector in a short command (cli/collector.py): off while the command's modules
load, then the heap frozen out of its passes and the collector on at a rarer young
threshold; and the caller's collector exactly as it was afterwards (the tests run every
command in this one process)."""

from __future__ import annotations

import gc
import weakref

from solver.cli.collector import YOUNG_THRESHOLD, collected_after_imports


class _Node:
    other: object = None


def test_the_collector_is_off_while_loading_then_on_with_the_heap_frozen() -> None:
    assert gc.isenabled() and gc.get_freeze_count() == 0  # pytest's own process, untouched
    threshold = gc.get_threshold()
    with collected_after_imports() as imported:
        assert not gc.isenabled()
        imported()
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0  # what was loaded is out of every pass
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *threshold[1:])
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a cycle made while the command works is still collected
        dead = weakref.ref(a)
        del a, b
        gc.collect()
        assert dead() is None
    assert gc.isenabled() and gc.get_freeze_count() == 0 and gc.get_threshold() == threshold


def test_a_caller_that_turned_the_collector_off_or_froze_its_heap_keeps_it_so() -> None:
    threshold = gc.get_threshold()
    gc.freeze()
    frozen = gc.get_freeze_count()
    gc.disable()
    try:
        with collected_after_imports() as imported:
            imported()
            assert not gc.isenabled()
            assert gc.get_freeze_count() == frozen  # nothing frozen here: nothing unfrozen after
        assert not gc.isenabled() and gc.get_freeze_count() == frozen and gc.get_threshold() == threshold
    finally:
        gc.enable()
        gc.unfreeze()


def test_an_error_while_loading_leaves_the_collector_as_it_was() -> None:
    threshold = gc.get_threshold()
    try:
        with collected_after_imports():
            raise ImportError("a module missing")
    except ImportError:
        pass
    assert gc.isenabled() and gc.get_freeze_count() == 0 and gc.get_threshold() == threshold


def test_the_process_own_command_leaves_its_heap_frozen_for_the_exit(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`plan-opt ...` (main() reading sys.argv) freezes the heap as it returns, so that the
    interpreter's collections at exit do not scan it; a caller passing argv (the tests,
    an embedding program) gets its collector back as it was."""
    import contextlib
    import io

    from solver.cli.main import main

    assert gc.get_freeze_count() == 0
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["list", "precisions"]) == 0
    assert gc.get_freeze_count() == 0
    monkeypatch.setattr("sys.argv", ["plan-opt", "list", "precisions"])
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main() == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
