"""The problem the optimiser solves: every shape (a replica's split, formats and device)
with what it can do, the workload, the targets and the budgets — and each shape's
physics, computed once per workload and kept."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from solver.bisect import largest_true
from solver.catalog import Device, Ownership, Pricing
from solver.optimise.clock import SolverClock
from solver.physics import validity
from solver.physics.costs import GpuHourCosts
from solver.physics.decode import DecodeCoefficients, decode_coefficients
from solver.physics.deployment import Deployment, Targets, Workload
from solver.physics.disaggregation import KvTransfer, kv_transfer
from solver.physics.memory import estimate_memory
from solver.physics.prefill import PrefillEstimate, estimate_prefill
from solver.spec.solve_spec import Spec
from solver.units import meets_time

if TYPE_CHECKING:  # the users form screens no traffic: a solve of it loads no traffic module
    from solver.traffic.screen import ShapeScreen


@dataclass(frozen=True)
class Skipped:
    """A shape build_problem does not build at all (so no physics ever sees it)."""

    device: str
    tp: int
    pp: int
    kind: str
    shapes: int
    """Weight and KV formats the split would have been built in."""
    reason: str


@dataclass(frozen=True)
class Shape:
    """One replica: a model split and quantised one way on one kind of device."""

    index: int
    """Position in catalog order: the final tie-break, so answers are reproducible."""
    deployment: Deployment
    domain: int
    """GPUs in the platform's scale-up domain."""
    owned: int
    """GPUs of this device the user already owns (free, limited)."""
    costs: GpuHourCosts | None = None
    """One GPU-hour of this device, owned or bought (total cost of ownership)."""

    @property
    def device(self) -> Device:
        return self.deployment.device

    @property
    def gpus_per_replica(self) -> int:
        return self.deployment.tp * self.deployment.pp

    @property
    def owned_usable(self) -> int:
        """Owned GPUs whole replicas of this shape fill: a TP group is all owned or all
        rented, so 4 owned GPUs serve no TP-8 replica (physics/costs.owned_in_use)."""
        return self.owned // self.gpus_per_replica * self.gpus_per_replica

    @property
    def label(self) -> str:
        d = self.deployment
        pp = f" PP{d.pp}" if d.pp > 1 else ""
        draft = f" +{d.speculation.method}" if d.speculation else ""
        split = f"DP{d.tp}-EP{d.tp}" if d.dp_ep else f"TP{d.tp}-EP{d.tp}" if d.parallelism == "tp_ep" else f"TP{d.tp}"
        return f"{d.device.name} {split}{pp} {d.weights.name}/{d.kv.name}{draft}"


@dataclass(frozen=True)
class ShapePhysics:
    """What a shape can do at one context, independent of users and targets."""

    shape: Shape
    refusals: tuple[tuple[str, str], ...]
    """(kind, reason) the engines' rules give for this split."""
    max_batch_memory: int
    """Sequences per replica that fit beside the weights (0: not even one)."""
    ttft_s: float
    decode: DecodeCoefficients | None
    prompt_tokens: int = 0
    prefill_comm_s: float = 0.0
    """What the all-reduces add to one prompt's prefill (of the tokens the prefix cache
    does not supply), inside ttft_s."""
    _figures: dict[tuple[str, int], float] = field(default_factory=dict, init=False, compare=False, repr=False)
    """(figure, batch) → seconds, kept from the first pass: a re-solve under a moved
    target re-filters the same figures instead of re-deriving them (explain/sensitivity.py)."""

    def tpot_at(self, batch: int) -> float:
        """The decode step's TPOT at `batch` sequences (memoised per batch)."""
        key = ("tpot", batch)
        got = self._figures.get(key)
        if got is None:
            dec = self.decode
            if dec is None:
                raise ValueError(f"{self.shape.label} cannot run: it has no decode physics")
            got = self._figures[key] = dec.tpot_s(batch)
        return got

    def ttft_under_load_at(self, batch: int) -> float:
        """TTFT with `batch` users' prompts queued (memoised per batch)."""
        key = ("ttft", batch)
        got = self._figures.get(key)
        if got is None:
            dec = self.decode
            if dec is None:
                raise ValueError(f"{self.shape.label} cannot run: it has no decode physics")
            got = self._figures[key] = dec.ttft_under_load_s(batch)
        return got

    @property
    def valid(self) -> bool:
        """Runnable apart from the interconnect, which is a constraint of its own."""
        return all(kind == validity.INTERCONNECT for kind, _ in self.refusals)

    @property
    def interconnect_ok(self) -> bool:
        return not any(kind == validity.INTERCONNECT for kind, _ in self.refusals)


