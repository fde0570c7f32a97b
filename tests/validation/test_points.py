"""The validation set as a specification: every point sourced and dated, split once by
source into fit and test by the recorded rule, and the catalog's fitted factors
reproducible from the fit points alone — so no figure reported on the test split was
fitted on it."""

from __future__ import annotations

import copy
import dataclasses
import sys
from pathlib import Path

import pytest
import yaml

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import fit_defaults  # noqa: E402
import validation_points as vp  # noqa: E402

POINTS = vp.load_points()


def test_every_point_is_sourced_dated_and_split():
    ids = [p["id"] for p in POINTS]
    assert len(ids) == len(set(ids)) >= 150
    for p in POINTS:
        assert p["source"].startswith("http"), p["id"]
        assert str(p["as_of"])[:2] == "20", p["id"]
        assert p["split"] in ("fit", "test"), p["id"]


def test_one_source_lies_wholly_in_one_split():
    split_of: dict[str, set] = {}
    for p in POINTS:
        split_of.setdefault(vp.source_key(p), set()).add(p["split"])
    assert all(len(s) == 1 for s in split_of.values())


def test_the_recorded_split_is_the_rule():
    # Decided once: sources grouped by engine and main metric, largest first, dealt
    # alternately — the file records exactly what the rule gives.
    rule = vp.assign_split(POINTS)
    assert {p["id"]: p["split"] for p in POINTS} == {p["id"]: rule[vp.source_key(p)] for p in POINTS}
    # and both halves hold points of each of the four engines plan-opt plans for
    for engine in ("vllm", "sglang", "trtllm", "llama.cpp"):
        assert {p["split"] for p in POINTS if p["engine"] == engine} == {"fit", "test"}, engine


def test_each_source_goes_where_it_balances_the_halves():
    # Largest first. c (3 TTFT + 3 TPOT): a tie (6 either way) goes to fit. a (5 TTFT):
    # fit would leave |8−0| + |3−0| = 11 apart, test |3−5| + 3 = 5: test. b (4 TTFT): fit
    # |7−5| + 3 = 5, test |3−9| + 3 = 9: fit. d (2 TPOT): fit |7−5| + |5−0| = 7, test
    # |7−5| + |3−2| = 3: test.
    rows = [("a", "ttft", 5), ("b", "ttft", 4), ("c", "ttft", 3), ("c", "decode_tpot_batch1", 3), ("d", "decode_tpot_batch1", 2)]
    pts = [
        {"id": f"{s}-{m}-{i}", "engine": "vllm", "metric": m, "source": f"https://x/{s} quote", "as_of": "2025-01-01"}
        for s, m, n in rows
        for i in range(n)
    ]
    assert vp.assign_split(pts) == {"https://x/c": "fit", "https://x/a": "test", "https://x/b": "fit", "https://x/d": "test"}


def test_a_later_batch_is_dealt_on_top_and_never_moves_a_recorded_side():
    # Batch one: a (4 TTFT) goes to fit, b (3 TTFT) to test. Batch two (added later): five
    # more points of a stay with a in fit, whatever the balance (fit 9, test 3), and the
    # new source c (2 TTFT) goes where it balances them: test (|9 − 5| < |11 − 3|).
    def pts(src, n, added=None):
        return [
            {
                "id": f"{src}-{i}-{added}",
                "engine": "vllm",
                "metric": "ttft",
                "source": f"https://x/{src} q",
                "as_of": "2025-01-01",
                **({"added": added} if added else {}),
            }
            for i in range(n)
        ]

    first = pts("a", 4) + pts("b", 3)
    assert vp.assign_split(first) == {"https://x/a": "fit", "https://x/b": "test"}
    later = first + pts("c", 2, "2026-12-01") + pts("a", 5, "2026-12-01")
    assert vp.assign_split(later) == {"https://x/a": "fit", "https://x/b": "test", "https://x/c": "test"}


def test_from_its_strata_batch_a_newer_llama_cpp_build_is_dealt_against_its_own_era():
    # Batch one, dealt by engine: a (6 TPOT, a 2024 build) goes to fit (a tie); b (2, a 2025
    # build) to test (fit would leave |8 - 0| = 8 apart, test |6 - 2| = 4). A new source c
    # (2, a 2025 build) in a batch from STRATA_FROM on is balanced within the 2025 builds:
    # fit |2 - 2| = 0 against test |0 - 4| = 4, so fit, where by engine it would go to
    # test (|8 - 2| = 6 against |6 - 4| = 2).
    def pts(src, n, as_of, added=None):
        return [
            {
                "id": f"{src}-{i}",
                "engine": "llama.cpp",
                "metric": "decode_tpot_batch1",
                "source": f"https://x/{src} q",
                "as_of": as_of,
                **({"added": added} if added else {}),
            }
            for i in range(n)
        ]

    first = pts("a", 6, "2024-05-10") + pts("b", 2, "2025-06-01")
    assert vp.assign_split(first) == {"https://x/a": "fit", "https://x/b": "test"}
    assert vp.assign_split(first + pts("c", 2, "2025-07-01", "2026-12-02"))["https://x/c"] == "test"
    assert vp.assign_split(first + pts("c", 2, "2025-07-01", vp.STRATA_FROM))["https://x/c"] == "fit"


def test_a_llama_cpp_run_on_vulkan_is_not_scored_its_cuda_twin_is():
    # plan-opt plans llama.cpp's CUDA, ROCm and Metal builds; a Vulkan run is another
    # backend's kernels (1.8x slower than ROCm's on the same RX 6800 XT prompt, PR #2059).
    def run(backend):
        return {
            "id": "x",
            "engine": "llama.cpp",
            "metric": "decode_tpot_batch1",
            "model": "llama-3.1-8b",
            "gpu": "rtx-3090",
            "tp": 1,
            "count": 1,
            "weights": "q4_0",
            "conditions": {"batch": 1, "output_tokens": 128, "backend": backend},
            "measured": {"value": 100.0, "unit": "tokens_per_s"},
            "source": "https://x/a q",
            "as_of": "2025-06-01",
        }

    assert vp.out_of_reach(run("Vulkan")) == "llama.cpp Vulkan backend (plans are CUDA, ROCm, Metal)"
    assert vp.out_of_reach(run("CUDA")) is None


def test_a_kv_figure_logged_by_an_engine_that_then_refused_to_start_is_not_scored():
    # tensorrtllm_backend issue 366: the Triton launch logged 29,184 KV tokens, then
    # refused to start (the cache held less than one sequence): not a configuration that
    # serves. The same figures from a run that started are scored.
    def run(started):
        cond = {"tokens_per_block": 128} | ({} if started is None else {"started": started})
        return {
            "id": "x",
            "engine": "trtllm",
            "metric": "kv_cache_tokens",
            "model": "mistral-7b",
            "gpu": "a10g",
            "tp": 4,
            "count": 4,
            "weights": "fp16",
            "kv_cache": "fp16",
            "conditions": cond,
            "measured": {"value": 29184, "unit": "tokens"},
            "source": "https://x/a q",
            "as_of": "2024-03-06",
        }

    assert vp.out_of_reach(run(False)) == "the engine failed to start"
    assert vp.out_of_reach(run(None)) is None
    assert vp.out_of_reach(run(True)) is None
    recorded = [q for q in POINTS if q["id"] == "trtllm-tb366-mistral-7b-a10g-tp4-triton-kv"]
    assert len(recorded) == 1 and vp.out_of_reach(recorded[0]) == "the engine failed to start"


