"""deploy/k8s/components/inference-gateway renders and routes to the right pods (issue 29):
`kubectl kustomize` renders overlays/inference-gateway (the base with the component); the
InferencePool selects the coordinator pods and no worker, on the coordinators' HTTP port; the
endpoint picker names the pool, scrapes the coordinators' metrics port and reads Tandem's three
gateway gauges (declared in wire/metrics.cc, documented in docs/operations.md); its Service,
configuration and RBAC fit together; the HTTPRoute sends to the pool; and the component adds
objects without changing the base's.

Every standard object passes its Kubernetes schema (tests/ops/k8s_validate.mjs, as
k8s_schema_test.py does for the base); InferencePool and HTTPRoute are CRDs the validator has
no schema for, so they are listed here by name and their fields checked against the
inference.networking.k8s.io/v1 and gateway.networking.k8s.io/v1 APIs instead. This overlay is
not in k8s_render.KUSTOMIZATIONS for that reason.

Needs kubectl and the npm packages tools/setup.sh installs; prints "N passed, N failed"."""
import functools
import re
import sys

import yaml

import opslib
from k8s_render import named, of_kind, render
from k8s_schema_test import validate

OVERLAY = "overlays/inference-gateway"
CRD_KINDS = {("inference.networking.k8s.io/v1", "InferencePool"),
             ("gateway.networking.k8s.io/v1", "HTTPRoute")}
GAUGE_FLAGS = {  # the picker's flag -> Tandem's gauge (vLLM's name in the comment)
    "--total-queued-requests-metric": "tandem_queued_requests",  # vllm:num_requests_waiting
    "--total-running-requests-metric": "tandem_running_requests",  # vllm:num_requests_running
    "--kv-cache-usage-percentage-metric": "tandem_kv_cache_usage_ratio",  # kv_cache_usage_perc
}


@functools.lru_cache(maxsize=None)
def objects():
    return tuple(render(OVERLAY))


def pool():
    return named(objects(), "InferencePool", "tandem")


def picker():
    """(Deployment, its container, {flag: value}) of the endpoint picker."""
    d = named(objects(), "Deployment", "tandem-endpoint-picker")
    (c,) = d["spec"]["template"]["spec"]["containers"]
    flags = {}
    for a in c["args"]:
        m = re.fullmatch(r"(--[a-z][a-z0-9-]*)=(.*)", a)
        assert m, f"picker argument {a!r} is not --flag=value"
        assert m.group(1) not in flags, f"{m.group(1)} given twice"
        flags[m.group(1)] = m.group(2)
    return d, c, flags


def deployments_selected(objs, match_labels):
    return sorted(d["metadata"]["name"] for d in of_kind(objs, "Deployment")
                  if match_labels.items() <= d["spec"]["template"]["metadata"]["labels"].items())


def coordinator_ports():
    """{port name: containerPort} of the coordinator, and its args."""
    d = named(objects(), "Deployment", "tandem-coordinator")
    (c,) = d["spec"]["template"]["spec"]["containers"]
    return {p["name"]: p["containerPort"] for p in c["ports"]}, c["args"]


def test_the_overlay_is_the_base_plus_the_component():
    base = {(o["kind"], o["metadata"]["name"]): o for o in render("base")}
    overlay = {(o["kind"], o["metadata"]["name"]): o for o in objects()}
    for key, o in base.items():
        assert overlay.get(key) == o, f"the component changed {key}"
    added = sorted(set(overlay) - set(base))
    assert added == [("ClusterRole", "tandem-endpoint-picker-auth"),
                     ("ClusterRoleBinding", "tandem-endpoint-picker-auth"),
                     ("ConfigMap", "tandem-endpoint-picker"),
                     ("Deployment", "tandem-endpoint-picker"),
                     ("HTTPRoute", "tandem"),
                     ("InferencePool", "tandem"),
                     ("Role", "tandem-endpoint-picker"),
                     ("RoleBinding", "tandem-endpoint-picker"),
                     ("Service", "tandem-endpoint-picker"),
                     ("ServiceAccount", "tandem-endpoint-picker")], added


