"""Helpers shared by the operations tests in tests/ops/: paths, a tiny test runner, metric
names parsed from wire/metrics.{h,cc}, and the local three-process stack started
with deploy/local/tandem-local.sh."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"
LOCAL_SCRIPT = os.path.join(REPO, "deploy", "local", "tandem-local.sh")
CLIENT = os.path.join(REPO, "client", "python", "tandem_client.py")


def repo_path(*parts):
    return os.path.join(REPO, *parts)


def require_file(path, what="file"):
    assert os.path.isfile(path), f"missing {what}: {path}"
    return path


def env_dir(name):
    value = os.environ.get(name)
    assert value, f"${name} is not set (CTest sets it; run through ctest)"
    assert os.path.isdir(value), f"${name}={value} is not a folder"
    return value


def models():
    """(target, draft) model paths from $TANDEM_SHARED; fails clearly when missing."""
    folder = os.path.join(env_dir("TANDEM_SHARED"), "models", "stories260K")
    target = require_file(os.path.join(folder, "stories260K.gguf"), "target model")
    draft = require_file(os.path.join(folder, "derived", "stories-draft-distilled.gguf"),
                         "draft model")
    return target, draft


def binary(name):
    path = os.path.join(env_dir("TANDEM_BIN"), name)
    assert os.access(path, os.X_OK), f"missing binary {path}; build it first"
    return path


def declared_metrics():
    """{name: kind} for every tandem_ metric in wire/metrics.{h,cc}, kind being
    "histogram" or "other". Names are the literals given to prometheus-cpp's builders."""
    header = open(require_file(repo_path("wire", "metrics.h"))).read()
    source = open(require_file(repo_path("wire", "metrics.cc"))).read()
    text = header + "\n" + source
    metrics = {}
    for m in re.finditer(r'"(tandem_[a-z0-9_]+)"', text):
        before = text[max(0, m.start() - 160):m.start()]
        # The nearest builder call before the literal says what it is.
        kinds = [(before.rfind(k), k) for k in ("Histogram", "Counter", "Gauge")]
        _, kind = max(kinds)
        metrics[m.group(1)] = "histogram" if kind == "Histogram" else "other"
    assert len(metrics) >= 20, f"parsed only {len(metrics)} metric names from metrics.cc"
    return metrics


PROMQL_WORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}


def promql_names(expr):
    """The series names (metrics and recording rules) a PromQL expression reads."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\b(group_left|group_right)\b", " ", e)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", e):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in PROMQL_WORDS:
            continue
        names.add(word)
    return names


def check_names(names, declared, recorded, where):
    """Every name is `up`, a declared metric (histograms also as _bucket/_sum/_count) or a
    recording rule."""
    allowed = {"up"} | set(recorded)
    for name, kind in declared.items():
        allowed.add(name)
        if kind == "histogram":
            allowed |= {name + "_bucket", name + "_sum", name + "_count"}
    unknown = sorted(n for n in names if n not in allowed)
    assert not unknown, f"{where} uses undeclared series: {unknown}"


def run_tests(namespace):
    tests = [v for k, v in sorted(namespace.items()) if k.startswith("test_") and callable(v)]
    passed = failed = 0
    for test in tests:
        start = time.monotonic()
        try:
            test()
            passed += 1
            print(f"PASS {test.__name__} ({time.monotonic() - start:.1f} s)", flush=True)
        except Exception as e:  # report every failure, then the count
            failed += 1
            print(f"FAIL {test.__name__}: {e}", flush=True)
            traceback.print_exc(limit=3)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


class LocalStack:
    """Target, draft and coordinator on loopback through deploy/local/tandem-local.sh.
    Always stopped on exit; a process the script could not stop is killed by its pid."""

    def __init__(self, with_draft=True, extra=()):
        self.with_draft = with_draft
        self.extra = list(extra)
        self.dir = tempfile.mkdtemp(prefix="tandem-ops-")
        self.env = dict(os.environ)
        self.env["TANDEM_BIN"] = env_dir("TANDEM_BIN")
        self.env.setdefault("XDG_CACHE_HOME", os.path.join(self.dir, "cache"))

    def __enter__(self):
        require_file(LOCAL_SCRIPT, "deploy/local/tandem-local.sh")
        binary("tandem-worker")
        binary("tandem-coordinator")
        target, draft = models()
        cmd = [LOCAL_SCRIPT, "start", "--target", target, "--dir", self.dir, "--threads", "1",
               "--timeout", "30", *self.extra]
        if self.with_draft:
            cmd += ["--draft", draft]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=self.env)
        except subprocess.TimeoutExpired:
            self.__exit__(None, None, None)
            raise AssertionError("tandem-local.sh start took more than 90 s")
        if r.returncode != 0:
            self.__exit__(None, None, None)
            raise AssertionError(f"tandem-local.sh start failed ({r.returncode}): "
                                 f"{r.stderr.strip()[-1500:]}")
        self.start_output = r
        self.coordinator = _read(os.path.join(self.dir, "coordinator.addr"))
        assert r.stdout.strip() == self.coordinator, (r.stdout, self.coordinator)
        return self

    def addr(self, name):
        return _read(os.path.join(self.dir, f"{name}.addr"))

    def metrics(self, name):
        return _read(os.path.join(self.dir, f"{name}.metrics"))

    def pid(self, name):
        value = _read(os.path.join(self.dir, f"{name}.pid"))
        return int(value) if value else None

    def stop(self, timeout=20):
        return subprocess.run([LOCAL_SCRIPT, "stop", "--dir", self.dir, "--timeout",
                               str(timeout)], capture_output=True, text=True,
                              timeout=timeout * 2 + 30, env=self.env)

    def __exit__(self, *exc):
        pids = [p for p in (self.pid(n) for n in ("coordinator", "draft", "target")) if p]
        try:
            self.stop()
        except Exception as e:  # fall through to the kill below
            print(f"tandem-local.sh stop failed: {e}", file=sys.stderr)
        for pid in pids:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def run_client(server, *args, timeout=60, env=None):
    return subprocess.run([PYTHON, require_file(CLIENT, "Python client"), "--server", server,
                           *args], capture_output=True, text=True, timeout=timeout, env=env)
