"""deploy/k8s: both overlays render with kustomize, validate strictly against the Kubernetes
schemas, and keep the promises deploy/README.md makes (probes, ports and settings that match
the server, security, resources from the measured figures, graceful rollouts, scaling)."""

from __future__ import annotations

import dataclasses
import re

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from service.config import Settings
from service.server import LIVENESS_SERVICE, SERVICE_NAME

from .manifests import OVERLAYS, SETTING_NAMES, Obj, Rendered, matches, pyproject

# The oldest Kubernetes the manifests are for (native preStop sleep: 1.30) and the newest the
# validator knows.
K8S_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())

# Memory a server pod needs, as measured (deploy/README.md, "What a pod holds").
IDLE_MIB = 50
STREAM_KIB = 30
FINISHED_TABLE_KIB = 83


@pytest.fixture(params=OVERLAYS)
def rendered(request: pytest.FixtureRequest) -> Rendered:
    return Rendered(request.param)


def mebibytes(quantity: str) -> float:
    units = {
        "Ki": 1 / 1024,
        "Mi": 1,
        "Gi": 1024,
        "k": 1e3 / 2**20,
        "M": 1e6 / 2**20,
        "G": 1e9 / 2**20,
        "": 1 / 2**20,
    }
    number, unit = re.fullmatch(r"([\d.]+)([A-Za-z]*)", str(quantity)).groups()  # type: ignore[union-attr]
    return float(number) * units[unit]


def cores(quantity: str) -> float:
    text = str(quantity)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def port_names(container: Obj) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in container.get("ports", [])}


def test_every_builtin_object_validates_strictly(rendered: Rendered) -> None:
    kinds = set()
    for obj in rendered.objects:
        if obj["apiVersion"].startswith("monitoring.coreos.com/"):
            continue  # CRDs: checked field by field in test_servicemonitor / test_prometheusrule
        kinds.add(obj["kind"])
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)
    assert {"Deployment", "Service", "ConfigMap", "NetworkPolicy", "ServiceAccount"} <= kinds


def test_strict_validation_rejects_an_unknown_field() -> None:
    """The validator is strict: a misspelt probe field fails."""
    deployment = Rendered("single").server
    bad = {**deployment, "spec": {**deployment["spec"], "replica": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSIONS[0], strict=True)


def test_every_tute_variable_is_a_server_setting(rendered: Rendered) -> None:
    for workload in rendered.workloads():
        for container in workload["spec"]["template"]["spec"]["containers"]:
            names = {n for n in rendered.environment(container) if n.startswith("TUTE_")}
            assert names <= SETTING_NAMES, f"not a setting: {sorted(names - SETTING_NAMES)}"
    for cm in rendered.of_kind("ConfigMap"):
        names = {n for n in cm.get("data", {}) if n.startswith("TUTE_")}
        assert names <= SETTING_NAMES, f"{cm['metadata']['name']}: {names - SETTING_NAMES}"
    # ... and every value is one the server accepts (load_settings raises SystemExit if not).
    assert isinstance(rendered.settings, Settings)


def test_container_ports_are_the_servers(rendered: Rendered) -> None:
    settings = rendered.settings
    ports = port_names(rendered.container)
    assert ports["grpc"] == settings.port
    assert ports["metrics"] == settings.metrics_port
    # Every port setting of the server is declared (grpc for `port`, else its own name).
    for f in dataclasses.fields(Settings):
        if f.name == "port" or f.name.endswith("_port"):
            value = getattr(settings, f.name)
            name = "grpc" if f.name == "port" else f.name.removesuffix("_port")
            if value:
                assert ports.get(name) == value, f"{f.name}={value} has no container port {name}"


def test_services_reach_named_container_ports(rendered: Rendered) -> None:
    ports = port_names(rendered.container)
    labels = rendered.server["spec"]["template"]["metadata"]["labels"]
    services = [s for s in rendered.of_kind("Service") if s["metadata"]["name"].startswith("tute")]
    assert {s["metadata"]["name"] for s in services} == {"tute", "tute-headless"}
    for svc in services:
        assert matches(svc["spec"]["selector"], labels)
        for p in svc["spec"]["ports"]:
            assert p["targetPort"] in ports, p
            assert p["port"] == ports[p["targetPort"]]
    served = {p["targetPort"] for p in rendered.get("Service", "tute")["spec"]["ports"]}
    assert served == set(ports)  # every port the server listens on
    assert rendered.get("Service", "tute-headless")["spec"]["clusterIP"] == "None"
    grpc_port = next(
        p for p in rendered.get("Service", "tute")["spec"]["ports"] if p["name"] == "grpc"
    )
    assert grpc_port["appProtocol"] == "kubernetes.io/h2c"


def test_probes_are_native_grpc_on_the_right_health_names(rendered: Rendered) -> None:
    c, port = rendered.container, rendered.settings.port
    for probe in ("startupProbe", "livenessProbe"):
        assert c[probe]["grpc"] == {"port": port, "service": LIVENESS_SERVICE}, probe
    readiness = c["readinessProbe"]["grpc"]
    assert readiness["port"] == port
    assert readiness.get("service", "") in ("", SERVICE_NAME)
    # A startup budget of at least 30 s, liveness slower to give up than readiness.
    start = c["startupProbe"]
    assert start["periodSeconds"] * start["failureThreshold"] >= 30
    live, ready = c["livenessProbe"], c["readinessProbe"]
    assert (
        live["periodSeconds"] * live["failureThreshold"]
        > ready["periodSeconds"] * ready["failureThreshold"]
    )


def test_pods_run_locked_down(rendered: Rendered) -> None:
    workloads = list(rendered.workloads())
    assert workloads
    for workload in workloads:
        pod = workload["spec"]["template"]["spec"]
        ctx = pod["securityContext"]
        assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] > 0 and ctx["runAsGroup"] > 0
        assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["automountServiceAccountToken"] is False
        # No Service links: a Service named "tute" would inject TUTE_PORT=tcp://...
        assert pod["enableServiceLinks"] is False
        for c in pod["containers"]:
            sec = c["securityContext"]
            assert sec["allowPrivilegeEscalation"] is False
            assert sec["readOnlyRootFilesystem"] is True
            assert sec["runAsNonRoot"] is True
            assert sec.get("privileged", False) is False
            assert sec["capabilities"]["drop"] == ["ALL"]
            assert "add" not in sec["capabilities"]


