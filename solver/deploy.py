"""Turn a plan into what a user runs: the engine command for one replica, and how
many replicas to start. Flags come from catalogs/engine_flags.yaml (with their
source); a format the engine cannot take from a flag becomes a note, not a guess."""

from __future__ import annotations

from dataclasses import dataclass, field

from solver.catalog import catalog_dir
from solver.solve import SolveResult
from solver.yaml_lines import load_yaml_file

DTYPE = {"bf16": "bfloat16", "fp16": "float16"}


@dataclass
class Deployment:
    engine: str
    argv: list[str]
    replicas: int
    gpus_per_replica: int
    notes: list[str] = field(default_factory=list)

    @property
    def command(self) -> str:
        return " ".join(self.argv)


def flag_table() -> dict:
    data, _ = load_yaml_file(catalog_dir() / "engine_flags.yaml")
    return data["engines"]


def _weights_flags(engine: str, weights: str, model_id: str, notes: list[str]) -> list[str]:
    if weights in DTYPE:
        return ["--dtype", DTYPE[weights]]
    if weights == "fp8":
        notes.append("fp8 weights: dynamic FP8 quantisation of the 16-bit checkpoint (or serve an FP8 checkpoint and drop --quantization)")
        return ["--quantization", "fp8"]
    if weights in ("int4-awq", "int4-gptq"):
        method = "awq" if weights == "int4-awq" else "gptq"
        notes.append(f"{weights}: serve a {method.upper()} checkpoint of {model_id} (e.g. a '-{method.upper()}' repository) in place of the 16-bit one")
        return ["--quantization", method]
    notes.append(f"{weights} weights: load a checkpoint already in that format; the engine reads it from the checkpoint's config")
    return []


def emit(result: SolveResult, engine: str = "vllm") -> Deployment:
    c = result.solution.candidate
    if c is None:
        raise ValueError("no plan to deploy")
    d = c.shape.deployment
    w = result.problem.workload
    model_id = d.model.hf_id or d.model.name
    notes: list[str] = []
    kv = d.kv.name
    e = d.engine
    same_engine = e is not None and e.name == engine
    max_model_len = (e.max_model_len if e is not None else None) or w.context_tokens
    if engine == "vllm":
        argv = ["vllm", "serve", model_id]
        if d.tp > 1:
            argv += ["--tensor-parallel-size", str(d.tp)]
        if d.pp > 1:
            argv += ["--pipeline-parallel-size", str(d.pp)]
        argv += ["--max-model-len", str(max_model_len), "--gpu-memory-utilization", f"{d.factors.memory_utilization:g}"]
        if kv == "fp8":
            argv += ["--kv-cache-dtype", "fp8"]
        argv += _weights_flags(engine, d.weights.name, model_id, notes)
        argv += ["--max-num-seqs", str(c.batch)]
        if same_engine:  # the knobs the plan's memory and step times were computed with
            argv += ["--max-num-batched-tokens", str(e.max_num_batched_tokens)]
            if not e.enable_chunked_prefill:
                argv += ["--no-enable-chunked-prefill"]
            if e.enforce_eager:
                argv += ["--enforce-eager"]
    elif engine == "sglang":
        argv = ["python", "-m", "sglang.launch_server", "--model-path", model_id]
        if d.tp > 1:
            argv += ["--tp", str(d.tp)]
        if d.pp > 1:
            notes.append(f"pipeline parallelism ({d.pp} stages) is not emitted for SGLang: use vLLM's command")
        argv += ["--context-length", str(max_model_len), "--mem-fraction-static", f"{d.factors.memory_utilization:g}"]
        if kv == "fp8":
            argv += ["--kv-cache-dtype", "fp8_e4m3"]
        argv += _weights_flags(engine, d.weights.name, model_id, notes)
        argv += ["--max-running-requests", str(c.batch)]
        if same_engine:
            argv += ["--chunked-prefill-size", str(e.max_num_batched_tokens)]
            if e.enforce_eager:
                argv += ["--disable-cuda-graph"]
    else:
        raise ValueError(f"no command template for engine {engine}")
    if kv not in ("bf16", "fp16", "fp8"):
        notes.append(f"{kv} KV cache: not an option of {engine}; the plan assumed it")
    if c.replicas > 1:
        notes.append(f"start {c.replicas} replicas, each on its own {c.shape.gpus_per_replica} GPU(s), behind a load balancer")
    return Deployment(engine, argv, c.replicas, c.shape.gpus_per_replica, notes)


def check_flags(dep: Deployment) -> list[str]:
    """Flags or values the engine's documented list does not have (empty: all fine)."""
    table = flag_table()[dep.engine]["flags"]
    bad = []
    argv = dep.argv
    for i, token in enumerate(argv):
        if not token.startswith("--"):
            continue
        if token not in table:
            bad.append(f"unknown flag {token}")
            continue
        kind = table[token]
        value = argv[i + 1] if i + 1 < len(argv) else None
        if isinstance(kind, list) and value not in kind:
            bad.append(f"{token} {value}: allowed {kind}")
        elif kind == "int" and not (value or "").isdigit():
            bad.append(f"{token} {value}: not an integer")
        elif kind == "float":
            try:
                float(value)
            except (TypeError, ValueError):
                bad.append(f"{token} {value}: not a number")
    return bad
