"""Evaluate one configuration: the seed's four steps in its order, a verdict per
constraint, and — when one fails — the remedies the seed names, each re-evaluated.

This is the estimate every later feature (the CP-SAT solve, Pareto, fleets) builds
on; it knows nothing of YAML, CLI or reports.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from solver.catalog import Precision
from solver.catalog.topology import Ring
from solver.physics import validity
from solver.physics.decode import DecodeEstimate, estimate_decode, max_batch_for_tpot
from solver.physics.deployment import Deployment, Targets, Workload
from solver.physics.interconnect import ring_for
from solver.physics.memory import MemoryEstimate, estimate_memory, max_context_tokens
from solver.physics.prefill import PrefillEstimate, estimate_prefill


@dataclass(frozen=True)
class Verdict:
    """One constraint: its value against its limit. `ok` is None when no target was set."""

    constraint: str
    value: float
    limit: float | None
    unit: str
    ok: bool | None
    note: str = ""

    @property
    def margin(self) -> float | None:
        return None if self.limit is None else self.limit - self.value


@dataclass(frozen=True)
class Remedy:
    action: str
    """What to change, in the seed's words ("quantize the KV cache to fp8")."""
    evaluation: Evaluation
    gives: str
    """What it would give, one line."""

    @property
    def resolves(self) -> bool:
        return self.evaluation.ok


@dataclass(frozen=True)
class Estimates:
    """The four estimates a valid evaluation has, none of them optional."""

    memory: MemoryEstimate
    decode: DecodeEstimate
    prefill: PrefillEstimate
    ring: Ring

    @property
    def ttft_s(self) -> float:
        """TTFT at the workload's load: the replica's users' prompts queued ahead of
        each other (isolated or continuous batching); prefill.ttft_s is the idle figure."""
        loaded = self.decode.ttft_under_load_s
        return loaded if loaded is not None else self.prefill.ttft_s


@dataclass(frozen=True)
class Evaluation:
    deployment: Deployment
    workload: Workload
    targets: Targets
    refusals: list[str]
    memory: MemoryEstimate | None = None
    decode: DecodeEstimate | None = None
    prefill: PrefillEstimate | None = None
    ring: Ring | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    remedies: list[Remedy] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.refusals

    @property
    def estimates(self) -> Estimates:
        """The estimates of a valid evaluation; asking a refused one is a caller's bug."""
        if self.memory is None or self.decode is None or self.prefill is None or self.ring is None:
            raise ValueError("a refused evaluation has no estimates: " + "; ".join(self.refusals))
        return Estimates(self.memory, self.decode, self.prefill, self.ring)

    @property
    def ttft_s(self) -> float | None:
        """TTFT at the workload's load: the replica's users' prompts queued ahead of
        each other (isolated or continuous batching); prefill.ttft_s is the idle figure."""
        return self.estimates.ttft_s if self.valid else None

    @property
    def ok(self) -> bool:
        return self.valid and all(v.ok is not False for v in self.verdicts)

    def verdict(self, constraint: str) -> Verdict:
        return next(v for v in self.verdicts if v.constraint == constraint)

    @property
    def failing(self) -> list[str]:
        return [v.constraint for v in self.verdicts if v.ok is False]


def _verdicts(d: Deployment, t: Targets, mem: MemoryEstimate, dec: DecodeEstimate, pre: PrefillEstimate, ring: Ring) -> list[Verdict]:
    out = [Verdict("memory", mem.needed_bytes, mem.usable_bytes, "bytes", mem.fits)]
    tpot_ok = None if t.max_tpot_s is None else dec.tpot_s <= t.max_tpot_s
    out.append(Verdict("max_tpot", dec.tpot_s, t.max_tpot_s, "s", tpot_ok, f"decode is {dec.bound}-bound"))
    ttft = Estimates(mem, dec, pre, ring).ttft_s
    ttft_ok = None if t.max_ttft_s is None else ttft <= t.max_ttft_s
    note = f"prefill is {pre.bound}-bound" + (
        f"; {pre.ttft_s * 1e3:.1f} ms on an idle replica, {dec.batch} users' prompts queued" if ttft > pre.ttft_s * (1 + 1e-6) else ""
    )
    out.append(Verdict("max_ttft", ttft, t.max_ttft_s, "s", ttft_ok, note))
    # The interconnect fails a target when communication is what pushes a latency
    # past it: without the all-reduces the target would hold.
    blamed = []
    if tpot_ok is False and t.max_tpot_s is not None and dec.tpot_s - dec.comm_time_s <= t.max_tpot_s:
        blamed.append("TPOT")
    if ttft_ok is False and t.max_ttft_s is not None and ttft - pre.comm_time_s <= t.max_ttft_s:
        blamed.append("TTFT")
    comm_share = dec.comm_time_s / dec.tpot_s if dec.tpot_s else 0.0
    note = f"communication is {comm_share:.0%} of the decode step" if d.tp > 1 or d.pp > 1 else "one GPU per replica: no communication"
    if blamed:
        note += f"; without it the {' and '.join(blamed)} target would hold"
    out.append(
        Verdict("interconnect", dec.comm_time_s + pre.comm_time_s, None, "s", False if blamed else (True if (d.tp > 1 or d.pp > 1) else None), note)
    )
    return out


