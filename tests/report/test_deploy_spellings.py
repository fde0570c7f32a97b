"""Issue 45 item 1: deploy spells each flag as the engine release the spec names does
(catalogs/engine_flags.yaml `renamed`), the current spelling when none is named, and
never a flag that parses only by argparse prefix matching (SGLang --tp / --dp)."""

from __future__ import annotations

import argparse
import importlib.util
import shlex
from functools import cache
from pathlib import Path

import pytest
import yaml

from solver.errors import InputError
from solver.explain.solve import solve
from solver.report.deploy import emit
from solver.report.launch import check_flags, flag_table
from tests.solve_helpers import problem_of

ROOT = Path(__file__).resolve().parents[2]
QWEN_DP_EP = {
    "model": "qwen3-30b-a3b",
    "workload": {"users": 32, "context_tokens": 8192, "output_tokens": 512},
    "search": {"gpus": ["h100-sxm"], "tp": [4], "weights": ["bf16"], "kv_cache": ["bf16"], "parallelism": ["dp_ep"]},
}


def _sglang(version=None, **engine):
    spec = {**QWEN_DP_EP, "engine": {"name": "sglang", **engine, **({"version": version} if version else {})}}
    return emit(solve(problem_of(spec), explain=False), "sglang")


def test_current_sglang_spells_attention_dp_and_tp_as_registered():
    # SGLang's parser (arg_groups/fields/parallel.py) registers --tp-size and --dp-size only;
    # PR #41818 replaces `--dp-size N --enable-dp-attention` with `--attn-dp-size N`.
    dep = _sglang()
    a = dep.argv
    assert a[a.index("--tp-size") + 1] == "4" and a[a.index("--attn-dp-size") + 1] == "4"
    assert not {"--tp", "--dp", "--enable-dp-attention", "--dp-size"} & set(a)
    assert check_flags(dep) == []


def test_a_named_sglang_release_keeps_the_spelling_it_accepts():
    # The release #41818 first shipped in is not established (engine_flags.yaml since: null),
    # so a spec naming 0.4.6 gets the old spelling, said in a note.
    dep = _sglang("0.4.6")
    a = dep.argv
    i = a.index("--enable-dp-attention")
    assert a[i - 2 : i] == ["--dp-size", "4"] and "--attn-dp-size" not in a
    assert any("sglang 0.4.6" in n and "--attn-dp-size 4" in n for n in dep.notes)
    assert check_flags(dep) == []


def test_eager_sglang_turns_off_both_graph_phases():
    # exec_.py: per-phase --cuda-graph-backend-{decode,prefill} disabled; no --disable-cuda-graph CLI field.
    a = _sglang(enforce_eager=True).argv
    i = a.index("--cuda-graph-backend-decode")
    assert a[i : i + 4] == ["--cuda-graph-backend-decode", "disabled", "--cuda-graph-backend-prefill", "disabled"]
    assert "--disable-cuda-graph" not in a
    assert "--disable-cuda-graph" in _sglang("0.4.6", enforce_eager=True).argv


def _spec(name: str) -> dict:
    return yaml.safe_load((ROOT / "specs" / name).read_text())


def test_vllm_mtp_method_is_mtp_unless_an_older_release_is_named():
    # vllm/config/speculative.py: "deepseek_mtp" is deprecated and replaced with "mtp".
    spec = _spec("deepseek-r1-h200-b200.yaml")
    cfg = lambda dep: next(dep.argv[i + 1] for i, t in enumerate(dep.argv) if t == "--speculative-config")  # noqa: E731
    dep = emit(solve(problem_of(spec), explain=False), "vllm")
    assert '"method":"mtp"' in cfg(dep) and check_flags(dep) == []
    spec["engine"] = {**spec.get("engine", {}), "name": "vllm", "version": "0.8.5"}
    assert '"method":"deepseek_mtp"' in cfg(emit(solve(problem_of(spec), explain=False), "vllm"))


BUNDLED = sorted(
    p.name for p in (ROOT / "specs").glob("*.yaml") if not p.name.startswith(("fleet-", "impossible")) and not p.stem.endswith("-profile")
)


@cache
def _solved(name: str):
    """The bundled spec's plan, solved once for this file: every engine's launch reads it
    (the spec names no engine here, so the plan is the same whichever deploy emits it, and
    emit only reads it)."""
    return solve(problem_of(_spec(name)), explain=False)


def _launches(engine: str) -> list:
    """What deploy emits for each bundled spec the engine can run (a plan it cannot run is
    refused by name: an InputError, never another exception)."""
    out = []
    for name in BUNDLED:
        try:
            out.append(emit(_solved(name), engine))
        except InputError:
            continue
    return out


def _commands(engine: str) -> list[list[str]]:
    """Every engine command deploy emits for the bundled specs (each node, each pool)."""
    out = []
    for dep in _launches(engine):
        for d in (dep, dep.prefill):
            if d is not None:
                out += [s.argv for s in d.steps if s.tool == engine]
    return out


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_bundled_spec_deploys_with_documented_flags(engine):
    # the check the engine-parser test below falls back on where the engine is not installed:
    # every bundled spec (none is refused for vllm or sglang) with only catalogued flags
    launches = _launches(engine)
    assert len(launches) == len(BUNDLED)
    assert all(check_flags(dep) == [] for dep in launches)
    assert len(_commands(engine)) >= len(BUNDLED)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_no_renamed_spelling_is_emitted_without_a_version(engine):
    old = {w for r in flag_table()[engine]["renamed"].values() for w in ([r["old"]] if isinstance(r["old"], str) else r["old"])}
    old = {w for w in old if w.startswith("-") or engine == "vllm"} - {"--dp-size"}
    for argv in _commands(engine):
        assert not old & set(argv), shlex.join(argv)
        if engine == "vllm":
            assert not any('"deepseek_mtp"' in a for a in argv)


def _engine_parser(engine: str) -> argparse.ArgumentParser:
    if engine == "vllm":
        from vllm.entrypoints.openai.cli_args import make_arg_parser  # type: ignore[import-not-found]

        try:  # moved to vllm.utils.argparse_utils in later releases
            from vllm.utils.argparse_utils import FlexibleArgumentParser  # type: ignore[import-not-found]
        except ImportError:
            from vllm.utils import FlexibleArgumentParser  # type: ignore[import-not-found]

        return make_arg_parser(FlexibleArgumentParser())
    from sglang.srt.server_args import ServerArgs  # type: ignore[import-not-found]

    parser = argparse.ArgumentParser(allow_abbrev=False)  # no prefix matching: a flag must be registered
    ServerArgs.add_cli_args(parser)
    return parser


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_emitted_command_parses_in_the_installed_engine(engine):
    if importlib.util.find_spec(engine) is None:
        pytest.skip(f"{engine} is not installed here: the documented flag list is the check (test_every_bundled_spec_deploys_with_documented_flags)")
    parser = _engine_parser(engine)
    skip = len(flag_table()[engine]["command"].split())
    for argv in _commands(engine):
        words = argv[skip:]
        if engine == "vllm":  # `vllm serve MODEL ...`: the model is positional
            words = ["--model", *words[:1], *words[1:]] if not words[0].startswith("-") else words
        parser.parse_args(words)
