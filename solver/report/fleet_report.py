"""Render a fleet: GPUs of each type, replicas per workload, cost, what binds — as a
table, Markdown or JSON — and a budget sweep."""

from __future__ import annotations

from solver.optimise.fleet import FleetResult
from solver.optimise.fleet_options import RATE_SCALE
from solver.report import strict_json
from solver.report.batching import MEANING


def _in_unit(res: FleetResult, name: str, value: int) -> float | int:
    """A served count, demand or cap as the service states it: users, or requests/s."""
    return value / RATE_SCALE if name in res.rate_services else value


def _amount(res: FleetResult, name: str, value: int) -> str:
    return f"{value / RATE_SCALE:,.4g} req/s" if name in res.rate_services else f"{value:,}"


def to_dict(res: FleetResult) -> dict:
    return {
        "status": res.status,
        "objective": res.objective,
        "cost_usd_per_hour": round(res.cost_usd_per_hour, 6),
        "tco_usd_per_hour": round(res.tco_usd_per_hour, 6),
        "pricing": res.pricing,
        "offers": dict(sorted(res.offers.items())),
        "purchase_usd": round(res.purchase_usd, 2),
        "gpus": dict(sorted(res.gpus.items())),
        "rented": dict(sorted(res.rented.items())),
        "owned_used": dict(sorted(res.owned_used.items())),
        "served": {k: _in_unit(res, k, v) for k, v in res.served.items()},
        "demand": {k: _in_unit(res, k, v) for k, v in res.demand.items()},
        "units": {k: "requests_per_s" if k in res.rate_services else "users" for k in res.demand},
        "batching": dict(res.batching),
        "assignments": [
            {
                "service": a.service,
                "workload": a.workload,
                "plan": a.option.label,
                "gpu": a.option.device,
                "replicas": a.replicas,
                "gpus": a.replicas * a.option.gpus_per_replica,
                ("requests_per_s_per_replica" if a.service in res.rate_services else "users_per_replica"): _in_unit(res, a.service, a.load),
                ("capacity_requests_per_s_per_replica" if a.service in res.rate_services else "capacity_users_per_replica"): _in_unit(
                    res, a.service, a.option.cap
                ),
                "batch_capped_by": a.option.capped_by,
                "tpot_s": a.tpot_s,
                "ttft_s": a.ttft_s,
            }
            for a in res.assignments
        ],
        "routing": {
            name: {
                "weighted_routing_needed": True,
                "shapes": [
                    {
                        "plan": x.plan,
                        "replicas": x.replicas,
                        "users": x.users,
                        "users_share": round(x.users_share, 6),
                        "request_share": round(x.request_share, 6),
                    }
                    for x in rs
                ],
            }
            for name, rs in res.routes.items()
        },
        "binds": res.binds,
        "unservable": res.unservable,
        **_gap(res),
    }


def _gap(res: FleetResult) -> dict:
    """Where CP-SAT did not prove the objective optimal in its time: its status, its
    best bound and the relative gap (absent on a proven optimum)."""
    if res.gap is None or res.bound is None:
        return {}
    return {
        "optimality": {"solver_status": res.solver_status, "objective": res.bound_of, "best_bound": round(res.bound, 6), "gap": round(res.gap, 6)}
    }


def _gap_words(res: FleetResult) -> str:
    if res.gap is None or res.bound is None:
        return ""
    if res.bound_of == "cost_usd_per_hour":
        proven = f"no fleet costs less than ${res.bound:,.2f}/hour"
    else:
        proven = f"no fleet serves a {res.bound_of} above {res.bound:,.4f}"
    return f"; {proven} (CP-SAT's bound), gap {res.gap:.2%}"


def to_json(res: FleetResult | None, sweep: list[tuple[float, FleetResult]] | None = None) -> str:
    """One fleet, or (`sweep` given, `res` unused) each budget with the fleet it buys.
    Strict JSON: an unbounded figure is null (report/strict_json.py)."""
    if sweep is not None:
        return strict_json.dumps([{"max_usd_per_hour": b, **to_dict(r)} for b, r in sweep])
    if res is None:
        raise ValueError("to_json needs a fleet or a sweep")
    return strict_json.dumps(to_dict(res))


def _batching_line(res: FleetResult) -> str:
    """The services' batching, one line (report/batching.py's words for the mode)."""
    modes = sorted(set(res.batching.values()))
    if len(modes) == 1:
        return f"batching: {modes[0]} for every service — {MEANING.get(modes[0], modes[0])}"
    return "batching: " + "; ".join(f"{name} {mode}" for name, mode in res.batching.items())