def evaluate(
    d: Deployment,
    w: Workload,
    t: Targets = Targets(),
    *,
    with_remedies: bool = True,
    precisions: dict[str, Precision] | None = None,
) -> Evaluation:
    """`precisions` (name → format) lets the remedies suggest quantizing; without it
    only TP, batch and context remedies are tried."""
    refused = validity.refusals(d, w)
    if refused:
        return Evaluation(d, w, t, refused)
    mem = estimate_memory(d, w)
    dec = estimate_decode(d, w)
    pre = estimate_prefill(d, w)
    ring = ring_for(d)
    verdicts = _verdicts(d, t, mem, dec, pre, ring)
    ev = Evaluation(d, w, t, [], mem, dec, pre, ring, verdicts)
    if with_remedies and not ev.ok:
        ev = Evaluation(d, w, t, [], mem, dec, pre, ring, verdicts, remedies(ev, precisions or {}))
    return ev


# --------------------------------------------------------------------------- remedies


def _summary(ev: Evaluation) -> str:
    if not ev.valid:
        return "not possible: " + "; ".join(ev.refusals)
    est = ev.estimates
    m = est.memory
    parts = [f"needs {m.needed_bytes / 1e9:.2f} GB of {m.usable_bytes / 1e9:.2f} GB usable per GPU"]
    if ev.targets.max_tpot_s is not None or "max_tpot" in ev.failing:
        parts.append(f"TPOT {est.decode.tpot_s * 1e3:.1f} ms")
    if ev.targets.max_ttft_s is not None:
        parts.append(f"TTFT {ev.verdict('max_ttft').value * 1e3:.0f} ms")
    verdict = "meets every constraint" if ev.ok else "still fails " + ", ".join(ev.failing)
    return ", ".join(parts) + f" → {verdict}"


def _valid_tps(d: Deployment, w: Workload) -> list[int]:
    out = []
    for tp in (2, 4, 8, 16, 32, 64):
        if tp <= d.tp:
            continue
        cand = d.replace(tp=tp)
        if not validity.refusals(cand, w):
            out.append(tp)
    return out


def remedies(ev: Evaluation, precisions: dict[str, Precision]) -> list[Remedy]:
    """The seed's remedies — shard with TP, quantize the KV cache, lower batch or
    context — plus quantizing the weights, each evaluated in full."""
    d, w, t = ev.deployment, ev.workload, ev.targets
    out: list[Remedy] = []

    def add(action: str, cand: Deployment, work: Workload = w) -> None:
        e = evaluate(cand, work, t, with_remedies=False)
        out.append(Remedy(action, e, _summary(e)))

    # Shard with tensor parallelism: the smallest degree that resolves, else the largest possible.
    tps = _valid_tps(d, w)
    chosen = None
    for tp in tps:
        if evaluate(d.replace(tp=tp), w, t, with_remedies=False).ok:
            chosen = tp
            break
    if chosen is None and tps:
        chosen = tps[-1]
    if chosen is not None:
        add(f"shard with tensor parallelism: TP={chosen} ({chosen * d.pp} GPUs per replica)", d.replace(tp=chosen))

    # Quantize the KV cache, then the weights: the first smaller format (FP8 first,
    # then larger before smaller) that resolves, else the smallest there is.
    if "memory" in ev.failing or "max_tpot" in ev.failing:
        kv_options = _smaller_formats(d.device.kv_formats, d.kv, precisions)
        pick = _first_resolving([d.replace(kv=p) for p in kv_options], w, t)
        if pick is not None:
            add(f"quantize the KV cache to {pick.kv.name}", pick)
        if d.weights_bytes_override is None:
            w_options = _smaller_formats(d.device.weight_formats, d.weights, precisions)
            pick = _first_resolving([d.replace(weights=p) for p in w_options], w, t)
            if pick is not None:
                add(f"quantize the weights to {pick.weights.name}", pick)

    # Lower the batch (serve fewer users per replica) or the context.
    batch = ev.estimates.memory.batch
    fit_batch = ev.estimates.memory.max_batch
    if t.max_tpot_s is not None:
        fit_batch = min(fit_batch, max_batch_for_tpot(d, w, t.max_tpot_s, max(batch, 1)))
    if 0 < fit_batch < batch:
        users = fit_batch * d.replicas
        add(
            f"lower the batch to {fit_batch} per replica ({users} concurrent users)",
            d,
            dataclasses.replace(w, users=users),
        )
        replicas = math.ceil(w.users / fit_batch)
        add(
            f"add replicas: {replicas} replicas of up to {math.ceil(w.users / replicas)} users ({replicas * d.tp * d.pp} GPUs)",
            d.replace(replicas=replicas),
        )
    if "memory" in ev.failing:
        ctx = max_context_tokens(d, w)
        if 0 < ctx < w.context_tokens:
            prompt = min(w.prompt_tokens, max(ctx - w.output_tokens, 1))
            output = min(w.output_tokens, ctx - prompt)
            add(
                f"limit the context to {ctx} tokens per sequence",
                d,
                dataclasses.replace(w, context_tokens=ctx, prompt_tokens=prompt, output_tokens=output),
            )
    return out


def _smaller_formats(names: Sequence[str], current: Precision, precisions: dict[str, Precision]) -> list[Precision]:
    options = [precisions[n] for n in names if n in precisions and precisions[n].bytes_per_value < current.bytes_per_value]
    return sorted(options, key=lambda p: (p.name != "fp8", -p.bytes_per_value, p.name))


def _first_resolving(candidates: list[Deployment], w: Workload, t: Targets) -> Deployment | None:
    for cand in candidates:
        if evaluate(cand, w, t, with_remedies=False).ok:
            return cand
    return candidates[-1] if candidates else None
