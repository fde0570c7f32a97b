"""The best plan on every other GPU, or the constraint that rules it out."""

from __future__ import annotations

import dataclasses

from solver.explain.records import (
    RunnerUp,
    SolveResult,
)
from solver.explain.refilter import Refilter
from solver.optimise.candidate import Candidate
from solver.optimise.candidates import candidates
from solver.optimise.headroom import HEADROOM_TOLERANCE
from solver.optimise.model import (
    Limits,
    admissible,
    is_feasible,
    minimal_conflict,
)
from solver.optimise.problem import Problem, Shape
from solver.optimise.scenario import (
    Scenario,
    diagnosis_candidates,
    objective_value,
    plan_label,
    set_targets,
)
from solver.optimise.targets import TARGETS
from solver.units import fmt_seconds


def why_not(problem: Problem, s: Scenario, shapes: list[Shape]) -> str:
    """Why no plan on these shapes meets the spec: structural reasons first, then
    the targets that each alone rule them out, with the best the device reaches."""
    phys = [problem.physics(sh, s.workload) for sh in shapes]
    valid = [p for p in phys if p.valid]
    if not phys:
        return "no shape the spec allows is left to search: see the shapes left out"
    if not valid:
        reasons = sorted({r for p in phys for _, r in p.refusals})
        return "cannot run this model: " + "; ".join(reasons[:2])
    if all(not p.interconnect_ok for p in valid):
        return "interconnect: no allowed TP degree fits its scale-up domain"
    if all(p.max_batch_memory < 1 or not p.interconnect_ok for p in valid):
        return "memory: not even one sequence fits beside the weights at any allowed TP, PP and precision"
    if s.workload.traffic is not None:
        why = _traffic_why_not(problem, s, shapes)
        if why:
            return why
    cands = candidates(problem, s.workload, s.targets, batch_variants=True, shapes=shapes)
    limits = s.limits()
    alone = []
    for target in set_targets(s):
        if target in ("users", "context_tokens"):
            continue
        relaxed = dataclasses.replace(limits, **{_limit_field(target): None})
        if is_feasible(cands, relaxed, problem.clock):
            alone.append(target)
    if not alone:
        diag = diagnosis_candidates(problem, s, shapes)
        core = minimal_conflict(diag, limits, problem.clock)
        if len(core) == 1:
            best = _best_on([c for c in diag if c.memory_excess <= 0 and c.interconnect_excess == 0], core[0])
            return f"ruled out by {core[0]} alone, even for one user" + (f" (best here {best})" if best else "")
        if core:
            return "ruled out by " + ", ".join(core[:-1]) + f" and {core[-1]} together"
        return "memory: not even one user with a short context fits"
    parts = []
    for target in alone:
        # the plans that meet every other target: the best of them on this one is what
        # rules the device out (the best of all plans may already meet it, at a shape
        # another target forbids)
        rest = dataclasses.replace(limits, **{_limit_field(target): None})
        meet_rest = [c for c in cands if admissible(c, rest)]
        best = _best_on(meet_rest, target)
        blame = _comm_blame(meet_rest, target, limits)
        if blame:
            return f"interconnect: its all-reduces push the best {target[4:].upper()} to {best} ({blame} without them), past {target}"
        parts.append(f"{target} (best here {best})" if best else target)
    return "ruled out by " + " or ".join(parts)


def _traffic_why_not(problem: Problem, s: Scenario, shapes: list[Shape]) -> str:
    """Under traffic: when no shape of the device sustains any rate within the targets,
    the target (or limit) that stops even an idle replica, with the best figure."""
    from solver.optimise.traffic_candidates import screened

    best: dict[str, float] = {}
    for sh in shapes:
        ph = problem.physics(sh, s.workload)
        if not ph.valid or ph.decode is None or ph.max_batch_memory < 1:
            continue
        sust = screened(problem, sh, s.workload, s.targets).sustainable
        if sust.rate_per_s > 0:
            return ""
        idle = sust.idle
        figure = {"ttft": idle.ttft_q_s, "tpot": idle.tpot_q_s, "e2e": idle.e2e_q_s}.get(sust.binding)
        if figure is not None:
            best[sust.binding] = min(best.get(sust.binding, figure), figure)
        else:
            best.setdefault(sust.binding, 0.0)
    if not best:
        return ""
    names = {
        "ttft": "max_ttft",
        "tpot": "max_tpot",
        "e2e": "the end-to-end target",
        "memory": "memory (the KV cache)",
        "max_num_seqs": "max_num_seqs",
        "budget": "the token budget",
    }
    parts = [f"{names.get(b, b)}" + (f" (best here {fmt_seconds(v)} at a vanishing rate)" if v else "") for b, v in sorted(best.items())]
    return "ruled out by " + " or ".join(parts) + ", even at a vanishing request rate"


