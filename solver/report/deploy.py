"""Turn a plan into what a user runs: the checkpoint to serve, the engine command for
one replica (every node of it, with the cluster setup a multi-node replica needs),
and how many replicas to start. Flags and what each engine can run come from
catalogs/engine_flags.yaml (with their sources), checkpoints from catalogs/models.yaml;
a plan an engine cannot run is refused with the reason, never emitted half-right."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from solver.catalog import Model, PublishedCheckpoint, default_catalog
from solver.errors import InputError
from solver.explain.records import SolveResult
from solver.physics.engine_memory import memory_fraction
from solver.report.checkpoints import choose_checkpoint, sixteen_bit_id, unlisted_source_note
from solver.report.launch import Launch, LaunchStep, flag_table, spelling
from solver.report.pd_router import SGLANG_BOOTSTRAP_PORT, router_step

if TYPE_CHECKING:
    from solver.catalog import Engine
    from solver.physics.deployment import Deployment as Plan

ENGINES = ("vllm", "sglang", "llama.cpp", "trtllm")
HEAD = "$HEAD_IP"
"""Placeholder for the head node's address in multi-node commands (LWS_LEADER_ADDRESS on Kubernetes)."""
RAY_PORT = 6379
SGLANG_DIST_PORT = 5000


def _refuse(engine: str, what: str, value: str, allowed_formats: tuple[str, ...]) -> InputError:
    allowed = ", ".join(allowed_formats)
    return InputError(
        f"engine ({engine})",
        value,
        f"{engine} cannot run {what} {value}; it runs {allowed} (plan with one of those, or deploy with an engine that has {value})",
    )


def _formats(engine: str, d: Plan) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(weight formats, KV formats) the engine runs: catalogs/engines.yaml, the list
    solve's split rules read too (physics/validity.py), so a plan solved for an engine
    is one deploy emits for it."""
    e = d.engine if d.engine is not None and d.engine.name == engine else default_catalog().engine(engine)
    return e.weight_formats, e.kv_formats


def emit(result: SolveResult, engine: str = "vllm", variant: str = "instruct", release: str | None = None) -> Launch:
    """The plan's launch; flags spelled for the engine release the spec names, else for
    `release` (the version of a pinned image, --emit k8s), else the current one."""
    c = result.solution.candidate
    if c is None:
        raise ValueError("no plan to deploy")
    if engine not in ENGINES:
        raise InputError("--engine", engine, f"deploy emits {', '.join(ENGINES)}")
    # Under traffic the batch is the requests a replica holds on average; the engine
    # runs with the limit the screen and the simulation assumed (its max_num_seqs).
    batch = c.traffic.at_load_seqs if c.traffic is not None else c.batch
    pool = c.prefill
    if pool is None:
        return _pool_launch(result, engine, variant, c.shape.deployment, c.replicas, batch, release=release)
    if engine not in ("vllm", "sglang"):
        raise InputError("--engine", engine, "the plan serves prefill and decode on separate pools: deploy emits it for vllm and sglang")
    dep = _pool_launch(result, engine, variant, c.shape.deployment, c.replicas, batch, _role_flags(engine, "decode"), release)
    pre = _pool_launch(
        result, engine, variant, pool.shape.deployment, pool.replicas, pool.load.users_per_replica, _role_flags(engine, "prefill"), release
    )
    _disaggregate(dep, pre, result, engine)
    return dep


def _role_flags(engine: str, role: str) -> list[str]:
    """How each pool's engine is told its role and the KV transfer."""
    if engine == "vllm":  # NIXL: the decode instance pulls each prompt's KV from the prefill instance's GPUs
        return ["--kv-transfer-config", json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":"), sort_keys=True)]
    out = ["--disaggregation-mode", role, "--disaggregation-transfer-backend", "mooncake"]
    return out + (["--disaggregation-bootstrap-port", str(SGLANG_BOOTSTRAP_PORT)] if role == "prefill" else [])


