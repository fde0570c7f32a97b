"""JSQ as the rule is written, for the tests: at every arrival advance every replica to
it and take the fewest in the system, lowest index on a tie (the simulator's former
O(replicas) scan)."""

from __future__ import annotations

from solver.traffic import simulate as sim


def scanned_choices(requests: list[sim.Request], cost: sim.IterationCost, limits: sim.EngineLimits, replicas: int) -> list[int]:
    work = sim.Work("scan")
    engines = [sim.Replica(i, cost, limits, False, work) for i in range(replicas)]
    out = []
    for r in sorted(requests, key=lambda r: r.arrival_s):
        for e in engines:
            e.advance(r.arrival_s)
        engine = min(engines, key=lambda e: e.in_system_at(r.arrival_s))
        engine.arrive(sim.Seq(r), r.arrival_s)
        out.append(engine.index)
    return out
