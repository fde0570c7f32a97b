"""SGLang's default mem_fraction_static is a rule of the deployment, not one figure:
by TP size through 0.5.2 (python/sglang/srt/server_args.py ServerArgs.__post_init__),
from a reserve by the GPU's memory since PR #10975 (2025-09-27). Every expected value
here is worked by hand from those rules; a spec's knob still wins."""

from __future__ import annotations

import datetime as dt

import pytest

from solver.catalog import default_catalog
from solver.catalog.releases import ReleaseLine, Releases, ReleasesFile, Sourced
from solver.physics.engine_memory import memory_fraction
from solver.physics.memory import estimate_memory
from solver.physics.resolve import resolve
from solver.report.deploy import emit
from solver.spec.evaluate_input import parse_input
from tests.solve_helpers import problem_of

CAT = default_catalog()
H100_MIB = 81559  # nvidia-smi's total of an H100 SXM5 80GB (catalogs/devices.yaml)
L4_MIB = 23034


def _deployment(version: str | None, tp: int, gpu: str = "h100-sxm", **engine):
    spec = {
        "model": "llama-3.1-8b",
        "hardware": {"gpu": gpu, "tp": tp},
        "engine": {"name": "sglang", **({"version": version} if version else {}), **engine},
        "precision": {"weights": "bf16", "kv_cache": "bf16"},
        "workload": {"users": 1, "context_tokens": 4096, "output_tokens": 256},
    }
    return resolve(parse_input(spec), CAT)


# server_args.py: 0.79 at tp_size >= 16, 0.81 (0.83 before) at >= 8, 0.85 at >= 4, 0.87 at >= 2, else 0.88
@pytest.mark.parametrize(
    ("version", "tp", "fraction"),
    [
        ("0.3.0", 1, 0.88),
        ("0.3.0", 2, 0.87),
        ("0.3.0", 4, 0.85),
        ("0.3.0", 8, 0.83),
        ("0.3.0", 16, 0.79),
        ("0.4.3.post4", 1, 0.88),
        ("0.4.3.post4", 2, 0.87),
        ("0.4.3.post4", 3, 0.87),
        ("0.4.3.post4", 4, 0.85),  # the 4 x L4 QwQ-32B run printed mem_fraction_static=0.85
        ("0.4.3.post4", 6, 0.85),
        ("0.4.3.post4", 8, 0.81),
        ("0.5.2", 12, 0.81),
        ("0.5.2", 16, 0.79),
    ],
)
def test_the_fraction_by_tp_of_each_release_line(version: str, tp: int, fraction: float) -> None:
    d, _, _ = _deployment(version, tp)
    assert memory_fraction(d).value == fraction


# Since PR #10975: reserved MiB = 512 + 1.5 × max(chunked_prefill_size, 2048) + 2 × cuda_graph_max_bs
# + 1024 × TP × PP / 8, at least 10,240 on GPUs over 61,440 MiB; round((MiB − reserved) / MiB, 3).
@pytest.mark.parametrize(
    ("gpu", "mib", "tp", "reserved_mib"),
    [
        ("h100-sxm", H100_MIB, 1, 512 + 1.5 * 8192 + 2 * 256 + 1024 * 1 / 8),  # 13,440
        ("h100-sxm", H100_MIB, 8, 512 + 1.5 * 8192 + 2 * 512 + 1024 * 8 / 8),  # 14,848
        ("l4", L4_MIB, 1, 512 + 1.5 * 2048 + 2 * 24 + 1024 * 1 / 8),  # 3,760: 24 graphs below TP 4
        ("l4", L4_MIB, 4, 512 + 1.5 * 2048 + 2 * 80 + 1024 * 4 / 8),  # 4,256
    ],
)
def test_the_current_fraction_is_what_the_reserve_leaves(gpu: str, mib: int, tp: int, reserved_mib: float) -> None:
    d, _, _ = _deployment(None, tp, gpu)
    assert memory_fraction(d).value == round((mib - reserved_mib) / mib, 3)


def test_hand_worked_current_fractions() -> None:
    # (81,559 − 13,440) / 81,559 = 0.83521; (81,559 − 14,848) / 81,559 = 0.81795; (23,034 − 4,256) / 23,034 = 0.81523
    assert [memory_fraction(_deployment(None, tp, gpu)[0]).value for gpu, tp in (("h100-sxm", 1), ("h100-sxm", 8), ("l4", 4))] == [
        0.835,
        0.818,
        0.815,
    ]


