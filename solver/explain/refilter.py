"""A re-solve with one target moved, reading only the options that can still win.

The price of each target asks the same question a dozen times with one target moved.
Most options cannot be the answer: an option's objective is at least what its fewest
replicas cost, and those are set by its memory alone (a replica holds at most its
memory's batch). So the options are visited cheapest bound first, each one's candidates
built by the solve's own code (`candidates`), and the visit stops where the next bound
is above the best plan found that meets every rule; CP-SAT then chooses among the
built candidates that meet every rule at that least objective. The choice is the full
solve's: every option left out has every candidate dearer than a plan found, and
CP-SAT's choice is the least (objective, tie-break rank) among the plans that meet every
rule, a total order that does not depend on which other candidates are present
(`optimise`). Figures already derived (memory, TPOT and TTFT per batch, the
caps) are read back from the problem (`Problem.physics`, `Problem.memory_cap`); a
moved context derives anew only the memory of the options the bound reaches.

With disaggregated serving an option is visited twice: its aggregated plans, and its
plans as the decode pool, bounded by its fewest decode replicas and the least prefill
pool any admissible plan can pair with it (optimise/disaggregated_floor.py); before
either is built, its fewest replicas under the TPOT target too (the TPOT cap is read
before the TTFT cap's search and the prefill pools' sizing). The bound holds for the
objectives priced per GPU (min_cost, min_gpus, min_purchase) when no GPU is owned
(owned ones are free) and the workload is users: elsewhere it chooses among every candidate that meets every rule at
the least objective (the candidates built once per workload and targets, so a moved
budget builds none); whenever no option meets every rule, it is the full solve
(`solve_scenario`). Under traffic an option's bound is its fewest replicas at the least
rate screened so far that misses the moved target (`fewest_at_least`: the sustainable
rate is below it), so the price of a target searches the rate only of options that can
still win (`_traffic`)."""

from __future__ import annotations

import math
from collections.abc import Callable

from solver.optimise.candidate import Candidate
from solver.optimise.candidates import candidates
from solver.optimise.disaggregated import serves_disaggregated
from solver.optimise.disaggregated_floor import fewest_decode_replicas, prefill_floor
from solver.optimise.model import PRIMARY, Limits, Solution, admissible, optimise
from solver.optimise.problem import Problem, Shape
from solver.optimise.scenario import Scenario, solve_scenario, wants_batch_variants
from solver.physics.deployment import Targets, Workload
from solver.units import TIME_TOLERANCE, meets_time

_PER_GPU = ("min_cost", "min_gpus", "min_purchase")
_BUDGETS = frozenset({"max_usd_per_hour", "max_purchase_usd", "max_gpus"})
"""The rules `least_admissible` reads before any latency (the physical ones always)."""
_FIGURE = {"min_cost": 0, "min_gpus": 1, "min_purchase": 2}
"""Each objective's figure of a prefill replica (disaggregated._Option.per_replica)."""


def bounded(problem: Problem, s: Scenario) -> bool:
    """Whether `lower_bound` holds for every candidate of this scenario on options that
    own no GPU (Refilter checks that once). A disaggregated plan's decode pool is its
    option: the pool holds at most its memory's batch per replica, and the prefill pool
    only adds GPUs, cost and purchase (each rounded up after the sum, so no less)."""
    return problem.objective in _PER_GPU and s.workload.traffic is None


def lower_bound(problem: Problem, shape: Shape, replicas: int) -> int | None:
    """The objective's integer coefficient (PRIMARY) of `replicas` rented replicas of
    `shape`, rounded as `Candidate` rounds it; None where the objective prices no such
    plan (no price: `acquirable` drops it). More replicas never cost less."""
    gpus = replicas * shape.gpus_per_replica
    dev = shape.device
    if problem.objective == "min_gpus":
        return gpus
    if problem.objective == "min_cost":
        return None if dev.price is None else math.ceil(round(gpus * dev.price.usd_per_gpu_hour * 100, 6))
    assert problem.objective == "min_purchase", problem.objective  # `bounded` admits no other
    return None if dev.purchase_usd is None else math.ceil(round(gpus * dev.purchase_usd, 6))