def test_resources_are_set_and_fit_the_measured_figures(rendered: Rendered) -> None:
    for workload in rendered.workloads():
        for c in workload["spec"]["template"]["spec"]["containers"]:
            res = c["resources"]
            for key in ("cpu", "memory"):
                assert key in res["requests"] and key in res["limits"], (c["name"], key)
            assert cores(res["requests"]["cpu"]) <= cores(res["limits"]["cpu"])
            assert mebibytes(res["requests"]["memory"]) <= mebibytes(res["limits"]["memory"])
    settings = rendered.settings
    need = IDLE_MIB + settings.max_streams * STREAM_KIB / 1024
    if settings.store == "memory":  # the tables live in the pod too
        need += settings.max_tables * FINISHED_TABLE_KIB / 1024
    limit = mebibytes(rendered.container["resources"]["limits"]["memory"])
    assert need <= limit, f"{rendered.overlay}: {need:.0f} MiB at the limits > {limit:.0f} MiB"
    # One asyncio process: more than a core buys nothing.
    assert cores(rendered.container["resources"]["limits"]["cpu"]) <= 1


def test_termination_outlasts_the_pause_and_the_servers_grace(rendered: Rendered) -> None:
    pause = rendered.container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pause >= 1
    assert rendered.pod["terminationGracePeriodSeconds"] > pause + rendered.settings.grace_s


def test_connections_have_a_maximum_age(rendered: Rendered) -> None:
    settings = rendered.settings
    assert settings.max_connection_age_s > 0
    # An age much longer than the grace that ends it, or connections churn.
    assert settings.max_connection_age_s >= 10 * settings.grace_s