def test_kv_capacity_by_hand_at_tp_1_and_tp_8() -> None:
    # Llama-3.1-8B bf16: 8,030,261,248 parameters x 2 B, split 8 ways at TP 8; KV 32 layers x 8 heads x 128 x 2 (K, V)
    # x 2 B = 131,072 B a token, one head a GPU at TP 8 (16,384 B). The runtime sees 85,520,809,984 B less the
    # driver's 455,081,984 B = 85,065,728,000 B. SGLang takes its fraction of what is free before the weights load
    # (model_runner: rest_memory = available_gpu_memory - total_gpu_memory * (1 - mem_fraction_static), total_gpu_memory
    # measured after the distributed init): the visible bytes less the runtime's and the TP group's buffers.
    visible = 85_520_809_984 - 455_081_984
    for tp, fraction, per_token in ((1, 0.835, 131_072), (8, 0.818, 16_384)):
        d, w, _ = _deployment(None, tp)
        mem = estimate_memory(d, w)
        kept = mem.engine_kept
        assert kept is not None and mem.preload_bytes == kept.runtime_bytes + kept.comm_buffer_bytes
        weights = 8_030_261_248 * 2 / tp
        assert mem.weights_bytes == weights
        budget = (visible - mem.preload_bytes) * fraction - weights
        assert budget < visible - weights - mem.overhead_bytes  # the fraction binds, not the overhead
        assert mem.kv_capacity_tokens == int(budget // per_token)
    # TP 1, no TP group, the runtime's 268,435,456 B: (85,065,728,000 − 268,435,456) x 0.835 − 16,060,522,496
    # = 54,745,216,778 B → 417,672 tokens (at 0.88 and without the pre-load term, 448,587)
    d, w, _ = _deployment(None, 1)
    assert estimate_memory(d, w).preload_bytes == 268_435_456
    assert estimate_memory(d, w).kv_capacity_tokens == 417_672


def test_the_knob_wins_over_the_rule() -> None:
    d, _, _ = _deployment("0.4.3.post4", 8, gpu_memory_utilization=0.93)
    assert memory_fraction(d).value == 0.93
    spec = {
        "model": "llama-3.1-8b",
        "engine": "sglang",
        "workload": {"users": 8, "context_tokens": 4096, "output_tokens": 256},
        "sla": {"max_tpot": "30ms"},
        "search": {"gpus": ["h100-sxm"], "tp": [8], "weights": ["bf16"], "kv_cache": ["bf16"]},
    }
    assert memory_fraction(problem_of(spec).shapes[0].deployment).value == 0.818
    given = problem_of({**spec, "overrides": {"factors": {"memory_utilization": 0.9}}}).shapes[0].deployment
    assert memory_fraction(given).value == 0.9


def test_deploy_launches_the_fraction_the_plan_sized() -> None:
    d, _, _ = _deployment(None, 8)
    assert memory_fraction(d).why.startswith("SGLang's default for 81,559 MiB at TP 8")
    problem = problem_of(
        {
            "model": "llama-3.1-8b",
            "engine": "sglang",
            "workload": {"users": 8, "context_tokens": 4096, "output_tokens": 256},
            "sla": {"max_tpot": "30ms"},
            "search": {"gpus": ["h100-sxm"], "tp": [8], "weights": ["bf16"], "kv_cache": ["bf16"]},
        }
    )
    from solver.explain.solve import solve

    argv = emit(solve(problem), "sglang").argv
    assert argv[argv.index("--mem-fraction-static") + 1] == "0.818"


def _line(rule: dict) -> ReleaseLine:
    return ReleaseLine(
        engine="sglang",
        line="x",
        since="0.1.0",
        until="0.2.0",
        label="test",
        as_of=dt.date(2026, 12, 6),
        overrides={"fraction_rule": Sourced(rule, "hand")},
    )


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"source": "s", "by_tp": [{"min_tp": 2, "fraction": 0.8}]}, "min_tp must start at 1"),
        ({"source": "s"}, "give by_tp"),
        ({"source": "s", "by_tp": [{"min_tp": 1, "fraction": 1.5}]}, "fraction_rule"),
        (
            {
                "source": "s",
                "reserve": [
                    {"below_mib": None, "chunked_prefill_size": 1, "cuda_graph_max_bs": 1, "cuda_graph_max_bs_tp4": 1},
                    {"below_mib": 10, "chunked_prefill_size": 1, "cuda_graph_max_bs": 1, "cuda_graph_max_bs_tp4": 1},
                ],
            },
            "below_mib must rise",
        ),
    ],
)
def test_a_bad_rule_is_refused_by_name(rule: dict, message: str) -> None:
    engines = {e.name: e for e in CAT.engines}
    with pytest.raises(ValueError, match=message):
        Releases(ReleasesFile(dt.date(2026, 12, 6), [_line(rule)]), engines)


def test_a_calibrations_fraction_wins_over_the_rule_as_it_does_over_vllms_default(tmp_path) -> None:
    # factors win in their order (physics/resolve.py engine_factors): the engine's default, the
    # device's, a calibration's, the spec's. A calibration file that gives memory_utilization
    # 0.5 for the H100 sizes vLLM's KV at 0.5; SGLang's rule is the engine's default, so 0.5 too
    from solver.catalog.calibration import with_calibration

    path = tmp_path / "cal.yaml"
    path.write_text("compute_basis: matmul_rate\ncalibration:\n  - gpu: h100-sxm\n    engine: sglang\n    factors: {memory_utilization: 0.5}\n")
    cat = with_calibration(CAT, path)
    spec = {
        "model": "llama-3.1-8b",
        "hardware": {"gpu": "h100-sxm", "tp": 1},
        "precision": {"weights": "bf16", "kv_cache": "bf16"},
        "workload": {"users": 1, "context_tokens": 4096, "output_tokens": 256},
    }
    for engine in ("vllm", "sglang"):
        d, _, _ = resolve(parse_input({**spec, "engine": engine}), cat)
        assert memory_fraction(d).value == 0.5, engine
    solve_spec = {
        "model": "llama-3.1-8b",
        "engine": "sglang",
        "workload": {"users": 8, "context_tokens": 4096, "output_tokens": 256},
        "sla": {"max_tpot": "30ms"},
        "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
    }
    from solver.optimise.shapes import build_problem
    from solver.spec.solve_spec import parse_spec

    assert memory_fraction(build_problem(parse_spec(solve_spec), cat).shapes[0].deployment).value == 0.5
    # without the calibration, the rule: round((81,559 − 13,440) / 81,559, 3) = 0.835
    d, _, _ = resolve(parse_input({**spec, "engine": "sglang"}), CAT)
    assert memory_fraction(d).value == 0.835