@dataclass
class Problem:
    """Everything the solver needs, resolved: the shapes with their prices, the
    workload, the targets, the budgets, the objective."""

    spec: Spec
    shapes: list[Shape]
    workload: Workload
    targets: Targets
    devices: list[Device]
    """The devices searched, in catalog order."""
    excluded: dict[str, str]
    """Device name → why it was left out before any physics (e.g. no price)."""
    skipped: list[Skipped] = field(default_factory=list)
    """Shapes the spec allows that are never built (an engine rule refuses them)."""
    _physics: dict[tuple[int, int, int, int, str, int, float], ShapePhysics] = field(default_factory=dict)
    _memory: dict[tuple[int, int, int, int, str, int, float], int] = field(default_factory=dict)
    """Problem.memory_cap of shapes whose physics is not derived (yet)."""
    _refused: set[int] = field(default_factory=set)
    """Shapes a rule refuses whatever the workload (validity.check: all but kind "workload")."""
    _caps: dict[tuple[object, ...], int] = field(default_factory=dict)
    _transfers: dict[tuple[int, int, int], KvTransfer | None] = field(default_factory=dict)
    _pools: dict[tuple, Any] = field(default_factory=dict)
    """Disaggregated serving: the prefill pools paired with each decode option (optimise/disaggregated.py)."""
    _traffic: dict[tuple, ShapeScreen] = field(default_factory=dict)
    """Under traffic: each shape's screen (optimise/traffic_candidates.py), memoised."""
    _traffic_base: dict[tuple, tuple[Any, ...]] = field(default_factory=dict)
    """Under traffic: each shape's iteration cost, scheduler limits and lengths, whatever the targets."""
    simulated: dict[tuple, Any] = field(default_factory=dict)
    """Under traffic: each simulation's verdict by plan, seeds and scenario (explain/traffic.py), memoised."""
    simulations: int = 0
    simulated_requests: int = 0
    simulation_s: float = 0.0
    """Under traffic: simulations run so far by this command, the requests they drew and
    their wall time (explain/traffic.py bounds them)."""
    replica_floor: dict[int, int] = field(default_factory=dict)
    """Under traffic: the fewest replicas of a shape its simulation has not refused (set
    by the verification loop; 0 means no count tried met the targets)."""
    floor_steps: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    """Under traffic: a refused shape's correction not yet simulated at its floor: (the
    floor, its step, the steps taken) (explain/traffic.py)."""
    pricing: Pricing | None = None
    """The basis the rented GPUs were priced on."""
    ownership: Ownership | None = None
    """Power, hosting and life of owned and bought GPUs."""
    _unbatched: dict[tuple, tuple[Any, ...]] = field(default_factory=dict)
    """Of each shape's physics, what does not depend on the workload's batching (its
    refusals, memory, prefill): a disaggregated plan's decode pool (batching isolated)
    and an aggregated replica of one shape share them."""
    _candidates: dict[tuple, list[Any]] = field(default_factory=dict, init=False, repr=False)
    """Every candidate of one workload, targets and options (optimise/candidates.py), memoised:
    the plan, its headroom, the runners-up and a moved budget ask for the same ones. Not
    carried to a copy (dataclasses.replace: another spec may ask for other candidates)."""
    clock: SolverClock = field(init=False)
    """Every solve on this problem draws its time limit from it (optimise/clock.py)."""

    def __post_init__(self) -> None:
        self.clock = SolverClock(self.spec.solver.time_limit_s)

    @property
    def objective(self) -> str:
        return self.spec.objective

    @property
    def max_gpus(self) -> int | None:
        return self.spec.search.max_gpus

    @property
    def max_usd_per_hour(self) -> float | None:
        return self.spec.budget.max_usd_per_hour

    @property
    def max_purchase_usd(self) -> float | None:
        return self.spec.budget.max_purchase_usd

    def physics(self, shape: Shape, workload: Workload) -> ShapePhysics:
        key = _physics_key(shape, workload)
        got = self._physics.get(key)
        if got is None:
            got = _shape_physics(shape, workload, self.unbatched(shape, workload))
            self._physics[key] = got
        return got

    def unbatched(self, shape: Shape, w: Workload) -> tuple[tuple[tuple[str, str], ...], int | None, PrefillEstimate | ValueError | None]:
        """`_unbatched_physics` (memoised, shared with `physics`): a prefill-only replica
        reads these alone, not the decode steps (optimise/disaggregated.py)."""
        full = _physics_key(shape, w)
        key = full[:4] + full[5:]  # less the batching
        got = self._unbatched.get(key)
        if got is None:
            memory = _memory_part(shape.deployment, w, self._unbatched, full)
            got = self._unbatched[key] = _unbatched_physics(shape.deployment, w, memory, self._unbatched, shape.index)
        return got

    def memory_cap(self, shape: Shape, workload: Workload) -> int:
        """Sequences one replica holds in memory, 0 where any rule refuses the shape (the
        interconnect's included): `physics`' figure, read from it where derived, else
        only this much of it (explain/refilter.py bounds an option by it)."""
        if shape.index in self._refused:
            return 0
        key = _physics_key(shape, workload)
        ph = self._physics.get(key)
        refusals = ph.refusals if ph is not None else None
        got = ph.max_batch_memory if ph is not None else self._memory.get(key)
        if got is None:
            refusals, most = _memory_part(shape.deployment, workload, self._unbatched, key)
            got = self._memory[key] = 0 if refusals or most is None else most
        if refusals and any(kind != "workload" for kind, _ in refusals):
            self._refused.add(shape.index)  # the split, its formats or its platform: whatever the workload
        return 0 if refusals else got

    def kv_transfer(self, prefill: Shape, decode: Shape, prompt_tokens: int) -> KvTransfer | None:
        """A prompt's KV from a prefill replica of one shape to a decode replica of another (memoised)."""
        key = (prefill.index, decode.index, prompt_tokens)
        if key not in self._transfers:
            self._transfers[key] = kv_transfer(prefill.deployment, decode.deployment, prompt_tokens)
        return self._transfers[key]

    def tpot_cap(self, physics: ShapePhysics, workload: Workload, max_tpot_s: float, upper: int) -> int:
        """Most sequences per replica meeting `max_tpot_s` (memoised: re-solves that
        move another target reuse it)."""
        key = (
            physics.shape.index,
            workload.resident_tokens,
            workload.prompt_tokens,
            workload.output_tokens,
            workload.batching,
            max_tpot_s,
            upper,
            workload.shared_prefix_tokens,
        )
        got = self._caps.get(key)
        if got is None:
            if physics.decode is None:
                raise ValueError(f"{physics.shape.label} cannot run: it has no decode step to cap")
            got = largest_true(lambda b: physics.tpot_at(b) <= max_tpot_s, upper)  # as DecodeCoefficients.max_batch
            self._caps[key] = got
        return got

    def ttft_cap(self, physics: ShapePhysics, workload: Workload, max_ttft_s: float, upper: int) -> int:
        """Most users per replica whose TTFT under load (their prompts queued) meets
        `max_ttft_s`; memoised as tpot_cap."""
        key = (
            "ttft",
            physics.shape.index,
            workload.resident_tokens,
            workload.prompt_tokens,
            workload.output_tokens,
            workload.batching,
            max_ttft_s,
            upper,
            workload.shared_prefix_tokens,
            workload.prefix_hit_rate,
        )
        got = self._caps.get(key)
        if got is None:
            if physics.decode is None:
                raise ValueError(f"{physics.shape.label} cannot run: it has no decode step to cap")
            got = largest_true(lambda b: meets_time(physics.ttft_under_load_at(b), max_ttft_s), upper)
            self._caps[key] = got
        return got