def test_a_ttft_through_an_http_server_is_told_from_a_session_benchmark():
    served = {"metric": "ttft", "engine": "vllm", "conditions": {"concurrency": 1}}
    session = {"metric": "ttft", "engine": "trtllm", "conditions": {"benchmark": "gptSessionBenchmark (no server)"}}
    bench = {"metric": "ttft", "engine": "llama.cpp", "conditions": {"concurrency": 1}}
    assert vp.served_ttft(served) and not vp.served_ttft(session) and not vp.served_ttft(bench)
    assert not vp.served_ttft({**served, "metric": "decode_tpot_batch1"})
    launched = {"metric": "ttft", "engine": "vllm", "conditions": {"batch": 1, "serve_command": "vllm serve meta-llama/Llama-3.1-405B-Instruct"}}
    assert vp.served_ttft(launched)


def test_a_served_run_batches_in_flight_a_run_of_one_static_batch_does_not():
    def run(engine, version="", benchmark="", batching=None):
        cond = {"concurrency": 64, "engine_version": version, "benchmark": benchmark}
        if batching:
            cond["batching"] = batching
        return {"metric": "throughput", "engine": engine, "conditions": cond}

    # SGLang's 0.5 line serves in flight; only TensorRT-LLM's v0.5 batched statically
    assert vp.in_flight(run("sglang", "SGLang v0.5.7", "InferenceX harness (bench_serving style)"))
    assert not vp.in_flight(run("trtllm", "TensorRT-LLM v0.5.0"))
    assert vp.in_flight(run("trtllm", "TensorRT-LLM v1.0"))
    # one batch start to end, whichever field says so
    assert not vp.in_flight(run("vllm", "vLLM 0.7.2", "benchmarks/benchmark_latency.py --batch-size 16"))
    assert not vp.in_flight(run("sglang", "SGLang v0.4.3", "python3 -m sglang.bench_one_batch --batch-size 1"))
    assert not vp.in_flight(run("trtllm", "TensorRT-LLM v0.6.1", batching="static"))
    assert not vp.in_flight(run("llama.cpp", "build 2834"))


def test_a_run_s_sglang_launch_command_sets_its_layout_where_its_conditions_do_not():
    def run(command, **cond):
        measured = {"value": 400.0, "unit": "tokens_per_s"}
        return {
            "metric": "throughput",
            "engine": "sglang",
            "model": "deepseek-v3",
            "tp": 8,
            "measured": measured,
            "conditions": {"launch_command": command, **cond},
        }

    # --tp 8 --ep 8 --dp 8 --enable-dp-attention: attention DP over all 8, experts over 8
    both = run("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --ep 8 --dp 8 --enable-dp-attention")
    assert vp.launched_layout(both) == (8, 8) and vp.parallelism_of(both) == "dp_ep"
    assert vp.out_of_reach(both) is None
    # the 0.4 line without --dp: DP attention over every TP rank, the experts TP-split (no EP)
    attention_only = run("python3 -m sglang.launch_server --model deepseek-ai/DeepSeek-R1 --tp 8 --enable-dp-attention")
    assert vp.launched_layout(attention_only) == (None, 8) and vp.parallelism_of(attention_only) == "tp"
    assert vp.out_of_reach(attention_only) == "expert or attention data parallelism"
    # DP attention over 2 of 8 ranks, with or without EP over all 8, is not dp_ep's layout
    part = run("python3 -m sglang.launch_server --tp 8 --ep 8 --dp 2 --enable-dp-attention")
    assert vp.launched_layout(part) == (8, 2) and vp.parallelism_of(part) == "tp"
    assert vp.out_of_reach(part) == "expert or attention data parallelism"
    assert vp.parallelism_of(run("python3 -m sglang.launch_server --tp 8 --ep-size 4")) == "tp_ep"
    # recorded conditions win over the command; a plain launch is plain TP
    assert vp.launched_layout(run("python3 -m sglang.launch_server --tp 8 --enable-dp-attention", ep=8, enable_attention_dp=False)) == (8, 0)
    plain = run("python3 -m sglang.launch_server --model deepseek-ai/DeepSeek-R1 --tp 8")
    assert vp.launched_layout(plain) == (None, 0) and vp.out_of_reach(plain) is None


def test_a_group_is_fitted_alone_only_when_its_points_separate_reads_from_flops():
    def term(i, reads, flops, kind="tpot"):
        return fit_defaults.Term(f"p{i}", kind, ("vllm", "hbm"), "bf16", "bf16", 0.01, reads, 1.0, flops, 0.0, 0.0, 0.0, 32)

    read_bound = [term(i, 0.01, 0.001) for i in range(3)]
    flop_bound = [term(i + 3, 0.001, 0.01) for i in range(3)]
    assert fit_defaults.Model(read_bound + flop_bound).identifiable(("vllm", "hbm"))
    assert not fit_defaults.Model(read_bound[:2] + flop_bound * 2).identifiable(("vllm", "hbm"))
    # points at one TP size above 1 cannot tell a per-rank cost from a bandwidth share
    at_tp8 = [dataclasses.replace(t, tp=8) for t in read_bound + flop_bound]
    assert not fit_defaults.Model(at_tp8).identifiable(("vllm", "hbm"))
    assert fit_defaults.Model(at_tp8 + [dataclasses.replace(read_bound[0], tp=1)]).identifiable(("vllm", "hbm"))


