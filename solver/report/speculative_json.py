"""A plan's speculative decoding in the solve report: the draft, the tokens a
verification step yields, and the TPOT without it (one token a step), at the plan's batch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from solver.physics.decode import estimate_decode
from solver.report.strict_json import SolveModel

if TYPE_CHECKING:
    from solver.physics.evaluate import Evaluation


class SpeculativeOut(SolveModel):
    method: str
    draft: str
    num_tokens: int
    acceptance: float = Field(description="α_1: the chance the first drafted token is kept.")
    acceptance_by_position: list[float] = Field(description="α_1 … α_k: the chance each drafted token is kept given the ones before it were.")
    tokens_per_step: float = Field(description="1 + Σ_k Π_{j≤k} α_j: the tokens one verification step yields.")
    tpot_without_s: float = Field(description="The plan's TPOT at its batch with one token a step.")


def speculative_out(ev: Evaluation) -> SpeculativeOut | None:
    s = ev.deployment.speculation
    if s is None:
        return None
    plain = estimate_decode(ev.deployment.replace(speculation=None), ev.workload, ev.estimates.decode.batch)
    return SpeculativeOut(
        method=s.method,
        draft=s.draft_name,
        num_tokens=s.num_tokens,
        acceptance=s.alphas[0],
        acceptance_by_position=list(s.alphas),
        tokens_per_step=round(s.expected_tokens, 6),
        tpot_without_s=plain.tpot_s,
    )