def _physics_key(shape: Shape, w: Workload) -> tuple[int, int, int, int, str, int, float]:
    """What a shape's physics depends on besides the shape: the workload less its users."""
    return (shape.index, w.resident_tokens, w.prompt_tokens, w.output_tokens, w.batching, w.shared_prefix_tokens, w.prefix_hit_rate)


def _memory_part(d: Deployment, w: Workload, unbatched: dict[tuple, tuple[Any, ...]], full: tuple) -> tuple[tuple[tuple[str, str], ...], int | None]:
    """(refusals, memory's batch) of `_unbatched_physics`, memoised apart (under the key
    "memory"): `Problem.memory_cap` reads them of options whose physics is never derived,
    and the physics then reuses them."""
    key = ("memory", *full[:4], *full[5:])  # less the batching
    got = unbatched.get(key)
    if got is None:
        refused = tuple(validity.check(d, w))
        most: int | None = None
        if not any(kind != validity.INTERCONNECT for kind, _ in refused) and (not refused or _ring_joins(d)):
            most = estimate_memory(d, w).max_batch
        got = unbatched[key] = (refused, most)
    return got


def _ring_joins(d: Deployment) -> bool:
    """Whether any link joins the split's GPUs (else nothing is estimated of it)."""
    from solver.physics.interconnect import ring_for

    try:
        ring_for(d)
    except ValueError:
        return False
    return True