def test_a_cost_per_rank_a_group_cannot_see_is_its_fallback_groups_not_zero():
    def group(engine, step_s, tp):
        # 3 read-bound and 3 FLOP-bound steps at TP 1, and 3 read-bound at `tp`
        def term(i, reads, flops, tp_size):
            return fit_defaults.Term(
                f"{engine}{i}", "tpot", (engine, "hbm"), "bf16", "bf16", step_s, reads, 1.0, flops, 0.0, 0.0, 0.0, 32, tp=tp_size
            )

        return (
            [term(i, step_s / 2, step_s / 20, 1) for i in range(3)]
            + [term(i + 3, step_s / 20, step_s / 2, 1) for i in range(3)]
            + [term(i + 6, step_s / 2, step_s / 20, tp) for i in range(3)]
        )

    # 7 ranks beyond the first at 0.1 ms are 7 % of a 10 ms step, 0.7 % of a 100 ms one
    serving, trtllm, llamacpp = group("serving", 0.010, 8), group("trtllm", 0.100, 8), group("llama.cpp", 0.100, 8)
    model = fit_defaults.Model(serving + trtllm + llamacpp)
    assert model.sensitive(("serving", "hbm"), "s4") == 3 and model.sensitive(("trtllm", "hbm"), "s4") == 0
    assert model.tie == {
        (("trtllm", "hbm"), "s4"): (("serving", "hbm"), "s4"),  # llama.cpp's kernels are not the serving engines'
        (("trtllm", "hbm"), "s3"): (("serving", "hbm"), "s3"),  # the cost per MoE layer is pooled (below)
    }
    free = model.free(fit_defaults.MIN_POINTS, fit_defaults.MIN_FORMAT_POINTS)
    assert (("serving", "hbm"), "s4") in free and (("trtllm", "hbm"), "s4") not in free and (("llama.cpp", "hbm"), "s4") in free
    model.values[(("serving", "hbm"), "s4")] = 1.7e-4
    assert model.value(("trtllm", "hbm"), "s4") == 1.7e-4
    # a TP 8 step of trtllm's now carries serving's 7 × 0.17 ms
    at_rest = fit_defaults.Model(trtllm[6:7])
    at_rest.tie = {}
    assert model.predict()[len(serving) + 6] - at_rest.predict()[0] == pytest.approx(7 * 1.7e-4, rel=1e-9)


def test_the_cost_per_moe_layer_is_the_pools_even_where_the_pool_is_not_fitted():
    # TensorRT-LLM's steps at TP 1 (3 read-bound, 3 FLOP-bound) and TP 8 are identifiable;
    # the serving pool's 6, all at TP 8, are not (one TP size above 1). TensorRT-LLM's cost
    # per MoE layer is still the pool's (its prior where unfitted), not its own.
    def term(engine, i, reads, flops, tp):
        return fit_defaults.Term(
            f"{engine}{i}", "tpot", (engine, "hbm"), "bf16", "bf16", 0.02, reads, 1.0, flops, 0.0, 0.0, 0.0, 32, tp=tp, moe_layers=32
        )

    trtllm = [term("trtllm", i, 0.01, 0.001, 1) for i in range(3)] + [term("trtllm", i + 3, 0.001, 0.01, 1) for i in range(3)]
    trtllm += [term("trtllm", i + 6, 0.01, 0.001, 8) for i in range(3)]
    serving = [term("serving", i, 0.01, 0.001, 8) for i in range(3)] + [term("serving", i + 3, 0.001, 0.01, 8) for i in range(3)]
    model = fit_defaults.Model(trtllm + serving)
    assert model.fitted_groups(fit_defaults.MIN_POINTS) == [("trtllm", "hbm")]
    assert model.tie[(("trtllm", "hbm"), "s3")] == (("serving", "hbm"), "s3")
    free = model.free(fit_defaults.MIN_POINTS, fit_defaults.MIN_FORMAT_POINTS)
    assert (("trtllm", "hbm"), "s3") not in free
    assert model.value(("trtllm", "hbm"), "s3") == fit_defaults.PRIOR["s3"]


def test_decode_expert_share_prices_the_experts_flops_the_mode_names(monkeypatch):
    # A FLOP-bound FP8 MoE step (reads 1 µs): 10 ms of matmuls at unit shares, half of it
    # the routed experts'; c = 0.5 (the prior), the experts' share sx = 0.25.
    def term(i, chunk_share=0.0, linear_chunk_s=0.0, chunk_expert_s=0.0):
        return fit_defaults.Term(
            f"m{i}", "tpot", ("vllm", "hbm"), "fp8", "fp8", 0.02, 1e-6, 0.0, 0.010, 0.0, 0.0, 0.0, 32, moe_layers=32,
            decode_expert_fraction=0.5, chunk_share=chunk_share, linear_chunk_s=linear_chunk_s, weights_chunk_s=1e-6, chunk_expert_s=chunk_expert_s,
        )  # fmt: skip

    # half the steps carry a chunk: 2 ms more matmuls, 1.6 ms of them its experts'
    terms = [term(0), term(1, 0.5, 0.012, 0.0016)]

    def predict(mode):
        monkeypatch.setattr(fit_defaults, "DECODE_EXPERT_SHARE", mode)
        model = fit_defaults.Model(terms)
        model.values[("fp8", "sx")] = 0.25
        return model.predict()

    none, chunk, every = predict("none"), predict("chunk"), predict("all")
    # "all": the decoders' experts at 1 / 0.25: 10 ms × 0.5 × (4 − 1) / 0.5 = 30 ms more a step
    assert every[0] - none[0] == pytest.approx(0.030, rel=1e-9)
    # "chunk": a step without a chunk as "none"; one with, its chunk's experts 1.6 ms × 3 /
    # 0.5 = 9.6 ms more, in half the steps: 4.8 ms
    assert chunk[0] == pytest.approx(none[0], rel=1e-12)
    assert chunk[1] - none[1] == pytest.approx(0.0048, rel=1e-9)
    # "all": both, 30 + 4.8 ms
    assert every[1] - none[1] == pytest.approx(0.0348, rel=1e-9)


def test_decode_expert_fraction_by_hand(build_deployment):
    # Mixtral-8x7B: 12,879,925,248 active parameters, 2 of 8 routed experts a token of
    # 32 × 8 × 3 × 4,096 × 14,336 = 45,097,156,608: 11,274,289,152 of them routed.
    d, _, _ = build_deployment("mixtral-8x7b", "h100-sxm", prompt=128, output=128, tp=2)
    assert fit_defaults.decode_expert_fraction(d) == pytest.approx(11_274_289_152 / 12_879_925_248, rel=1e-12)
    dense, _, _ = build_deployment("llama-3.1-8b", "h100-sxm", prompt=128, output=128)
    assert fit_defaults.decode_expert_fraction(dense) == 0.0


def test_a_github_source_is_its_repository_revision_or_thread():
    base = "https://github.com/o/r/blob/abc123"
    assert vp.source_key({"source": f"{base}/logs/a.log — quote"}) == vp.source_key({"source": f"{base}/logs/b.log x"}) == base
    assert vp.source_key({"source": "https://github.com/o/r/issues/7#c1 quote"}) == "https://github.com/o/r/issues/7#c1"


def _values(model):
    free = model.free(fit_defaults.MIN_POINTS, fit_defaults.MIN_FORMAT_POINTS)
    return {k: model.value(*k) for k in free + list(model.tie)}  # a tied cost is written as its source's


def _fitted_from(points):
    return _values(fit_defaults.fit_model(fit_defaults.fit_terms(points, vp.default_catalog())))


@pytest.fixture(scope="module")
def fit_split_model():
    """The model fitted on the fit split's points alone, once for this file (the fitted
    factors and the release terms are both read from it; neither test changes it)."""
    return fit_defaults.fit_model(fit_defaults.fit_terms([p for p in POINTS if p["split"] == "fit"], vp.default_catalog()))


@pytest.fixture(scope="module")
def fitted(fit_split_model):
    return _values(fit_split_model)