def misses_alone(problem: Problem, shape: Shape, w: Workload, t: Targets) -> bool:
    """Whether one user alone on a replica misses the TPOT or the TTFT target. Its
    candidates are then one, at batch 1 (a cap of 0: `replica_capacity`, `offered_batches`),
    with these very figures (`latencies_at`): it is never admissible, and the price of a
    tight target need not size it (a TTFT cap alone is a dozen queue sums)."""
    ph = problem.physics(shape, w)
    dec = ph.decode
    if not ph.valid or dec is None:
        return False  # `candidates` builds none
    if t.max_tpot_s is not None and not meets_time(ph.tpot_at(1), t.max_tpot_s):
        return True
    return t.max_ttft_s is not None and not meets_time(ph.ttft_under_load_at(1) if dec.prompt_tokens else ph.ttft_s, t.max_ttft_s)


def fewest_aggregated(problem: Problem, shape: Shape, w: Workload, t: Targets) -> int:
    """The fewest replicas of the aggregated plans `candidates` builds of `shape` (its
    batches are at most the memory's and the TPOT target's caps, `replica_capacity`;
    batch 1 where no batch meets them): a bound read before the TTFT cap's search."""
    ph = problem.physics(shape, w)
    cap = ph.max_batch_memory
    if t.max_tpot_s is not None and ph.decode is not None:
        cap = min(cap, problem.tpot_cap(ph, w, t.max_tpot_s * (1 + TIME_TOLERANCE), max(cap, 1)))
    return math.ceil(w.users / max(1, min(cap, w.users)))


def within_limits(problem: Problem, shape: Shape, w: Workload, limits: Limits) -> bool:
    """Whether the fewest replicas of `shape` its memory allows (fewer break the memory
    rule) can be within the GPU cap and, rented, the $/hour and purchase budgets: its
    plans have at least that many GPUs and cost at least that much (its own rounding,
    `Candidate`). Reads the memory alone, not the physics. Owned GPUs are free: only
    the cap is read for a shape some of whose GPUs are owned."""
    per_replica = problem.memory_cap(shape, w)
    if per_replica < 1:
        return False  # no replica holds one sequence (or a rule refuses the shape): never admissible
    gpus = math.ceil(w.users / per_replica) * shape.gpus_per_replica
    if limits.max_gpus is not None and gpus > limits.max_gpus:
        return False
    if shape.owned:
        return True
    dev = shape.device
    if limits.max_cost_cents is not None and dev.price is not None:
        if math.ceil(round(gpus * dev.price.usd_per_gpu_hour * 100, 6)) > limits.max_cost_cents:
            return False
    if limits.max_purchase_dollars is not None and dev.purchase_usd is not None:
        return math.ceil(round(gpus * dev.purchase_usd, 6)) <= limits.max_purchase_dollars
    return True


def _memory_key(w: Workload) -> tuple[object, ...]:
    """What an option's memory and physics depend on in a workload (Problem.physics' key less the shape)."""
    return (w.resident_tokens, w.prompt_tokens, w.output_tokens, w.batching, w.shared_prefix_tokens, w.prefix_hit_rate)