def test_network_policy(rendered: Rendered) -> None:
    pol = rendered.get("NetworkPolicy", "tute")
    labels = rendered.server["spec"]["template"]["metadata"]["labels"]
    ports = port_names(rendered.container)
    assert matches(pol["spec"]["podSelector"]["matchLabels"], labels)
    assert sorted(pol["spec"]["policyTypes"]) == ["Egress", "Ingress"]
    ingress = pol["spec"]["ingress"]
    for rule in ingress:
        for p in rule["ports"]:
            assert p["port"] in ports, p
    open_ports = {p["port"] for rule in ingress if "from" not in rule for p in rule["ports"]}
    assert open_ports == set(ports) - {"metrics"}  # clients from anywhere, the metrics port not
    metrics_rules = [r for r in ingress if any(p["port"] == "metrics" for p in r["ports"])]
    assert len(metrics_rules) == 1
    assert metrics_rules[0]["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]
    egress_ports = {p["port"] for rule in pol["spec"]["egress"] for p in rule["ports"]}
    assert 53 in egress_ports
    if rendered.settings.store.startswith("redis"):
        redis = rendered.get("StatefulSet", "redis")["spec"]["template"]["metadata"]["labels"]
        to_redis = [
            r
            for r in pol["spec"]["egress"]
            if any(
                matches(t["podSelector"]["matchLabels"], redis)
                for t in r["to"]
                if "podSelector" in t and "namespaceSelector" not in t
            )
        ]
        assert [p["port"] for r in to_redis for p in r["ports"]] == [6379]
    else:
        assert egress_ports == {53}


def test_servicemonitor(rendered: Rendered) -> None:
    mon = rendered.one("ServiceMonitor")
    assert mon is not None
    assert mon["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(mon) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(mon["spec"]) == {"selector", "endpoints"}
    selected = [
        s
        for s in rendered.of_kind("Service")
        if matches(mon["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])
    ]
    assert [s["metadata"]["name"] for s in selected] == ["tute"]  # not the headless one too
    (endpoint,) = mon["spec"]["endpoints"]
    assert set(endpoint) <= {"port", "path", "scheme", "interval", "scrapeTimeout"}
    svc_port = next(p for p in selected[0]["spec"]["ports"] if p["name"] == endpoint["port"])
    assert port_names(rendered.container)[svc_port["targetPort"]] == rendered.settings.metrics_port
    assert endpoint["path"] == "/metrics" and endpoint["scheme"] == "http"
    seconds = {k: int(endpoint[k].removesuffix("s")) for k in ("interval", "scrapeTimeout")}
    assert 0 < seconds["scrapeTimeout"] <= seconds["interval"]


def test_image_is_the_projects_version(rendered: Rendered) -> None:
    version = pyproject()["project"]["version"]
    assert rendered.container["image"] == f"tute:{version}"
    assert rendered.container["imagePullPolicy"] == "IfNotPresent"
    assert "command" not in rendered.container  # the image's entry point, tute-server


def test_single_is_one_pod_on_the_memory_store() -> None:
    r = Rendered("single")
    assert r.settings.store == "memory"
    assert r.server["spec"]["replicas"] == 1
    assert r.server["spec"]["strategy"] == {"type": "Recreate"}  # never two pods at once
    assert r.of_kind("HorizontalPodAutoscaler") == []
    assert r.of_kind("PodDisruptionBudget") == []
    assert r.of_kind("StatefulSet") == []


def test_scaled_replicas_share_redis_with_aof() -> None:
    r = Rendered("scaled")
    url = r.settings.store
    host_port = re.fullmatch(r"redis://([\w.-]+):(\d+)/\d+", url)
    assert host_port, url
    svc = r.get("Service", host_port.group(1))
    redis = r.get("StatefulSet", "redis")
    assert matches(svc["spec"]["selector"], redis["spec"]["template"]["metadata"]["labels"])
    assert [p["port"] for p in svc["spec"]["ports"]] == [int(host_port.group(2))]
    # The URL comes from a Secret, not a ConfigMap.
    (var,) = [v for v in r.container["env"] if v["name"] == "TUTE_STORE"]
    assert "secretKeyRef" in var["valueFrom"]
    (container,) = redis["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    option = {args[i]: args[i + 1] for i in range(0, len(args), 2)}
    assert option["--appendonly"] == "yes" and option["--appendfsync"] == "everysec"
    assert option["--maxmemory-policy"] == "noeviction"
    (claim,) = redis["spec"]["volumeClaimTemplates"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == claim["metadata"]["name"])
    assert mount["mountPath"] == option["--dir"]
    assert mebibytes(option["--maxmemory"].replace("mb", "M")) < mebibytes(
        container["resources"]["limits"]["memory"]
    )
    pol = r.get("NetworkPolicy", "redis")
    assert [rule["from"] for rule in pol["spec"]["ingress"]] == [
        [{"podSelector": {"matchLabels": r.server["spec"]["selector"]["matchLabels"]}}]
    ]


def test_scaled_autoscaling_and_disruption_budget_agree() -> None:
    r = Rendered("scaled")
    deployment = r.server
    replicas = deployment["spec"]["replicas"]
    assert replicas >= 3
    hpa = r.get("HorizontalPodAutoscaler", "tute")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "tute",
    }
    assert hpa["spec"]["minReplicas"] == replicas < hpa["spec"]["maxReplicas"]
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"  # measured against the container's request
    assert "cpu" in r.container["resources"]["requests"]
    pdb = r.get("PodDisruptionBudget", "tute")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert matches(pdb["spec"]["selector"]["matchLabels"], labels)
    # A drain can always proceed, and never takes more than one replica of the minimum.
    assert "minAvailable" not in pdb["spec"]
    assert 1 <= pdb["spec"]["maxUnavailable"] < hpa["spec"]["minReplicas"]
    rolling = deployment["spec"]["strategy"]
    assert rolling["type"] == "RollingUpdate"
    assert rolling["rollingUpdate"]["maxUnavailable"] == 0


def test_scaled_spreads_over_zones_and_nodes() -> None:
    r = Rendered("scaled")
    labels = r.server["spec"]["template"]["metadata"]["labels"]
    spread = {c["topologyKey"]: c for c in r.pod["topologySpreadConstraints"]}
    assert set(spread) == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    for c in spread.values():
        assert c["maxSkew"] == 1
        assert matches(c["labelSelector"]["matchLabels"], labels)
    assert spread["kubernetes.io/hostname"]["whenUnsatisfiable"] == "DoNotSchedule"