def _disaggregate(dep: Launch, pre: Launch, result: SolveResult, engine: str) -> None:
    """The plan's two pools, the decode replicas (`dep`) and the prefill replicas (`pre`),
    and what routes a request through both."""
    pool = result.solution.chosen.prefill
    assert pool is not None
    pre.role, dep.role = "prefill", "decode"
    dep.router = router_step(engine, dep.port)
    t = pool.transfer
    dep.notes.append(
        f"each prompt's KV ({t.bytes_per_request / 1e9:,.2f} GB) crosses {t.link} between the pools: give the engines the RDMA "
        "devices (UCX_NET_DEVICES for NIXL, --disaggregation-ib-device for Mooncake); over TCP the transfer is several times slower"
    )
    dep.prefill = pre


def _pool_launch(
    result: SolveResult,
    engine: str,
    variant: str,
    d: Plan,
    replicas: int,
    batch: int,
    role_flags: tuple[str, ...] | list[str] = (),
    release: str | None = None,
) -> Launch:
    """One pool's replica (the plan's only pool, or one of a disaggregated plan's two)."""
    c = result.solution.chosen
    table = flag_table()[engine]
    w = result.problem.workload
    model, device = d.model, d.device
    notes: list[str] = []
    kv, weights = d.kv.name, d.weights.name
    weight_formats, kv_formats = _formats(engine, d)
    runs_on = default_catalog().engine(engine).runs_on  # the rule solve's search applies (optimise/shapes.py)
    if runs_on and device.vendor not in runs_on:
        raise InputError(
            "--engine",
            engine,
            f"{engine} has no backend for {device.vendor} devices (it runs on {', '.join(runs_on)}); the plan runs on {device.display_name}",
        )
    if kv not in kv_formats:
        raise _refuse(engine, "a KV cache in", kv, kv_formats)
    if weights not in weight_formats:
        raise _refuse(engine, "weights in", weights, weight_formats)
    how = table["weights"][weights]  # how each is passed (tests/report: the two lists agree)
    gpus = d.tp * d.pp
    per_node = min(gpus, d.platform.gpus_per_node)
    nodes = math.ceil(gpus / d.platform.gpus_per_node)
    if nodes > 1 and table["multi_node"] is None:
        raise InputError(f"engine ({engine})", f"{nodes} nodes per replica", table["multi_node_source"])
    e = d.engine
    same_engine = e is not None and e.name == engine
    max_model_len = (e.max_model_len if e is not None else None) or w.context_tokens

    gguf = bool(how.get("gguf"))
    ckpt, more = choose_checkpoint(model, weights, gguf, variant)
    named = result.problem.spec.overrides.model.checkpoint
    if ckpt is not None and named is not None and ckpt.hf_id.lower() == named.lower():
        more = [f"serving {ckpt.hf_id}, the checkpoint overrides.model.checkpoint names ({ckpt.variant})"]
    notes += more
    dep = Launch(
        engine,
        [],
        replicas,
        gpus,
        notes,
        nodes,
        per_node,
        checkpoint=ckpt,
        vendor=device.vendor,
        port=table["port"],
        health_path=table["health_path"],
        engine_version=(result.problem.spec.engine.version if result.problem.spec.engine.name == engine else None) or release,
        device=device.name,
    )
    if d.expert_parallel and engine not in ("vllm", "sglang", "trtllm"):
        what = "data-parallel attention with expert parallelism" if d.dp_ep else "expert parallelism"
        raise InputError("--engine", engine, f"the plan runs {what} ({d.parallelism}): deploy emits it for vllm, sglang and trtllm")
    if engine == "llama.cpp":
        dep.argv = _llama_server(dep, model, d, batch, max_model_len, weights, kv, ckpt, table, same_engine, e)
    elif engine == "trtllm":
        from solver.report.deploy_trtllm import trtllm_argv, trtllm_model

        if nodes > 1:
            raise InputError(f"engine ({engine})", f"{nodes} nodes per replica", table["multi_node_source"])
        model_id = trtllm_model(dep, model, weights, ckpt, sixteen_bit_id(model, variant))
        dep.argv = trtllm_argv(dep, d, model_id, batch, max_model_len, kv, table, e if same_engine else None)
    else:
        model_arg, quant = _weights(dep, model, weights, how, ckpt, variant)
        if engine == "vllm":
            dep.argv = _vllm(dep, d, model_arg, quant, batch, max_model_len, kv, table, same_engine, e, nodes, per_node)
        else:
            dep.argv = _sglang(dep, d, model_arg, quant, batch, max_model_len, kv, table, same_engine, e)
    if d.speculation is not None and engine != "trtllm":  # TensorRT-LLM's draft is in its options file
        dep.argv += _speculative_flags(engine, d, dep.engine_version, notes)
    if w.shared_prefix_tokens:
        if engine == "vllm":  # on by default in V1; said, since the plan counts on it
            dep.argv += ["--enable-prefix-caching"]
        if engine == "llama.cpp":
            planned = d.engine is None or d.engine.prefix_caching
            notes.append(
                "llama-server keeps no shared prefix across slots: it prefills every prompt whole"
                + (", which the plan's TTFT and memory did not count (solve with engine: llama.cpp to plan for it)" if planned else "")
            )
        elif replicas > 1:
            notes.append(
                f"each replica caches the shared {w.shared_prefix_tokens:,}-token prefix on its first request and holds it once "
                "(as the plan does): any load balancer will do"
            )
    dep.argv += role_flags
    dep.steps = _steps(dep, engine, nodes)
    if replicas > 1 and c.prefill is None:
        notes.append(f"start {replicas} replicas, each on its own {gpus} GPU(s), behind a load balancer")
    return dep