def _unbatched_physics(
    d: Deployment, w: Workload, memory: tuple[tuple[tuple[str, str], ...], int | None], unbatched: dict[tuple, Any], index: int
) -> tuple[tuple[tuple[str, str], ...], int | None, PrefillEstimate | ValueError | None]:
    """(refusals, memory's batch, prefill estimate or the ValueError it raised), the parts
    of a shape's physics its workload's batching does not enter (validity, memory and
    prefill read no `batching`); None where a refusal leaves nothing to estimate. The
    prefill estimate is kept apart (under "prefill"), by the workload's figures it reads
    alone (`prefill_key`): a moved context or output length re-solved by the price of each
    target (explain/sensitivity.py) reuses every prompt's estimate instead of re-deriving it."""
    refused, max_batch = memory
    if max_batch is None:
        return refused, None, None
    key = ("prefill", index, *prefill_key(w))
    got = unbatched.get(key)
    if got is None:
        try:
            got = estimate_prefill(d, w)
        except ValueError as e:
            got = e
        unbatched[key] = got
    return refused, max_batch, got


def prefill_key(w: Workload) -> tuple[int, int, float]:
    """All `estimate_prefill` reads of a workload: the prompt and its cached prefix
    (physics/prefill.py, physics/deployment.cached_prompt_tokens), not the context held,
    the output, the users or the batching."""
    return (w.prompt_tokens, w.shared_prefix_tokens, w.prefix_hit_rate)


def _shape_physics(shape: Shape, w: Workload, unbatched: tuple[Any, ...]) -> ShapePhysics:
    d = shape.deployment
    refused, max_batch, prefill = unbatched
    if max_batch is None:
        return ShapePhysics(shape, refused, 0, math.inf, None)
    try:
        if isinstance(prefill, ValueError):
            raise prefill
        return ShapePhysics(
            shape,
            refused,
            max_batch,
            prefill.ttft_s,
            decode_coefficients(d, w.resident_tokens, w, prefill),
            w.prompt_tokens,
            prefill.comm_time_s,
        )
    except ValueError:
        if not refused:
            raise
        # Refused by the interconnect and no link joins its stages either (llama.cpp's
        # layer split over a single-device platform): nothing to estimate.
        return ShapePhysics(shape, refused, 0, math.inf, None)
