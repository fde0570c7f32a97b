"""A plan under traffic in `solve --format json`: the rate each replica takes and the
most it sustains, what binds, the targets against the screen and the simulation, the
simulated percentiles and the cost per million tokens at the load and at saturation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from solver.explain.records import SolveResult
from solver.physics.deployment import LengthDistribution
from solver.report.strict_json import SolveModel

if TYPE_CHECKING:
    from solver.traffic.simulate import SimResult


class LengthsOut(SolveModel):
    dist: str
    mean_tokens: float
    p99_tokens: float | None
    low_tokens: int
    high_tokens: int


class TargetCheckOut(SolveModel):
    target: str = Field(description="max_ttft, max_tpot or max_e2e, at its percentile.")
    percentile: float
    limit_s: float
    screened_s: float | None = Field(description="The analytic screen at the plan's load (None: not screened).")
    simulated_s: float | None = Field(description="The first seed's run (simulated.seed).")
    simulated_mean_s: float | None = Field(description="The mean over the seeds run (simulated.seeds).")
    bound_s: float | None = Field(description="The one-sided 95 % prediction bound of another seed's percentile, held to the limit (the verdict).")
    margin_s: float | None = Field(description="limit_s − bound_s: how far inside the target the bound is (negative: past it).")


class PercentilesOut(SolveModel):
    p50: float | None
    p90: float | None
    p99: float | None


class SimulatedOut(SolveModel):
    requests: int
    seed: int
    seeds: list[int] = Field(description="Every seed the verdict ran (each with `requests` requests); the figures below are the first's.")
    routing: str
    ttft_s: PercentilesOut
    tpot_s: PercentilesOut
    e2e_s: PercentilesOut
    goodput: float = Field(description="Share of the requests meeting every target at once.")
    goodput_bound: float | None = Field(description="With a min_goodput target: the lower 95 % prediction bound over the seeds, held to it.")
    utilisation: float = Field(description="Busy share of the replicas' time.")
    mean_queue: float = Field(description="Requests waiting, time-averaged, per replica (mean over replicas).")
    max_queue: int
    preemptions: int
    rejected: int = Field(description="Requests no replica could ever serve (longer than its KV cache).")
    throughput_tokens_per_s: float


class RefusedOut(SolveModel):
    plan: str
    replicas: int
    missed: list[str]


class TrafficOut(SolveModel):
    requests_per_s: float
    arrival_cv: float
    prompt: LengthsOut
    output: LengthsOut
    requests_per_s_per_replica: float
    sustainable_requests_per_s_per_replica: float = Field(description="The most one replica takes with every target held (the screen).")
    binding: str = Field(description="What stops a replica taking more: ttft, tpot, e2e (a target) or memory, max_num_seqs, budget, decode.")
    targets: list[TargetCheckOut]
    simulated: SimulatedOut | None
    refused_by_simulation: list[RefusedOut] = Field(description="Plans the screen chose that the simulation refused, before this one.")
    usd_per_million_tokens_at_load: float = Field(description="Input and output tokens together, at the spec's rate.")
    usd_per_million_tokens_at_capacity: float = Field(description="The same plan at its sustainable rate on every replica.")
    usd_per_million_input_tokens_at_load: float = Field(
        description="The replicas' time split between prompts and decoding at the spec's rate: prompt-only iterations the prompts', "
        "decode-only ones the outputs', and a mixed iteration (a prompt chunk beside decoders) split in proportion to what "
        "the chunk and the decoders would each take alone; input and output pay for the plan exactly."
    )
    usd_per_million_output_tokens_at_load: float
    usd_per_million_input_tokens_at_capacity: float
    usd_per_million_output_tokens_at_capacity: float


def lengths_out(x: LengthDistribution) -> LengthsOut:
    return LengthsOut(dist=x.dist, mean_tokens=x.mean_tokens, p99_tokens=x.p99_tokens, low_tokens=x.low_tokens, high_tokens=x.high_tokens)


def _percentiles(sim: SimResult, metric: str) -> PercentilesOut:
    has = [r for r in sim.results if getattr(r, metric) is not None]
    if not has:
        return PercentilesOut(p50=None, p90=None, p99=None)
    return PercentilesOut(p50=sim.percentile(metric, 50), p90=sim.percentile(metric, 90), p99=sim.percentile(metric, 99))


def traffic_out(r: SolveResult) -> TrafficOut | None:
    p = r.problem
    w, t = p.workload, p.targets
    c = r.solution.candidate
    if w.traffic is None or c is None or c.traffic is None:
        return None
    sizing, check = c.traffic, r.traffic_check
    bounds = {b.target: b for b in check.bounds} if check else {}
    targets = []
    for name, limit, pct, screened, sim_s in (
        ("max_ttft", t.max_ttft_s, t.ttft_percentile, c.ttft_s, check.ttft_q_s if check else None),
        ("max_tpot", t.max_tpot_s, t.tpot_percentile, c.tpot_s, check.tpot_q_s if check else None),
        ("max_e2e", t.max_e2e_s, t.e2e_percentile, sizing.at_load.e2e_q_s, check.e2e_q_s if check else None),
    ):
        if limit is not None and pct is not None:
            b = bounds.get(name)
            targets.append(
                TargetCheckOut(
                    target=name,
                    percentile=pct,
                    limit_s=limit,
                    screened_s=screened,
                    simulated_s=sim_s,
                    simulated_mean_s=b.mean if b else None,
                    bound_s=b.bound if b else None,
                    margin_s=b.margin if b else None,
                )
            )
    tokens = w.traffic.prompt.mean_tokens + w.traffic.output.mean_tokens
    per_hour = c.cost_usd_per_hour
    at_load = per_hour / (3600 * w.traffic.requests_per_s * tokens) * 1e6
    capacity = c.replicas * sizing.sustainable.rate_per_s
    at_capacity = per_hour / (3600 * capacity * tokens) * 1e6 if capacity > 0 else at_load

    def split(rate_per_replica: float, paid_share: float) -> tuple[float, float]:
        """$/M input and output tokens: each replica-second's cost split by the share of
        its time the prompts pay for (the screen's prompt_cost_share: a mixed iteration
        split between its chunk and its decoders by what each would take alone)."""
        per_s = per_hour / 3600 / c.replicas
        share = min(1.0, max(0.0, paid_share))
        assert w.traffic is not None
        if rate_per_replica <= 0:
            return 0.0, 0.0
        return (
            per_s * share / (rate_per_replica * w.traffic.prompt.mean_tokens) * 1e6,
            per_s * (1 - share) / (rate_per_replica * w.traffic.output.mean_tokens) * 1e6,
        )

    load = sizing.at_load
    in_load, out_load = split(load.rate_per_s, load.prompt_cost_share)
    mu = sizing.sustainable.rate_per_s
    top = sizing.sustainable.at_rate
    in_cap, out_cap = split(mu, top.prompt_cost_share if top is not None else load.prompt_cost_share)
    simulated = None
    if check is not None:
        sim = check.sim
        settings = p.spec.simulation
        simulated = SimulatedOut(
            requests=len(sim.results) + len(sim.rejected),
            seed=settings.seed,
            seeds=list(check.seeds),
            routing=settings.routing,
            ttft_s=_percentiles(sim, "ttft_s"),
            tpot_s=_percentiles(sim, "tpot_s"),
            e2e_s=_percentiles(sim, "e2e_s"),
            goodput=check.goodput,
            goodput_bound=bounds["goodput"].bound if "goodput" in bounds else None,
            utilisation=min(1.0, sim.utilisation),
            mean_queue=sum(x.mean_queue for x in sim.replicas) / max(1, len(sim.replicas)),
            max_queue=max((x.max_queue for x in sim.replicas), default=0),
            preemptions=sum(x.preemptions for x in sim.replicas),
            rejected=len(sim.rejected),
            throughput_tokens_per_s=sim.throughput_tokens_per_s,
        )
    return TrafficOut(
        requests_per_s=w.traffic.requests_per_s,
        arrival_cv=w.traffic.arrival_cv,
        prompt=lengths_out(w.traffic.prompt),
        output=lengths_out(w.traffic.output),
        requests_per_s_per_replica=w.traffic.requests_per_s / c.replicas,
        sustainable_requests_per_s_per_replica=sizing.sustainable.rate_per_s,
        binding=sizing.sustainable.binding,
        targets=targets,
        simulated=simulated,
        refused_by_simulation=[RefusedOut(plan=label, replicas=n, missed=missed) for label, n, missed in r.traffic_rejected],
        usd_per_million_tokens_at_load=at_load,
        usd_per_million_tokens_at_capacity=at_capacity,
        usd_per_million_input_tokens_at_load=in_load,
        usd_per_million_output_tokens_at_load=out_load,
        usd_per_million_input_tokens_at_capacity=in_cap,
        usd_per_million_output_tokens_at_capacity=out_cap,
    )