def _named_version(dep: Launch) -> str | None:
    """The engine release the spec names, where it names one for this engine."""
    return dep.engine_version


def _speculative_flags(engine: str, d: Plan, version: str | None = None, notes: list[str] | None = None) -> list[str]:
    """The draft the plan's TPOT counts on, as the engine takes it: vLLM's
    --speculative-config, SGLang's --speculative-* flags; a head needs its checkpoint."""
    s = d.speculation
    assert s is not None
    notes = notes if notes is not None else []
    if s.method != "mtp" and not s.checkpoint:
        raise InputError(
            "speculative.draft_checkpoint",
            None,
            f"deploy needs the {s.draft_name}'s Hugging Face id (the checkpoint the engine loads as the draft)",
        )
    if engine == "vllm":
        config: dict[str, object] = {"num_speculative_tokens": s.num_tokens}
        if s.vllm_method:
            config["method"] = s.vllm_method
        if s.vllm_method == "deepseek_mtp":  # renamed mtp (engine_flags.yaml `renamed`)
            words, note = spelling("vllm", "speculative_method_mtp", version)
            config["method"] = words[0]
            notes += [note] if note else []
        if s.checkpoint:
            config["model"] = s.checkpoint
        return ["--speculative-config", json.dumps(config, separators=(",", ":"), sort_keys=True)]
    if engine == "sglang":
        if s.sglang_algorithm is None:
            raise InputError("speculative.method", s.method, "SGLang drafts with eagle, eagle3 or mtp (--speculative-algorithm EAGLE or EAGLE3)")
        argv = [
            "--speculative-algorithm",
            s.sglang_algorithm,
            "--speculative-num-steps",
            str(s.num_tokens),
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            str(s.num_tokens + 1),
        ]
        return argv + (["--speculative-draft-model-path", s.checkpoint] if s.checkpoint else [])
    raise InputError("speculative.method", s.method, f"deploy emits speculative decoding for vllm, sglang and trtllm, not {engine}")


