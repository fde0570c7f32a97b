"""The analytic screen: what one replica of a shape sustains under open-loop traffic,
in microseconds of arithmetic, so that every shape of a search can be sized before
the simulator checks the few that matter.

At a rate λ per replica, in the steady state of a continuous-batching engine:

- The mean iteration τ is a fixed point: n = λ·Ō·τ sequences decode (Little's law
  on the decode phase), k = λ·P̄·τ prompt tokens ride along per iteration, and
  τ = iteration(n decoders at their mean context P̄ + Ō/2, k prompt tokens). No fixed
  point (τ runs away), more decoders than max_num_seqs or the KV cache holds at its
  99th percentile (n + 2.33√n), or more tokens than the budget: the rate is past what
  the replica sustains.
- TPOT at percentile q: the iteration at n + z_q·√n decoders (the number in a
  M/G/∞ decode phase is Poisson; its fluctuation is what slows one request's steps).
- TTFT: prompts queue for the budget the decoders leave, C = budget − n tokens per
  iteration (without chunked prefill, for whole-prompt iterations that pause the
  decoders). The queue is M/G/1 in prompt tokens: mean wait λ·E[S²] / (2(1 − ρ)),
  with ρ the prefill share of the budget; its tail is taken exponential, as M/M/1's
  (P(W > t) = ρ·e^(−ρt/W̄)), so the q-quantile wait is (W̄/ρ)·ln(ρ/(1 − q)). TTFT_q =
  half an iteration (the one running at arrival) + that wait + the q-quantile
  prompt's own prefill.
- End to end at q: mean TTFT + (q-quantile output − 1) × TPOT_q.
- Bursty arrivals (gaps with cv ca ≠ 1): the prompt queue is G/G/1, its mean wait
  Kingman's, ρ/(1 − ρ)·E[S]·(ca² + cs²)/2, which is Pollaczek–Khinchine's times
  (ca² + cs²)/(1 + cs²) (`kingman_factor`); the decoders, a G/G/∞ population, vary by
  the peakedness 1 + (ca² − 1)·κ times a Poisson count's (κ = ∫P(O > x)²dx / E[O],
  `Moments.output_overlap`); and the prompts landing in one request's life vary by
  ca² times a Poisson count's (a renewal count's variance, ca²·λt for long t).

These are approximations — the simulator, which schedules request by request, is
the check; the screen only has to rank shapes and size replicas close to right.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from solver.physics.deployment import Deployment, Targets, Workload, shared_kv_tokens
from solver.physics.engine_memory import step_budget_tokens
from solver.physics.iteration import IterationModel
from solver.physics.memory import estimate_memory
from solver.traffic.requests import Moments
from solver.traffic.simulate import EngineLimits

Z = {50.0: 0.0, 90.0: 1.2815515655446004, 95.0: 1.6448536269514722, 99.0: 2.3263478740408408}
"""Standard normal quantiles at the percentiles targets may name."""
DEFAULT_PERCENTILE = 99.0
"""The percentile reported where no target names one."""
FIXED_POINT_STEPS = 200
RATE_STEPS = 40
IDLE_RATE_PER_S = 1e-9
"""The rate sustainable_rate screens a shape's idle replica at (a vanishing one)."""