def test_standard_objects_pass_their_schemas_and_only_the_crds_have_none():
    objs = objects()
    code, verdicts = validate(objs)
    crds = {f"{o['kind']}/{o['metadata']['name']}" for o in objs
            if (o["apiVersion"], o["kind"]) in CRD_KINDS}
    assert crds == {"InferencePool/tandem", "HTTPRoute/tandem"}, crds
    bad = {k: v for k, v in verdicts.items() if v != "valid" and k not in crds}
    assert not bad, bad
    for name in crds:  # skipped explicitly, not by accident: the validator knows no schema
        assert verdicts[name].startswith("no schema"), (name, verdicts[name])
    assert code == 1 and len(verdicts) == len(objs), (code, len(verdicts), len(objs))


def test_the_pool_selects_the_coordinator_pods_and_no_worker():
    p = pool()
    assert p["metadata"]["namespace"] == "tandem", p["metadata"]
    selector = p["spec"]["selector"]["matchLabels"]
    assert deployments_selected(objects(), selector) == ["tandem-coordinator"], selector
    for worker in ("tandem-target", "tandem-draft"):
        labels = named(objects(), "Deployment", worker)["spec"]["template"]["metadata"]["labels"]
        assert not selector.items() <= labels.items(), (worker, selector)


def test_the_pool_targets_the_coordinators_http_port():
    ports, args = coordinator_ports()
    (target,) = pool()["spec"]["targetPorts"]  # v1: exactly one entry
    assert target == {"number": ports["http"]}, (target, ports)
    assert f"--http-listen=0.0.0.0:{ports['http']}" in args, args
    service = named(objects(), "Service", "tandem")
    assert any(p["port"] == ports["http"] and p["targetPort"] == "http"
               for p in service["spec"]["ports"]), service["spec"]["ports"]


def test_the_pool_has_the_v1_fields_and_refers_to_the_picker_service():
    spec = pool()["spec"]
    assert set(spec) == {"selector", "targetPorts", "endpointPickerRef"}, spec.keys()
    assert set(spec["selector"]) == {"matchLabels"}, spec["selector"]
    ref = spec["endpointPickerRef"]
    assert set(ref) <= {"group", "kind", "name", "portNumber", "failureMode"}, ref
    assert ref.get("kind", "Service") == "Service" and ref.get("group", "") == "", ref
    assert ref.get("failureMode", "FailClose") in ("FailOpen", "FailClose"), ref
    service = named(objects(), "Service", ref["name"])
    (grpc,) = [p for p in service["spec"]["ports"] if p["port"] == ref["portNumber"]]
    assert grpc["appProtocol"] == "http2", grpc  # ext-proc is gRPC
    d, c, flags = picker()
    assert service["spec"]["selector"].items() <= \
        d["spec"]["template"]["metadata"]["labels"].items(), service["spec"]["selector"]
    container_ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert container_ports[grpc["targetPort"]] == int(flags["--grpc-port"]), \
        (grpc, container_ports, flags["--grpc-port"])


def test_the_picker_reads_tandems_three_gauges_from_the_coordinators_metrics_port():
    _, _, flags = picker()
    declared = opslib.declared_metrics()
    source = open(opslib.repo_path("wire", "metrics.cc")).read()
    for flag, gauge in GAUGE_FLAGS.items():
        assert flags.get(flag) == gauge, (flag, flags.get(flag))
        assert gauge in declared, f"{gauge} is not declared in wire/metrics.cc"
        assert re.search(r'BuildGauge\(\)\s*\.Name\("' + gauge + r'"\)', source), \
            f"{gauge} is not a gauge in wire/metrics.cc"
    # No LoRA adapters and no vLLM cache-config metric: off, not reported missing.
    assert flags["--lora-info-metric"] == "" and flags["--cache-info-metric"] == "", flags
    ports, args = coordinator_ports()
    assert int(flags["--model-server-metrics-port"]) == ports["metrics"], flags
    assert f"--metrics-listen=0.0.0.0:{ports['metrics']}" in args, args
    assert flags["--model-server-metrics-path"] == "/metrics", flags
    assert flags["--model-server-metrics-scheme"] == "http", flags
    assert flags["--pool-name"] == pool()["metadata"]["name"], flags
    assert flags["--pool-group"] == "inference.networking.k8s.io", flags


