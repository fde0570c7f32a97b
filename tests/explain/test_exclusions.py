"""Shapes the spec allows and the search drops: each with its reason, grouped per
device, in the text report and in the JSON (issue 9, item 7)."""

from __future__ import annotations

import json

from solver.explain.solve import solve
from solver.report.solve_json import to_json
from solver.report.solve_text import render
from tests.solve_helpers import problem_of


def _solved(**spec):
    base = {"model": "llama-3.1-8b", "workload": {"users": 4, "context_tokens": 4096, "output_tokens": 256}}
    return solve(problem_of({**base, **spec}), explain=False)


def test_tp_beyond_the_nvlink_domain_is_reported_not_dropped_silently():
    # H100 SXM sits only in the HGX H100/H200 board (catalogs/devices.yaml): 8 GPUs on
    # NVSwitch, so a TP 16 group has no domain to live in. One format pair: one shape.
    r = _solved(model="llama-3.1-70b", search={"gpus": ["h100-sxm"], "tp": [8, 16], "weights": ["bf16"], "kv_cache": ["bf16"]})
    out = json.loads(to_json(r))
    assert out["plan"]["tp"] == 8 and out["excluded"] == {}
    assert out["excluded_shapes"] == {
        "h100-sxm": [
            {
                "shapes": "TP 16",
                "kind": "interconnect",
                "count": 1,
                "reason": "tp=16 exceeds the scale-up domain of hgx-hopper-8gpu (8 GPUs); a TP group cannot span nodes",
            }
        ]
    }
    assert "- h100-sxm: TP 16 — tp=16 exceeds the scale-up domain of hgx-hopper-8gpu (8 GPUs)" in render(r)


def test_each_reason_names_the_splits_it_drops_per_device():
    # Llama-3.1-8B has 32 layers: PP 64 cannot split them. T4 runs no fp8 (its formats in
    # catalogs/devices.yaml: fp16, int8, int4), and its widest platform is an 8-GPU PCIe
    # server, so TP 16 has no domain there either. Splits: TP {1, 16} × PP {1, 64}; formats:
    # weights {bf16, fp8} × KV bf16 (fp16 on the T4, which lacks bf16).
    r = _solved(
        search={"gpus": ["h100-sxm", "t4"], "tp": [1, 16], "pp": [1, 64], "weights": ["bf16", "fp8"], "kv_cache": ["bf16"]},
        pricing={"providers": ["all"]},
    )  # the T4 has no GPU-cloud offer; Hugging Face's endpoint prices it
    got = {dev: [(e["shapes"], e["kind"], e["count"]) for e in items] for dev, items in json.loads(to_json(r))["excluded_shapes"].items()}
    assert got["h100-sxm"] == [
        ("TP 1 × PP 64, TP 16 × PP 64", "split", 4),  # 2 splits × 2 weight formats
        ("TP 16, TP 16 × PP 64", "interconnect", 4),
    ]
    assert got["t4"] == [
        ("", "format", 4),  # fp8 weights at every one of the 4 splits
        ("TP 1 × PP 64, TP 16 × PP 64", "split", 4),
        ("TP 16, TP 16 × PP 64", "interconnect", 4),
    ]
    text = render(r)
    assert "  - TP 1 × PP 64, TP 16 × PP 64 — pp=64 exceeds the model's 32 layers" in text
    assert "  - Tesla T4 16GB cannot run fp8 weights" in text
    assert "pcie-gen4-8gpu (8 GPUs); a TP group cannot span nodes" in text


def test_an_engine_rule_that_skips_shapes_says_so():
    # llama.cpp's row split has no pipeline stages: PP 2 is never built, at TP 1 or 2,
    # in either KV format (2 splits × 2 formats = 4 shapes).
    spec = {
        "engine": {"name": "llama.cpp", "split_mode": "row"},
        "search": {"gpus": ["rtx-4090"], "tp": [1, 2], "pp": [1, 2], "weights": ["q4_0"], "kv_cache": ["fp16", "q8_0"]},
    }
    [e] = json.loads(to_json(_solved(**spec)))["excluded_shapes"]["rtx-4090"]
    assert (e["shapes"], e["kind"], e["count"]) == ("TP 1 × PP 2, TP 2 × PP 2", "engine", 4)
    assert "no pipeline stages" in e["reason"]
    # With PP 2 alone nothing is left on the device, and the runner-up says where to look.
    spec["search"]["pp"] = [2]
    r = solve(problem_of({"model": "llama-3.1-8b", "workload": {"users": 4, "context_tokens": 4096, "output_tokens": 256}, **spec}))
    assert not r.feasible
    assert r.runners_up[0].reason == "no shape the spec allows is left to search: see the shapes left out"
