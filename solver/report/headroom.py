"""The plan's headroom in `solve`'s reports: what it leaves unused under each limit, the
limits it is thin on, and — when a plan within the tolerance was chosen over the
optimum for its headroom — what that costs against the optimum, both stated."""

from __future__ import annotations

from pydantic import Field

from solver.explain.records import SolveResult
from solver.explain.serving import objective_amount
from solver.optimise.headroom import HEADROOM_TOLERANCE, THIN_LATENCY_SHARE, THIN_MEMORY_SHARE, headroom
from solver.optimise.scenario import objective_value, plan_label
from solver.report.strict_json import SolveModel


class HeadroomOut(SolveModel):
    tolerance: float = Field(description="Plans up to this share dearer on the objective than the optimum are chosen among by headroom.")
    memory_free_share: float = Field(description="Per GPU, the memory the plan leaves free of what it may use (slack / limit).")
    tpot_slack_share: float | None = Field(description="(target − TPOT) / target; None without a TPOT target.")
    ttft_slack_share: float | None = Field(description="(target − TTFT) / target; None without a TTFT target.")
    thin: list[str] = Field(
        description=f"Limits with too little room to survive what the estimate leaves out: memory under {THIN_MEMORY_SHARE:.0%} "
        f"free, a latency within {THIN_LATENCY_SHARE:.0%} of its target."
    )
    cheapest_plan: str | None = Field(description="The optimum, when the plan was chosen over it for its headroom (None: the plan is the optimum).")
    cheapest_objective_value: float | None = Field(description="The optimum's objective value (the plan's own is objective_value).")
    cheapest_least_slack_share: float | None = Field(description="The optimum's least slack share, against the plan's least_slack_share.")
    least_slack_share: float = Field(
        description="The least of the plan's memory, TPOT and TTFT slack shares: what plans within the tolerance are compared on."
    )


def headroom_out(r: SolveResult) -> HeadroomOut | None:
    c = r.solution.candidate
    if c is None:
        return None
    p = r.problem
    mine = headroom(c, p.workload, p.targets)
    cheap = r.cheapest
    theirs = headroom(cheap, p.workload, p.targets) if cheap is not None else None
    return HeadroomOut(
        tolerance=HEADROOM_TOLERANCE,
        memory_free_share=round(mine.memory, 6),
        tpot_slack_share=None if mine.tpot is None else round(mine.tpot, 6),
        ttft_slack_share=None if mine.ttft is None else round(mine.ttft, 6),
        thin=mine.thin(),
        cheapest_plan=plan_label(cheap) if cheap is not None else None,
        cheapest_objective_value=objective_value(p, cheap) if cheap is not None else None,
        cheapest_least_slack_share=round(theirs.least, 6) if theirs is not None else None,
        least_slack_share=round(mine.least, 6),
    )


THIN_WHAT = {"memory": "memory {:.1%} free", "max_tpot": "TPOT within {:.1%} of its target", "max_ttft": "TTFT within {:.1%} of its target"}


def headroom_lines(h: HeadroomOut | None, objective: str, value: float | None) -> list[str]:
    """'What decided it' lines: the choice over the optimum, and the thin limits."""
    if h is None:
        return []
    out = []
    if h.cheapest_plan is not None and h.cheapest_objective_value is not None and value is not None:
        over = value - h.cheapest_objective_value
        share = over / h.cheapest_objective_value if h.cheapest_objective_value else 0.0
        out.append(
            f"- headroom: +{objective_amount(objective, over)} ({share:.1%}) over the optimum, {h.cheapest_plan} at "
            f"{objective_amount(objective, h.cheapest_objective_value)}, for {h.least_slack_share:.1%} room under its tightest limit "
            f"against the optimum's {h.cheapest_least_slack_share or 0.0:.1%} (memory free, TPOT and TTFT under their targets); "
            f"the optimum is thin, and within {h.tolerance:.0%} of it the plan with the most headroom is chosen"
        )
    if h.thin:
        shares = {"memory": h.memory_free_share, "max_tpot": h.tpot_slack_share, "max_ttft": h.ttft_slack_share}
        parts = [THIN_WHAT[n].format(shares[n] or 0.0) for n in h.thin]
        out.append(
            f"- thin headroom: {', '.join(parts)} (thin: memory under {THIN_MEMORY_SHARE:.0%} free, a latency within {THIN_LATENCY_SHARE:.0%} of its target): "
            "what the estimate leaves out (fragmentation, longer prompts, a slower kernel) may break it; measure before relying on it"
        )
    return out
