"""The memory an engine keeps beside weights and KV, term by term: each expected
figure is derived by hand beside it from the engine's source and the model's config."""

from __future__ import annotations

import dataclasses
import json

import pytest

from solver.physics.engine_memory import capture_sizes, cuda_graph_count, engine_memory
from solver.physics.evaluate import evaluate
from solver.physics.memory import estimate_memory
from solver.report.evaluation_json import to_json
from solver.report.evaluation_text import render_text

FIXED_B, SHARDED_B = 394_800, 194_100  # catalogs/engines.yaml, vllm: per size per layer, a + b / TP


def _graphs_on(d, **changes):
    return d.replace(engine=dataclasses.replace(d.engine, profiles_cuda_graphs=True, **changes))


def test_capture_sizes_follow_vllms_default_list():
    # 1, 2, 4 (3 sizes), 8..248 by 8 (31 sizes), 256..512 by 16 (17 sizes) = 51: the
    # v0.19 logs print "PIECEWISE=51 (largest=512)" and, for FULL graphs capped at 256,
    # "FULL=35 (largest=256)" = 3 + 31 + 1.
    assert len(capture_sizes(512)) == 51
    assert len(capture_sizes(256)) == 35
    assert capture_sizes(512)[:5] == [1, 2, 4, 8, 16]
    assert capture_sizes(512)[-2:] == [496, 512]


def test_cuda_graphs_leave_the_kv_budget_only_where_the_release_counts_them(build_deployment):
    # Llama-3.1-8B on an H100 (max_num_seqs 1,024: largest size min(2 × 1,024, 512) = 512):
    # 51 sizes × 32 layers × (394,800 + 194,100) B = 1,632 × 588,900 = 961,084,800 B
    # (0.895 GiB; the v0.19 log prints 0.91 GiB captured). At TP 4: 1,632 × (394,800 +
    # 48,525) = 723,506,400 B (0.674 GiB; logged 0.67).
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, context=8192, output=128, engine={"name": "vllm", "version": "0.20.0"})
    assert engine_memory(d, 8192).cuda_graph_bytes == 0.0  # before v0.21.0: captured after the KV cache
    on = _graphs_on(d)
    current, _, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, context=8192, output=128)
    assert engine_memory(current, 8192).cuda_graph_bytes == 961_084_800  # the current line counts them
    assert engine_memory(on, 8192).cuda_graph_bytes == 51 * 32 * (FIXED_B + SHARDED_B) == 961_084_800
    before, after = estimate_memory(d, w), estimate_memory(on, w)
    assert before.kv_budget_bytes - after.kv_budget_bytes == pytest.approx(961_084_800)
    d4, _, _ = build_deployment("llama-3.1-8b", "h100-sxm", tp=4, users=1, context=8192, output=128)
    assert engine_memory(_graphs_on(d4), 8192).cuda_graph_bytes == pytest.approx(723_506_400)


def test_cuda_graph_sizes_are_capped_by_max_num_seqs_and_eager_mode(build_deployment):
    d, _, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, context=8192, output=128)
    # max_num_seqs 64: largest size 128 = 1, 2, 4 and 8..128 by 8 (16) = 19 sizes.
    assert cuda_graph_count(_graphs_on(d, max_num_seqs=64)) == 19
    assert cuda_graph_count(_graphs_on(d, enforce_eager=True)) == 0


def test_sampler_peak_per_release_bytes_per_logit(build_deployment):
    # 1,024 rows × 128,256 logits × 8 B (v0.17+) = 1,050,673,152 B; at v0.15-v0.16's
    # full-vocabulary sort path, 32 B a logit: 4,202,692,608 B, 3.15 GB more out of KV.
    d, w, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, context=8192, output=128)
    assert engine_memory(d, 8192).sampler_bytes == 1024 * 128_256 * 8 == 1_050_673_152
    old = d.replace(engine=dataclasses.replace(d.engine, sampler_bytes_per_logit=32))
    assert engine_memory(old, 8192).sampler_bytes == 4_202_692_608
    gap = estimate_memory(d, w).kv_budget_bytes - estimate_memory(old, w).kv_budget_bytes
    assert gap == pytest.approx(4_202_692_608 - 1_050_673_152)


def test_comm_buffers_only_where_the_tp_group_has_nvlink_sharp(build_deployment):
    # tp_overhead_bytes (NCCL's NVLS buffers) on an H100 SXM TP 2 group; none at TP 1,
    # none on PCIe L40S cards (no NVSwitch, no SHARP).
    d2, _, _ = build_deployment("llama-3.1-8b", "h100-sxm", tp=2, users=1, context=8192, output=128)
    assert engine_memory(d2, 8192).comm_buffer_bytes == d2.factors.tp_overhead_bytes > 0
    d1, _, _ = build_deployment("llama-3.1-8b", "h100-sxm", users=1, context=8192, output=128)
    assert engine_memory(d1, 8192).comm_buffer_bytes == 0.0
    pcie, _, _ = build_deployment("llama-3.1-8b", "l40s", tp=2, users=1, context=8192, output=128)
    assert engine_memory(pcie, 8192).comm_buffer_bytes == 0.0


def test_the_terms_sum_to_the_overhead_and_each_is_named_in_evaluate(build_deployment):
    d, w, t = build_deployment("llama-3.1-8b", "h100-sxm", tp=2, users=1, context=8192, output=128)
    d = _graphs_on(d)
    mem = estimate_memory(d, w)
    k = mem.engine_kept
    assert k is not None
    assert mem.overhead_bytes == pytest.approx(k.runtime_bytes + k.comm_buffer_bytes + k.forward_bytes + k.sampler_bytes + k.cuda_graph_bytes)
    ev = evaluate(d, w, t, with_remedies=False)
    text = render_text(ev)
    for label in ("runtime overhead", "TP comm buffers", "activation peak", "sampler peak", "CUDA graphs"):
        assert label in text
    kept = json.loads(to_json(ev))["memory"]["engine_kept"]
    assert kept["cuda_graph_bytes"] == 51 * 32 * (FIXED_B + SHARDED_B / 2)
    assert kept["cuda_graph_sizes"] == 51
    assert kept["sampler_bytes"] == 1024 * 128_256 * 8


def test_a_raised_max_num_seqs_costs_its_sampler_rows(build_deployment):
    # Llama-3.1-8B on an RTX 4090 (24 GB: 256 rows by default); --max-num-seqs 512 adds
    # 256 rows × 128,256 logits × 8 B = 262,668,288 B to the profile, out of the KV budget.
    def budget(seqs):
        d, w, _ = build_deployment("llama-3.1-8b", "rtx-4090", users=1, context=4096, output=128, engine={"name": "vllm", "max_num_seqs": seqs})
        return estimate_memory(d, w).kv_budget_bytes

    assert budget(256) - budget(512) == pytest.approx(256 * 128_256 * 8)