def _comm_blame(cands: list[Candidate], target: str, limits: Limits) -> str:
    """When the all-reduces alone push a latency past its target, the interconnect
    is what rules the device out: say so, with the figure without them."""
    if target == "max_tpot" and limits.max_tpot_us is not None:
        without = min((c.tpot_s - _decode_comm_share_s(c) for c in cands), default=None)
        if without is not None and without * 1e6 <= limits.max_tpot_us:
            return f"{without * 1e3:.1f} ms"
    if target == "max_ttft" and limits.max_ttft_us is not None:
        without = min((_ttft_without_comm_s(c) for c in cands), default=None)
        if without is not None and without * 1e6 <= limits.max_ttft_us:
            return f"{without * 1e3:.0f} ms"
    return ""


def _decode_comm_share_s(c: Candidate) -> float:
    """What the all-reduces add to a token's time: the TPOT less the TPOT with them at
    zero. Not the step's communication itself: with speculative decoding a step yields
    several tokens, and a step's all-reduces taken from a token's time went negative."""
    silent = dataclasses.replace(c.decode, comm_fixed_s=0.0, comm_per_sequence_s=0.0, comm_pieces=())
    return c.decode.tpot_s(c.batch) - silent.tpot_s(c.batch)


def _ttft_without_comm_s(c: Candidate) -> float:
    """The plan's TTFT with its prefills' all-reduces at zero: under a closed loop of
    users every queued prompt is that much shorter, so the queue is solved again; else
    (a prefill pool, a traffic run) one prompt's share is taken off. The all-reduces are
    those of the tokens prefilled, not of the cached prefix (a 100k-token prompt whose
    96k are cached sends 4k tokens' activations: counted whole, they came out larger
    than the TTFT itself)."""
    dec = c.physics.decode
    if c.prefill is None and c.ttft_at_load_s is None and dec is not None and dec.prompt_tokens:
        silent = dataclasses.replace(dec, prefill_gpu_s=dec.prefill_gpu_s - c.physics.prefill_comm_s)
        return silent.ttft_under_load_s(c.batch)
    physics = c.prefill.physics if c.prefill is not None else c.physics
    return c.ttft_s - physics.prefill_comm_s


def loses_or_cheaper(obj: float, base: float) -> str:
    """A runner-up cheaper than the plan is the optimum the plan was chosen over, within
    the headroom tolerance (optimise/headroom.py)."""
    if obj < base - 1e-9:
        return f"cheaper, within {HEADROOM_TOLERANCE:.0%} of the plan: less room under its limits (the plan is chosen for its headroom)"
    return "loses on the objective"


def _limit_field(target: str) -> str:
    field = TARGETS[target].limit_field
    assert field is not None, target
    return field


def _best_on(cands: list[Candidate], target: str) -> str | None:
    """The best figure any of these plans reaches on the target's measure."""
    t = TARGETS[target]
    if not cands or t.measure is None:
        return None
    best = min(t.measure(c) for c in cands)
    if target == "max_tpot":
        return f"{best * 1e3:.1f} ms"
    if target == "max_ttft":
        return f"{best * 1e3:.0f} ms"
    return f"{int(best)} GPUs" if t.unit == "GPUs" else t.text(best)


def runners_up(problem: Problem, s: Scenario, result: SolveResult) -> None:
    chosen = result.solution.chosen
    base = objective_value(problem, chosen)
    forced = []
    on: dict[str, list[Shape]] = {}
    for sh in problem.shapes:
        on.setdefault(sh.device.name, []).append(sh)
    for device in problem.devices:
        if device.name == chosen.shape.device.name:
            continue
        if device.name in problem.excluded:
            result.runners_up.append(RunnerUp(device.name, None, None, None, problem.excluded[device.name]))
            continue
        shapes = on.get(device.name, [])
        sol = Refilter(problem, shapes).solve(s)  # solve_scenario's answer on these shapes
        if sol.feasible:
            obj = objective_value(problem, sol.chosen)
            result.runners_up.append(RunnerUp(device.name, plan_label(sol.chosen), obj, obj - base, loses_or_cheaper(obj, base)))
        else:
            reason = why_not(problem, s, shapes)
            result.runners_up.append(RunnerUp(device.name, None, None, None, reason))
            if reason.startswith(("ruled out", "memory", "interconnect")):
                forced.append(f"{device.name}: {reason}")
    result.runners_up.sort(key=lambda r: (r.delta is None, r.delta if r.delta is not None else 0.0, r.device))
    result.gpu_forced_by = forced
