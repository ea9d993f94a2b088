"""deploy/k8s as `kubectl kustomize` renders it: the base and the production overlay, each a
list of objects. The TLS component's Secrets are generated from files that are never
committed, so rendering happens in a copy of deploy/k8s with placeholder files for them
(their content does not matter to the objects' shape)."""
import functools
import os
import shutil
import subprocess
import tempfile

from opslib import repo_path

K8S = repo_path("deploy", "k8s")
KUSTOMIZATIONS = ("base", "overlays/production")
SECRET_FILES = ("ca.crt", "worker.crt", "worker.key", "coordinator.crt", "coordinator.key",
                "api-keys")


def kubectl():
    path = shutil.which("kubectl")
    assert path, "kubectl not found (the cpp machine image has it; `kubectl kustomize` renders)"
    return path


@functools.lru_cache(maxsize=None)
def render_text(name):
    """The YAML `kubectl kustomize` prints for deploy/k8s/NAME."""
    with tempfile.TemporaryDirectory(prefix="tandem-k8s-") as tmp:
        copy = os.path.join(tmp, "k8s")
        shutil.copytree(K8S, copy)
        secrets = os.path.join(copy, "components", "tls", "secrets")
        for f in SECRET_FILES:
            with open(os.path.join(secrets, f), "w") as out:
                out.write(f"placeholder {f}\n")
        r = subprocess.run([kubectl(), "kustomize", os.path.join(copy, name)],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"kubectl kustomize deploy/k8s/{name} failed: {r.stderr}"
    return r.stdout


def render(name):
    """The objects of deploy/k8s/NAME, rendered."""
    import yaml
    return [d for d in yaml.safe_load_all(render_text(name)) if d is not None]


def of_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def named(objects, kind, name):
    found = [o for o in of_kind(objects, kind) if o["metadata"]["name"] == name]
    assert len(found) == 1, f"{len(found)} {kind} named {name}"
    return found[0]