def _table(headers: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)] + ["| " + " | ".join(r) + " |" for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    fmt = "  " + "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*headers).rstrip()] + [fmt.format(*r).rstrip() for r in rows]


def render(res: FleetResult, title: str, markdown: bool = False, show_purchase: bool = False) -> str:
    h = (lambda x: f"## {x}") if markdown else (lambda x: x)
    lines = [f"# {title}" if markdown else title]
    status = {
        "optimal": "optimal (proven by CP-SAT)",
        "feasible": f"feasible, not proven optimal ({'the gap limit' if res.solver_status == 'OPTIMAL' else 'time limit'})",
        "infeasible": "no fleet meets every demand within the limits",
        "unknown": "unknown (time limit)",
    }[res.status]
    lines.append(
        f"objective: {'least cost serving all demand' if res.objective == 'min_cost' else 'largest priority-weighted share of demand served, then least cost'} — {status}"
        + _gap_words(res)
    )
    lines.append(_batching_line(res))
    for name, why in res.unservable.items():
        lines.append(f"! {name}: {why}")
    if not res.feasible:
        return "\n".join(lines) + "\n"
    total = sum(res.gpus.values())
    lines.append(
        f"fleet: {total} GPUs, ${res.cost_usd_per_hour:,.2f}/hour"
        + (f", ${res.purchase_usd:,.0f} to buy" if show_purchase else "")
        + f"; total cost of ownership ${res.tco_usd_per_hour:,.2f}/hour (owned GPUs at their power and hosting)"
    )
    if res.pricing:
        lines.append(f"prices: {res.pricing} (catalogs/prices.yaml)")
    lines.append("")
    lines.append(h("GPUs"))
    rows = [[d, str(n), str(res.owned_used.get(d, 0)), str(res.rented.get(d, 0)), res.offers.get(d, "")] for d, n in sorted(res.gpus.items())]
    lines += _table(["gpu", "in use", "owned", "rented", "priced at"], rows, markdown)
    lines.append("")
    lines.append(h("Workloads"))
    rows = []
    for a in res.assignments:
        rows.append(
            [
                a.service,
                a.option.label,
                str(a.replicas),
                _amount(res, a.service, a.load),
                _amount(res, a.service, a.option.cap),
                f"{a.tpot_s * 1e3:.1f} ms",
                f"{a.ttft_s * 1e3:.0f} ms",
            ]
        )
    per = "per replica" if res.rate_services else "users/replica"
    lines += _table(["service", "replica", "replicas", per, "capacity", "TPOT", "TTFT"], rows, markdown)
    lines.append("(TPOT and TTFT at the load each replica carries; capacity: the most it holds within every target)")
    rows = [[name, _amount(res, name, res.served.get(name, 0)), _amount(res, name, d)] for name, d in res.demand.items()]
    lines.append("")
    lines += _table(["service", "served", "demand"], rows, markdown)
    if res.routes:
        lines.append("")
        lines.append(h("Routing"))
        names = ", ".join(res.routes)
        lines.append(
            f"{names} run{'s' if len(res.routes) == 1 else ''} on more than one shape: put a weighted router in front "
            "(users: for a router that balances open connections; requests: for one that deals requests out, "
            "by Little's law). single_shape: true keeps a service on one shape."
        )
        rows = [
            [x.service, x.plan, str(x.replicas), _amount(res, x.service, x.users), f"{x.users_share:.1%}", f"{x.request_share:.1%}"]
            for rs in res.routes.values()
            for x in rs
        ]
        lines += _table(["service", "replica", "replicas", "users", "share of users", "share of requests"], rows, markdown)
    lines.append("")
    lines.append(h("What binds"))
    lines += [f"- {b}" for b in res.binds]
    return "\n".join(lines) + "\n"


def render_sweep(sweep: list[tuple[float, FleetResult]], title: str, markdown: bool = False) -> str:
    lines = [f"# {title}" if markdown else title]
    if sweep:
        lines.append(_batching_line(sweep[0][1]))
    lines.append("")
    rows = []
    for budget, r in sweep:
        if not r.feasible:
            rows.append([f"${budget:,.0f}/h", "—", "—", "no fleet", ""])
            continue
        if r.rate_services:
            served_text = "; ".join(f"{k} {_amount(r, k, r.served.get(k, 0))} of {_amount(r, k, d)}" for k, d in r.demand.items())
        else:
            served_text = f"{sum(r.served.values()):,} of {sum(r.demand.values()):,}"
        fleet = ", ".join(f"{n} × {d}" for d, n in sorted(r.gpus.items())) or "nothing"
        binding = next((b for b in r.binds if b.startswith(("budget", "quota", "inventory", "max_gpus"))), "all demand served")
        rows.append([f"${budget:,.0f}/h", f"${r.cost_usd_per_hour:,.2f}/h", served_text, fleet, binding])
    lines += _table(["budget", "spent", "users served", "fleet", "binds"], rows, markdown)
    return "\n".join(lines) + "\n"
