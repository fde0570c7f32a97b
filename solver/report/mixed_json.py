"""The cheaper mix of shapes beside a one-shape plan (explain/mixed.py), as JSON."""

from __future__ import annotations

from pydantic import Field

from solver.explain.mixed import MixedPlan
from solver.report.strict_json import SolveModel


class MixedPartOut(SolveModel):
    plan: str
    replicas: int
    gpus: int
    owned_gpus: int = Field(description="Of its GPUs, those already owned (free).")
    users: int = Field(description="Users its replicas carry in all: the router sends it this share.")
    users_per_replica: int
    tpot_s: float = Field(description="At the load each replica carries.")
    ttft_s: float = Field(description="At the load each replica carries: its users' prompts queued.")


class MixedPlanOut(SolveModel):
    cost_usd_per_hour: float
    saving_usd_per_hour: float = Field(description="Against the one-shape plan (its whole cost when solve found none).")
    parts: list[MixedPartOut]
    status: str = Field(description="The fleet model's: optimal (proven) or feasible.")


def mixed_out(m: MixedPlan | None) -> MixedPlanOut | None:
    if m is None:
        return None
    return MixedPlanOut(
        cost_usd_per_hour=round(m.cost_usd_per_hour, 6),
        saving_usd_per_hour=round(m.saving_usd_per_hour, 6),
        parts=[MixedPartOut(**vars(p)) for p in m.parts],
        status=m.status,
    )


def mixed_lines(m: MixedPlanOut, one_plan: bool) -> list[str]:
    """The text report's lines: the mix, what it saves, and the router it needs."""
    head = (
        f"A cheaper mix of shapes (GPUs you own used): ${m.cost_usd_per_hour:,.2f}/hour, ${m.saving_usd_per_hour:,.2f}/hour less than the plan above"
        if one_plan
        else f"No one shape meets the spec, but a mix of shapes does (GPUs you own used): ${m.cost_usd_per_hour:,.2f}/hour"
    )
    out = [head]
    for p in m.parts:
        own = f", {p.owned_gpus} owned" if p.owned_gpus else ""
        out.append(
            f"- {p.replicas} × {p.plan} ({p.gpus} GPUs{own}): {p.users:,} users, {p.users_per_replica:,} per replica; "
            f"TPOT {p.tpot_s * 1e3:.1f} ms, TTFT {p.ttft_s * 1e3:.0f} ms"
        )
    out.append("a router in front sends each shape its users' share (`plan-opt fleet` with this workload prints the router weights)")
    return out