def test_catalog_fitted_factors_are_what_the_fit_points_give(fitted):
    # catalogs/fitted.yaml is the output of bench/fit_defaults.py on the fit split.
    data = yaml.safe_load((vp.ROOT / "catalogs" / "fitted.yaml").read_text())
    names = {
        "e": "bandwidth_efficiency",
        "c": "compute_efficiency",
        "s0": "step_overhead_s",
        "s1": "layer_overhead_s",
        "s2": "sequence_overhead_s",
        "s3": "expert_layer_overhead_s",
        "s4": "tp_rank_overhead_s",
        fit_defaults.ATTENTION_SHARE: "attention_bandwidth_share",
    }
    shares = {"sb": "bandwidth_share", "sc": "compute_share", "sx": "expert_compute_share"}
    for (owner, key), value in fitted.items():
        if owner == fit_defaults.SERVED:  # the front end vLLM and SGLang share
            for engine in ("vllm", "sglang"):
                assert data["engines"][engine]["hbm"]["request_overhead_s"] == pytest.approx(value, rel=1e-3, abs=1e-5)
            assert data["engines"]["trtllm"]["hbm"]["request_overhead_s"] == 0  # no served TTFT of its own in the fit split
            continue
        if owner == fit_defaults.GLOBAL:  # every engine's: the catalog's defaults
            assert data["defaults"]["prefill_expert_overhead_s"] == pytest.approx(value, rel=1e-3), key
            continue
        if isinstance(owner, tuple):
            engine, kind = owner
            engine = "vllm" if engine == "serving" else engine  # the pooled fit is what vLLM gets
            if kind not in data["engines"][engine]:
                continue
            got = data["engines"][engine][kind][names[key]]
        else:
            got = data["precisions"][owner][shares[key]]
        assert got == pytest.approx(value, rel=1e-3, abs=1e-7), (owner, key)
    assert len(fitted) >= 20


def test_test_points_cannot_move_the_fit(fitted):
    # Scale every test point's measurement by 3: a fit that read them would change.
    altered = copy.deepcopy(POINTS)
    for p in altered:
        if p["split"] == "test":
            p["measured"]["value"] *= 3
    assert _fitted_from(altered) == fitted


def test_a_run_recorded_on_gpus_its_weights_cannot_fit_is_not_scored():
    # A vLLM recipe's "--tensor-parallel-size 1" for Llama-3.1-405B in FP8 on one MI355X:
    # 405 billion parameters at 1 byte are over 405 GB, the GPU holds 288 GB. The run
    # cannot have been as recorded, so it is not a prediction to score (or to fit).
    p = {
        "id": "x",
        "metric": "decode_tpot_batched",
        "engine": "vllm",
        "model": "llama-3.1-405b",
        "gpu": "mi355x",
        "tp": 1,
        "weights": "fp8",
        "kv_cache": "fp8",
        "conditions": {"concurrency": 64, "prompt_tokens": 8192, "output_tokens": 1024},
        "measured": {"value": 59.72, "unit": "ms_per_token"},
        "as_of": "2025-11-27",
    }
    assert vp.predict(p) is None and vp.does_not_fit(p)
    at_tp8 = {**p, "tp": 8}
    assert vp.predict(at_tp8) is not None and not vp.does_not_fit(at_tp8)


def test_a_pipeline_parallel_run_is_predicted_over_its_stages():
    # vLLM --pipeline-parallel-size 4 on four GPUs: four stages, a quarter of the layers each.
    p = {
        "id": "x",
        "metric": "decode_tpot_batch1",
        "engine": "vllm",
        "model": "qwen3-235b-a22b",
        "gpu": "rtx-pro-6000",
        "count": 4,
        "tp": 1,
        "weights": "fp8",
        "kv_cache": "bf16",
        "conditions": {"concurrency": 1, "prompt_tokens": 1024, "output_tokens": 256, "pipeline_parallel_size": 4},
        "measured": {"value": 21.19, "unit": "ms_per_token"},
        "as_of": "2025-11-27",
    }
    d, _, _ = vp.deployment_for(p, 1, 1024, 256)
    assert (d.tp, d.pp) == (1, 4)


def test_a_served_run_with_more_requests_in_flight_than_the_kv_holds_runs_what_fits():
    # vLLM at 512 requests in flight for Llama-3.1-8B on one H100 with 8k prompts: about
    # 55 GB of KV at 131,072 B a token holds some 48 sequences of 8,704 tokens, so the engine runs that many and
    # queues the rest; the step is the step of the sequences it admits.
    base = {
        "id": "x",
        "metric": "decode_tpot_batched",
        "engine": "vllm",
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm",
        "tp": 1,
        "weights": "bf16",
        "kv_cache": "bf16",
        "measured": {"value": 50.0, "unit": "ms_per_token"},
        "as_of": "2025-11-27",
    }
    crowd = {**base, "conditions": {"concurrency": 512, "prompt_tokens": 8192, "output_tokens": 1024}}
    d, w, t = vp.deployment_for(crowd, 512, 8192, 1024, batching="continuous")
    w = dataclasses.replace(w, kv_fill=min(1.0, (8192 + 512) / w.context_tokens))
    held = vp.evaluate(d, w, t, with_remedies=False).memory.max_batch
    assert 30 <= held <= 60
    fits = {**base, "conditions": {"concurrency": held, "prompt_tokens": 8192, "output_tokens": 1024}}
    assert vp.predict(crowd) == pytest.approx(vp.predict(fits))


def test_a_closed_loop_run_ends_with_fewer_requests_in_flight():
    # Two clients, requests of 1 and 3 tokens, a step of 0.5 s + 0.25 s a sequence:
    # one step of both (1.0 s), then two of the long one alone (0.75 s each): 4 tokens
    # in 2.5 s, 1.6 tokens/s, against 2 / 1.0 s = 2 with both busy all run: 0.8. In
    # flight: (2 × 1.0 + 1 × 1.5) / 2.5 = 1.4 requests.
    def step_s(batch):
        return 0.5 + 0.25 * batch

    rate, held = vp.closed_loop([1, 3], 2, step_s)
    assert rate == pytest.approx(1.6) and held == pytest.approx(1.4)
    assert rate / (2 / step_s(2)) == pytest.approx(0.8)
    # A third request of 2 tokens takes the first client's place at step 1: both run
    # to step 3 (3 steps of 1.0 s), 6 tokens in 3 s: no drain at all.
    assert vp.closed_loop([1, 3, 2], 2, step_s)[0] == pytest.approx(2 / step_s(2))


def test_sglang_random_lengths_spread_over_the_range_ratio_and_others_stay_fixed():
    # bench_serving's random dataset: uniform on [max(1, r × L), L], r = 0 by default:
    # a mean of about (1 + 1000) / 2 for L = 1000; r = 1 is every request at L.
    cond = {"benchmark": "python -m sglang.bench_serving", "dataset": "random", "random_output_len": 1000, "output_tokens": 500}
    spread = vp.output_lengths({"conditions": cond}, 400)
    assert min(spread) <= 5 and max(spread) >= 995 and sum(spread) / 400 == pytest.approx(500.5, rel=0.01)
    assert set(vp.output_lengths({"conditions": {**cond, "random_range_ratio": 1}}, 10)) == {1000}
    vllm = {"benchmark": "vllm bench serve", "dataset": "random", "random_output_len": 1000, "output_tokens": 1000}
    assert set(vp.output_lengths({"conditions": vllm}, 10)) == {1000}