class Refilter:
    """Re-solves of one problem (over `shapes`, all when None) with targets moved: the
    options in order of their one-replica bound, kept across the re-solves; `hints`
    (the plan's shape, say) are visited first, so that a good plan prunes early."""

    def __init__(self, problem: Problem, shapes: list[Shape] | None = None, hints: tuple[Shape, ...] = ()) -> None:
        self.problem, self.shapes = problem, shapes
        searched = (problem.shapes if shapes is None else shapes) if problem.objective in _PER_GPU else []
        one = [(lb, sh) for sh in searched if (lb := lower_bound(problem, sh, 1)) is not None]
        one.sort(key=lambda x: (x[0], x[1].index))
        by_index = {sh.index: (lb, sh) for lb, sh in one}
        first = [by_index[i] for i in dict.fromkeys(sh.index for sh in hints) if i in by_index]
        seen = {sh.index for _, sh in first}
        self.order = first + [x for x in one if x[1].index not in seen]
        self.hinted = len(first)
        self.owned = any(sh.owned for sh in (problem.shapes if shapes is None else shapes))
        self.sorted: dict[tuple[object, ...], list[tuple[int, int, int, Shape]]] = {}
        """At the problem's own workload (its figures all derived), every option's bound
        at memory, sorted, per count of users: kept across the targets moved."""

    def solve(self, s: Scenario) -> Solution:
        """`solve_scenario(problem, s, shapes=shapes)`'s answer, building candidates only
        for the options whose bound does not exceed the best admissible plan found."""
        problem = self.problem
        if s.workload.traffic is not None:
            return self._traffic(s)
        if self.owned or not bounded(problem, s):
            return self._filtered(s)
        w, limits, primary = s.workload, s.limits(), PRIMARY[problem.objective]
        variants = wants_batch_variants(problem)
        disaggregated = serves_disaggregated(problem, w)
        searched = problem.shapes if self.shapes is None else self.shapes
        floors: dict[tuple[str, str, float], float | None] = {}
        best: int | None = None
        built: list[Candidate] = []

        def bound(sh: Shape) -> int | None:
            """The option's objective at the fewest replicas its memory allows (None: not one sequence fits, or a rule refuses it)."""
            per_replica = problem.memory_cap(sh, w)
            return None if per_replica < 1 else lower_bound(problem, sh, math.ceil(w.users / per_replica))

        def paired(sh: Shape, lb: int) -> int | None:
            """The bound of its disaggregated plans (`sh` the decode pool): `lb` and the
            least prefill pool (disaggregated_floor), the sum rounded as `Candidate`'s
            (⌈a + b⌉ ≥ ⌈a⌉ + ⌊b⌋); None: no prefill option can pair with it."""
            d = sh.deployment
            at = (d.weights.name, d.kv.name, d.factors.request_overhead_s)  # all the floor reads of the decode shape
            if at not in floors:
                floors[at] = prefill_floor(problem, w, s.targets, sh, searched, _FIGURE[problem.objective])
            floor = floors[at]
            return None if floor is None else lb + math.floor(floor * (1 - 1e-9))

        def build(sh: Shape, kind: int) -> None:
            """Kind 0: the option's aggregated plans; 1: its plans as the decode pool, paired over every prefill option."""
            nonlocal best
            if kind == 0 and misses_alone(problem, sh, w, s.targets):
                return  # its one aggregated candidate (batch 1) meets no rule set: nothing to build
            if (
                kind == 0
                and best is not None
                and (lb := lower_bound(problem, sh, fewest_aggregated(problem, sh, w, s.targets))) is not None
                and lb > best
            ):
                return  # its fewest replicas under memory and the TPOT target already cost more
            if kind == 1 and best is not None:  # its decode pool's fewest replicas under the TPOT cap too
                fewest = fewest_decode_replicas(problem, w, s.targets, sh)
                at_least = None if fewest is None else paired(sh, lower_bound(problem, sh, fewest) or 0)
                if at_least is None or at_least > best:
                    return
            if not disaggregated:
                cands = candidates(problem, w, s.targets, batch_variants=variants, shapes=[sh])
            else:
                one = [sh] if kind == 0 else []
                cands = candidates(problem, w, s.targets, batch_variants=variants, shapes=self.shapes, aggregated=one, decoding=[sh] if kind else [])
            for c in cands:
                built.append(c)
                if (best is None or primary(c) < best) and admissible(c, limits):  # the objective first: it is cheaper
                    best = primary(c)

        kinds = (0, 1) if disaggregated else (0,)
        for _, sh in self.order[: self.hinted]:
            if bound(sh) is not None:
                for kind in kinds:
                    build(sh, kind)
        # The rest by their bound at memory (a disaggregated plan's with its least prefill
        # pool), read for those whose one replica does not already cost more than the plan
        # found (the order is by that), then built cheapest bound first until the bound
        # passes the best plan found.
        key = (_memory_key(w), w.users, (s.targets.max_ttft_s, s.targets.max_tpot_s) if disaggregated else None)
        bounds = self.sorted.get(key, [])
        if key not in self.sorted:
            whole = _memory_key(w) == _memory_key(problem.workload)  # read, not derived: sort them all, once
            for lb1, sh in self.order[self.hinted :]:
                if not whole and best is not None and lb1 > best:
                    break
                lb = bound(sh)
                if lb is None:
                    continue
                for kind, kind_lb in ((0, lb), (1, paired(sh, lb) if disaggregated else None)):
                    if kind_lb is not None and (whole or best is None or kind_lb <= best):
                        bounds.append((kind_lb, sh.index, kind, sh))
            bounds.sort(key=lambda b: b[:3])
            if whole:
                self.sorted[key] = bounds
        for lb, _, kind, sh in bounds:
            if best is not None and lb > best:
                break
            build(sh, kind)
        if best is None:  # nothing meets every rule: the full solve says why (infeasible)
            return solve_scenario(problem, s, shapes=self.shapes)
        # CP-SAT's choice is the least (objective, tie-break rank) among the plans that
        # meet every rule: it chooses among those at the least objective alone.
        tied = [c for c in built if primary(c) == best and admissible(c, limits)]
        return optimise(tied, limits, problem.objective, problem.clock, problem.spec.prefer)

    def _traffic(self, s: Scenario) -> Solution:
        """Under traffic, for the objectives priced per GPU with none owned and one candidate
        an option: the options in order of the fewest replicas the screens taken so far
        prove each needs (`fewest_at_least`), built until that bound passes the best plan
        found (its own rate search only then); elsewhere the full solve."""
        from solver.optimise.traffic_candidates import fewest_at_least  # the users form imports no screen

        problem = self.problem
        if self.owned or problem.objective not in _PER_GPU or wants_batch_variants(problem):
            return solve_scenario(problem, s, shapes=self.shapes)
        w, t, limits, primary = s.workload, s.targets, s.limits(), PRIMARY[problem.objective]
        best: int | None = None
        built: list[Candidate] = []

        def build(sh: Shape) -> None:
            nonlocal best
            for c in candidates(problem, w, t, shapes=[sh]):
                built.append(c)
                if admissible(c, limits) and (best is None or primary(c) < best):
                    best = primary(c)

        for _, sh in self.order[: self.hinted]:
            build(sh)
        bounds: list[tuple[int, int, Shape]] = []
        for lb1, sh in self.order[self.hinted :]:
            if best is not None and lb1 > best:
                break  # the order is by one replica's bound: every later one costs more
            n = fewest_at_least(problem, sh, w, t)
            lb = None if n is None else lower_bound(problem, sh, n)
            if lb is not None and (best is None or lb <= best):
                bounds.append((lb, sh.index, sh))
        bounds.sort(key=lambda b: b[:2])
        for lb, _, sh in bounds:
            if best is not None and lb > best:
                break
            build(sh)
        if best is None:  # nothing meets every rule: the full solve says why (infeasible)
            return solve_scenario(problem, s, shapes=self.shapes)
        tied = [c for c in built if primary(c) == best and admissible(c, limits)]
        return optimise(tied, limits, problem.objective, problem.clock, problem.spec.prefer)

    def _filtered(self, s: Scenario) -> Solution:
        """`solve_scenario`'s answer from every candidate that can meet every rule (the
        problem builds them once per workload and latency targets, so a moved budget
        re-filters them; the aggregated plans of options that miss a latency target alone
        are left out, `misses_alone`): CP-SAT chooses among those that meet every rule at
        the least objective, as it would among them all (its choice is the least
        (objective, tie-break rank), the module's docstring)."""
        problem = self.problem
        w, t, limits, primary = s.workload, s.targets, s.limits(), PRIMARY[problem.objective]
        searched = problem.shapes if self.shapes is None else self.shapes
        within = (limits.max_gpus, limits.max_cost_cents, limits.max_purchase_dollars)
        if _memory_key(w) != _memory_key(problem.workload) and any(x is not None for x in within):
            searched = [sh for sh in searched if within_limits(problem, sh, w, limits)]  # new physics: only where a plan may fit the limits
        hopeful = [sh for sh in searched if not misses_alone(problem, sh, w, t)]
        cands = candidates(
            problem,
            w,
            t,
            batch_variants=wants_batch_variants(problem),
            shapes=self.shapes,
            aggregated=hopeful,
            within=within if any(x is not None for x in within) else None,
        )
        tied = least_admissible(cands, limits, primary)
        if not tied:  # infeasible: the full solve says so
            return solve_scenario(problem, s, shapes=self.shapes)
        return optimise(tied, limits, problem.objective, problem.clock, problem.spec.prefer)


def least_admissible(cands: list[Candidate], limits: Limits, primary: Callable[[Candidate], int]) -> list[Candidate]:
    """The candidates that meet every rule (`admissible`) at the least objective among
    those that do, in their order in `cands`; [] where none does. The same list as
    filtering them all, then keeping the least: the candidates are visited by objective
    (the rules that need no latency first, `_rules_of`), and the visit stops at the
    first objective above an admissible one's, so a candidate dearer than the answer
    never has its TTFT under load derived. Under min_tpot the objective is a latency
    itself: it is read only of the candidates within the physical rules and budgets."""
    cheap = [k for k, c in enumerate(cands) if admissible(c, limits, assumed=_BUDGETS)]
    cheap.sort(key=lambda k: primary(cands[k]))  # stable: equal objectives keep their order
    best: int | None = None
    tied: list[int] = []
    for k in cheap:
        c = cands[k]
        if best is not None and primary(c) > best:
            break
        if admissible(c, limits):
            best = primary(c)
            tied.append(k)
    return [cands[k] for k in sorted(tied)]
