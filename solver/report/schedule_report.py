"""`plan-opt schedule`'s report: the plan per slot, its cost against peak provisioning
and on-demand only, $ per million tokens, what binds in each slot and the price of
each choice; as text, as JSON and as a stacked plot against demand."""

from __future__ import annotations

import json
from typing import Any

from solver.explain.schedule import ScheduleResult
from solver.explain.schedule_replay import replica_capacity


def _usd(x: float | None) -> str:
    return "—" if x is None else f"${x:,.2f}"


def _delta(x: float | None, base: float) -> str:
    return "—" if x is None else f"{'+' if x >= base else '−'}${abs(x - base):,.2f}"


def hhmm(start_s: float) -> str:
    m = int(round(start_s / 60))
    return f"{m // 60 % 24:02d}:{m % 60:02d}" if start_s < 86_400 else f"{m / 60:g} h"


def sizing_line(r: ScheduleResult) -> str:
    """Which slots' replicas passed solve's simulation at their rate, and which the screen
    alone set (a rate whose simulation budget ran out)."""
    screened = [hhmm(row.start_s) for row in r.slots if not row.simulated]
    refused = len(r.checks.rejected) if r.checks is not None else 0
    done = (
        f"each slot's replicas simulated as solve checks its plan, at its rate or a higher one on as many replicas"
        f" (every seed; {refused} refusals corrected on the way)"
    )
    if not screened:
        return done
    return done.replace("each slot's", "the other slots'") + f"; sized by the screen alone (the simulation budget ran out): {', '.join(screened)}"


def to_dict(r: ScheduleResult) -> dict[str, Any]:
    s, h, prof = r.schedule, r.horizon, r.spec.profile
    out: dict[str, Any] = {
        "model": r.spec.spec.model,
        "slot_s": h.slot_s,
        "slots": h.slots,
        "hours": r.hours,
        "growth_factor": prof.growth_factor,
        "months": prof.months,
        "peak_requests_per_s": prof.peak_per_s,
        "feasible": s is not None,
        "assumptions": {
            "spot_interruptions_per_gpu_hour": r.figures.spot_interruptions_per_gpu_hour,
            "provisioning_s": r.figures.provisioning_s,
            "storage_bytes_per_s": r.figures.storage_bytes_per_s,
            "sources": r.figures.sources,
        },
        "peak_all_day": {"plan": r.peak_plan, "cost_usd": r.peak_all_day_usd},
        "options": len(h.options),
    }
    if s is None:
        return out
    o = h.options[s.option]
    capacity = replica_capacity(r)  # the load the counts were verified at (the autoscaler's too)
    out.update(
        {
            "status": s.status,
            "shape": o.label,
            "gpus_per_replica": o.gpus_per_replica,
            "usd_per_gpu_hour": o.usd_per_gpu_hour,
            "lag_s": o.lag_s,
            "spot_loss_per_slot": o.spot_loss,
            "survive_replicas": o.survive_replicas,
            "replica_requests_per_s": capacity.rate_per_s,
            "replica_requests_per_s_source": capacity.source,
            "replica_screen_requests_per_s": o.replica_rate_per_s,
            "replica_binds": o.replica_binds,
            "reserved_replicas": s.reserved,
            "cost_usd": s.cost_usd,
            "usd_per_mtok": r.usd_per_mtok,
            "on_demand_only_usd": r.on_demand_only_usd,
            "without_survive_usd": r.without_survive_usd,
            "one_more_reserved_replica_usd": r.one_more_reserved_usd,
            "one_more_failure_usd": r.one_more_failure_usd,
            "half_lag_usd": r.half_lag_usd,
            "per_slot": [
                {
                    "start_s": row.start_s,
                    "requests_per_s": row.rate_per_s,
                    "need_replicas": row.need,
                    "reserved": row.reserved,
                    "on_demand": row.on_demand,
                    "spot": row.spot,
                    "capacity_replicas": row.capacity_replicas,
                    "binds": row.binds,
                    "simulated": row.simulated,
                }
                for row in r.slots
            ],
            "violations": r.violations,
        }
    )
    return out


def to_json(r: ScheduleResult) -> str:
    return json.dumps(to_dict(r), indent=2, ensure_ascii=False)


