"""The autoscaler configuration a replica schedule implies: the HPA's target worked out
by hand from capacity × utilisation, the bounds from the schedule, the windows from the
lag, KEDA's cron triggers a lag ahead of each run, the objects checked field by field
against the autoscaling/v2 API and KEDA's published ScaledObject CRD, and bad input named."""

from __future__ import annotations

import re

import pytest
import yaml

from solver.errors import InputError
from solver.report.autoscale import autoscale, quantity
from solver.report.deploy_k8s import to_yaml

QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|Ki|Mi|Gi)?$")


def _hpa_problems(obj: dict) -> list[str]:
    """autoscaling/v2 HorizontalPodAutoscaler as the Kubernetes API reference (v1.31,
    kubernetes.io/docs/reference/kubernetes-api/workload-resources/horizontal-pod-autoscaler-v2)
    marks it: scaleTargetRef (kind, name required), maxReplicas required, minReplicas ≥ 1
    and ≤ max, each metric's type and its source (Pods: metric.name, target.type among
    Utilization/Value/AverageValue, averageValue a quantity), and behavior's HPAScalingRules
    (stabilizationWindowSeconds 0..3600; policies of type Pods/Percent, value > 0,
    periodSeconds 1..1800)."""
    errs = []
    if obj.get("apiVersion") != "autoscaling/v2" or obj.get("kind") != "HorizontalPodAutoscaler":
        errs.append("apiVersion/kind")
    spec = obj["spec"]
    ref = spec.get("scaleTargetRef", {})
    if not ref.get("kind") or not ref.get("name"):
        errs.append("scaleTargetRef: kind and name required")
    mx, mn = spec.get("maxReplicas"), spec.get("minReplicas", 1)
    if not isinstance(mx, int) or not isinstance(mn, int) or not 1 <= mn <= mx:
        errs.append(f"replicas: 1 <= min {mn} <= max {mx}")
    for m in spec.get("metrics", []):
        if m.get("type") not in ("ContainerResource", "External", "Object", "Pods", "Resource"):
            errs.append(f"metric type {m.get('type')}")
        if m.get("type") == "Pods":
            p = m["pods"]
            if not p.get("metric", {}).get("name"):
                errs.append("pods.metric.name required")
            t = p.get("target", {})
            if t.get("type") not in ("Utilization", "Value", "AverageValue") or not QUANTITY.match(str(t.get("averageValue", ""))):
                errs.append(f"pods.target {t}")
    errs += _behavior_problems(spec.get("behavior", {}))
    return errs


def _behavior_problems(b: dict) -> list[str]:
    errs = []
    for side in ("scaleUp", "scaleDown"):
        rules = b.get(side, {})
        if not 0 <= rules.get("stabilizationWindowSeconds", 0) <= 3600:
            errs.append(f"{side}.stabilizationWindowSeconds")
        for p in rules.get("policies", []):
            if p.get("type") not in ("Pods", "Percent") or not p.get("value", 0) > 0 or not 0 < p.get("periodSeconds", 0) <= 1800:
                errs.append(f"{side}.policies {p}")
    return errs


# KEDA's ScaledObject CRD (kedacore/keda, config/crd/bases/keda.sh_scaledobjects.yaml at
# commit 00f663426e46, read 2026-12-05): spec's properties, of which scaleTargetRef (name
# required) and triggers are required; each trigger's properties, type and metadata
# required, metadata a map of strings; advanced.horizontalPodAutoscalerConfig.behavior
# the HPA's behavior (later releases add fields; these are the ones every release has).
KEDA_SPEC = {"advanced", "cooldownPeriod", "maxReplicaCount", "minReplicaCount", "pollingInterval", "scaleTargetRef", "triggers"}
KEDA_TRIGGER = {"authenticationRef", "metadata", "name", "type"}
# keda.sh/docs/2.17/scalers/prometheus and /scalers/cron: the metadata each scaler reads
PROMETHEUS_META = {"serverAddress", "query", "threshold"}
CRON_META = {"timezone", "start", "end", "desiredReplicas"}


