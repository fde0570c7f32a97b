"""`plan-opt deploy --format json` and POST /deploy: one launch (a plan's commands,
replicas, checkpoint, the files it writes, notes) as data, emitted and checked once for
both."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from solver.explain.records import SolveResult
from solver.report.bench_command import bench_argv, guidellm_argv
from solver.report.deploy import ENGINES, emit
from solver.report.launch import Launch, check_flags


def default_engine(spec_engine: str, asked: str | None) -> str:
    """The engine asked for, else the spec's when deploy has its template, else vllm."""
    return asked or (spec_engine if spec_engine in ENGINES else "vllm")


def emit_checked(result: SolveResult, engine: str, variant: str, spec_engine: str, release: str | None = None) -> Launch:
    """The launch, with a note when the plan was sized for another engine; a flag off
    the engine's documented list is a bug in a template, never the user's input."""
    dep = emit(result, engine, variant, release)
    if engine != spec_engine:
        dep.notes.append(f"the plan was sized with {spec_engine}'s memory rule; set `engine: {engine}` in the spec to size it for {engine}")
    bad = check_flags(dep)
    if bad:
        raise RuntimeError("emitted flags not in the engine's list: " + "; ".join(bad))
    dep.benchmark = bench_argv(result, dep)
    dep.benchmark_guidellm = guidellm_argv(result, dep)
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
    out["benchmark_guidellm"] = dep.benchmark_guidellm
    if dep.prefill is not None:
        out["serving"] = "disaggregated"
        out["prefill"] = launch_json(dep.prefill)
        out["router"] = None if dep.router is None else dep.router.argv
    return out


class CheckpointOut(BaseModel):
    model_config = ConfigDict(extra="forbid")  # the schema names every field the JSON has

    hf_id: str
    format: str
    variant: str
    container: str
    source: str


class StepOut(BaseModel):
    model_config = ConfigDict(extra="forbid")  # the schema names every field the JSON has

    node: str = Field(description="head, worker 1, ..., or node (a one-node replica).")
    command: list[str]


class LaunchOut(BaseModel):
    model_config = ConfigDict(extra="forbid")  # the schema names every field the JSON has

    engine: str
    command: list[str] = Field(description="The serving command (on the head node of a multi-node replica), as argv.")
    replicas: int
    gpus_per_replica: int
    nodes_per_replica: int
    gpus_per_node: int
    model: str = Field(description="What the engine loads: a Hugging Face id, a local folder or a GGUF file.")
    checkpoint: CheckpointOut | None
    launch: list[StepOut] = Field(description="Every node's commands, in the order they are started.")
    files: dict[str, str] = Field(description="Files the command reads that the launch writes first: path -> text.")
    notes: list[str]


class DeployOut(LaunchOut):
    """`plan-opt deploy --format json` and POST /deploy: the schema of deploy_json's answer."""

    benchmark: list[str] = Field(description="vllm bench serve against one replica at its share of the load (report/bench_command.py).")
    benchmark_guidellm: list[str] = Field(description="The same check as `guidellm run` (GuideLLM 0.7's CLI), saving its JSON report.")
    serving: str | None = Field(default=None, description="disaggregated: a prefill pool beside this (decode) pool.")
    prefill: LaunchOut | None = None
    router: list[str] | None = None
