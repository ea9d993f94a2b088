"""deploy/ is consistent: the Kubernetes base (deploy/k8s/base, as `kubectl kustomize` renders
it) has the required shape
(separate target, draft and coordinator Deployments; headless worker Services; containers with
images, ports, resources and grpc.health.v1 probes; scrape annotations on the metrics port;
ConfigMap variables defined; flags the binaries know), the systemd units pass
`systemd-analyze verify` and use known flags, and the Dockerfile builds the image the
manifests name."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import opslib
from k8s_render import render
from opslib import repo_path, require_file

K8S = repo_path("deploy", "k8s")
SYSTEMD = repo_path("deploy", "systemd")
BINARIES = {"tandem-worker", "tandem-coordinator"}


def yaml_docs(path):
    import yaml
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def manifests(kustomization="base"):
    """(KIND/NAME, object) of every object the kustomization renders."""
    return [(f"{o['kind']}/{o['metadata']['name']}", o) for o in render(kustomization)]


def by_kind(kind, kustomization="base"):
    return [(f, o) for f, o in manifests(kustomization) if o["kind"] == kind]


def known_flags(binary):
    r = subprocess.run([opslib.binary(binary), "--help"], capture_output=True, text=True,
                       timeout=30)
    text = r.stdout + r.stderr
    flags = set(re.findall(r"^\s+(--[a-z][a-z0-9-]*)\s", text, re.M))
    assert len(flags) >= 5, f"could not read {binary}'s flags from --help: {text}"
    return flags


def flag_names(args):
    return {re.match(r"(--[a-z][a-z0-9-]*)", a).group(1) for a in args if a.startswith("--")}


def test_every_yaml_file_parses():
    files = glob.glob(repo_path("deploy", "**", "*.yaml"), recursive=True) + \
        glob.glob(repo_path("deploy", "**", "*.yml"), recursive=True) + \
        glob.glob(repo_path("monitoring", "**", "*.yml"), recursive=True)
    assert len(files) >= 8, files
    for path in files:
        docs = yaml_docs(path)
        assert docs, f"{path} is empty"


def test_objects_have_api_version_kind_name_and_namespace():
    for f, o in manifests():
        assert o.get("apiVersion") and o.get("kind"), f"{f}: no apiVersion/kind"
        meta = o.get("metadata") or {}
        assert meta.get("name"), f"{f}: {o['kind']} without a name"
        if o["kind"] != "Namespace":
            assert meta.get("namespace") == "tandem", f"{f}: {o['kind']} not in namespace tandem"


def test_separate_deployments_for_target_draft_and_coordinator():
    components = {}
    for f, d in by_kind("Deployment"):
        assert d["apiVersion"] == "apps/v1", f
        labels = d["spec"]["template"]["metadata"]["labels"]
        selector = d["spec"]["selector"]["matchLabels"]
        assert selector.items() <= labels.items(), f"{f}: selector does not match the pods"
        components[labels["app.kubernetes.io/component"]] = d
    assert set(components) == {"target", "draft", "coordinator"}, components.keys()


def test_containers_have_image_ports_resources_and_grpc_probes():
    for f, d in by_kind("Deployment"):
        pod = d["spec"]["template"]
        containers = pod["spec"]["containers"]
        assert containers, f"{f}: no containers"
        for c in containers:
            where = f"{f} container {c.get('name')}"
            assert c.get("image") and ":" in c["image"], f"{where}: image with a tag needed"
            ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
            assert {"grpc", "metrics"} <= set(ports), f"{where}: ports {ports}"
            res = c.get("resources", {})
            for part in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(res.get(part, {})), f"{where}: {part} {res}"
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                p = c.get(probe)
                assert p and "grpc" in p, f"{where}: {probe} must be a grpc: probe"
                assert p["grpc"]["port"] == ports["grpc"], f"{where}: {probe} port"
            ann = pod["metadata"].get("annotations", {})
            assert ann.get("prometheus.io/scrape") == "true", f"{where}: scrape annotation"
            assert int(ann.get("prometheus.io/port", 0)) == ports["metrics"], \
                f"{where}: prometheus.io/port is not the metrics port"
            args = c.get("args", [])
            listen = [a for a in args if a.startswith("--listen=")]
            metrics = [a for a in args if a.startswith("--metrics-listen=")]
            assert listen and listen[0].endswith(f":{ports['grpc']}"), f"{where}: --listen"
            assert metrics and metrics[0].endswith(f":{ports['metrics']}"), \
                f"{where}: --metrics-listen"


def test_args_use_known_flags_and_defined_config_variables():
    config = {}
    for _, cm in by_kind("ConfigMap"):
        config[cm["metadata"]["name"]] = cm.get("data", {})
    flags = {b: known_flags(b) for b in BINARIES}
    for f, d in by_kind("Deployment"):
        component = d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
        for c in d["spec"]["template"]["spec"]["containers"]:
            binary = os.path.basename(c["command"][0])
            assert binary in BINARIES, f"{f}: unknown command {c['command']}"
            unknown = flag_names(c["args"]) - flags[binary]
            assert not unknown, f"{f}: {binary} has no flags {unknown}"
            if binary == "tandem-worker":
                assert f"--role={component}" in c["args"], f"{f}: --role must be {component}"
            env = set()
            for ref in c.get("envFrom", []):
                name = ref["configMapRef"]["name"]
                assert name in config, f"{f}: ConfigMap {name} is not defined"
                env |= set(config[name])
            env |= {e["name"] for e in c.get("env", [])}
            used = set(re.findall(r"\$\(([A-Z0-9_]+)\)", " ".join(c["args"])))
            assert used <= env, f"{f}: undefined variables {used - env}"


def test_services_headless_for_workers_and_matching_pods():
    deployments = [d["spec"]["template"] for _, d in by_kind("Deployment")]
    seen = {}
    for f, s in by_kind("Service"):
        selector = s["spec"]["selector"]
        pods = [p for p in deployments if selector.items() <= p["metadata"]["labels"].items()]
        assert len(pods) == 1, f"{f}: Service {s['metadata']['name']} selects {len(pods)} pods"
        component = pods[0]["metadata"]["labels"]["app.kubernetes.io/component"]
        port_names = {p["name"] for c in pods[0]["spec"]["containers"] for p in c["ports"]}
        for port in s["spec"]["ports"]:
            assert port["targetPort"] in port_names, f"{f}: targetPort {port['targetPort']}"
        headless = s["spec"].get("clusterIP") == "None"
        assert headless == (component != "coordinator"), \
            f"{f}: {component} Service headless={headless}"
        seen[component] = s
    assert set(seen) == {"target", "draft", "coordinator"}, seen.keys()


def test_volumes_refer_to_defined_claims():
    claims = {o["metadata"]["name"] for _, o in by_kind("PersistentVolumeClaim")}
    for f, d in by_kind("Deployment"):
        for v in d["spec"]["template"]["spec"].get("volumes", []):
            if "persistentVolumeClaim" in v:
                assert v["persistentVolumeClaim"]["claimName"] in claims, f"{f}: {v}"


def test_kustomizations_use_every_manifest_beside_them():
    kustomizations = glob.glob(os.path.join(K8S, "**", "kustomization.yaml"), recursive=True)
    assert len(kustomizations) >= 3, kustomizations
    for path in kustomizations:
        (k,) = yaml_docs(path)
        folder = os.path.dirname(path)
        used = {r for r in k.get("resources", []) if r.endswith(".yaml")}
        used |= {p["path"] for p in k.get("patches", []) if "path" in p}
        files = {os.path.basename(p) for p in glob.glob(os.path.join(folder, "*.yaml"))}
        assert used == files - {"kustomization.yaml"}, (path, sorted(used), sorted(files))


def test_pod_monitor_relabels_the_component():
    (_, pm), = by_kind("PodMonitor", "overlays/production")
    endpoint = pm["spec"]["podMetricsEndpoints"][0]
    assert endpoint["port"] == "metrics", endpoint
    assert any(r.get("targetLabel") == "component" for r in endpoint["relabelings"]), endpoint


def unit_files():
    units = sorted(glob.glob(os.path.join(SYSTEMD, "*.service")) +
                   glob.glob(os.path.join(SYSTEMD, "*.target")))
    names = {os.path.basename(u) for u in units}
    assert {"tandem-worker@.service", "tandem-coordinator.service"} <= names, names
    return units


def exec_start(path):
    text = open(path).read().replace("\\\n", " ")
    (line,) = [l for l in text.splitlines() if l.startswith("ExecStart=")]
    return line[len("ExecStart="):].split()


def test_systemd_units_verify():
    analyze = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"
    assert os.access(analyze, os.X_OK), "systemd-analyze missing (Debian package systemd)"
    with tempfile.TemporaryDirectory() as tmp:
        # Verify copies whose binaries exist here and whose environment files are optional.
        for unit in unit_files():
            text = open(unit).read()
            text = re.sub(r"/usr/local/bin/tandem-[a-z]+", "/bin/true", text)
            text = text.replace("EnvironmentFile=/", "EnvironmentFile=-/")
            name = os.path.basename(unit)
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
            if name == "tandem-worker@.service":
                for role in ("target", "draft"):
                    with open(os.path.join(tmp, f"tandem-worker@{role}.service"), "w") as f:
                        f.write(text)
        names = [n for n in os.listdir(tmp) if n != "tandem-worker@.service"]
        r = subprocess.run([analyze, "verify", "--man=no", *names], cwd=tmp,
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, SYSTEMD_LOG_LEVEL="info"))
        out = "\n".join(l for l in (r.stdout + r.stderr).splitlines()
                        if "/bin/true" not in l)
        assert r.returncode == 0 and not out.strip(), f"systemd-analyze verify: {out}"


def test_systemd_units_use_known_flags_and_defined_variables():
    flags = {b: known_flags(b) for b in BINARIES}
    env_files = {"tandem-worker@.service": ["worker-target.env", "worker-draft.env"],
                 "tandem-coordinator.service": ["coordinator.env"]}
    for unit, examples in env_files.items():
        path = require_file(os.path.join(SYSTEMD, unit), "systemd unit")
        argv = exec_start(path)
        binary = os.path.basename(argv[0])
        assert binary in BINARIES, argv[0]
        unknown = flag_names(argv[1:]) - flags[binary]
        assert not unknown, f"{unit}: {binary} has no flags {unknown}"
        text = open(path).read()
        assert "KillSignal=SIGTERM" in text and "TimeoutStopSec=" in text, unit
        used = set(re.findall(r"\$\{?([A-Z0-9_]+)\}?", " ".join(argv)))
        defaults = set(re.findall(r"^Environment=([A-Z0-9_]+)=", text, re.M))
        for example in examples:
            epath = require_file(os.path.join(SYSTEMD, example), "example environment file")
            keys = set(re.findall(r"^([A-Z0-9_]+)=", open(epath).read(), re.M))
            assert keys <= used, f"{example} sets variables {unit} ignores: {keys - used}"
            missing = used - defaults - keys
            assert not missing, f"{unit} with {example} leaves {missing} undefined"


def test_metrics_ports_of_the_examples_match_monitoring():
    import yaml
    with open(repo_path("monitoring", "prometheus.yml")) as f:
        config = yaml.safe_load(f)
    scraped = {s["labels"]["component"]: s["targets"][0]
               for job in config["scrape_configs"] for s in job["static_configs"]}
    for component, example in (("target", "worker-target.env"), ("draft", "worker-draft.env"),
                               ("coordinator", "coordinator.env")):
        text = open(os.path.join(SYSTEMD, example)).read()
        (addr,) = re.findall(r"^TANDEM_METRICS_LISTEN=(\S+)", text, re.M)
        assert addr == scraped[component], (component, addr, scraped[component])


def test_dockerfile_builds_the_image_the_manifests_use():
    dockerfile = open(require_file(repo_path("deploy", "docker", "Dockerfile"))).read()
    images = {c["image"] for _, d in by_kind("Deployment")
              for c in d["spec"]["template"]["spec"]["containers"]}
    assert len(images) == 1, images
    (image,) = images
    assert f"-t {image}" in dockerfile, f"Dockerfile does not say how to build {image}"
    for binary in BINARIES:
        assert f"/build/bin/{binary}" in dockerfile, binary
    for _, d in by_kind("Deployment"):
        for c in d["spec"]["template"]["spec"]["containers"]:
            assert c["command"][0].startswith("/usr/local/bin/"), c["command"]


def test_local_script_is_valid_bash():
    script = require_file(opslib.LOCAL_SCRIPT, "tandem-local.sh")
    assert os.access(script, os.X_OK), f"{script} is not executable"
    r = subprocess.run(["bash", "-n", script], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