def _keda_problems(obj: dict) -> list[str]:
    errs = []
    if obj.get("apiVersion") != "keda.sh/v1alpha1" or obj.get("kind") != "ScaledObject":
        errs.append("apiVersion/kind")
    spec = obj["spec"]
    if set(spec) - KEDA_SPEC:
        errs.append(f"unknown spec fields {set(spec) - KEDA_SPEC}")
    if not spec.get("scaleTargetRef", {}).get("name") or not spec.get("triggers"):
        errs.append("scaleTargetRef.name and triggers required")
    if not 0 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]:
        errs.append("replica counts")
    for t in spec["triggers"]:
        meta = t.get("metadata")
        if set(t) - KEDA_TRIGGER or not t.get("type") or not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            errs.append(f"trigger {t}")
        elif set(meta) != {"prometheus": PROMETHEUS_META, "cron": CRON_META}[t["type"]]:
            errs.append(f"{t['type']} metadata {set(meta)}")
    errs += _behavior_problems(spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"])
    return errs


HOURLY = [1, 1, 2, 3, 3, 2]


def test_the_target_is_capacity_times_utilisation():
    # 12.5 requests in the system per replica at its plan, scaled at 80 %: 12.5 × 0.8 = 10
    a = autoscale("chat", "vllm", HOURLY, 3600, 12.5, lag_s=300)
    assert a.target_per_replica == pytest.approx(10.0)
    assert a.hpa["spec"]["metrics"][0]["pods"]["target"] == {"type": "AverageValue", "averageValue": "10"}
    assert a.scaled_object["spec"]["triggers"][0]["metadata"]["threshold"] == "10"
    # 7 × 0.75 = 5.25 requests: a quantity in thousandths
    b = autoscale("chat", "vllm", HOURLY, 3600, 7.0, lag_s=300, utilisation=0.75)
    assert b.hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "5250m"
    assert quantity(3.0) == "3" and quantity(0.5) == "500m"


def test_the_bounds_come_from_the_schedule_and_the_reserved_count():
    a = autoscale("chat", "vllm", [2, 2, 5, 8, 3], 3600, 10, lag_s=0)
    assert (a.hpa["spec"]["minReplicas"], a.hpa["spec"]["maxReplicas"]) == (2, 8)
    assert (a.scaled_object["spec"]["minReplicaCount"], a.scaled_object["spec"]["maxReplicaCount"]) == (2, 8)
    r = autoscale("chat", "vllm", [2, 2, 5, 8, 3], 3600, 10, lag_s=0, reserved=3)
    assert r.min_replicas == 3 and r.hpa["spec"]["minReplicas"] == 3
    z = autoscale("chat", "vllm", [0, 2, 0], 3600, 10, lag_s=0)
    assert z.hpa["spec"]["minReplicas"] == 1 and z.scaled_object["spec"]["minReplicaCount"] == 0 and "HPAScaleToZero" in z.notes[0]


def test_the_windows_follow_the_lag():
    a = autoscale("chat", "vllm", [2, 2, 5, 8, 3], 3600, 10, lag_s=300)
    up, down = a.hpa["spec"]["behavior"]["scaleUp"], a.hpa["spec"]["behavior"]["scaleDown"]
    assert up["stabilizationWindowSeconds"] == 0 and up["policies"][0]["value"] == 6  # 8 − 2, at once
    assert down["stabilizationWindowSeconds"] == 300 and down["policies"][0]["value"] == 5  # 8 → 3
    assert a.hpa["metadata"]["annotations"]["plan-opt/scale-up-lag-seconds"] == "300"
    assert autoscale("chat", "vllm", HOURLY, 3600, 10, lag_s=5000).hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 3600


def test_cron_triggers_order_each_run_a_lag_ahead():
    # hourly [1, 1, 2, 3, 3, 2], lag 5 min: the run of 2 from 02:00 is ordered at 01:55 and
    # ends 03:00; the run of 3 (03:00-05:00) from 02:55; the 2 of 05:00-06:00 from 04:55
    a = autoscale("chat", "vllm", HOURLY, 3600, 10, lag_s=300, timezone="Europe/Paris")
    crons = [t["metadata"] for t in a.scaled_object["spec"]["triggers"] if t["type"] == "cron"]
    assert [(c["start"], c["end"], c["desiredReplicas"]) for c in crons] == [
        ("55 1 * * *", "0 3 * * *", "2"),
        ("55 2 * * *", "0 5 * * *", "3"),
        ("55 4 * * *", "0 6 * * *", "2"),
    ]
    assert {c["timezone"] for c in crons} == {"Europe/Paris"}
    # a run at midnight ordered 90 s ahead wraps to the day before, to the minute below
    b = autoscale("chat", "vllm", [3, 1], 60 * 30, 10, lag_s=90)
    assert [t["metadata"]["start"] for t in b.scaled_object["spec"]["triggers"] if t["type"] == "cron"] == ["58 23 * * *"]


def test_the_queue_metric_is_the_engines_own():
    v = autoscale("chat", "vllm", HOURLY, 3600, 10, lag_s=60)
    assert v.scaled_object["spec"]["triggers"][0]["metadata"]["query"] == (
        'sum(vllm:num_requests_running{app="chat"}) + sum(vllm:num_requests_waiting{app="chat"})'
    )
    s = autoscale("chat", "sglang", HOURLY, 3600, 10, lag_s=60, selector='namespace="llm"')
    q = s.scaled_object["spec"]["triggers"][0]["metadata"]["query"]
    assert q == 'sum(sglang:num_running_reqs{namespace="llm"}) + sum(sglang:num_queue_reqs{namespace="llm"})'
    assert s.hpa["spec"]["metrics"][0]["pods"]["metric"]["name"] == "sglang_requests_in_system"
    assert "sglang:num_queue_reqs" in s.adapter_rule["metricsQuery"] and s.adapter_rule["name"]["as"] == "sglang_requests_in_system"


@pytest.mark.parametrize("kind", ["Deployment", "LeaderWorkerSet"])
def test_the_objects_are_valid_by_the_api_and_the_crd(kind):
    a = autoscale("chat-70b", "vllm", HOURLY, 3600, 12.5, lag_s=420, kind=kind)
    for obj in yaml.safe_load_all(to_yaml([a.hpa, a.scaled_object])):  # through YAML, as applied
        problems = _hpa_problems(obj) if obj["kind"] == "HorizontalPodAutoscaler" else _keda_problems(obj)
        assert problems == [], problems
    assert a.hpa["spec"]["scaleTargetRef"]["kind"] == kind


def test_the_hpa_passes_kubernetes_validate():
    kv = pytest.importorskip("kubernetes_validate", reason="kubernetes_validate is not installed in this environment")
    a = autoscale("chat", "vllm", HOURLY, 3600, 12.5, lag_s=300)
    kv.validate(a.hpa, "1.31", strict=True)


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        (dict(name="Chat_1"), "name"),
        (dict(engine="llama.cpp"), "engine"),
        (dict(kind="StatefulSet"), "kind"),
        (dict(replicas=[]), "replicas"),
        (dict(replicas=[0, 0]), "replicas"),
        (dict(slot_s=90), "slot_s"),
        (dict(replicas=[1] * 25), "replicas"),  # 25 hours: past a day
        (dict(capacity_per_replica=0.0), "capacity_per_replica"),
        (dict(lag_s=-1), "lag_s"),
        (dict(utilisation=1.5), "utilisation"),
    ],
)
def test_bad_input_is_named(kw, field):
    args = dict(name="chat", engine="vllm", replicas=HOURLY, slot_s=3600, capacity_per_replica=10.0, lag_s=60) | kw
    with pytest.raises(InputError) as e:
        autoscale(**args)  # type: ignore[arg-type]
    assert e.value.field == field