def _weights(
    dep: Launch, model: Model, weights: str, how: dict[str, Any], ckpt: PublishedCheckpoint | None, variant: str
) -> tuple[list[str], list[str]]:
    """The model argument(s) and the weight flags of vLLM and SGLang."""
    engine = dep.engine
    tok_flag = "--tokenizer" if engine == "vllm" else "--tokenizer-path"
    if how.get("gguf"):
        tokenizer = sixteen_bit_id(model, variant)
        path = f"./{model.name}-{weights.upper()}.gguf"
        get = (
            f"download it from {ckpt.hf_id} (its {weights.upper()} file; merge split files with llama-gguf-split --merge)"
            if ckpt
            else f"no {weights} GGUF of {model.display_name} is published: convert {tokenizer} with llama.cpp's "
            f"convert_hf_to_gguf.py and llama-quantize"
        )
        dep.model_id = path
        dep.notes.append(
            f"{weights} is a GGUF format: {engine} reads one local .gguf file (experimental; vLLM needs its GGUF plugin in recent releases); {get}"
        )
        return [path, tok_flag, tokenizer], []
    if ckpt is not None:
        dep.model_id = ckpt.hf_id
        flags = ["--dtype", how["dtype"]] if "dtype" in how else []
        if "dtype" not in how:
            dep.notes.append(
                f"{weights} weights: {ckpt.hf_id} is published in {ckpt.format}; the engine reads its quantization_config, no quantisation flag"
            )
        return [ckpt.hf_id], flags
    base = sixteen_bit_id(model, variant)
    dep.model_id = base
    if not model.published:
        dep.notes.append(unlisted_source_note(model, base, variant))
    if "dtype" in how:
        if model.published:
            have = ", ".join(sorted({c.format for c in model.published}))
            dep.notes.append(
                f"no 16-bit checkpoint of {model.display_name} is published (only {have}): {base} loads in its "
                f"own format; convert it to {weights} first, or plan with {have} weights"
            )
        return [base], ["--dtype", how["dtype"]]
    if "runtime" in how:
        dep.notes.append(
            f"{weights} weights: no {weights} checkpoint of {model.display_name} is published, so {dep.engine} "
            f"quantises {base} at load time (dynamic {weights.upper()})"
        )
        dep.reads_format = "bf16"  # the 16-bit checkpoint is what is downloaded and read
        return [base], ["--quantization", how["runtime"]]
    method = how.get("checkpoint")
    dep.notes.append(
        f"{weights} weights: no {weights} checkpoint of {model.display_name} is listed in the catalog and "
        f"{dep.engine} cannot make one at load time: quantise {base} to {weights} and serve that "
        f"checkpoint in place of {base}"
    )
    return [base], (["--quantization", method] if method else [])


def _vllm(
    dep: Launch,
    d: Plan,
    model_arg: list[str],
    quant: list[str],
    batch: int,
    max_model_len: int,
    kv: str,
    table: dict[str, Any],
    same_engine: bool,
    e: Engine | None,
    nodes: int,
    per_node: int,
) -> list[str]:
    argv = ["vllm", "serve", *model_arg]
    tp, pp = d.tp, d.pp
    if d.dp_ep:  # data-parallel attention ranks, the experts split over them
        argv += ["--data-parallel-size", str(tp), "--enable-expert-parallel"]
    elif tp > 1:
        argv += ["--tensor-parallel-size", str(tp)]
        if d.parallelism == "tp_ep":  # the experts whole, split over the TP group
            argv += ["--enable-expert-parallel"]
    if pp > 1:
        argv += ["--pipeline-parallel-size", str(pp)]
    if nodes > 1:
        argv += ["--distributed-executor-backend", "ray"]
        if tp > per_node:
            dep.notes.append(f"the tensor-parallel group of {tp} spans {math.ceil(tp / per_node)} nodes: its all-reduces cross the network")
    argv += ["--max-model-len", str(max_model_len), "--gpu-memory-utilization", f"{memory_fraction(d).value:g}"]
    if table["kv_cache"][kv] != "auto":
        argv += ["--kv-cache-dtype", table["kv_cache"][kv]]
    argv += quant
    # vLLM's data-parallel ranks are engines of their own: the limit is each one's
    argv += ["--max-num-seqs", str(math.ceil(batch / tp) if d.dp_ep else batch)]
    if same_engine and e is not None:  # the knobs the plan's memory and step times were computed with
        argv += ["--max-num-batched-tokens", str(e.max_num_batched_tokens)]
        if not e.enable_chunked_prefill:
            argv += ["--no-enable-chunked-prefill"]
        if e.enforce_eager:
            argv += ["--enforce-eager"]
    return argv


def _sglang(
    dep: Launch,
    d: Plan,
    model_arg: list[str],
    quant: list[str],
    batch: int,
    max_model_len: int,
    kv: str,
    table: dict[str, Any],
    same_engine: bool,
    e: Engine | None,
) -> list[str]:
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", *model_arg]
    if d.tp > 1:  # --tp-size: SGLang registers no --tp (it parses only as an argparse prefix)
        argv += ["--tp-size", str(d.tp)]
    if d.dp_ep:  # SGLang: --tp-size the GPUs, as many attention-DP ranks, the experts over them
        words, note = spelling("sglang", "attention_dp", _named_version(dep), d.tp)
        argv += [*words, "--ep-size", str(d.tp)]
        dep.notes += [note] if note else []
    elif d.parallelism == "tp_ep":  # tensor-parallel attention, the experts over the same GPUs
        argv += ["--ep-size", str(d.tp)]
    if d.pp > 1:
        argv += ["--pp-size", str(d.pp)]
    argv += ["--context-length", str(max_model_len), "--mem-fraction-static", f"{memory_fraction(d).value:g}"]
    if table["kv_cache"][kv] != "auto":
        argv += ["--kv-cache-dtype", table["kv_cache"][kv]]
    argv += quant
    argv += ["--max-running-requests", str(batch)]
    if same_engine and e is not None:
        argv += ["--chunked-prefill-size", str(e.max_num_batched_tokens)]
        if e.enforce_eager:
            words, note = spelling("sglang", "eager", _named_version(dep))
            argv += words
            dep.notes += [note] if note else []
    return argv


