"""`plan-opt deploy --format json` and POST /deploy: one launch (a plan's commands,
replicas, checkpoint, the files it writes, notes) as data, emitted and checked once for
both."""

from __future__ import annotations

from typing import Any

from solver.explain.records import SolveResult
from solver.report.bench_command import bench_argv
from solver.report.deploy import ENGINES, emit
from solver.report.launch import Launch, check_flags


def default_engine(spec_engine: str, asked: str | None) -> str:
    """The engine asked for, else the spec's when deploy has its template, else vllm."""
    return asked or (spec_engine if spec_engine in ENGINES else "vllm")


def emit_checked(result: SolveResult, engine: str, variant: str, spec_engine: str) -> Launch:
    """The launch, with a note when the plan was sized for another engine; a flag off
    the engine's documented list is a bug in a template, never the user's input."""
    dep = emit(result, engine, variant)
    if engine != spec_engine:
        dep.notes.append(f"the plan was sized with {spec_engine}'s memory rule; set `engine: {engine}` in the spec to size it for {engine}")
    bad = check_flags(dep)
    if bad:
        raise RuntimeError("emitted flags not in the engine's list: " + "; ".join(bad))
    dep.benchmark = bench_argv(result, dep)
    return dep


def launch_json(dep: Launch) -> dict[str, Any]:
    ck = dep.checkpoint
    return {
        "engine": dep.engine,
        "command": dep.argv,
        "replicas": dep.replicas,
        "gpus_per_replica": dep.gpus_per_replica,
        "nodes_per_replica": dep.nodes_per_replica,
        "gpus_per_node": dep.gpus_per_node,
        "model": dep.model_id,
        "checkpoint": None
        if ck is None
        else {"hf_id": ck.hf_id, "format": ck.format, "variant": ck.variant, "container": ck.container, "source": ck.source},
        "launch": [{"node": s.node, "command": s.argv} for s in dep.steps],
        "files": dep.files,
        "notes": dep.notes,
    }


def deploy_json(dep: Launch) -> dict[str, Any]:
    """The whole launch: one pool's, or a disaggregated plan's decode pool with its
    prefill pool and router; and the benchmark that checks it."""
    out = launch_json(dep)
    out["benchmark"] = dep.benchmark
    if dep.prefill is not None:
        out["serving"] = "disaggregated"
        out["prefill"] = launch_json(dep.prefill)
        out["router"] = None if dep.router is None else dep.router.argv
    return out
