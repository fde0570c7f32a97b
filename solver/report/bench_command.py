"""The benchmark that checks a deployed plan: `vllm bench serve` (it drives any
OpenAI-compatible server: vLLM, SGLang, TensorRT-LLM, llama-server) with the spec's mean
prompt and output lengths, against one replica at its share of the load — the users one
replica carries as the concurrency, or the request rate over the replicas — so its
result is one measured point `plan-opt calibrate` reads back (a prefill/decode plan: the
whole load through its router)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.explain.records import SolveResult
    from solver.report.launch import Launch

RESULT_FILE = "plan-check.json"
"""Where the benchmark saves its result (`plan-opt calibrate plan-check.json --gpu ...` reads it)."""
MIN_PROMPTS = 200
"""Requests sent at the least: a mean over fewer moves with the draw."""


def bench_argv(result: SolveResult, dep: Launch, host: str = "localhost") -> list[str]:
    """vllm bench serve's flags (docs.vllm.ai cli/bench/serve, 2026: --model, --base-url,
    --dataset-name random, --random-input-len, --random-output-len, --request-rate,
    --max-concurrency, --num-prompts, --save-result, --result-filename)."""
    c = result.solution.candidate
    assert c is not None
    w = result.problem.workload
    whole = dep.router is not None  # prefill/decode pools: requests enter at the router, all of them
    port = int(dep.router.argv[dep.router.argv.index("--port") + 1]) if whole and "--port" in dep.router.argv else dep.port  # type: ignore[union-attr]
    share = 1 if whole else c.replicas
    argv = ["vllm", "bench", "serve", "--model", dep.model_id, "--base-url", f"http://{host}:{port}"]
    argv += ["--dataset-name", "random", "--random-input-len", str(w.prompt_tokens), "--random-output-len", str(w.output_tokens)]
    if w.traffic is not None:  # a rate: Poisson arrivals at this replica's share, enough requests for percentiles
        prompts = max(MIN_PROMPTS, result.problem.spec.simulation.requests // share)
        argv += ["--request-rate", f"{w.traffic.requests_per_s / share:.6g}", "--num-prompts", str(prompts)]
    else:  # users: those one replica carries in flight at once, each several times over
        users = w.users if whole else c.batch
        argv += ["--request-rate", "inf", "--max-concurrency", str(users), "--num-prompts", str(max(MIN_PROMPTS, 10 * users))]
    return argv + ["--save-result", "--result-filename", RESULT_FILE]
