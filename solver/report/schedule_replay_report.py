"""`plan-opt schedule --replay` and `--emit`: the replayed day per slot (percentiles,
goodput, misses, transitions flagged, the verdict), as text and as JSON; and the
autoscaler objects of the plan (report/autoscale.py) as YAML."""

from __future__ import annotations

import re
from typing import Any

import yaml

from solver.errors import InputError
from solver.explain.schedule import ScheduleResult
from solver.explain.schedule_replay import ReplicaCapacity, ScheduleReplay, replicas_per_slot
from solver.report.autoscale import ENGINE_METRICS, autoscale
from solver.traffic.verify import Bound

UTILISATION = 0.8
"""autoscale's default: a replica is ordered while the running ones still meet the SLA."""


def _bound(b: Bound | None) -> dict[str, Any] | None:
    return None if b is None else {"mean": b.mean, "bound": b.bound, "per_seed": list(b.per_seed)}


def replay_dict(x: ScheduleReplay) -> dict[str, Any]:
    day = x.replay
    return {
        "arrivals": x.source,
        "seeds": list(day.seeds),
        "requests": day.requests,
        "lag_s": x.lag_s,
        "ordered_ahead_s": x.lead_s,
        "meets_sla": x.meets,
        "missed_slots": x.missed,
        "per_slot": [
            {
                "start_s": s.start_s,
                "replicas": s.replicas,
                "ready_at_start": s.ready_at_start,
                "transition": s.transition,
                "arrivals": _bound(s.arrivals),
                "ttft_p50_s": _bound(s.ttft_p50_s),
                "ttft_p99_s": _bound(s.ttft_p99_s),
                "tpot_p50_s": _bound(s.tpot_p50_s),
                "tpot_p99_s": _bound(s.tpot_p99_s),
                "goodput_per_s": _bound(s.goodput_per_s),
                "misses": _bound(s.misses),
                "sla": {b.target: {"limit": b.limit, **(_bound(b) or {}), "ok": b.ok} for b in s.sla},
                "meets": s.meets,
            }
            for s in day.slots
        ],
    }


def _t(b: Bound | None, unit_s: float, fmt: str, seeds: int) -> str:
    if b is None:
        return "—"
    return f"{b.mean / unit_s:{fmt}}" + (f" (≤{b.bound / unit_s:{fmt}})" if seeds > 1 else "")


def render_replay(x: ScheduleReplay, hhmm: Any) -> str:
    """The replay's per-slot table and its verdict; `hhmm` formats a slot's start."""
    day = x.replay
    n = len(day.seeds)
    over = f"{n} seeds (mean, and ≤ its one-sided 95 % bound)" if n > 1 else "1 seed (--seeds 5 for the bound over seeds)"
    what = "the profile's rates, Poisson per slot" if x.source == "poisson" else f"the trace's own requests ({x.source}), once"
    lines = [
        "",
        f"Replayed request by request: {day.requests:,} requests ({what}; {over})",
        f"each scale-up ordered {x.lead_s / 60:.1f} min ahead, ready {x.lag_s / 60:.1f} min after its order; spot replicas count whole",
        "  start  replicas  ready  arrivals  TTFT P50  TTFT P99        TPOT P50  TPOT P99          goodput/s  misses    SLA",
    ]
    for s in day.slots:
        mark = "↑" if s.transition and s.replicas > day.slots[s.index - 1].replicas else "↓" if s.transition else " "
        verdict = "meets" if s.meets else "MISSES " + ", ".join(b.target for b in s.sla if not b.ok)
        lines.append(
            f"  {hhmm(s.start_s):>5} {mark}{s.replicas:>7}  {s.ready_at_start:>5}  {s.arrivals.mean:>8,.0f}  "
            f"{_t(s.ttft_p50_s, 1, '.2f', 1):>7} s  {_t(s.ttft_p99_s, 1, '.2f', n):>13} s  "
            f"{_t(s.tpot_p50_s, 1e-3, '.1f', 1):>5} ms  {_t(s.tpot_p99_s, 1e-3, '.1f', n):>13} ms  "
            f"{_t(s.goodput_per_s, 1, '.2f', 1):>9}  {s.misses.mean:>6,.0f}  {verdict}"
        )
    if x.meets:
        lines.append("verdict: the replayed day meets the SLA in every slot the plan claims")
    else:
        where = ", ".join(hhmm(day.slots[k].start_s) for k in x.missed)
        lines.append(f"verdict: the replayed day MISSES the SLA in {len(x.missed)} of {len(day.slots)} slots the plan claims: {where}")
    lines.append("  (↑ ↓ a transition: the plan's count changes at the slot; ready: replicas taking requests at its start)")
    return "\n".join(lines) + "\n"


def _label(text: str) -> str:
    """A Kubernetes object name (RFC 1123 label), as `plan-opt deploy --emit k8s` names the workload."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:50].rstrip("-") or "plan"


def emit_autoscaler(r: ScheduleResult, kind: str, capacity: ReplicaCapacity, utilisation: float = UTILISATION) -> str:
    """The plan's HPA (with the prometheus-adapter rule it needs, as a comment) or KEDA
    ScaledObject as YAML: per-replica target = the replica's requests in the system at
    the load its counts were verified at (explain/schedule_replay.replica_capacity) ×
    utilisation; min the reserved replicas or the schedule's least; each scale-up's lag
    the plan's."""
    s = r.schedule
    assert s is not None
    o = r.horizon.options[s.option]
    engine = r.problem.spec.engine.name
    if engine not in ENGINE_METRICS:
        raise InputError("--emit", kind, f"needs the engine's queue gauges ({', '.join(ENGINE_METRICS)}); the spec's engine is {engine}")
    model = next(sh.deployment.model.name for sh in r.problem.shapes if sh.index == o.index)
    name = _label(f"{model}-{engine}")
    try:
        a = autoscale(name, engine, list(replicas_per_slot(r)), r.horizon.slot_s, capacity.in_system,
                      lag_s=o.lag_s, utilisation=utilisation, reserved=s.reserved)  # fmt: skip
    except InputError as exc:
        raise InputError("--emit", kind, f"cannot realise this schedule: {exc.field} {exc.allowed}") from None
    head = [
        f"# plan-opt schedule --emit {kind}: {o.label}, {a.min_replicas} to {a.max_replicas} replicas, lag {o.lag_s / 60:.1f} min",
        f"# target per replica {a.target_per_replica:.2f} requests in the system = {capacity.rate_per_s:.3f} requests/s x "
        f"{capacity.e2e_mean_s:.3f} s in the replica (Little's law) x utilisation {utilisation:g}",
        *([f"# requests/s: {capacity.source}"] if capacity.source else []),
        *(f"# note: {n}" for n in a.notes),
    ]
    if kind == "hpa":
        rule = yaml.safe_dump({"rules": {"custom": [a.adapter_rule]}}, sort_keys=False, allow_unicode=True)
        head += ["# the metric needs this prometheus-adapter rule (its Helm values):", *(f"#   {ln}" for ln in rule.splitlines())]
        doc = a.hpa
    else:
        doc = a.scaled_object
    return "\n".join(head) + "\n" + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
