"""`plan-opt deploy`: the launch commands or Kubernetes manifests of the plan."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from solver.cli.common import catalog_for, problem_from
from solver.errors import EXIT_DOES_NOT_FIT, EXIT_OK

if TYPE_CHECKING:
    from solver.report.launch import Launch


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "deploy",
        help="solve a spec and print the commands (or Kubernetes manifests) that serve the plan",
        description="Solve the spec, then turn the plan into what runs it: the published checkpoint in the plan's "
        "weight format, the engine command one replica runs (vLLM's `vllm serve`, SGLang's launch_server or "
        "llama.cpp's llama-server) on every node it spans, with the cluster setup a multi-node replica needs, and "
        "the number of replicas; or, with --emit k8s, Kubernetes manifests. Flags are checked against "
        "catalogs/engine_flags.yaml; a plan the engine cannot run (a KV or weight format it lacks) is refused.",
        epilog="Examples:\n  plan-opt deploy specs/chat-llama70b.yaml --engine sglang\n"
        "  plan-opt deploy specs/pipeline-405b.yaml --emit k8s > 405b.yaml\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("spec", help="YAML spec file (as for solve)")
    p.add_argument(
        "--engine",
        choices=["vllm", "sglang", "llama.cpp", "trtllm"],
        help="command to emit (default: the spec's engine when deploy has its template, else vllm)",
    )
    p.add_argument(
        "--variant",
        choices=["instruct", "base"],
        default="instruct",
        help="which published checkpoint to serve: post-trained for chat (default) or the base model",
    )
    p.add_argument(
        "--emit",
        choices=["commands", "k8s"],
        default="commands",
        help="shell commands per node (default) or Kubernetes manifests (Deployment / LeaderWorkerSet)",
    )
    p.add_argument("--image", help="container image for --emit k8s (default: the engine's image for the GPU vendor)")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--calibration", metavar="FILE", help="factors fitted by `plan-opt calibrate` (applied to their devices)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from solver.explain.solve import solve
    from solver.report.deploy import ENGINES, emit
    from solver.report.launch import check_flags
    from solver.spec.solve_spec import load_spec

    spec, lines = load_spec(args.spec)
    engine = args.engine or (spec.engine.name if spec.engine.name in ENGINES else "vllm")
    result = solve(problem_from(spec, lines, args.spec, catalog_for(args)), explain=False)
    c = result.solution.candidate
    if c is None:
        print("plan-opt: no plan meets the spec; run `plan-opt solve` for the reason", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    dep = emit(result, engine, args.variant)
    if engine != spec.engine.name:
        dep.notes.append(f"the plan was sized with {spec.engine.name}'s memory rule; set `engine: {engine}` in the spec to size it for {engine}")
    bad = check_flags(dep)
    if bad:  # a bug in the template, not the user's input
        raise RuntimeError("emitted flags not in the engine's list: " + "; ".join(bad))
    if args.emit == "k8s":
        from solver.physics.memory import deployment_weights_bytes
        from solver.report.deploy_k8s import manifests, to_yaml

        name = f"{c.shape.deployment.model.name}-{engine}"
        weights = deployment_weights_bytes(c.shape.deployment)
        if dep.prefill is not None:  # one workload per pool
            docs = manifests(dep.prefill, name=f"{name}-prefill", image=args.image, weights_bytes=weights)
            docs += manifests(dep, name=f"{name}-decode", image=args.image, weights_bytes=weights)
        else:
            docs = manifests(dep, name=name, image=args.image, weights_bytes=weights)
        if args.format == "json":
            print(json.dumps(docs, indent=2))
        else:
            if dep.prefill is not None and c.prefill is not None:
                pre = dep.prefill
                print(
                    f"# plan-opt deploy: prefill pool {pre.replicas} replica(s) × {pre.gpus_per_replica} × {c.prefill.shape.device.display_name}, "
                    f"decode pool {dep.replicas} replica(s) × {dep.gpus_per_replica} × {c.shape.device.display_name} — {dep.engine}, {dep.model_id}"
                )
            else:
                print(
                    "# " + f"plan-opt deploy: {dep.replicas} replica(s) × {dep.nodes_per_replica} node(s) × "
                    f"{dep.gpus_per_node} × {c.shape.device.display_name} — {dep.engine}, {dep.model_id}"
                )
            for n in dep.notes:
                print(f"# {n}")
            sys.stdout.write(to_yaml(docs))
        return EXIT_OK
    if args.format == "json":
        out = _launch_json(dep)
        if dep.prefill is not None:
            out["serving"] = "disaggregated"
            out["prefill"] = _launch_json(dep.prefill)
            out["router"] = None if dep.router is None else dep.router.argv
        print(json.dumps(out, indent=2))
    else:
        pools = [(dep.prefill, c.prefill.shape.device.display_name if c.prefill else "")] if dep.prefill is not None else []
        pools.append((dep, c.shape.device.display_name))
        for launch, device in pools:
            role = f"{launch.role} pool: " if launch.role else ""
            print(
                f"# {role}{launch.replicas} replica(s) × {launch.gpus_per_replica} × {device} — {launch.engine}"
                + (f", {launch.nodes_per_replica} nodes of {launch.gpus_per_node} per replica" if launch.nodes_per_replica > 1 else "")
            )
            for path, text in launch.files.items():
                sys.stdout.write(f"cat > {path} <<'EOF'\n{text}EOF\n")
            if launch.nodes_per_replica > 1:
                for s in launch.steps:
                    print(f"[{s.node}] {s.command}")
            else:
                print(launch.command)
            for n in launch.notes:
                print(f"# {n}")
        if dep.router is not None:
            print("# router: one in front of both pools")
            print(dep.router.command)
    return EXIT_OK


def _launch_json(dep: Launch) -> dict[str, Any]:
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