def test_the_picker_knows_its_namespace_and_mounts_a_valid_configuration():
    d, c, flags = picker()
    env = {e["name"]: e for e in c["env"]}
    assert env["NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace", env
    assert c["image"].startswith("registry.k8s.io/gateway-api-inference-extension/epp:v"), \
        c["image"]
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    folder, _, file = flags["--config-file"].rpartition("/")
    volumes = {v["name"]: v for v in d["spec"]["template"]["spec"]["volumes"]}
    config_map = named(objects(), "ConfigMap", volumes[mounts[folder]]["configMap"]["name"])
    config = yaml.safe_load(config_map["data"][file])
    assert config["kind"] == "EndpointPickerConfig", config
    plugins = {p.get("name", p["type"]) for p in config["plugins"]}
    assert {"queue-scorer", "kv-cache-utilization-scorer"} <= plugins, plugins
    (profile,) = config["schedulingProfiles"]
    refs = {p["pluginRef"] for p in profile["plugins"]}
    assert refs <= plugins, refs - plugins
    assert {"queue-scorer", "kv-cache-utilization-scorer"} <= refs, refs
    for probe in ("readinessProbe", "livenessProbe"):
        assert c[probe]["grpc"]["port"] == int(flags["--grpc-health-port"]), c[probe]


def test_the_picker_may_watch_pods_and_the_pool_with_its_service_account():
    d, _, _ = picker()
    account = d["spec"]["template"]["spec"]["serviceAccountName"]
    assert named(objects(), "ServiceAccount", account)
    binding = named(objects(), "RoleBinding", "tandem-endpoint-picker")
    assert {"kind": "ServiceAccount", "name": account, "namespace": "tandem"} in \
        binding["subjects"], binding["subjects"]
    role = named(objects(), binding["roleRef"]["kind"], binding["roleRef"]["name"])
    granted = {(g, r) for rule in role["rules"] if {"get", "watch", "list"} <= set(rule["verbs"])
               for g in rule["apiGroups"] for r in rule["resources"]}
    assert {("", "pods"), ("inference.networking.k8s.io", "inferencepools")} <= granted, granted


def test_the_picker_is_not_scraped_as_a_tandem_process():
    """The production PodMonitor scrapes every part-of=tandem pod's port named "metrics"; the
    picker's metrics need a token, so its port has another name."""
    _, c, _ = picker()
    assert "metrics" not in {p["name"] for p in c["ports"]}, c["ports"]


def test_the_route_sends_the_api_to_the_pool():
    route = named(objects(), "HTTPRoute", "tandem")
    (rule,) = route["spec"]["rules"]
    assert rule["backendRefs"] == [{"group": "inference.networking.k8s.io",
                                    "kind": "InferencePool", "name": "tandem"}], rule
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/v1"}}], rule
    assert route["spec"]["parentRefs"][0]["kind"] == "Gateway", route["spec"]["parentRefs"]


def test_operations_documents_each_gauge_next_to_vllms():
    text = open(opslib.repo_path("docs", "operations.md")).read()
    section = text.split("## Signals for a gateway", 1)[1].split("\n## ", 1)[0]
    for gauge, vllm in zip(GAUGE_FLAGS.values(), ("vllm:num_requests_waiting",
                                                  "vllm:num_requests_running",
                                                  "vllm:kv_cache_usage_perc")):
        line = next((l for l in section.splitlines() if f"`{gauge}`" in l), "")
        assert f"`{vllm}`" in line, f"operations.md: {gauge} is not set next to {vllm}"
    assert "components/inference-gateway" in section, "operations.md: the component"


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
