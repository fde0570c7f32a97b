"""A solver-free check of a plan: re-derive every figure the plan claims from the
physics (a fresh `evaluate` of its deployment at its batch) and from the spec, and list
what it breaks. CP-SAT chose the plan from precomputed integer coefficients; this
re-checks it without them, so a rounding slip, a stale coefficient or a wrong
constraint shows as a violation instead of a confident wrong answer. `plan-opt solve`
runs it before printing (a violation is a bug: exit 4), and the tests run it on every
plan they solve."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from solver.optimise.candidate import Candidate
from solver.optimise.problem import Problem
from solver.physics.costs import owned_in_use
from solver.physics.deployment import Targets, Workload
from solver.physics.disaggregation import kv_transfer, link_load_ok, prefill_pool_load
from solver.physics.evaluate import evaluate
from solver.physics.prefill import estimate_prefill

if TYPE_CHECKING:
    from solver.traffic.verify import Check


@dataclass(frozen=True)
class Violation:
    rule: str
    """The constraint's name, as the reports name it (memory, max_tpot, users, ...)."""
    detail: str


def validate(problem: Problem, c: Candidate, check: Check | None = None) -> list[Violation]:
    """Under traffic the latency rules are the simulation's (`check`): the plan is
    evaluated at the requests a replica holds on average, for memory and the splits."""
    spec, w, t = problem.spec, problem.workload, problem.targets
    traffic = w.traffic is not None
    if traffic:
        w = dataclasses.replace(w, users=c.batch * c.replicas)
        t = Targets()
    d = c.shape.deployment
    out: list[Violation] = []

    def bad(rule: str, detail: str) -> None:
        out.append(Violation(rule, detail))

    if d.device.name not in {dev.name for dev in problem.devices}:
        bad("search.gpus", f"{d.device.name} is not among the devices searched")
    if d.weights.name not in {p for p in spec.search.weights} | _sixteen(spec.search.weights):
        bad("search.weights", f"{d.weights.name} weights are not among {spec.search.weights}")
    if d.kv.name not in {p for p in spec.search.kv_cache} | _sixteen(spec.search.kv_cache):
        bad("search.kv_cache", f"a {d.kv.name} KV cache is not among {spec.search.kv_cache}")
    if d.tp not in spec.search.tp and not (d.engine and d.engine.split_mode == "layer" and d.tp * d.pp in spec.search.tp):
        bad("search.tp", f"TP {d.tp} is not among {spec.search.tp}")
    if check is not None and not check.ok:
        bad("traffic", f"the simulation misses {', '.join(check.failing)}")
    if c.replicas * c.batch < w.users:
        bad("users", f"{c.replicas} replicas × {c.batch} sequences hold fewer than the {w.users} users")

    if c.prefill is not None:  # the decode pool decodes only; the TTFT is the prefill pool's
        w = dataclasses.replace(w, batching="isolated")
    ev = evaluate(d.replace(replicas=c.replicas), w, t if c.prefill is None else dataclasses.replace(t, max_ttft_s=None), with_remedies=False)
    if not ev.valid:
        bad("split", "; ".join(ev.refusals))
        return out
    est = ev.estimates
    ttft = ev.estimates.ttft_s
    if c.prefill is not None:
        ttft = _prefill_pool_checks(problem, c, w, est.decode.tpot_s, bad)
    batch = est.decode.batch
    if est.memory.max_batch < batch:
        bad("memory", f"{batch} sequences per replica, but memory holds {est.memory.max_batch}")
    if t.max_tpot_s is not None and est.decode.tpot_s > t.max_tpot_s * (1 + 1e-9):
        bad("max_tpot", f"TPOT {est.decode.tpot_s * 1e3:.3f} ms exceeds {t.max_tpot_s * 1e3:.3f} ms")
    if t.max_ttft_s is not None and ttft > t.max_ttft_s * (1 + 1e-9):
        bad("max_ttft", f"TTFT {ttft * 1e3:.3f} ms exceeds {t.max_ttft_s * 1e3:.3f} ms")
    if ev.verdict("interconnect").ok is False:
        bad("interconnect", ev.verdict("interconnect").note)
    if problem.max_gpus is not None and c.gpus > problem.max_gpus:
        bad("max_gpus", f"{c.gpus} GPUs exceed {problem.max_gpus}")
    rent = buy = 0.0
    gpus: dict[str, tuple[int, int, float, float]] = {}
    whole: dict[str, list[tuple[int, int]]] = {}
    for shape, n in c.pools:  # two pools of one device share its owned GPUs, in whole replicas
        dev = shape.device
        had = gpus.get(dev.name, (0, shape.owned, dev.price.usd_per_gpu_hour if dev.price else 0.0, dev.purchase_usd or 0.0))
        gpus[dev.name] = (had[0] + n, *had[1:])
        whole.setdefault(dev.name, []).append((shape.gpus_per_replica, n // shape.gpus_per_replica))
    used = {name: owned_in_use(owned, whole[name]) for name, (_, owned, _, _) in gpus.items()}
    if c.gpus - c.rented != sum(used.values()):
        bad("inventory", f"{c.gpus - c.rented} owned GPUs used; whole replicas of the {c.shape.owned} owned fill {sum(used.values())}")
    for name, (n, _, price, purchase) in gpus.items():
        rent += (n - used[name]) * price
        buy += (n - used[name]) * purchase
    if sum(n for n, *_ in gpus.values()) != c.gpus:
        bad("gpus", f"the pools hold {sum(n for n, *_ in gpus.values())} GPUs, the plan claims {c.gpus}")
    if abs(rent - c.cost_usd_per_hour) > 1e-6:
        bad("cost", f"the pools rent at ${rent:,.2f}/h, the plan claims ${c.cost_usd_per_hour:,.2f}/h")
    if problem.max_usd_per_hour is not None and rent > problem.max_usd_per_hour + 1e-9:
        bad("max_usd_per_hour", f"${rent:,.2f}/h exceeds ${problem.max_usd_per_hour:,.2f}/h")
    if problem.max_purchase_usd is not None and buy > problem.max_purchase_usd + 1e-6:
        bad("max_purchase_usd", f"${buy:,.0f} exceeds ${problem.max_purchase_usd:,.0f}")
    return out


def _prefill_pool_checks(problem: Problem, c: Candidate, w: Workload, tpot_s: float, bad: Callable[[str, str], None]) -> float:
    """A disaggregated plan's prefill pool, re-derived: its shape searched and runnable,
    a prompt's KV in its memory, its queue (the closed form, prompt_queue.queued_prompt_s) not
    saturated, the KV over the link; returns the TTFT it gives."""
    pool = c.prefill
    assert pool is not None
    p, dd = pool.shape.deployment, c.shape.deployment
    spec = problem.spec
    if p.device.name not in {dev.name for dev in problem.devices}:
        bad("search.gpus", f"the prefill pool's {p.device.name} is not among the devices searched")
    if (p.weights.name, p.kv.name) != (dd.weights.name, dd.kv.name):
        bad("formats", f"the pools serve different formats: {p.weights.name}/{p.kv.name} and {dd.weights.name}/{dd.kv.name}")
    if p.tp not in spec.search.tp:
        bad("search.tp", f"the prefill pool's TP {p.tp} is not among {spec.search.tp}")
    if p.device.vendor != dd.device.vendor and not spec.search.allow_cross_vendor_kv:
        bad("search.allow_cross_vendor_kv", f"the KV cache crosses vendors ({p.device.vendor} prefill, {dd.device.vendor} decode), not allowed")
    ev = evaluate(p.replace(replicas=pool.replicas), dataclasses.replace(w, users=pool.replicas), Targets(), with_remedies=False)
    if not ev.valid:
        bad("split", "the prefill pool: " + "; ".join(ev.refusals))
        return math.inf
    if ev.estimates.memory.max_batch < 1:
        bad("memory", f"a prefill replica ({pool.shape.label}) holds no sequence beside its weights")
    transfer = kv_transfer(p, dd, w.prompt_tokens)
    if transfer is None:
        bad("interconnect", "no network joins the pools")
        return math.inf
    prefill = estimate_prefill(p, w)
    load = prefill_pool_load(
        w.users,
        pool.replicas,
        prefill.gpu_time_s,
        p.tp if p.dp_ep else 1,
        tpot_s,
        w.output_tokens,
        transfer.time_s,
        dd.factors.request_overhead_s,
    )
    if load.saturated:
        bad("prefill", f"{load.users_per_replica} users per prefill replica saturate it (prompt {prefill.gpu_time_s * 1e3:.1f} ms)")
    if not link_load_ok(w.users, load, transfer, pool.gpus, c.replicas * c.shape.gpus_per_replica):
        bad("interconnect", "the prompts' KV exceeds the pools' network")
    if abs(load.ttft_s - c.ttft_s) > 1e-6 * max(1.0, load.ttft_s):
        bad("max_ttft", f"the pools give a TTFT of {load.ttft_s * 1e3:.3f} ms, the plan claims {c.ttft_s * 1e3:.3f} ms")
    return load.ttft_s


def _sixteen(names: list[str]) -> set[str]:
    """bf16 and fp16 stand for each other on devices that run only one of them."""
    return {"fp16", "bf16"} if {"fp16", "bf16"} & set(names) else set()