def engine_limits(d: Deployment, w: Workload) -> EngineLimits:
    """The scheduler's knobs for deployment `d` (the engine as resolved) and its KV cache."""
    e = d.engine
    mem = estimate_memory(d, w)
    block = mem.block_size_tokens or 16
    budget = step_budget_tokens(d, w.context_tokens)
    seqs = e.max_num_seqs if e else 256
    if e is not None and e.running_limit == "kv_half_pool":
        kv = mem.kv_capacity_tokens
        pool = min(max(int(kv / max(1, w.context_tokens) * 512), 2048), 4096)
        seqs = max(1, min(kv // 2, pool))
    shared = shared_kv_tokens(d, w)  # the cached prefix's blocks, held once for every request
    return EngineLimits(
        max_num_seqs=seqs,
        max_num_batched_tokens=max(budget, seqs),
        kv_capacity_tokens=max(block, mem.kv_capacity_tokens - shared),
        block_size_tokens=block,
        chunked_prefill=e.enable_chunked_prefill if e else True,
        prefill_schedule=e.prefill_schedule if e else "mixed",
        scheduler_steps=e.num_scheduler_steps if e else 1,
        overlap_schedule=e.overlap_schedule if e else False,
        reserve_new_tokens=e.reserve_new_tokens if e else False,
    )


@dataclass(frozen=True)
class Screen:
    """One replica at `rate_per_s`: the steady state, and the percentiles the targets name."""

    rate_per_s: float
    stable: bool
    limit: str
    """What stops a higher rate when not stable: memory, max_num_seqs, budget, decode."""
    iteration_s: float
    decoding: float
    """Mean sequences decoding."""
    prefill_share: float
    """Of the budget (chunked) or of the time (whole prompts), what prompts take."""
    ttft_mean_s: float
    tpot_mean_s: float
    e2e_mean_s: float
    ttft_q_s: float
    tpot_q_s: float
    e2e_q_s: float
    ttft_percentile: float
    tpot_percentile: float
    e2e_percentile: float
    prompt_cost_share: float = 0.0
    """Of the replica's time, the share its prompt tokens pay for (the $/Mtok split):
    a prompt-only iteration whole; a mixed one (a chunk beside decoders) in proportion
    to what each part would take alone (`split_mixed`), the rest the decoders'."""

    @property
    def concurrency(self) -> float:
        """Requests in the replica on average (Little's law)."""
        return self.rate_per_s * self.e2e_mean_s


def kingman_factor(arrival_cv: float, service_scv: float) -> float:
    """Kingman's G/G/1 mean wait over Pollaczek–Khinchine's M/G/1 one at the same ρ and
    service: (ca² + cs²)/2 over (1 + cs²)/2, `service_scv` being cs²."""
    return (arrival_cv**2 + service_scv) / (1 + service_scv)


def peakedness(arrival_cv: float, overlap: float) -> float:
    """Var/mean of the number in a G/G/∞ system fed by renewal arrivals of cv `arrival_cv`
    (Whitt's heavy-traffic approximation, 1 + (ca² − 1)·κ; exact 1 for Poisson)."""
    return max(0.0, 1 + (arrival_cv**2 - 1) * overlap)


def replica_cv(arrival_cv: float, replicas: int) -> float:
    """The cv of one replica's arrivals when `replicas` share a renewal stream: split at
    random (each arrival to a replica with p = 1/replicas), a replica's gap is a
    geometric sum of the stream's, of squared cv p·ca² + (1 − p), so a Poisson stream
    stays Poisson; round-robin and JSQ split more evenly still (this bounds them)."""
    p = 1 / max(1, replicas)
    return math.sqrt(p * arrival_cv**2 + (1 - p))


def _wait_quantile_s(mean_wait_s: float, rho: float, p: float) -> float:
    if rho <= 0 or mean_wait_s <= 0 or rho <= 1 - p / 100:
        return 0.0
    return mean_wait_s / rho * math.log(rho / (1 - p / 100))


def screen(model: IterationModel, limits: EngineLimits, m: Moments, rate_per_s: float, targets: Targets, arrival_cv: float = 1.0) -> Screen:
    lam = rate_per_s
    peak = peakedness(arrival_cv, m.output_overlap)
    ctx = m.prompt_mean + m.output_mean / 2
    kv_seqs = limits.kv_capacity_tokens / (ctx + limits.block_size_tokens / 2)
    seq_cap = min(float(limits.max_num_seqs), kv_seqs)
    budget = float(limits.max_num_batched_tokens)
    cost = model.mean_iteration_s
    chunked = limits.chunked_prefill
    separate = chunked and limits.prefill_schedule == "separate"  # SGLang: prompt passes apart, decoders wait
    mixed = chunked and not separate
    qt = targets.ttft_percentile or DEFAULT_PERCENTILE
    qp = targets.tpot_percentile or DEFAULT_PERCENTILE
    qe = targets.e2e_percentile or DEFAULT_PERCENTILE

    def unstable(limit: str, tau: float = math.inf) -> Screen:
        inf = math.inf
        return Screen(lam, False, limit, tau, inf, 1.0, inf, inf, inf, inf, inf, inf, qt, qp, qe)

    def decode_s(n: float) -> float:
        """A decode-only iteration of n sequences at their mean context (at least one:
        a request that decodes is never alone in less)."""
        n = max(n, 1.0)
        return cost(n, n * ctx, 0.0, 0.0)

    def chunked_prompt(p: float, n: float) -> tuple[int, float, float]:
        """(chunks, tokens per chunk, attention pairs per chunk) of a p-token prompt in
        what the budget leaves beside n decoders."""
        room = max(1.0, budget - (0.0 if separate else n))
        chunks = math.ceil(p / room)
        chunk = p / chunks
        # chunk i attends to the i·chunk tokens before it: c·a + c(c+1)/2 each (one
        # chunk: c(c+1)/2, the sum's one term and the same float, 0 + c·0.0 adding 0)
        if chunks == 1:
            return 1, chunk, chunk * (chunk + 1) / 2
        pairs = sum(chunk * (i * chunk) + chunk * (chunk + 1) / 2 for i in range(chunks))
        return chunks, chunk, pairs / chunks

    def prompt_s(p: float, n: float) -> float:
        """The iterations that carry a prompt of p tokens beside n decoders (chunked:
        in chunks of what the budget leaves; else one prompt-only iteration)."""
        if not chunked:
            return cost(0.0, 0.0, p, p * (p + 1) / 2)
        chunks, chunk, pairs = chunked_prompt(p, n)
        return chunks * (cost(0.0, 0.0, chunk, pairs) if separate else cost(n, n * ctx, chunk, pairs))

    def prompt_paid_s(p: float, n: float) -> float:
        """Of prompt_s, what the prompt's own tokens pay for: each mixed iteration split
        with its n decoders by `split_mixed`."""
        if not mixed:
            return prompt_s(p, n)
        chunks, chunk, pairs = chunked_prompt(p, n)
        alone_decode = cost(n, n * ctx, 0.0, 0.0) if n > 0 else 0.0
        return chunks * split_mixed(cost(n, n * ctx, chunk, pairs), cost(0.0, 0.0, chunk, pairs), alone_decode)

    def rounds(n: float) -> float:
        """Iterations per second, every one advancing each decoder a token (chunked) or
        the decode-only ones (whole prompts): the time left after the prompts' iterations
        goes to decode-only ones."""
        busy = lam * prompt_s(m.prompt_mean, n)
        if busy >= 1:
            return 0.0
        per_s = (1 - busy) / decode_s(n)
        return per_s + lam * math.ceil(m.prompt_mean / max(1.0, budget - n)) if mixed else per_s

    # Fixed point: n = λ·Ō·τ decoders, τ = 1 / rounds(n).
    n = 0.0
    for _ in range(FIXED_POINT_STEPS):
        r = rounds(n)
        if r <= 0:
            return unstable("budget")
        new = lam * m.output_mean / r
        if new > 10 * seq_cap + 1e6:
            return unstable("decode")
        done = abs(new - n) <= 1e-7 * (1 + n)
        n = new
        if done:
            break
    else:
        return unstable("decode")
    tau = 1 / rounds(n)
    if n + Z[99.0] * math.sqrt(peak * n) > seq_cap:
        return unstable("memory" if kv_seqs < limits.max_num_seqs else "max_num_seqs", tau)
    if chunked and n >= budget:
        return unstable("budget", tau)

    def tpot_at(p: float) -> float:
        """A request's mean step over its output: decode-only steps at the q-quantile
        batch, and the prompt iterations that land in its life at their q-quantile count."""
        nq = min(seq_cap, n + Z[p] * math.sqrt(peak * n))
        steps = max(1.0, m.output_mean - 1)
        life_s = steps * tau
        mean_hits = lam * life_s * (chunked_prompt(m.prompt_mean, nq)[0] if chunked else 1)
        hits = min(steps, mean_hits + Z[p] * arrival_cv * math.sqrt(mean_hits))
        d = decode_s(nq)
        if mixed:
            return (d * (steps - hits) + prompt_s(m.prompt_mean, nq) * hits) / steps
        return d + prompt_s(m.prompt_mean, nq) * hits / steps

    # A new prompt waits for the prompt work ahead of it: the iterations that carry
    # prompts are a work-conserving M/G/1 server (Pollaczek–Khinchine: the mean wait
    # λ·E[S²]/(2(1 − ρ)), ρ the share of time they take), plus half a decode iteration
    # (the one running at its arrival), then its own prompt iteration.
    p_iter = prompt_s(m.prompt_mean, n)
    rho = lam * p_iter
    if rho >= 1:
        return unstable("budget", tau)
    spread = m.prompt_p2_mean / m.prompt_mean**2  # E[S²] ≈ E[S]² · E[P²]/E[P]²
    wait = lam * p_iter**2 * spread / (2 * (1 - rho)) * kingman_factor(arrival_cv, spread - 1)
    # (vLLM multi-step: the rest of the window of k steps in flight, k × half a step;
    # SGLang's overlap scheduler: the next step too, chosen before the arrival)
    steps_ahead = limits.scheduler_steps / 2 + (1 if limits.overlap_schedule else 0)
    residual = steps_ahead * decode_s(n) + model.request_overhead_s  # and the front end's time
    ttft_mean = residual + wait + p_iter

    def ttft_at(p: float) -> float:
        """The q-quantile: the wait's (an exponential tail, as M/M/1's) and our own
        prompt's deviations combined as independent ones."""
        return residual + wait + p_iter + math.hypot(_wait_quantile_s(wait, rho, p) - wait, prompt_s(m.prompt_at(p), n) - p_iter)

    ttft_q = ttft_at(qt)
    share = rho
    tpot_mean = tpot_at(50.0)
    tpot_q = tpot_at(qp)
    e2e_mean = ttft_mean + (m.output_mean - 1) * tpot_mean
    e2e_q = ttft_mean + (m.output_at(qe) - 1) * tpot_at(qe)
    paid = min(1.0, lam * prompt_paid_s(m.prompt_mean, n))
    return Screen(lam, True, "", tau, n, share, ttft_mean, tpot_mean, e2e_mean, ttft_q, tpot_q, e2e_q, qt, qp, qe, paid)


def split_mixed(mixed_s: float, prompt_alone_s: float, decode_alone_s: float) -> float:
    """The prompt chunk's part of a mixed iteration of `mixed_s`: the iteration split in
    proportion to what the chunk and the decoders would each take alone (the weights
    read once, the fixed cost and the all-reduces' latency thus shared by that ratio),
    so the two parts add up to the iteration."""
    alone = prompt_alone_s + decode_alone_s
    return mixed_s * prompt_alone_s / alone if alone > 0 else 0.0


def misses(s: Screen, targets: Targets) -> str:
    """The first target the screen misses ('' when all hold; the limit when unstable)."""
    if not s.stable:
        return s.limit
    if targets.max_ttft_s is not None and s.ttft_q_s > targets.max_ttft_s:
        return "ttft"
    if targets.max_tpot_s is not None and s.tpot_q_s > targets.max_tpot_s:
        return "tpot"
    if targets.max_e2e_s is not None and s.e2e_q_s > targets.max_e2e_s:
        return "e2e"
    return ""


@dataclass(frozen=True)
class Sustainable:
    """The most requests per second one replica serves within the targets, and what stops more."""

    rate_per_s: float
    binding: str
    """ttft, tpot, e2e (a target) or memory, max_num_seqs, budget, decode (a limit)."""
    idle: Screen
    """At a vanishing rate: the best the shape can do."""
    at_rate: Screen | None = None
    """At rate_per_s (None when it is 0): what the replica's time goes to at capacity."""


def screen_memo(
    memo: dict[tuple[float, ...], Screen],
    model: IterationModel,
    limits: EngineLimits,
    m: Moments,
    rate_per_s: float,
    targets: Targets,
    arrival_cv: float = 1.0,
) -> Screen:
    """`screen`, kept in `memo` (one per model, limits and lengths): its figures depend on
    the targets only through their percentiles, so a re-solve under a moved target
    re-reads the rates its search shares with the first pass."""
    key = (rate_per_s, targets.ttft_percentile or 0.0, targets.tpot_percentile or 0.0, targets.e2e_percentile or 0.0, arrival_cv)
    got = memo.get(key)
    if got is None:
        got = memo[key] = screen(model, limits, m, rate_per_s, targets, arrival_cv)
    return got


def sustainable_rate(
    model: IterationModel,
    limits: EngineLimits,
    m: Moments,
    targets: Targets,
    arrival_cv: float = 1.0,
    memo: dict[tuple[float, ...], Screen] | None = None,
) -> Sustainable:
    """Bisection on the rate: every delay the screen computes grows with it."""
    tiny = IDLE_RATE_PER_S
    screens: dict[tuple[float, ...], Screen] = {} if memo is None else memo

    def at(rate_per_s: float) -> Screen:
        return screen_memo(screens, model, limits, m, rate_per_s, targets, arrival_cv)

    idle = at(tiny)
    if misses(idle, targets):
        return Sustainable(0.0, misses(idle, targets), idle)
    lo, hi = tiny, max(tiny * 2, 1.0 / max(idle.e2e_mean_s, 1e-9))
    while not misses(at(hi), targets):
        lo, hi = hi, hi * 2
        if hi > 1e9:
            return Sustainable(lo, "decode", idle, at(lo))
    for _ in range(RATE_STEPS):
        if hi / lo < 1 + 1e-3:  # the rate to 0.1 %: replicas are whole numbers
            break
        mid = math.sqrt(lo * hi)
        if misses(at(mid), targets):
            hi = mid
        else:
            lo = mid
    return Sustainable(lo, misses(at(hi), targets), idle, at(lo))


BINDING_TARGETS = {
    "ttft": "max_ttft",
    "tpot": "max_tpot",
    "e2e": "max_e2e",
    "memory": "memory",
    "max_num_seqs": "memory",
    "budget": "max_ttft",
    "decode": "max_tpot",
}
"""A screen's binding limit in the vocabulary of the constraints (optimise/targets.py):
the token budget stops prompts (TTFT), a runaway decode stops TPOT."""


@dataclass(frozen=True)
class TrafficSizing:
    """How a plan under traffic was sized: the replica's sustainable rate, the load each
    replica gets, and the screen at that load."""

    requests_per_s: float
    """Over all replicas."""
    sustainable: Sustainable
    at_load: Screen
    floor: int = 0
    """Replicas the simulation asked for beyond the screen's (0: none)."""
    max_num_seqs: int = 0
    """The scheduler's limit the screen and the simulation ran with (deploy emits it)."""

    @property
    def at_load_seqs(self) -> int:
        return self.max_num_seqs

    @property
    def binding_target(self) -> str:
        return BINDING_TARGETS.get(self.sustainable.binding, self.sustainable.binding)


@dataclass(frozen=True)
class ShapeScreen:
    """One shape's iteration cost, scheduler limits and sustainable rate, kept for re-solves."""

    cost: IterationModel
    limits: EngineLimits
    sustainable: Sustainable
    moments: Moments | None = None
    """The lengths the screen saw: prompts less what the prefix cache supplies."""
    screens: dict[tuple[float, ...], Screen] = field(default_factory=dict, compare=False, repr=False)
    """The screens at each rate so far (`screen_memo`), shared by every target's ShapeScreen of the shape."""