def test_a_fixed_count_run_of_spread_lengths_is_predicted_below_every_client_busy():
    # 80 requests through 16 clients, lengths spread over 1-1,000 tokens: the last
    # requests run with a few clients busy, so the run's throughput falls below 16
    # sequences' rate (SGLang's own bench_serving printed a mean concurrency of 13.5).
    p = {
        "id": "x",
        "metric": "throughput",
        "engine": "sglang",
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm",
        "tp": 1,
        "weights": "bf16",
        "measured": {"value": 1000.0, "unit": "tokens_per_s"},
        "conditions": {
            "concurrency": 16,
            "prompt_tokens": 500,
            "output_tokens": 500,
            "benchmark": "python -m sglang.bench_serving",
            "dataset": "random",
            "random_output_len": 1000,
        },
    }
    endless = vp.predict(p)
    ran = vp.predict({**p, "conditions": {**p["conditions"], "num_prompts": 80}})
    assert 0.75 * endless < ran < 0.95 * endless


def test_the_cost_per_moe_layer_is_one_for_the_serving_engines_on_a_memory_kind():
    # TensorRT-LLM fitted alone on HBM takes the pooled serving group's cost per MoE layer;
    # llama.cpp keeps its own. A 58-MoE-layer step then carries 58 x 24 us = 1.392 ms of it.
    def term(engine, i, moe_layers=0):
        reads, flops = (0.005, 0.0005) if i % 2 else (0.0005, 0.005)
        return fit_defaults.Term(
            f"{engine}{i}", "tpot", (engine, "hbm"), "bf16", "bf16", 0.01, reads, 1.0, flops, 0.0, 0.0, 0.0, 32, tp=1, moe_layers=moe_layers
        )

    terms = [term(e, i) for e in ("serving", "trtllm", "llama.cpp") for i in range(6)]
    model = fit_defaults.Model(terms + [term("trtllm", 6, moe_layers=58)])
    assert model.tie[(("trtllm", "hbm"), "s3")] == (("serving", "hbm"), "s3")
    assert (("llama.cpp", "hbm"), "s3") not in model.tie
    free = model.free(fit_defaults.MIN_POINTS, fit_defaults.MIN_FORMAT_POINTS)
    assert (("serving", "hbm"), "s3") in free and (("trtllm", "hbm"), "s3") not in free
    before = model.predict()[-1]
    model.values[(("serving", "hbm"), "s3")] = 24e-6
    assert model.predict()[-1] - before == pytest.approx(58 * 24e-6, rel=1e-9)


def test_the_16_bit_prefill_share_is_one_value_fitted_on_bf16_and_fp16_prompts():
    # Two fp16 prompts and two bf16 ones, each all GEMM FLOPs (10 ms at utilisation 1)
    # measured at 15 ms with the group's utilisation at 0.5: 10 / (0.5 x share) = 15 ms
    # needs a share of 4/3, one value that both formats' points set.
    def term(i, fmt):
        return fit_defaults.Term(f"p{i}", "ttft", ("trtllm", "hbm"), fmt, fmt, 0.015, 0.0, 1.0, 0.010, 0.0, 0.0, 0.0, 32, source=f"s{i % 2}")

    terms = [term(i, "fp16") for i in range(2)] + [term(i + 2, "bf16") for i in range(2)]
    model = fit_defaults.Model(terms)
    assert model.tie[("fp16", "sc")] == ("bf16", "sc")
    assert ("bf16", "sc") in model.free(fit_defaults.MIN_POINTS, 4) and ("fp16", "sc") not in model.free(fit_defaults.MIN_POINTS, 4)
    model.values[(("trtllm", "hbm"), "c")] = 0.5
    model.values[(("trtllm", "hbm"), "s1")] = 0.0
    model.values[("bf16", "sc")] = 4 / 3
    assert model.predict() == pytest.approx([0.015] * 4, rel=1e-9)
    # and the fit, from the prior 1, finds it (to its grid's step) on the four points together
    model.values[("bf16", "sc")] = 1.0
    model.fit([("bf16", "sc")])
    assert model.value("fp16", "sc") == model.value("bf16", "sc") == pytest.approx(4 / 3, rel=0.02)


def test_a_median_s_interval_resamples_campaigns_not_points():
    # Five campaigns that all measure 10 % leave nothing to resample: the interval is the
    # median itself, however many points each holds.
    same = {f"c{i}": [0.10] * (i + 1) for i in range(5)}
    assert vp.campaign_interval(same) == (0.10, 0.10)
    # One campaign of 50 points at 40 % beside four of one point at 5 %: by points the
    # median is 40 %, but a draw without that campaign (0.8^5 = 33 % of draws) has a
    # median of 5 %, so the interval reaches down to 5 % and up to 40 %.
    lopsided = {"big": [0.40] * 50, **{f"small{i}": [0.05] for i in range(4)}}
    lo, hi = vp.campaign_interval(lopsided)
    assert (lo, hi) == (0.05, 0.40)
    # seeded: the figure quoted is the figure rerun
    assert vp.campaign_interval(lopsided, seed=3) == vp.campaign_interval(lopsided, seed=3)
    with pytest.raises(ValueError):
        vp.campaign_interval({"empty": []})


def test_a_campaign_s_offset_is_taken_out_before_its_shape_is_scored():
    import math

    # A campaign 10 % slow at every run has an offset of 10 % and no shape error; one
    # run alone gives an offset (20 %) but too few points to tell a shape from it; a
    # campaign of 0.9x, 1.0x and 1.1x the prediction has offset 0 and shape 10 % twice.
    logs = {
        "level": [math.log(1.1)] * 3,
        "alone": [math.log(0.8)],
        "spread": [math.log(0.9), math.log(1.0), math.log(1.1)],
    }
    offsets, shape = vp.offset_and_shape(logs)
    assert offsets == pytest.approx([0.10, 0.20, 0.0])
    assert shape == pytest.approx([0.0, 0.0, 0.0, 0.1, 0.0, 0.1])


def test_a_run_s_date_is_its_year_with_the_fraction_gone_by():
    # 2 July is day 183 of 2025: 182 days gone of 365.25; a month alone is read as its 15th
    assert vp.run_year({"as_of": "2025-07-02"}) == pytest.approx(2025 + 182 / 365.25)
    assert vp.run_year({"as_of": "2026-01"}) == pytest.approx(2026 + 14 / 365.25)
    assert vp.run_year({"as_of": "2024"}) == pytest.approx(2024 + (182 + 14) / 365.25)  # 15 July of a leap year
    assert vp.run_year({}) is None
    assert vp.run_year({"as_of": "unknown"}) is None


