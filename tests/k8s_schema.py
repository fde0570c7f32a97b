"""A hand-written structural check of the Kubernetes objects `deploy --emit k8s` writes,
field by field as the Kubernetes API reference (v1.31, kubernetes.io/docs/reference/
kubernetes-api) and the LeaderWorkerSet API (kubernetes-sigs/lws,
api/leaderworkerset/v1/leaderworkerset_types.go) mark them required, with the rules
the API server enforces on them. No network at test time, so no schema download:
each rule below names its field and its source section.

check(obj) returns a list of problems, each "path: what is wrong" (empty: valid)."""

from __future__ import annotations

import re

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")  # RFC 1123 label, at most 63
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")  # resource.Quantity
EXTENDED_GPU = ("nvidia.com/gpu", "amd.com/gpu")
# Label keys and values (kubernetes.io/docs/concepts/overview/working-with-objects/labels,
# "Syntax and character set"): an optional DNS-subdomain prefix and '/', then a name of at
# most 63 alphanumerics, '-', '_', '.', beginning and ending alphanumeric; values the same
# form (or empty).
LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
LABEL_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
FLOATING_TAGS = (":latest", ":server-cuda", ":server-rocm", ":main")
KINDS = {
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    ("v1", "ServiceAccount"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
}
RBAC_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "*"}


def _rbac(obj: dict, kind: str, errs: list[str]) -> None:
    """Role (RBAC API reference, Role v1): rules[].verbs required, a list of the API verbs;
    apiGroups and resources lists of strings. RoleBinding: roleRef required with apiGroup,
    kind (Role or ClusterRole) and name; subjects[].kind and name required (a
    ServiceAccount subject names one in the binding's namespace). ServiceAccount: no spec."""
    if kind == "Role":
        for i, rule in enumerate(obj.get("rules", [])):
            verbs = _req(rule, f"Role.rules[{i}]", "verbs", list, errs) or []
            if not verbs or not set(verbs) <= RBAC_VERBS:
                errs.append(f"Role.rules[{i}].verbs: {verbs}")
            for k in ("apiGroups", "resources"):
                if k in rule and not all(isinstance(v, str) for v in rule[k]):
                    errs.append(f"Role.rules[{i}].{k}: a list of strings")
    elif kind == "RoleBinding":
        ref = _req(obj, "RoleBinding", "roleRef", dict, errs)
        if ref is not None:
            for k in ("apiGroup", "kind", "name"):
                _req(ref, "RoleBinding.roleRef", k, str, errs)
            if ref.get("kind") not in ("Role", "ClusterRole"):
                errs.append(f"RoleBinding.roleRef.kind: {ref.get('kind')!r}")
        for i, sub in enumerate(obj.get("subjects", [])):
            _req(sub, f"RoleBinding.subjects[{i}]", "kind", str, errs)
            _req(sub, f"RoleBinding.subjects[{i}]", "name", str, errs)


def _req(obj: dict, path: str, key: str, kind: type, errs: list[str]):
    if not isinstance(obj, dict) or key not in obj:
        errs.append(f"{path}.{key}: required")
        return None
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        errs.append(f"{path}.{key}: expected {kind.__name__}, got {type(value).__name__}")
        return None
    return value


def _name(value, path: str, errs: list[str]) -> None:
    if not isinstance(value, str) or len(value) > 63 or not DNS_LABEL.match(value):
        errs.append(f"{path}: {value!r} is not an RFC 1123 label")


