"""Build a Problem from a spec dict, the way the CLI does."""

from __future__ import annotations

from pathlib import Path

import yaml

from solver.catalog import default_catalog
from solver.optimise.shapes import build_problem
from solver.spec.solve_spec import parse_spec

NO_FIXED_COSTS = {
    "step_overhead_s": 0,
    "layer_overhead_s": 0,
    "sequence_overhead_s": 0,
    "expert_layer_overhead_s": 0,
    "prefill_expert_overhead_s": 0,
    "tp_rank_overhead_s": 0,
    "attention_bandwidth_share": 1.0,
}
"""Every fixed cost of a pass at 0 (per pass, layer, sequence, MoE layer, expert reached,
TP rank), and attention's KV reads at the weights' speed: the overrides a hand derivation of a kernel's time starts from. A new fixed
cost goes here, once."""


EAGER = {"name": "vllm", "enforce_eager": True}
"""An engine that captures no CUDA graphs: a hand derivation of memory counts weights, KV
and the runtime overhead only (the current vLLM line counts its graphs before the KV cache)."""


def problem_of(spec: dict):
    return build_problem(parse_spec(spec), default_catalog())


RATE_SPEC = yaml.safe_load((Path(__file__).resolve().parents[1] / "specs" / "chat-70b-at-20-rps.yaml").read_text())


def schedule_spec_of(rates: list[float], **extra) -> dict:
    """specs/chat-70b-at-20-rps.yaml as a schedule spec: its rate replaced by a profile."""
    spec = {k: v for k, v in RATE_SPEC.items()}
    spec["workload"] = {k: v for k, v in RATE_SPEC["workload"].items() if k != "requests_per_s"}
    spec["traffic_profile"] = {"slot": "1h", "requests_per_s": rates}
    spec.update(extra)
    return spec