def test_a_campaign_offset_trend_is_the_slope_of_offsets_on_dates():
    import math

    # Offsets of 1.0x, 1.1x and 1.21x the measured time a year apart grow 10 % a year;
    # two more campaigns of the middle year, 5 % of log either side, leave the slope.
    line = [(2024.0, 0.0), (2025.0, math.log(1.1)), (2026.0, math.log(1.21))]
    assert vp.offset_trend(line) == pytest.approx(0.10)
    spread = line + [(2025.0, math.log(1.1) + 0.05), (2025.0, math.log(1.1) - 0.05)]
    assert vp.offset_trend(spread) == pytest.approx(0.10)
    # falling offsets: 1.1x then 1.0x a year later is 1/1.1 − 1 = −9.1 % a year
    assert vp.offset_trend([(2025.0, math.log(1.1)), (2026.0, 0.0)]) == pytest.approx(1 / 1.1 - 1)
    # campaigns on a line resample to the same slope, so the interval is the slope itself
    assert vp.offset_trend_interval(line) == pytest.approx((0.10, 0.10))
    with pytest.raises(ValueError):
        vp.offset_trend([(2025.0, 0.1), (2025.0, 0.2)])


def test_kv_wait_by_littles_law():
    # 32 clients, 8 held, 2 s inside the engine: 8 / 2 s = 4 requests a second leave;
    # 32 = 4 × (wait + 2)  =>  wait = 6 s. All held: no wait.
    assert vp.kv_wait_s(32, 8, 2.0) == pytest.approx(6.0)
    assert vp.kv_wait_s(8, 8, 2.0) == 0.0


def _clients(p: dict, n: int) -> dict:
    q = copy.deepcopy(p)
    q["conditions"]["concurrency"] = n
    return q


def test_saturated_closed_loop_ttft_includes_the_wait_for_kv():
    """A TTFT run of more clients than the engine holds (its KV cache or max_num_seqs): each request waits for space,
    so the prediction is the loaded TTFT at the batch held plus a wait affine in the
    clients (Little's law: S × (clients − held) / held), far above the idle TTFT."""
    base = copy.deepcopy(next(p for p in POINTS if p["id"] == "vllm-ree2raz-qwen2.5-7b-l4-short-c4-ttft"))
    del base["conditions"]["enable_prefix_caching"]  # the same run without its prompt cache
    assert vp.out_of_reach(base) == "queueing"  # 4 clients fit the cache: an open question, out of reach
    many = [_clients(base, n) for n in (512, 768, 1024)]  # beyond the 256 sequences the engine runs
    assert all(vp.out_of_reach(q) is None for q in many)
    a, b, c = (vp.predict(q) for q in many)
    assert a < b < c
    assert c - b == pytest.approx(b - a, rel=1e-9)  # affine in the clients beyond those held
    idle = vp.predict(dict(copy.deepcopy(base), conditions={**base["conditions"], "concurrency": 1}))
    assert a > 10 * idle


def test_release_line_term_is_shrunk_by_campaigns_and_pooled_without_them(monkeypatch):
    """A release line's decode scale (fit_defaults.release_terms, tried by bench/fit_cv.py
    --release): every TPOT of the line measured e^0.2 × its prediction at the priors
    (8 ms of reads / e 0.8 = 10 ms, + 32 layers × 50 µs = 1.6 ms: 11.6 ms), one campaign,
    shrink k = 1: 0.2 × 1 / (1 + 1) = 0.1. A line the fit never saw keeps the pooled 0."""
    import math

    monkeypatch.setattr(fit_defaults, "RELEASE_SHAPE", "scale")
    monkeypatch.setattr(fit_defaults, "RELEASE_SHRINK", 1.0)
    monkeypatch.setattr(fit_defaults, "RELEASE_GROUPING", "line")
    monkeypatch.setattr(fit_defaults, "MIN_LINE_CAMPAIGNS", 1)
    measured = 0.0116 * math.exp(0.2)
    terms = [
        dataclasses.replace(
            fit_defaults.Term(f"p{i}", "tpot", ("vllm", "hbm"), "bf16", "bf16", measured, 0.008, 1.0, 0.0, 0.0, 0.0, 0.0, 32),
            source="a",
            line="vllm 0.6.5-0.7",
        )
        for i in range(3)
    ]
    value, campaigns = fit_defaults.release_terms(fit_defaults.Model(terms))["vllm 0.6.5-0.7"]
    assert campaigns == 1 and value == pytest.approx(0.1, abs=1e-9)
    unseen = fit_defaults.Model([dataclasses.replace(terms[0], line="vllm 0.21+")])
    unseen.release = {"vllm 0.6.5-0.7": (value, campaigns)}
    assert unseen.predict()[0] == pytest.approx(0.0116, rel=1e-9)
    monkeypatch.setattr(fit_defaults, "RELEASE_GROUPING", "v0")
    assert fit_defaults.release_key("vllm 0.5.4-0.6.4") == "vllm V0" and fit_defaults.release_key("vllm 0.8.5-0.14") is None


def test_llama_cpp_on_metal_fits_its_cost_per_layer_other_groups_hold_it():
    # Metal steps of 32- and 80-layer models, read-bound: 4.9 and 42.5 ms of reads (at
    # efficiency 1) measured at 10 and 55 ms. With efficiency e and a cost L per layer,
    # 4.9/e + 32 L = 10 and 42.5/e + 80 L = 55: from the first, 4.9/e = 10 − 32 L; then
    # 42.5/4.9 × (10 − 32 L) + 80 L = 55 → 86.735 − 277.55 L + 80 L = 55 → L = 31.735 /
    # 197.55 = 0.1606 ms (e = 4.9 / (10 − 5.14) = 1.008, where the fit's bound holds it at
    # 0.9). The held 50 µs cannot meet both; the fit, free up to 0.5 ms and pulled toward
    # 50 µs, moves L well above it (over twice the held cost). FLOP-bound steps of one layer (5 ms of FLOPs at
    # utilisation 1, measured 5 / 0.7 + 0.16 = 7.30 ms) let the group tell reads from FLOPs.
    def term(i, group, layers, reads_s, flops_s, measured_s):
        return fit_defaults.Term(f"p{i}", "tpot", group, "bf16", "bf16", measured_s, reads_s, 1.0, flops_s, 0.0, 0.0, 0.0, layers, overlapped=False)

    metal, cuda = ("llama.cpp", "apple.lpddr"), ("llama.cpp", "gddr")
    shapes = [(32, 0.0049, 0.0, 0.010), (80, 0.0425, 0.0, 0.055), (1, 1e-6, 0.005, 0.0073)] * 3
    terms = [term(i, metal, *shape) for i, shape in enumerate(shapes)]
    terms += [term(10 + i, cuda, 32, *((0.005, 0.0, 0.0062) if i % 2 else (1e-6, 0.005, 0.0078))) for i in range(6)]
    model = fit_defaults.fit_model(terms)
    free = model.free(fit_defaults.MIN_POINTS, fit_defaults.MIN_FORMAT_POINTS)
    assert (metal, "s1") in free and (cuda, "s1") not in free
    assert model.value(cuda, "s1") == fit_defaults.LAYER_OVERHEAD_S
    assert model.value(metal, "s1") > 2 * fit_defaults.LAYER_OVERHEAD_S