def _llama_server(
    dep: Launch,
    model: Model,
    d: Plan,
    batch: int,
    max_model_len: int,
    weights: str,
    kv: str,
    ckpt: PublishedCheckpoint | None,
    table: dict[str, Any],
    same_engine: bool,
    e: Engine | None,
) -> list[str]:
    """llama-server with every layer on the GPUs (-ngl above the layer count offloads
    the output layer too), the plan's split over its GPUs, -np slots of the context
    each (-c is shared by the slots), and the plan's KV format for K and V."""
    if ckpt is not None:
        dep.model_id = f"{ckpt.hf_id}:{weights.upper()}"
        argv = ["llama-server", "-hf", dep.model_id]
    else:
        source = sixteen_bit_id(model, "instruct" if dep.checkpoint is None else dep.checkpoint.variant)
        dep.model_id = f"./{model.name}-{weights.upper()}.gguf"
        argv = ["llama-server", "-m", dep.model_id]
        dep.notes.append(
            f"no {weights} GGUF of {model.display_name} is published: make {dep.model_id} from {source} with "
            f"llama.cpp's convert_hf_to_gguf.py (and llama-quantize for a block format)"
        )
    argv += ["-ngl", str(model.num_layers + 1)]
    gpus = d.tp * d.pp
    if gpus > 1:
        mode = e.split_mode if e is not None and e.split_mode else "layer"
        argv += ["-sm", mode]
        dep.notes.append(f"llama-server uses every GPU it sees: give it exactly {gpus} (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES)")
    cache = table["kv_cache"][kv]
    argv += ["-c", str(max_model_len * batch), "-np", str(batch), "-ctk", cache, "-ctv", cache]
    if cache not in ("f16", "bf16", "f32"):
        argv += ["-fa", "on"]  # a quantised V cache needs flash attention in llama.cpp
    if same_engine and e is not None:
        argv += ["-b", str(e.max_num_batched_tokens)]
    return argv


def _steps(dep: Launch, engine: str, nodes: int) -> list[LaunchStep]:
    if nodes == 1:
        return [LaunchStep("node", dep.argv, engine)]
    workers = [f"worker {k}" for k in range(1, nodes)]
    if engine == "vllm":
        steps = [LaunchStep("head", ["ray", "start", "--head", "--port", str(RAY_PORT)], "ray")]
        steps += [LaunchStep(wk, ["ray", "start", "--address", f"{HEAD}:{RAY_PORT}", "--block"], "ray") for wk in workers]
        steps.append(LaunchStep("head", dep.argv, engine))
        dep.notes.append(
            f"{nodes} nodes of {dep.gpus_per_node} GPUs per replica: start Ray on the head, join each worker "
            f"to it ({HEAD} = the head's address), then run vllm serve on the head once `ray status` shows "
            f"{dep.gpus_per_replica} GPUs"
        )
        return steps
    dep.notes.append(
        f"{nodes} nodes of {dep.gpus_per_node} GPUs per replica: the same command on each node with its "
        f"--node-rank ({HEAD} = node 0's address); node 0 serves HTTP"
    )
    return [LaunchStep(node, sglang_node_argv(dep, str(rank)), engine) for rank, node in enumerate(["head", *workers])]


def sglang_node_argv(dep: Launch, rank: str) -> list[str]:
    """SGLang's command on one node of a multi-node replica: every node runs it, told
    the node count, its rank and node 0's address."""
    return dep.argv + ["--nnodes", str(dep.nodes_per_replica), "--dist-init-addr", f"{HEAD}:{SGLANG_DIST_PORT}", "--node-rank", rank]
