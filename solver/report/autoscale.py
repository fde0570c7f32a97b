"""The autoscaler configuration that realises a replica schedule: a Kubernetes
HorizontalPodAutoscaler (autoscaling/v2) and a KEDA ScaledObject (keda.sh/v1alpha1) on
the engine's queue metric, with the thresholds the plan implies. Use one of the two:
both on the same workload would fight over its replica count.

The metric is a replica's requests in the system, running plus waiting, from the
engine's own Prometheus gauges (ENGINE_METRICS). Its target per replica is the plan's
capacity of one replica (the requests it carries in the system at its rate while
meeting the SLA) times `utilisation`: below 1 so that the autoscaler orders a replica
while the ones running still meet the SLA, since the new one is only ready `lag_s` later.
The HPA and KEDA's prometheus trigger both average it over the replicas (HPA
AverageValue; KEDA's prometheus trigger: threshold per replica), so the count asked
for is ceil(total in system / target).

Replica bounds: the minimum is the schedule's least count (or the reserved replicas,
if more; an HPA's at least 1), the maximum its peak. Behaviour: scale up at once (no
stabilisation: the lag already delays capacity), the whole range in one 60 s period;
scale down by at most the schedule's largest step per 60 s, after a stabilisation
window of lag_s (at most the API's 3,600 s), so a replica is not released and ordered again within the time one takes to start.
The ScaledObject also carries the schedule itself: one KEDA cron trigger per run of
slots above the minimum, starting lag_s before the run (to the minute below), so that
the replicas are ready when the run begins; KEDA takes the highest of its triggers,
so the queue trigger still covers demand the schedule did not foresee.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from solver.errors import InputError

ENGINE_METRICS = {
    # vllm-project/vllm, vllm/v1/metrics/loggers.py: the gauges "vllm:num_requests_running"
    # ("Number of requests in model execution batches.") and "vllm:num_requests_waiting"
    # ("Number of requests waiting to be processed."), read 2026-12-05.
    "vllm": ("vllm:num_requests_running", "vllm:num_requests_waiting"),
    # sgl-project/sglang, python/sglang/srt/metrics/collector.py: the gauges
    # "sglang:num_running_reqs" ("The number of running requests.") and
    # "sglang:num_queue_reqs" ("The number of requests in the waiting queue."), read 2026-12-05.
    "sglang": ("sglang:num_running_reqs", "sglang:num_queue_reqs"),
}
TARGETS = {"Deployment": "apps/v1", "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1"}
MAX_WINDOW_S = 3600
"""The API's bound on stabilizationWindowSeconds (autoscaling/v2 HPAScalingRules)."""
SCALE_PERIOD_S = 60
DAY_S = 86_400
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class Autoscale:
    """The two objects (use one), the prometheus-adapter rule the HPA's metric needs,
    and the figures they were built from."""

    target_per_replica: float
    min_replicas: int
    max_replicas: int
    hpa: dict
    scaled_object: dict
    adapter_rule: dict
    """prometheus-adapter's rule exposing the metric to the HPA (custom.metrics.k8s.io)."""
    notes: list[str] = field(default_factory=list)


def quantity(x: float) -> str:
    """A Kubernetes quantity: whole, else in thousandths ("12500m")."""
    milli = round(x * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def metric_name(engine: str) -> str:
    """The per-pod metric the adapter exposes: custom metric names take no colons."""
    return f"{engine}_requests_in_system"


def _checked(name: str, engine: str, replicas: Sequence[int], slot_s: float, capacity: float, lag_s: float, utilisation: float, kind: str) -> None:
    if not isinstance(name, str) or len(name) > 63 or not _LABEL.match(name):
        raise InputError("name", name, "the workload's Kubernetes name: an RFC 1123 label (lower case letters, digits, '-'; at most 63)")
    if engine not in ENGINE_METRICS:
        raise InputError("engine", engine, f"an engine whose queue gauges are known: {', '.join(ENGINE_METRICS)}")
    if kind not in TARGETS:
        raise InputError("kind", kind, f"the workload's kind: {', '.join(TARGETS)}")
    if not replicas or any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in replicas) or max(replicas) < 1:
        raise InputError("replicas", list(replicas), "one whole replica count (0 or more) per slot, at least one slot above 0")
    if not 60 <= slot_s < math.inf or slot_s % 60:
        raise InputError("slot_s", slot_s, "a whole number of minutes in seconds (cron triggers start on a minute)")
    if len(replicas) * slot_s > DAY_S:
        raise InputError(
            "replicas", f"{len(replicas)} slots of {slot_s:g} s", f"a schedule of at most one day ({DAY_S:,} s): its cron triggers repeat daily"
        )
    if not 0 < capacity < math.inf:
        raise InputError("capacity_per_replica", capacity, "requests one replica carries in the system (running + waiting) at its plan, above 0")
    if not 0 <= lag_s <= DAY_S:
        raise InputError("lag_s", lag_s, f"seconds from ordering a replica to its serving, 0 to {DAY_S:,}")
    if not 0 < utilisation <= 1:
        raise InputError("utilisation", utilisation, "the share of a replica's capacity at which to add one, in (0, 1]")