def test_the_metal_cost_per_layer_is_pulled_toward_metals_own_figure():
    # The Q6_K Metal commit's ~9 ms of a 7B token's other graph operations over its 32
    # layers: 9 / 32 = 0.28125 ms. Steps no cost per layer reaches (layers 0: reads at
    # efficiency 0.8, FLOPs at utilisation 0.7) leave the pull alone to place it: the grid's
    # nearest value to 0.28 ms, not CUDA's 50 µs.
    def term(i, reads_s, flops_s, measured_s):
        return fit_defaults.Term(
            f"p{i}", "tpot", ("llama.cpp", "apple.lpddr"), "bf16", "bf16", measured_s, reads_s, 1.0, flops_s, 0.0, 0.0, 0.0, 0, overlapped=False
        )

    assert fit_defaults.METAL_LAYER_S == pytest.approx(2.8125e-4)
    terms = [term(i, *((0.005, 0.0, 0.005 / 0.8) if i % 2 else (1e-6, 0.005, 0.005 / 0.7))) for i in range(8)]
    model = fit_defaults.fit_model(terms)
    assert model.value(("llama.cpp", "apple.lpddr"), "s1") == pytest.approx(2.8125e-4, rel=0.06)


def test_a_prompt_on_a_backends_16_bit_kernel_takes_the_16_bit_share_times_its_ratio():
    # Metal's kernel_mul_mm runs Q4_K_M prompts in the half template (catalogs/precisions.yaml,
    # compute_share_by_memory): a TTFT term with that ratio takes the 16-bit share, not the
    # format's own. One second of GEMMs at utilisation 1, c = 0.5, fp16's share 1.2, q4_k_m's
    # 0.8: on Metal 1 / (0.5 x 1.2 x 0.825) = 2.0202 s; on CUDA 1 / (0.5 x 0.8) = 2.5 s.
    def term(pid, group, weights, ratio):
        return fit_defaults.Term(pid, "ttft", group, weights, "fp16", 2.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0, overlapped=False, sixteen_ratio=ratio)

    metal, cuda = ("llama.cpp", "apple.lpddr"), ("llama.cpp", "gddr")
    model = fit_defaults.Model([term("m", metal, "q4_k_m", 0.825), term("c", cuda, "q4_k_m", 0.0), term("f", metal, "fp16", 0.0)])
    for g in (metal, cuda):
        model.values[(g, "c")] = 0.5
    model.values[("fp16", "sc")], model.values[("q4_k_m", "sc")] = 1.2, 0.8
    got = model.predict()
    assert got[0] == pytest.approx(1 / (0.5 * 1.2 * 0.825)) == pytest.approx(2.0202, abs=1e-4)
    assert got[1] == pytest.approx(2.5)
    assert got[2] == pytest.approx(1 / (0.5 * 1.2))
    # and such points do not set the format's own share (one campaign of 25 would, MIN_FORMAT_POINTS_ONE_SOURCE)
    terms = [term(f"m{i}", metal, "q4_k_m", 0.825) for i in range(fit_defaults.MIN_FORMAT_POINTS_ONE_SOURCE + 5)]
    free = fit_defaults.Model(terms).free(fit_defaults.MIN_POINTS, fit_defaults.MIN_FORMAT_POINTS)
    assert ("q4_k_m", "sc") not in free


def _offline_vllm(as_of: str, version: str) -> dict:
    """A saturated offline throughput run (no batch given) of Llama-3.1-8B on one H100."""
    return {
        "id": "x",
        "metric": "throughput",
        "engine": "vllm",
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm",
        "tp": 1,
        "weights": "bf16",
        "kv_cache": "bf16",
        "conditions": {"prompt_tokens": 128, "output_tokens": 128, "engine_version": version},
        "measured": {"value": 10000.0, "unit": "tokens_per_s"},
        "as_of": as_of,
        "source": "https://example.org/x",
    }


def test_a_vllm_run_of_no_named_release_that_ran_v0_takes_the_v0_lines_defaults():
    # Every V0-scheduler line sets the same defaults, so the line picked among them is not a guess.
    v0 = [ln for ln in vp.default_catalog().releases.of("vllm") if ln.spec.recorded["scheduler"].value == "v0"]
    assert [ln.spec.line for ln in v0] == ["0.2-0.5.3", "0.5.4-0.6.4", "0.6.5-0.7"]
    assert all(ln.overrides == v0[0].overrides for ln in v0)
    # 2024-10: V1 did not exist (alpha 2025-01-27, default from v0.8.0, 2025-03-18).
    early = _offline_vllm("2024-10-10", "vLLM (ROCm build, version not stated)")
    d, w, t = vp.deployment_for(early, 1, 128, 128)
    assert d.engine.release.startswith("vllm 0.6.5-0.7:")
    assert (d.engine.enable_chunked_prefill, d.engine.prefix_caching, d.engine.large_gpu) == (False, False, None)
    # Saturated, the batch is as many sequences as the KV cache holds (here over 1,024:
    # some 55 GB at 131,072 B a token against 192 tokens a sequence, thousands), capped
    # by max_num_seqs: V0's EngineArgs.max_num_seqs = 256; the V1 lines' default on a GPU
    # of 75 GiB or more is 1,024 (catalogs/engines.yaml large_gpu, vllm PR #12369).
    assert vp.evaluate(d, w, t, with_remedies=False).memory.kv_capacity_tokens / (128 + 128 / 2) > 1024
    assert vp._saturated_batch(early, 128, 128, None, None) == 256
    # the same record after V1 became the default: a V1 line (0.17-0.20 before 2026)
    assert vp._saturated_batch(_offline_vllm("2025-06-01", "vLLM (version not stated)"), 128, 128, None, None) == 1024
    # before then, a run that says it asked for V1 keeps V1's; one that says V0 later takes V0's
    assert vp._saturated_batch(_offline_vllm("2025-02-10", "vLLM main (VLLM_USE_V1=1)"), 128, 128, None, None) == 1024
    assert vp._saturated_batch(_offline_vllm("2025-09-01", "vLLM V0 (VLLM_USE_V1=0)"), 128, 128, None, None) == 256


def _v0_terms(campaigns: int, extra_s: float) -> list:
    """TPOT terms of vLLM's V0 lines, each measured extra_s above its prediction at the
    priors (8 ms of reads / e 0.8 = 10 ms, + 32 layers × 50 µs = 1.6 ms: 11.6 ms), one
    campaign each of `campaigns`, at TP 1 and TP 4 (a step cost does not grow with TP)."""
    lines = ("vllm 0.5.4-0.6.4", "vllm 0.6.5-0.7")
    return [
        dataclasses.replace(
            fit_defaults.Term(f"p{i}{tp}", "tpot", ("vllm", "hbm"), "bf16", "bf16", 0.0116 + extra_s, 0.008, 1.0, 0.0, 0.0, 0.0, 0.0, 32),
            source=f"c{i}",
            line=lines[i % 2],
            tp=tp,
        )
        for i in range(campaigns)
        for tp in (1, 4)
    ]


