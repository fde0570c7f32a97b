"""A shape's capacity: the most users one replica holds under every target at once —
memory, TPOT and TTFT under load (its users' prompts queued) — and the latencies it
shows at the load it actually carries.

This is the one capacity rule: solve's candidates, fleet's options, pareto's users
frontier and the explanations all read it here, so the same question asked through two
commands gets one answer. (Under traffic a replica's capacity is a request rate, the
screen's sustainable rate with every percentile and end-to-end target held:
`traffic/screen.py`, read through `traffic_candidates`.)
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.optimise.problem import Problem, ShapePhysics
from solver.optimise.targets import TIME_TOLERANCE
from solver.physics.deployment import Targets, Workload

NO_CAP = 10**9
"""A target that is not set caps nothing."""


@dataclass(frozen=True)
class Capacity:
    """Users one replica holds under each limit alone, and under all at once."""

    memory: int
    max_tpot: int = NO_CAP
    max_ttft: int = NO_CAP

    @property
    def users(self) -> int:
        """Most users per replica that meet every target at once (0: not even one)."""
        return max(0, min(self.memory, self.max_tpot, self.max_ttft))

    @property
    def binding(self) -> str:
        """The limit that sets `users`: max_ttft where it alone is the tightest, else
        memory where it is no looser than TPOT, else max_tpot."""
        if self.max_ttft < min(self.memory, self.max_tpot):
            return "max_ttft"
        return "memory" if self.memory <= self.max_tpot else "max_tpot"


def replica_capacity(problem: Problem, ph: ShapePhysics, w: Workload, t: Targets, *, ignore_latency: bool = False) -> Capacity:
    """The capacity of one replica of `ph`'s shape at workload `w` and targets `t`.

    The TPOT cap is searched up to the memory cap (that cap itself without a target);
    the TTFT cap counts the queue of the replica's users' prompts (continuous or
    isolated batching, `DecodeCoefficients.ttft_under_load_s`). `ignore_latency` (the
    diagnosis): memory alone."""
    b_mem = ph.max_batch_memory
    upper = max(b_mem, 1)
    dec = ph.decode
    if ignore_latency or dec is None:
        return Capacity(b_mem, upper)
    b_tpot = upper if t.max_tpot_s is None else problem.tpot_cap(ph, w, t.max_tpot_s * (1 + TIME_TOLERANCE), upper)  # physics' ≤, as meets_time
    b_ttft = NO_CAP
    if dec.prompt_tokens and t.max_ttft_s is not None:
        b_ttft = problem.ttft_cap(ph, w, t.max_ttft_s, upper)
    return Capacity(b_mem, b_tpot, b_ttft)


def tpot_batch_cap(problem: Problem, ph: ShapePhysics, w: Workload, t: Targets, ignore: bool) -> int:
    """Most sequences per replica the TPOT target allows, searched up to the memory cap
    (that cap itself without a target, or when the caller ignores it)."""
    return replica_capacity(problem, ph, w, Targets(max_tpot_s=t.max_tpot_s), ignore_latency=ignore).max_tpot


def latencies_at(ph: ShapePhysics, batch: int) -> tuple[float, float]:
    """(TPOT, TTFT) of one replica holding `batch` users: the figures a plan prints at
    the load it carries (TTFT with their prompts queued)."""
    dec = ph.decode
    if dec is None:
        raise ValueError(f"{ph.shape.label} cannot run: it has no decode physics")
    ttft = ph.ttft_under_load_at(batch) if dec.prompt_tokens else ph.ttft_s
    return ph.tpot_at(batch), ttft
