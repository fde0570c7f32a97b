"""The benchmark that checks a deployed plan: `vllm bench serve`, or GuideLLM (each drives any
OpenAI-compatible server: vLLM, SGLang, TensorRT-LLM, llama-server) with the spec's mean
prompt and output lengths, against one replica at its share of the load — the users one
replica carries as the concurrency, or the request rate over the replicas — so its
result is one measured point `plan-opt calibrate` reads back (a prefill/decode plan: the
whole load through its router)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.explain.records import SolveResult
    from solver.report.launch import Launch

RESULT_FILE = "plan-check.json"
"""Where the benchmark saves its result (`plan-opt calibrate plan-check.json --gpu ...` reads it)."""
MIN_PROMPTS = 200
"""Requests sent at the least: a mean over fewer moves with the draw."""


@dataclass(frozen=True)
class Load:
    """What a check sends, and where: the spec's lengths at one replica's share of the
    load (a prefill/decode plan: the whole load through its router)."""

    url: str
    model: str
    prompt_tokens: int
    output_tokens: int
    requests: int
    requests_per_s: float | None
    """A rate spec: Poisson arrivals at this rate; None for a users spec."""
    users: int
    """A users spec: the requests kept in flight at once (0 for a rate spec)."""


def load_of(result: SolveResult, dep: Launch, host: str = "localhost") -> Load:
    c = result.solution.candidate
    assert c is not None
    w = result.problem.workload
    whole = dep.router is not None  # prefill/decode pools: requests enter at the router, all of them
    port = int(dep.router.argv[dep.router.argv.index("--port") + 1]) if whole and "--port" in dep.router.argv else dep.port  # type: ignore[union-attr]
    share = 1 if whole else c.replicas
    url = f"http://{host}:{port}"
    if w.traffic is not None:  # a rate: Poisson arrivals at this replica's share, enough requests for percentiles
        prompts = max(MIN_PROMPTS, result.problem.spec.simulation.requests // share)
        return Load(url, dep.model_id, w.prompt_tokens, w.output_tokens, prompts, w.traffic.requests_per_s / share, 0)
    users = w.users if whole else c.batch  # those one replica carries in flight at once, each several times over
    return Load(url, dep.model_id, w.prompt_tokens, w.output_tokens, max(MIN_PROMPTS, 10 * users), None, users)


def bench_argv(result: SolveResult, dep: Launch, host: str = "localhost") -> list[str]:
    """vllm bench serve's flags (docs.vllm.ai cli/bench/serve, 2026: --model, --base-url,
    --dataset-name random, --random-input-len, --random-output-len, --request-rate,
    --max-concurrency, --num-prompts, --save-result, --result-filename)."""
    x = load_of(result, dep, host)
    argv = ["vllm", "bench", "serve", "--model", x.model, "--base-url", x.url]
    argv += ["--dataset-name", "random", "--random-input-len", str(x.prompt_tokens), "--random-output-len", str(x.output_tokens)]
    if x.requests_per_s is not None:
        argv += ["--request-rate", f"{x.requests_per_s:.6g}", "--num-prompts", str(x.requests)]
    else:
        argv += ["--request-rate", "inf", "--max-concurrency", str(x.users), "--num-prompts", str(x.requests)]
    return argv + ["--save-result", "--result-filename", RESULT_FILE]


GUIDELLM_FILE = "plan-check-guidellm.json"
"""Where GuideLLM saves its report (`plan-opt calibrate plan-check-guidellm.json --gpu ...` reads it)."""


def guidellm_argv(result: SolveResult, dep: Launch, host: str = "localhost") -> list[str]:
    """The same check with GuideLLM. Since v0.7 (its CLI refactor of 2026-06) the command
    is `guidellm run` (`guidellm benchmark` is gone) and each option takes
    `kind=TYPE,key=value,...`; checked against the v0.7.3 tag (2026-07-31): README
    "Load Patterns" (--backend, --profile, --constraint, --data; --output kind=json,path=),
    and the fields the keys set: backends/openai/http.py (target, model),
    benchmark/profiles/asynchronous.py (kind poisson, rate), profiles/concurrent.py
    (streams), scheduler/constraints/request.py (max_requests, count),
    data/deserializers/synthetic.py (synthetic_text, prompt_tokens, output_tokens),
    benchmark/outputs/serialized.py (json, path)."""
    x = load_of(result, dep, host)
    if x.requests_per_s is not None:
        profile = f"kind=poisson,rate={x.requests_per_s:.6g}"
    else:
        profile = f"kind=concurrent,streams={x.users}"
    return [
        "guidellm",
        "run",
        "--backend",
        f"kind=openai_http,target={x.url},model={x.model}",
        "--profile",
        profile,
        "--constraint",
        f"kind=max_requests,count={x.requests}",
        "--data",
        f"kind=synthetic_text,prompt_tokens={x.prompt_tokens},output_tokens={x.output_tokens}",
        "--output",
        f"kind=json,path={GUIDELLM_FILE}",
    ]