def test_a_release_step_cost_needs_three_campaigns_on_the_lines_that_share_it(monkeypatch):
    """The V0 lines share one step cost, fitted on their TPOT terms after the pooled
    factors and shrunk by n / (n + 2): three campaigns each 1 ms slow give 1 ms × 3 / 5 =
    0.6 ms (the grid's points are 10 % apart: within 5 %); two campaigns give none."""
    monkeypatch.setattr(fit_defaults, "RELEASE_SHAPE", "step")
    monkeypatch.setattr(fit_defaults, "RELEASE_GROUPING", "v0")
    monkeypatch.setattr(fit_defaults, "RELEASE_SHRINK", 2.0)
    monkeypatch.setattr(fit_defaults, "MIN_LINE_CAMPAIGNS", 3)
    value, campaigns = fit_defaults.release_terms(fit_defaults.Model(_v0_terms(3, 1e-3)))["vllm V0"]
    assert campaigns == 3 and value == pytest.approx(0.6e-3, rel=0.05)
    assert fit_defaults.release_terms(fit_defaults.Model(_v0_terms(2, 1e-3))) == {}
    # the cost is a forward pass's: a TTFT of the line carries it too
    model = fit_defaults.Model([*_v0_terms(1, 0.0), dataclasses.replace(_v0_terms(1, 0.0)[0], pid="t", kind="ttft")])
    before = model.predict()
    model.release = {"vllm V0": (0.6e-3, 3)}
    assert model.predict() - before == pytest.approx([0.6e-3] * 3)


def test_catalog_release_terms_are_what_the_fit_points_give(fit_split_model):
    data = yaml.safe_load((vp.ROOT / "catalogs" / "fitted.yaml").read_text())
    assert data.get("releases", {}) == fit_defaults.fitted_releases(fit_split_model, vp.default_catalog())


def test_a_format_familys_cost_per_moe_layer_is_its_own_only_with_enough_points(monkeypatch):
    """Issue 42's variant (a), tried by bench/fit_cv.py --expert-layer-families: with the
    "fp4" family on, the serving pool's MXFP4 MoE steps take a cost per MoE layer of their
    own (s3:fp4) when the groups that share the pool's s3 hold MIN_FAMILY_POINTS (6) of them
    from MIN_FAMILY_SOURCES (2) campaigns; TensorRT-LLM, fitted alone, takes the pool's.
    By hand: at s3 = 30 µs and s3:fp4 = 5 µs a 36-MoE-layer MXFP4 step gains 36 × 5 =
    180 µs and a 58-MoE-layer FP8 one 58 × 30 = 1,740 µs over their unit-cost steps."""

    def term(engine, i, weights="bf16", moe_layers=0, source="a"):
        reads, flops = (0.005, 0.0005) if i % 2 else (0.0005, 0.005)
        return fit_defaults.Term(
            f"{engine}{i}", "tpot", (engine, "hbm"), weights, weights, 0.01, reads, 1.0, flops, 0.0, 0.0, 0.0, 36, tp=1, moe_layers=moe_layers, source=source
        )  # fmt: skip

    dense = [term(e, i) for e in ("serving", "trtllm") for i in range(6)]
    fp4 = [term("serving", 10 + i, "mxfp4", 36, "ab"[i % 2]) for i in range(5)] + [term("trtllm", 20, "mxfp4", 36, "b")]
    fp8 = [term("serving", 30, "fp8", 58)]
    monkeypatch.setattr(fit_defaults, "EXPERT_LAYER_FAMILIES", ("fp4",))
    model = fit_defaults.Model(dense + fp4 + fp8)
    assert model.tie[(("trtllm", "hbm"), "s3:fp4")] == (("serving", "hbm"), "s3:fp4")
    free = model.free(fit_defaults.MIN_POINTS, fit_defaults.MIN_FORMAT_POINTS)
    assert (("serving", "hbm"), "s3:fp4") in free and (("trtllm", "hbm"), "s3:fp4") not in free
    before = model.predict()
    model.values[(("serving", "hbm"), "s3")] = 30e-6
    model.values[(("serving", "hbm"), "s3:fp4")] = 5e-6
    gain = model.predict() - before
    assert gain[len(dense)] == pytest.approx(180e-6, rel=1e-9)  # serving's MXFP4 step
    assert gain[len(dense) + 5] == pytest.approx(180e-6, rel=1e-9)  # TensorRT-LLM's, through the pool
    assert gain[-1] == pytest.approx(1740e-6, rel=1e-9)  # FP8: the pooled s3
    # one campaign's MXFP4 points are too few sources: the family takes the pooled s3
    one = fit_defaults.Model(dense + [dataclasses.replace(t, source="a") for t in fp4] + fp8)
    assert one.tie[(("serving", "hbm"), "s3:fp4")] == (("serving", "hbm"), "s3")
    one.values[(("serving", "hbm"), "s3")] = 30e-6
    assert one.value(("trtllm", "hbm"), "s3:fp4") == 30e-6  # through two ties: the pool's family, the pool's s3


def test_format_families_by_hand():
    """catalogs/precisions.yaml: MXFP4 and NVFP4 compute in fp4; AWQ, GPTQ and GGUF Q4_0 are
    4-bit integers (their GEMMs in fp16); FP8, Q8_0 and the 16-bit formats the base."""
    family = fit_defaults.format_family
    assert family("mxfp4") == family("fp4") == "fp4"
    assert family("int4-awq") == family("int4-gptq") == family("q4_0") == family("q4_k_m") == "int4"
    assert family("fp8") == family("bf16") == family("fp16") == family("q8_0") == "base"


def test_the_cost_per_tp_rank_is_pulled_toward_0_per_50_us():
    """Issue 42: the cost per TP rank (s4) is pulled per 50 µs (fit_defaults.RANK_PULL_S),
    not per 100. On steps at TP 1, which it does not reach, 10 µs of it adds only its pull
    to the loss: PULL × 10 / 50 = 0.3 × 0.2 = 0.06."""

    def term(i):
        reads, flops = (0.005, 0.0005) if i % 2 else (0.0005, 0.005)
        return fit_defaults.Term(f"v{i}", "tpot", ("vllm", "hbm"), "bf16", "bf16", 0.01, reads, 1.0, flops, 0.0, 0.0, 0.0, 32, tp=1)

    model = fit_defaults.Model([term(i) for i in range(6)])
    at_zero = model.loss()
    model.values[(("vllm", "hbm"), "s4")] = 10e-6
    assert model.loss() - at_zero == pytest.approx(0.3 * 10 / 50, rel=1e-9)
