"""With search.serving [aggregated, disaggregated]: the best plan each way, re-solved
alone, and why the winner wins — the decode steps a separate prefill pool frees of the
prompts' chunks against what that pool costs."""

from __future__ import annotations

from solver.explain.records import ServingComparison, SolveResult
from solver.optimise.candidate import Candidate
from solver.optimise.problem import Problem
from solver.optimise.scenario import Scenario, objective_value, plan_label, solve_scenario, with_serving
from solver.units import fmt_seconds


def compare_serving(problem: Problem, s: Scenario, result: SolveResult) -> None:
    if set(problem.spec.search.serving) != {"aggregated", "disaggregated"} or s.workload.traffic is not None:
        return
    chosen = result.solution.chosen
    best: dict[str, Candidate | None] = {}
    for way in ("aggregated", "disaggregated"):
        if chosen.serving == way:
            best[way] = chosen
        else:
            sol = solve_scenario(with_serving(problem, way), s)
            best[way] = sol.candidate
    agg, dis = best["aggregated"], best["disaggregated"]
    obj = {k: (objective_value(problem, c) if c is not None else None) for k, c in best.items()}
    result.serving = ServingComparison(
        chosen.serving,
        plan_label(agg) if agg else None,
        obj["aggregated"],
        plan_label(dis) if dis else None,
        obj["disaggregated"],
        _reason(problem, s, chosen, agg, dis),
    )


def _price(c: Candidate, gpus: int, shape_index: int) -> float:
    for shape, _ in c.pools:
        if shape.index == shape_index and shape.device.price:
            return gpus * shape.device.price.usd_per_gpu_hour
    return 0.0


def objective_amount(objective: str, value: float) -> str:
    """An objective's value in its unit, as the reports write it."""
    return {
        "min_cost": f"${value:,.2f}/h",
        "min_tco": f"${value:,.2f}/h of TCO",
        "min_gpus": f"{value:,.0f} GPUs",
        "min_purchase": f"${value:,.0f} to buy",
        "min_tpot": f"{value * 1e3:,.2f} ms of TPOT",
    }[objective]


def _reason(problem: Problem, s: Scenario, chosen: Candidate, agg: Candidate | None, dis: Candidate | None) -> str:
    engine = problem.shapes[0].deployment.engine if problem.shapes else None
    if dis is None:
        if engine is not None and not engine.disaggregation:
            return f"{engine.display_name} has no prefill/decode split: every plan is aggregated"
        return "no disaggregated plan meets the targets (a prefill pool within the TTFT target, a decode pool within TPOT and memory)"
    pool = dis.prefill
    assert pool is not None
    pool_text = f"{pool.replicas} × {pool.shape.label} (${_price(dis, pool.gpus, pool.shape.index):,.2f}/h)"
    if agg is None:
        return f"no aggregated plan meets the targets; disaggregated, {pool_text} takes the prompts off the decode replicas"
    gap = abs(objective_value(problem, agg) - objective_value(problem, dis))
    won = (
        f"wins by {objective_amount(problem.objective, gap)}"
        if gap > 1e-9
        else f"ties on {problem.objective} and wins the tie-break (prefer: {problem.spec.prefer})"
    )
    if chosen is not dis:
        return (
            f"aggregated {won}: the best disaggregated plan needs a prefill pool of "
            f"{pool_text}, more than separating the prompts saves on the decode replicas"
        )
    # What the decode pool's shape would do aggregated, at the same batch: its steps carry
    # the prompts' chunks (continuous batching) and its users' prompts queue on it.
    together = problem.physics(dis.shape, s.workload).decode
    parts = []
    if together is not None:
        mixed = together.tpot_s(dis.batch)
        if mixed > dis.tpot_s * (1 + 1e-9):
            parts.append(
                f"at {dis.batch} users per replica {dis.shape.label} decodes a token in {fmt_seconds(dis.tpot_s)} alone, "
                f"{fmt_seconds(mixed)} with the prompts' chunks in its steps"
            )
        queued = together.ttft_under_load_s(dis.batch)
        if queued > dis.ttft_s * (1 + 1e-9):
            parts.append(f"aggregated, the prompts of its {dis.batch} users would queue on it to a TTFT of {fmt_seconds(queued)}")
    why = "; ".join(parts) or "the prompts run on GPUs of their own"
    return (
        f"disaggregated {won}: {why}; a prefill pool of {pool_text} serves them "
        f"within a TTFT of {fmt_seconds(dis.ttft_s)}, each prompt's KV sent in {fmt_seconds(pool.transfer.time_s)}"
    )
