"""deploy/k8s is valid Kubernetes: the base and the production overlay render with
`kubectl kustomize`, every object they render passes the OpenAPI schema of its kind
(Kubernetes 1.27, from the `kubernetes-models` npm package, tests/ops/k8s_validate.mjs), the
validator refuses broken objects, and the objects refer to each other correctly (policies and
budgets select the pods, the autoscaler and Ingress name what exists, mounted Secrets are
generated, workers take gRPC only from the coordinator).

Needs kubectl (in the machine image) and the npm packages tools/setup.sh installs; prints
"N passed, N failed"."""
import copy
import json
import os
import subprocess
import sys
import tempfile

import opslib
from k8s_render import KUSTOMIZATIONS, named, of_kind, render

VALIDATOR = opslib.repo_path("tests", "ops", "k8s_validate.mjs")
NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))


def validate(objects):
    """(exit code, {KIND/NAME: "valid" or the complaint}) of the validator over `objects`."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(objects, f)
        f.flush()
        r = subprocess.run(["node", VALIDATOR, f.name], capture_output=True, text=True,
                           timeout=120, env={**os.environ, "TANDEM_NPM_DIR": NPM_DIR})
    assert r.returncode in (0, 1), f"validator exited {r.returncode}: {r.stderr}"
    verdicts = {}
    for line in r.stdout.splitlines()[:-1]:
        word, rest = line.split(" ", 1)
        name, _, why = rest.partition(": ")
        verdicts[name] = "valid" if word == "valid" else why
    assert r.stdout.splitlines()[-1].endswith(" invalid"), r.stdout
    return r.returncode, verdicts


def test_every_rendered_object_passes_its_kubernetes_schema():
    for name in KUSTOMIZATIONS:
        objects = render(name)
        code, verdicts = validate(objects)
        bad = {k: v for k, v in verdicts.items() if v != "valid"}
        assert code == 0 and not bad, f"deploy/k8s/{name}: {bad}"
        assert len(verdicts) == len(objects), (name, len(verdicts), len(objects))


def test_the_validator_refuses_broken_objects():
    base = render("base")
    cases = [  # (kind, name, change, a word of the complaint)
        ("Deployment", "tandem-target", lambda o: o["spec"].update(replicas="two"), "integer"),
        ("Deployment", "tandem-draft",
         lambda o: o["spec"]["template"]["spec"]["containers"][0].pop("name"), "name"),
        ("Service", "tandem", lambda o: o["spec"]["ports"][0].update(port="grpc"), "integer"),
        ("NetworkPolicy", "tandem-workers-from-coordinator",
         lambda o: o["spec"].update(policyTypes="Ingress"), "array"),
        ("PodDisruptionBudget", "tandem-target",
         lambda o: o["spec"].update(selector=["app"]), "object"),
    ]
    broken = []
    for kind, name, change, _ in cases:
        o = copy.deepcopy(named(base, kind, name))
        change(o)
        broken.append(o)
    broken.append({"apiVersion": "tandem.example.com/v1", "kind": "Unknown",
                   "metadata": {"name": "x"}})
    code, verdicts = validate(broken)
    assert code == 1, verdicts
    for kind, name, _, word in cases:
        assert word in verdicts[f"{kind}/{name}"], (kind, name, verdicts[f"{kind}/{name}"])
    assert verdicts["Unknown/x"].startswith("no schema"), verdicts


def test_production_has_every_part_of_the_deployment():
    kinds = {}
    for o in render("overlays/production"):
        kinds[o["kind"]] = kinds.get(o["kind"], 0) + 1
    expected = {"Namespace": 1, "ConfigMap": 1, "PersistentVolumeClaim": 1, "Deployment": 3,
                "Service": 3, "Secret": 3, "NetworkPolicy": 2, "PodDisruptionBudget": 3,
                "HorizontalPodAutoscaler": 1, "Ingress": 2, "PodMonitor": 1}
    assert kinds == expected, kinds


def pods_of(objects, selector):
    return [d["metadata"]["name"] for d in of_kind(objects, "Deployment")
            if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()]


def test_workers_take_grpc_only_from_the_coordinator():
    objects = render("base")
    policy = named(objects, "NetworkPolicy", "tandem-workers-from-coordinator")
    assert sorted(pods_of(objects, policy["spec"]["podSelector"]["matchLabels"])) == \
        ["tandem-draft", "tandem-target"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    for rule in policy["spec"]["ingress"]:
        ports = {p["port"] for p in rule["ports"]}
        if "grpc" in ports:
            sources = [pods_of(objects, f["podSelector"]["matchLabels"]) for f in rule["from"]]
            assert sources == [["tandem-coordinator"]], sources
        else:
            assert ports == {"metrics"}, ports  # Prometheus may scrape; nothing else is open


def test_budgets_and_autoscaler_name_real_workloads():
    objects = render("overlays/production")
    for pdb in of_kind(objects, "PodDisruptionBudget"):
        assert len(pods_of(objects, pdb["spec"]["selector"]["matchLabels"])) == 1, pdb
        assert "maxUnavailable" in pdb["spec"], pdb  # a one-replica Deployment stays drainable
    (hpa,) = of_kind(objects, "HorizontalPodAutoscaler")
    ref = hpa["spec"]["scaleTargetRef"]
    assert ref["kind"] == "Deployment" and named(objects, "Deployment", ref["name"])
    metric = hpa["spec"]["metrics"][0]["pods"]["metric"]["name"]
    declared = opslib.declared_metrics()
    assert metric in declared, f"the autoscaler's metric {metric} is not a Tandem metric"


def test_the_base_policy_says_keys_guard_only_where_there_are_keys():
    """Issue 33: the base binds 0.0.0.0 with no API keys; its NetworkPolicy comment must not
    say keys guard the coordinator's ports there."""
    coordinator = named(render("base"), "Deployment", "tandem-coordinator")
    args = coordinator["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not any(a.startswith("--api-keys-file") for a in args), args
    comment = "\n".join(line for line in open(opslib.repo_path("deploy", "k8s", "base",
                                                         "network-policy.yaml"))
                        if line.startswith("#"))
    assert "keys guard them)" not in comment, comment
    assert "nothing else guards them" in comment, comment


def test_mounted_secrets_are_generated_and_ingress_backends_exist():
    objects = render("overlays/production")
    secrets = {s["metadata"]["name"] for s in of_kind(objects, "Secret")}
    for d in of_kind(objects, "Deployment"):
        spec = d["spec"]["template"]["spec"]
        for v in spec.get("volumes", []):
            if "secret" in v:
                assert v["secret"]["secretName"] in secrets, (d["metadata"]["name"], v)
        args = spec["containers"][0]["args"]
        assert {"--tls-cert", "--tls-key", "--tls-ca"} <= {a.split("=")[0] for a in args}, args
    coordinator = named(objects, "Deployment", "tandem-coordinator")
    assert any(a.startswith("--api-keys-file=")
               for a in coordinator["spec"]["template"]["spec"]["containers"][0]["args"])
    service = named(objects, "Service", "tandem")
    ports = {p["name"] for p in service["spec"]["ports"]}
    for ingress in of_kind(objects, "Ingress"):
        for rule in ingress["spec"]["rules"]:
            for p in rule["http"]["paths"]:
                backend = p["backend"]["service"]
                assert backend["name"] == "tandem" and backend["port"]["name"] in ports, backend


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