def _cron(seconds_of_day: float) -> str:
    """Daily at this time (to the minute below)."""
    minute = int(seconds_of_day // 60) % (DAY_S // 60)
    return f"{minute % 60} {minute // 60} * * *"


def _runs(replicas: Sequence[int], slot_s: float) -> list[tuple[float, float, int]]:
    """(start_s, end_s, replicas) of each run of slots with one count."""
    runs: list[tuple[float, float, int]] = []
    for k, n in enumerate(replicas):
        if runs and runs[-1][2] == n:
            runs[-1] = (runs[-1][0], (k + 1) * slot_s, n)
        else:
            runs.append((k * slot_s, (k + 1) * slot_s, n))
    return runs


def autoscale(
    name: str,
    engine: str,
    replicas: Sequence[int],
    slot_s: float,
    capacity_per_replica: float,
    *,
    lag_s: float,
    utilisation: float = 0.8,
    reserved: int = 0,
    kind: str = "Deployment",
    timezone: str = "UTC",
    prometheus_url: str = "http://prometheus-operated.monitoring.svc:9090",
    selector: str | None = None,
) -> Autoscale:
    """The HPA and the ScaledObject for `replicas` per slot of `slot_s` from midnight
    (in `timezone`), each replica carrying `capacity_per_replica` requests in the system
    at its plan, ready `lag_s` after it is ordered. `selector`: the PromQL label matchers
    that pick the workload's pods (default app="<name>")."""
    _checked(name, engine, replicas, slot_s, capacity_per_replica, lag_s, utilisation, kind)
    running, waiting = ENGINE_METRICS[engine]
    target = capacity_per_replica * utilisation
    floor = max(min(replicas), reserved)
    peak = max(max(replicas), floor)
    steps = [b - a for a, b in zip(replicas, replicas[1:], strict=False)]
    down_step = max([-s for s in steps if s < 0], default=1)
    window_s = min(MAX_WINDOW_S, math.ceil(lag_s))
    behavior = {
        "scaleUp": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": max(1, peak - floor), "periodSeconds": SCALE_PERIOD_S}]},
        "scaleDown": {"stabilizationWindowSeconds": window_s, "policies": [{"type": "Pods", "value": down_step, "periodSeconds": SCALE_PERIOD_S}]},
    }
    labels = {"app": name}
    annotations = {"plan-opt/scale-up-lag-seconds": quantity(lag_s), "plan-opt/capacity-per-replica": quantity(capacity_per_replica)}
    ref = {"apiVersion": TARGETS[kind], "kind": kind, "name": name}
    notes = []
    if floor < 1:
        notes.append(
            "the schedule reaches 0 replicas: the HPA keeps 1 (scaling to zero needs the HPAScaleToZero feature gate); the ScaledObject goes to 0"
        )
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {
            "scaleTargetRef": ref,
            "minReplicas": max(1, floor),
            "maxReplicas": max(1, peak),
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {"metric": {"name": metric_name(engine)}, "target": {"type": "AverageValue", "averageValue": quantity(target)}},
                }
            ],
            "behavior": behavior,
        },
    }
    match = selector if selector is not None else f'app="{name}"'
    query = f"sum({running}{{{match}}}) + sum({waiting}{{{match}}})"
    triggers: list[dict] = [{"type": "prometheus", "metadata": {"serverAddress": prometheus_url, "query": query, "threshold": quantity(target)}}]
    for start_s, end_s, n in _runs(replicas, slot_s):
        if n > floor:
            meta = {"timezone": timezone, "start": _cron(start_s - lag_s), "end": _cron(end_s), "desiredReplicas": str(n)}
            triggers.append({"type": "cron", "metadata": meta})
    scaled = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {
            "scaleTargetRef": ref,
            "pollingInterval": 15,
            "minReplicaCount": floor,
            "maxReplicaCount": peak,
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": behavior}},
            "triggers": triggers,
        },
    }
    rule = {
        "seriesQuery": f'{running}{{namespace!="",pod!=""}}',
        "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
        "name": {"matches": f"^{running}$", "as": metric_name(engine)},
        "metricsQuery": f"sum({running}{{<<.LabelMatchers>>}} + {waiting}{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)",
    }
    return Autoscale(target, floor, peak, hpa, scaled, rule, notes)
