"""Engine release lines (catalogs/engine_releases.yaml, solver/catalog/releases.py):
versions resolve to their line by hand-written cases, bad ones get one clear error, a
spec naming a release gets that release's defaults, and no version changes nothing."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from solver.catalog import default_catalog
from solver.catalog.releases import ReleaseLine, Releases, ReleasesFile, Sourced, parse_version
from solver.errors import InputError
from solver.physics.resolve import resolve
from solver.spec.evaluate_input import EvaluateInput

CAT = default_catalog()


@pytest.mark.parametrize(
    ("engine", "text", "expected"),
    [
        ("vllm", "0.6.3", (0, 6, 3)),
        ("vllm", "v0.6.3", (0, 6, 3)),
        ("vllm", "0.6.3.post2.dev308+gb489fc3c", (0, 6, 3)),  # a dev build of 0.6.3.post2
        ("vllm", "0.10.1.1", (0, 10, 1, 1)),
        ("vllm", "0.11", (0, 11, 0)),
        ("trtllm", "0.21.0rc2", (0, 21, 0)),
        ("llama.cpp", "b4567", (4567,)),
        ("llama.cpp", "4567", (4567,)),
        ("llama.cpp", "build 2824", (2824,)),
        ("vllm", "latest", None),
        ("vllm", "b4567", None),
        ("llama.cpp", "0.6.3", None),
    ],
)
def test_versions_parse_by_hand(engine: str, text: str, expected: tuple[int, ...] | None) -> None:
    assert parse_version(engine, text) == expected


@pytest.mark.parametrize(
    ("version", "line"),
    [
        ("0.4.1", "0.2-0.5.3"),  # V0, before the long-context chunking default (PR #6666, v0.5.4)
        ("0.5.3", "0.2-0.5.3"),  # the last release before the boundary
        ("0.5.4", "0.5.4-0.6.4"),  # the boundary itself opens the next line
        ("v0.6.3", "0.5.4-0.6.4"),
        ("0.6.3.post2.dev308+gb489fc3c", "0.5.4-0.6.4"),
        ("0.6.5", "0.6.5-0.7"),  # PR #10544's 2048-token chunk budget
        ("0.7.3", "0.6.5-0.7"),
        ("0.8.0", "0.8.0-0.8.3"),  # V1 on by default
        ("0.8.4", "0.8.4"),
        ("0.8.5", "0.8.5-0.14"),
        ("0.14.9", "0.8.5-0.14"),
        ("0.15.0", "0.15-0.16"),  # the sampler's 32 B a logit (fit half's version sweep)
        ("0.16.1", "0.15-0.16"),
        ("0.17.0", "0.17-0.20"),
        ("0.19.0", "0.17-0.20"),
        ("0.21.0", "0.21+"),  # CUDA-graph memory counted before the KV cache (PR #30515)
        ("99.0", "0.21+"),  # any later release: the current line
    ],
)
def test_vllm_versions_fall_in_their_lines(version: str, line: str) -> None:
    assert CAT.releases.line_for(CAT.engine("vllm"), version).spec.line == line


def test_unknown_version_is_one_clear_error_naming_the_lines() -> None:
    with pytest.raises(InputError) as bad:
        CAT.releases.line_for(CAT.engine("vllm"), "latest")
    msg = str(bad.value)
    assert msg.startswith("engine.version = latest:") and "0.6.3" in msg and "0.2-0.5.3" in msg
    with pytest.raises(InputError) as early:
        CAT.releases.line_for(CAT.engine("vllm"), "0.1.7")  # before the first line listed
    assert "engine.version" in str(early.value) and "no vllm release line" in str(early.value) and "0.21+" in str(early.value)
    with pytest.raises(InputError) as build:
        CAT.releases.line_for(CAT.engine("llama.cpp"), "0.6.3")
    assert "b4567" in str(build.value)


def release_line(**overrides: object) -> ReleaseLine:
    """A vLLM release line named x whose overrides hold these values (test_load_cost reads it too)."""
    return ReleaseLine(
        engine="vllm",
        line="x",
        since="0.1.0",
        label="test",
        as_of=dt.date(2026, 12, 5),
        overrides={k: Sourced(v, "hand") for k, v in overrides.items()},
    )


def test_overrides_are_any_engine_field_by_name_and_checked() -> None:
    engines = {e.name: e for e in CAT.engines}
    ok = Releases(ReleasesFile(dt.date(2026, 12, 5), [release_line(block_size_tokens=32, enforce_eager=True)]), engines)
    e = ok.engine_at(engines["vllm"], "0.2")
    assert (e.block_size_tokens, e.enforce_eager) == (32, True)
    with pytest.raises(ValueError, match="'num_gpus' is not an Engine field"):
        Releases(ReleasesFile(dt.date(2026, 12, 5), [release_line(num_gpus=2)]), engines)
    with pytest.raises(ValueError, match="max_num_seqs = 'many' is not a valid"):
        Releases(ReleasesFile(dt.date(2026, 12, 5), [release_line(max_num_seqs="many")]), engines)


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("sampler_bytes_per_logit", -20, "greater than or equal to 0"),  # NonNegInt
        ("max_num_seqs", 0, "greater than or equal to 1"),  # Count
        ("fraction", 1.5, "less than or equal to 1"),  # Fraction
    ],
)
def test_an_override_keeps_its_field_s_bounds_not_only_its_type(field: str, value: object, allowed: str) -> None:
    # engines.yaml refuses sampler_bytes_per_logit: -20 by the field's NonNegInt; a release
    # line's override of the same field must be held to the same bounds, not to int alone
    engines = {e.name: e for e in CAT.engines}
    with pytest.raises(ValueError, match=f"{field} = {value!r} is not a valid int|{field} = {value!r} is not a valid float") as bad:
        Releases(ReleasesFile(dt.date(2026, 12, 5), [release_line(**{field: value})]), engines)
    assert allowed in str(bad.value) and "Annotated" not in str(bad.value)


def _resolved(engine: dict, gpu: str = "h100-sxm"):
    inp = EvaluateInput.model_validate(
        {"model": "llama-3.1-8b", "hardware": {"gpu": gpu}, "engine": engine, "workload": {"users": 8, "prompt_tokens": 512, "output_tokens": 128}}
    )
    return resolve(inp, CAT)[0].engine


def test_a_v0_release_gets_its_defaults() -> None:
    # vLLM 0.6.3 (V0): EngineArgs.max_num_seqs 256 on every GPU (no large-GPU raise before
    # V1's PR #12369), no chunked prefill below 32k context (PR #6666), no prefix cache
    e = _resolved({"name": "vllm", "version": "0.6.3"})
    assert (e.max_num_seqs, e.enable_chunked_prefill, e.prefix_caching) == (256, False, False)
    assert e.release.startswith("vllm 0.5.4-0.6.4") and e.display_name == "vLLM (V0 engine)"


def test_vllm_08_raised_knobs_on_h100_by_name_only() -> None:
    # 0.8.0-0.8.3: 1024 sequences on every GPU; 8192 tokens on H100/H200 (PR #12369), 2048 elsewhere
    h100 = _resolved({"name": "vllm", "version": "0.8.2"})
    l40s = _resolved({"name": "vllm", "version": "0.8.2"}, gpu="l40s")
    assert (h100.max_num_batched_tokens, h100.max_num_seqs) == (8192, 1024)
    assert (l40s.max_num_batched_tokens, l40s.max_num_seqs) == (2048, 1024)


def test_spec_knobs_win_over_the_release() -> None:
    e = _resolved({"name": "vllm", "version": "0.6.3", "max_num_seqs": 64, "enable_chunked_prefill": True})
    assert (e.max_num_seqs, e.enable_chunked_prefill) == (64, True)


def test_no_version_is_the_catalog_engine_unchanged() -> None:
    plain = _resolved({"name": "vllm"})
    assert plain.release == ""
    assert dataclasses.replace(plain, release="x") != plain
    # the current line sets nothing: naming a current release gives the same figures
    current = _resolved({"name": "vllm", "version": "0.21.0"})
    assert dataclasses.replace(current, release="") == plain


def test_evaluate_json_names_the_release() -> None:
    from solver.physics.evaluate import evaluate
    from solver.report.evaluation_json import to_dict

    for version, named in ((None, None), ("0.6.3", "vllm 0.5.4-0.6.4")):
        engine = {"name": "vllm"} | ({"version": version} if version else {})
        inp = EvaluateInput.model_validate(
            {
                "model": "llama-3.1-8b",
                "hardware": {"gpu": "h100-sxm"},
                "engine": engine,
                "workload": {"users": 8, "prompt_tokens": 512, "output_tokens": 128},
            }
        )
        out = json.loads(json.dumps(to_dict(evaluate(*resolve(inp, CAT)))))
        if named is None:
            assert out["engine_release"] is None
        else:
            assert out["engine_release"].startswith(named)


def test_graph_memory_is_counted_only_from_v0_21() -> None:
    """vLLM counts its CUDA graphs before sizing the KV cache from v0.21.0 (PR #30515);
    earlier lines capture them after, beyond gpu_memory_utilization; v0.15-0.16's sampler
    profile holds 32 B a logit, 8 before and after."""
    vllm = CAT.engine("vllm")
    at = CAT.releases.engine_at
    assert at(vllm, "0.21.0").profiles_cuda_graphs is True
    assert at(vllm, "0.20.3").profiles_cuda_graphs is False
    assert at(vllm, "0.6.3").profiles_cuda_graphs is False
    assert at(vllm, "0.15.1").sampler_bytes_per_logit == 32
    assert at(vllm, "0.17.0").sampler_bytes_per_logit == 8


def test_a_line_s_fitted_step_cost_is_its_own_and_named_lines_only() -> None:
    """catalogs/fitted.yaml `releases` gives a line a step cost of its own (fitted, so
    engine_releases.yaml may not set it); the other lines keep 0; a fit naming a line the
    engine lacks is refused."""
    from solver.catalog.releases import ReleaseFit

    engines = {e.name: e for e in CAT.engines}
    old = dataclasses.replace(release_line(), line="old", until="0.5.0")
    new = dataclasses.replace(release_line(), line="new", since="0.5.0")
    both = ReleasesFile(dt.date(2026, 12, 5), [old, new])
    fit = Releases(both, engines, {"vllm": {"old": ReleaseFit(step_overhead_s=5e-4, campaigns=3)}})
    assert fit.engine_at(engines["vllm"], "0.4.0").release_step_overhead_s == 5e-4
    assert fit.engine_at(engines["vllm"], "0.6.0").release_step_overhead_s == 0.0
    assert engines["vllm"].release_step_overhead_s == 0.0  # no version: the catalog's engine
    with pytest.raises(ValueError, match="vllm has no release line 'gone'"):
        Releases(both, engines, {"vllm": {"gone": ReleaseFit(step_overhead_s=5e-4, campaigns=3)}})
    with pytest.raises(ValueError, match="'release_step_overhead_s' is not an Engine field"):
        Releases(ReleasesFile(dt.date(2026, 12, 5), [release_line(release_step_overhead_s=1e-3)]), engines)
