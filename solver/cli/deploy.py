"""`plan-opt deploy`: the launch commands or Kubernetes manifests of the plan."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from solver.cli.common import catalog_for, problem_from
from solver.errors import EXIT_DOES_NOT_FIT, EXIT_OK

if TYPE_CHECKING:
    pass


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "deploy",
        help="solve a spec and print the commands (or Kubernetes manifests) that serve the plan",
        description="Solve the spec, then turn the plan into what runs it: the published checkpoint in the plan's "
        "weight format, the engine command one replica runs (vLLM's `vllm serve`, SGLang's launch_server or "
        "llama.cpp's llama-server) on every node it spans, with the cluster setup a multi-node replica needs, and "
        "the number of replicas, and for a prefill/decode plan the router in front of both pools; or, with --emit k8s, "
        "Kubernetes manifests, with --emit kserve a KServe LLMInferenceService. Flags are checked against "
        "catalogs/engine_flags.yaml; a plan the engine cannot run (a KV or weight format it lacks) is refused.",
        epilog="Examples:\n  plan-opt deploy specs/chat-llama70b.yaml --engine sglang\n"
        "  plan-opt deploy specs/pipeline-405b.yaml --emit k8s > 405b.yaml\n"
        "  plan-opt deploy specs/long-prompts-disaggregated.yaml --emit kserve > llmisvc.yaml\n",
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
        choices=["commands", "k8s", "kserve"],
        default="commands",
        help="shell commands per node (default), Kubernetes manifests (Deployment / LeaderWorkerSet, and the P/D router of a "
        "disaggregated plan), or a KServe LLMInferenceService (vLLM)",
    )
    p.add_argument("--image", help="container image for --emit k8s or kserve (default: the engine's image for the GPU vendor)")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--calibration", metavar="FILE", help="factors fitted by `plan-opt calibrate` (applied to their devices)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from solver.explain.solve import solve
    from solver.report.deploy_json import default_engine, deploy_json, emit_checked
    from solver.spec.solve_spec import load_spec

    spec, lines = load_spec(args.spec)
    engine = default_engine(spec.engine.name, args.engine)
    catalog = catalog_for(args)
    result = solve(problem_from(spec, lines, args.spec, catalog), explain=False)
    c = result.solution.candidate
    if c is None:
        print("plan-opt: no plan meets the spec; run `plan-opt solve` for the reason", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    release = None
    if args.emit in ("k8s", "kserve") and args.image is None:  # spell the commands for the pinned image's release
        from solver.report.launch import flag_table

        release = flag_table()[engine].get("image_version", {}).get(c.shape.deployment.device.vendor)
    dep = emit_checked(result, engine, args.variant, spec.engine.name, release)
    if args.emit in ("k8s", "kserve"):
        from solver.physics.weights import deployment_weights_bytes, weights_bytes
        from solver.report.deploy_k8s import manifests, object_name, to_yaml

        name = f"{c.shape.deployment.model.name}-{engine}"
        d = c.shape.deployment
        # the bytes of the checkpoint the pods download and read (a 16-bit one where the engine quantises at load)
        weights = weights_bytes(d.model, catalog.precision(dep.reads_format)) if dep.reads_format else deployment_weights_bytes(d)
        if args.emit == "kserve":
            from solver.report.deploy_kserve import llm_inference_service

            docs = [llm_inference_service(dep, name=name, image=args.image, weights_bytes=weights)]
        elif dep.prefill is not None:  # one workload per pool, and the router in front of both
            from solver.report.pd_router import router_manifests

            docs = manifests(dep.prefill, name=f"{name}-prefill", image=args.image, weights_bytes=weights)
            docs += manifests(dep, name=f"{name}-decode", image=args.image, weights_bytes=weights)
            pre_app, dec_app = object_name(f"{name}-prefill"), object_name(f"{name}-decode")
            docs += router_manifests(dep, object_name(f"{name}-router"), pre_app, dec_app)
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
        print(json.dumps(deploy_json(dep), indent=2))
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
            print(
                "# router: one in front of both pools, sending each request to a prefill replica, then to a decode replica; "
                "give it a --prefill URL per prefill replica"
                + (" (with its bootstrap port)" if dep.engine == "sglang" else "")
                + " and a --decode URL per decode replica"
            )
            print(dep.router.command)
        if dep.benchmark:
            from solver.report.bench_command import RESULT_FILE
            from solver.report.launch import shell_line

            if dep.prefill is not None:
                print("# check it at the spec's load, through the router:")
            else:
                d = c.shape.deployment
                print(
                    f"# check one replica at its share of the load; `plan-opt calibrate {RESULT_FILE} --gpu {d.device.name} --tp {d.tp}"
                    + (f" --pp {d.pp}" if d.pp > 1 else "")
                    + "` "
                    "fits the planner to what it measures:"
                )
            print(shell_line(dep.benchmark))
            if dep.benchmark_guidellm:
                from solver.report.bench_command import GUIDELLM_FILE

                print(f"# or with GuideLLM (calibrate reads its {GUIDELLM_FILE} the same way):")
                print(shell_line(dep.benchmark_guidellm))
    return EXIT_OK