def _meta(obj: dict, path: str, errs: list[str], *, named: bool = True) -> None:
    """ObjectMeta: name (required on a top-level object), labels a map of strings."""
    meta = _req(obj, path, "metadata", dict, errs)
    if meta is None:
        return
    if named:
        _name(_req(meta, f"{path}.metadata", "name", str, errs), f"{path}.metadata.name", errs)
    labels = meta.get("labels", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        errs.append(f"{path}.metadata.labels: keys and values are strings")


def _probe(p: dict, path: str, ports: set[int], errs: list[str]) -> None:
    """Probe: exactly one handler; HTTPGetAction.port is required (an int, a container port)."""
    handlers = [h for h in ("httpGet", "tcpSocket", "exec", "grpc") if h in p]
    if len(handlers) != 1:
        errs.append(f"{path}: exactly one handler, got {handlers}")
        return
    if "httpGet" in p:
        port = _req(p["httpGet"], f"{path}.httpGet", "port", int, errs)
        if port is not None and port not in ports:
            errs.append(f"{path}.httpGet.port: {port} is not a containerPort of the container")
        path_value = p["httpGet"].get("path", "/")
        if not str(path_value).startswith("/"):
            errs.append(f"{path}.httpGet.path: must start with /")
    for k in ("periodSeconds", "failureThreshold", "initialDelaySeconds"):
        if k in p and (not isinstance(p[k], int) or p[k] < (0 if k == "initialDelaySeconds" else 1)):
            errs.append(f"{path}.{k}: a positive integer")


def _container(c: dict, path: str, volumes: set[str], errs: list[str]) -> None:
    """Container: name required (a DNS label); image required for workload controllers;
    command/args lists of strings; ports[].containerPort required in 1..65535;
    env[].name required; volumeMounts[].name and mountPath required, the name a pod
    volume; extended resources (GPUs) as whole numbers in limits, requests equal to limits."""
    _name(_req(c, path, "name", str, errs), f"{path}.name", errs)
    _req(c, path, "image", str, errs)
    for k in ("command", "args"):
        if k in c and not (isinstance(c[k], list) and all(isinstance(a, str) for a in c[k])):
            errs.append(f"{path}.{k}: a list of strings")
    ports = set()
    for i, port in enumerate(c.get("ports", [])):
        n = _req(port, f"{path}.ports[{i}]", "containerPort", int, errs)
        if n is not None and not 0 < n < 65536:
            errs.append(f"{path}.ports[{i}].containerPort: {n} outside 1..65535")
        ports.add(n)
    for i, env in enumerate(c.get("env", [])):
        _req(env, f"{path}.env[{i}]", "name", str, errs)
        if "valueFrom" in env:
            ref = env["valueFrom"].get("secretKeyRef")
            if ref is not None:
                _req(ref, f"{path}.env[{i}].valueFrom.secretKeyRef", "key", str, errs)
                _req(ref, f"{path}.env[{i}].valueFrom.secretKeyRef", "name", str, errs)
    for i, m in enumerate(c.get("volumeMounts", [])):
        name = _req(m, f"{path}.volumeMounts[{i}]", "name", str, errs)
        mount = _req(m, f"{path}.volumeMounts[{i}]", "mountPath", str, errs)
        if name is not None and name not in volumes:
            errs.append(f"{path}.volumeMounts[{i}].name: {name} is not a volume of the pod")
        if mount is not None and not mount.startswith("/"):
            errs.append(f"{path}.volumeMounts[{i}].mountPath: an absolute path")
    res = c.get("resources", {})
    limits, requests = res.get("limits", {}), res.get("requests", {})
    for k in ("cpu", "memory"):  # ResourceRequirements: Quantity strings
        for where, values in (("requests", requests), ("limits", limits)):
            if k in values and not (isinstance(values[k], str) and QUANTITY.match(values[k])):
                errs.append(f"{path}.resources.{where}.{k}: {values[k]!r} is not a quantity")
    for gpu in EXTENDED_GPU:
        if gpu in requests and requests.get(gpu) != limits.get(gpu):
            errs.append(f"{path}.resources: {gpu} request must equal its limit (extended resources are not overcommitted)")
        if gpu in limits and (not isinstance(limits[gpu], int) or limits[gpu] < 1):
            errs.append(f"{path}.resources.limits.{gpu}: a whole number of devices")
    for k in ("startupProbe", "readinessProbe", "livenessProbe"):
        if k in c:
            _probe(c[k], f"{path}.{k}", ports, errs)


def _pod_template(t: dict, path: str, errs: list[str]) -> None:
    """PodTemplateSpec: spec.containers required (at least one); volumes[].name required
    and unique, each with exactly one source."""
    _meta(t, path, errs, named=False) if "metadata" in t else None
    spec = _req(t, path, "spec", dict, errs)
    if spec is None:
        return
    volumes = set()
    for i, v in enumerate(spec.get("volumes", [])):
        name = _req(v, f"{path}.spec.volumes[{i}]", "name", str, errs)
        if name in volumes:
            errs.append(f"{path}.spec.volumes[{i}].name: {name} repeated")
        volumes.add(name)
        sources = [k for k in v if k != "name"]
        if len(sources) != 1:
            errs.append(f"{path}.spec.volumes[{i}]: exactly one volume source, got {sources}")
        if "persistentVolumeClaim" in v:
            _req(v["persistentVolumeClaim"], f"{path}.spec.volumes[{i}].persistentVolumeClaim", "claimName", str, errs)
    containers = _req(spec, f"{path}.spec", "containers", list, errs)
    if containers is not None and not containers:
        errs.append(f"{path}.spec.containers: at least one container")
    for i, c in enumerate(containers or []):
        _container(c, f"{path}.spec.containers[{i}]", volumes, errs)
    # PodSpec.initContainers: containers run to completion first (no probes); names
    # unique among all of the pod's containers.
    inits = spec.get("initContainers", [])
    for i, c in enumerate(inits):
        _container(c, f"{path}.spec.initContainers[{i}]", volumes, errs)
        if any(k in c for k in ("startupProbe", "readinessProbe", "livenessProbe")):
            errs.append(f"{path}.spec.initContainers[{i}]: init containers take no probes")
    names = [c.get("name") for c in [*(containers or []), *inits]]
    if len(names) != len(set(names)):
        errs.append(f"{path}.spec: container names repeated {names}")
    # PodSpec.nodeSelector: a map of label keys to label values.
    for k, v in spec.get("nodeSelector", {}).items():
        prefix, _, name = k.rpartition("/")
        if not (isinstance(v, str) and LABEL_NAME.match(v) and len(v) <= 63 and name and LABEL_NAME.match(name)):
            errs.append(f"{path}.spec.nodeSelector: {k}={v!r} is not a label")
        elif prefix and (len(prefix) > 253 or not LABEL_PREFIX.match(prefix)):
            errs.append(f"{path}.spec.nodeSelector: {k}: prefix {prefix!r} is not a DNS subdomain")


def check(obj: dict) -> list[str]:
    errs: list[str] = []
    api, kind = obj.get("apiVersion"), obj.get("kind")
    if (api, kind) not in KINDS:
        return [f"apiVersion/kind: {api}/{kind} is not one deploy emits ({sorted(KINDS)})"]
    path = kind
    _meta(obj, path, errs)
    if kind in ("ServiceAccount", "Role", "RoleBinding"):
        _rbac(obj, kind, errs)
        return errs
    spec = _req(obj, path, "spec", dict, errs)
    if spec is None:
        return errs
    if kind == "Deployment":
        # DeploymentSpec: selector and template required; the selector must match the
        # template's labels (apps/v1 validation), replicas a non-negative integer.
        if "replicas" in spec and (not isinstance(spec["replicas"], int) or spec["replicas"] < 0):
            errs.append(f"{path}.spec.replicas: a non-negative integer")
        sel = _req(spec, f"{path}.spec", "selector", dict, errs)
        tmpl = _req(spec, f"{path}.spec", "template", dict, errs)
        if sel is not None and tmpl is not None:
            labels = tmpl.get("metadata", {}).get("labels", {})
            if not sel.get("matchLabels") or any(labels.get(k) != v for k, v in sel["matchLabels"].items()):
                errs.append(f"{path}.spec.selector: must match spec.template.metadata.labels")
            _pod_template(tmpl, f"{path}.spec.template", errs)
    elif kind == "LeaderWorkerSet":
        # LeaderWorkerSetSpec: leaderWorkerTemplate required; in it workerTemplate is
        # required, leaderTemplate optional, size >= 1, restartPolicy one of the enum.
        lwt = _req(spec, f"{path}.spec", "leaderWorkerTemplate", dict, errs)
        if lwt is not None:
            size = lwt.get("size", 1)
            if not isinstance(size, int) or size < 1:
                errs.append(f"{path}.spec.leaderWorkerTemplate.size: an integer >= 1")
            if lwt.get("restartPolicy", "RecreateGroupOnPodRestart") not in (
                "Default",
                "RecreateGroupOnPodRestart",
                "RecreateGroupAfterStart",
                "None",
            ):
                errs.append(f"{path}.spec.leaderWorkerTemplate.restartPolicy: not in the enum")
            worker = _req(lwt, f"{path}.spec.leaderWorkerTemplate", "workerTemplate", dict, errs)
            if worker is not None:
                _pod_template(worker, f"{path}.spec.leaderWorkerTemplate.workerTemplate", errs)
            if "leaderTemplate" in lwt:
                _pod_template(lwt["leaderTemplate"], f"{path}.spec.leaderWorkerTemplate.leaderTemplate", errs)
    elif kind == "Service":
        # ServiceSpec: ports[].port required in 1..65535.
        ports = _req(spec, f"{path}.spec", "ports", list, errs) or []
        for i, p in enumerate(ports):
            n = _req(p, f"{path}.spec.ports[{i}]", "port", int, errs)
            if n is not None and not 0 < n < 65536:
                errs.append(f"{path}.spec.ports[{i}].port: outside 1..65535")
    elif kind == "PersistentVolumeClaim":
        # PersistentVolumeClaimSpec: accessModes and resources.requests.storage (a Quantity).
        modes = _req(spec, f"{path}.spec", "accessModes", list, errs) or []
        if not set(modes) <= {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"} or not modes:
            errs.append(f"{path}.spec.accessModes: {modes}")
        storage = spec.get("resources", {}).get("requests", {}).get("storage")
        if not isinstance(storage, str) or not QUANTITY.match(storage):
            errs.append(f"{path}.spec.resources.requests.storage: {storage!r} is not a quantity")
    return errs