def render(r: ScheduleResult) -> str:
    s, h, prof, a = r.schedule, r.horizon, r.spec.profile, r.figures
    grown = f", grown × {prof.growth_factor:.3f} ({prof.months} months)" if prof.months else ""
    lines = [
        f"plan-opt schedule · {r.spec.spec.model} · {h.slots} slots of {h.slot_s / 3600:g} h · peak {prof.peak_per_s:,.2f} requests/s{grown}",
        f"assumed: spot interrupted {a.spot_interruptions_per_gpu_hour:.3g} per GPU-hour; a replica ready after "
        f"{a.provisioning_s:,.0f} s provisioning + its weights at {a.storage_bytes_per_s / 1e9:.3g} GB/s (catalogs/autoscaling.yaml, or the spec)",
    ]
    if s is None:
        lines.append(f"no shape covers every slot ({len(h.options)} shapes admitted at every slot's rate)")
        return "\n".join(lines) + "\n"
    o = h.options[s.option]
    capacity = replica_capacity(r)  # the load the counts were verified at (the autoscaler's too)
    prices = ", ".join(f"{t} ${p:.2f}" for t, p in o.usd_per_gpu_hour.items())
    lines += [
        f"searched {len(h.options)} shapes: {s.status} (CP-SAT)",
        "",
        "Plan",
        f"{o.label} ({o.gpus_per_replica} GPU{'s' if o.gpus_per_replica != 1 else ''} a replica; per GPU-hour: {prices})",
        f"a replica carries {capacity.rate_per_s:,.2f} requests/s under the SLA: {capacity.source}",
        f"(solve's traffic screen alone says {o.replica_rate_per_s:,.2f}; {o.replica_binds} binds)",
        f"{s.reserved} reserved replicas all day; the rest by the slot; a replica started is billed {o.lag_s / 60:.1f} min before its slot",
        f"cost over the profile {_usd(s.cost_usd)} · {_usd(r.usd_per_mtok)} per million tokens (prompt + output)",
        (
            f"spot counts {o.spot_milli / 1000:.3f} of a replica (interrupted with chance {o.spot_loss:.2g} a slot; the on-demand fallback billed "
            "at that chance); "
            if "spot" in o.usd_per_gpu_hour
            else ""
        )
        + f"a slot survives {o.survive_replicas} failed replica{'s' if o.survive_replicas != 1 else ''}",
        sizing_line(r),
        "",
        "Against",
        f"  peak all day    {_usd(r.peak_all_day_usd):>12}  {r.peak_plan} on demand every slot (solve at the peak)"
        + (f"; saves {_usd(r.peak_all_day_usd - s.cost_usd)} ({1 - s.cost_usd / r.peak_all_day_usd:.0%})" if r.peak_all_day_usd else ""),
        f"  on-demand only  {_usd(r.on_demand_only_usd):>12}"
        + (f"  saves {_usd(r.on_demand_only_usd - s.cost_usd)} ({1 - s.cost_usd / r.on_demand_only_usd:.0%})" if r.on_demand_only_usd else ""),
        "  (on-demand only and each choice below are re-solved; a shape other than the plan's is simulated on the spec's",
        "   seed alone, as solve's runners-up are, so each is at least the figure shown)",
        "",
        "The price of each choice (re-solved)",
    ]
    if r.without_survive_usd is not None:
        lines.append(
            f"  surviving {o.survive_replicas} failed replicas costs {_delta(s.cost_usd, r.without_survive_usd)} ({_usd(r.without_survive_usd)} without)"
        )
    lines.append(f"  one more reserved replica: {_delta(r.one_more_reserved_usd, s.cost_usd)} ({_usd(r.one_more_reserved_usd)})")
    lines.append(f"  surviving one more failure: {_delta(r.one_more_failure_usd, s.cost_usd)} ({_usd(r.one_more_failure_usd)})")
    lines.append(f"  a readiness lag half as long ({o.lag_s / 120:.1f} min): {_delta(r.half_lag_usd, s.cost_usd)} ({_usd(r.half_lag_usd)})")
    lines += ["", "Per slot", "  start  requests/s  need  reserved  on-demand  spot  binds"]
    for row in r.slots:
        lines.append(
            f"  {hhmm(row.start_s):>5}  {row.rate_per_s:>10,.2f}  {row.need:>4}  {row.reserved:>8}  {row.on_demand:>9}  {row.spot:>4}  {row.binds}"
        )
    return "\n".join(lines) + "\n"


def plot(r: ScheduleResult) -> Any:
    """Stacked reserved / on-demand / spot replicas per slot against the replicas the
    demand needs; matplotlib is checked for before the command starts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"
    fig, ax = plt.subplots(figsize=(9.6, 4.8))
    rows = r.slots
    x = [row.start_s / 3600 for row in rows]
    width = r.horizon.slot_s / 3600
    res = [row.reserved for row in rows]
    od = [row.on_demand for row in rows]
    sp = [row.spot for row in rows]
    ax.bar(x, res, width, align="edge", color="tab:blue", label="reserved")
    ax.bar(x, od, width, align="edge", bottom=res, color="tab:orange", label="on-demand")
    ax.bar(x, sp, width, align="edge", bottom=[a + b for a, b in zip(res, od, strict=True)], color="tab:green", label="spot")
    need = [row.need for row in rows]
    ax.step([*x, x[-1] + width], [*need, need[-1]], where="post", color="black", lw=1.8, label="replicas the rate needs")
    s = r.schedule
    spare = r.horizon.options[s.option].survive_replicas if s is not None else 0
    if spare:
        ax.step(
            [*x, x[-1] + width],
            [n + spare for n in [*need, need[-1]]],
            where="post",
            color="black",
            ls="--",
            lw=1.2,
            label=f"… and {spare} to survive failures",
        )
    ax.set_xlabel("hours from the profile's start")
    ax.set_ylabel("replicas")
    title = f"plan-opt schedule · {r.spec.spec.model}"
    if s is not None:
        title += f" · {r.horizon.options[s.option].label} · ${s.cost_usd:,.0f} over the profile"
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig
