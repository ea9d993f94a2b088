"""Finds or makes the Python gRPC stubs the Tandem clients need.

The Tandem stubs (`tandem.v1.*_pb2`) come from the build (`build/python`, on PYTHONPATH) when
present. When they are missing -- a bare checkout -- they are generated from `protos/` with the
system `protoc` and `grpc_python_plugin` into a cache folder keyed by a hash of the protos:
`$XDG_CACHE_HOME/tandem/stubs/<hash>` (default `~/.cache/...`), never into the repository.
The grpc.health.v1 stubs (from Debian's grpc-proto package) always go to that cache.

Usage:
    stubs = tandem_stubs.load()
    stubs.generator_pb2, stubs.generator_pb2_grpc, stubs.common_pb2,
    stubs.health_pb2, stubs.health_pb2_grpc
"""
import hashlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "protos"))
TANDEM_PROTOS = ["tandem/v1/common.proto", "tandem/v1/generator.proto",
                 "tandem/v1/worker.proto"]
# The health proto's own folder is the include root: its stubs must not land in a `grpc/`
# package, which would shadow grpcio itself.
HEALTH_DIR = os.environ.get("TANDEM_HEALTH_PROTO_DIR", "/usr/share/grpc-proto/grpc/health/v1")
PROTOC = os.environ.get("TANDEM_PROTOC", shutil.which("protoc") or "/usr/bin/protoc")
GRPC_PLUGIN = os.environ.get("TANDEM_GRPC_PYTHON_PLUGIN",
                             shutil.which("grpc_python_plugin") or "/usr/bin/grpc_python_plugin")


class StubError(Exception):
    """The stubs could not be found or generated; the message says why in one line."""


def cache_root():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tandem", "stubs")


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise StubError(f"cannot read {path}: {e.strerror}") from None


def _digest(include_tandem):
    h = hashlib.sha256()
    files = [os.path.join(HEALTH_DIR, "health.proto")]
    if include_tandem:
        files += [os.path.join(PROTO_ROOT, p) for p in TANDEM_PROTOS]
    for path in files:
        h.update(os.path.basename(path).encode() + b"\0" + _read(path) + b"\0")
    return h.hexdigest()[:16]


def _protoc(include_dir, protos, out_dir):
    for tool in (PROTOC, GRPC_PLUGIN):
        if not os.access(tool, os.X_OK):
            raise StubError(f"{tool} not found; install protobuf-compiler and "
                            "protobuf-compiler-grpc")
    cmd = [PROTOC, f"-I{include_dir}", f"--python_out={out_dir}", f"--grpc_out={out_dir}",
           f"--plugin=protoc-gen-grpc={GRPC_PLUGIN}", *protos]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        first = (r.stderr.strip().splitlines() or ["no output"])[0]
        raise StubError(f"protoc failed on {', '.join(protos)}: {first}")


def _generate(cache_dir, include_tandem):
    """Generates into a temporary sibling, then renames: concurrent clients never see half."""
    parent = os.path.dirname(cache_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".gen-", dir=parent)
    try:
        _protoc(HEALTH_DIR, ["health.proto"], tmp)
        if include_tandem:
            _protoc(PROTO_ROOT, TANDEM_PROTOS, tmp)
            for pkg in ("tandem", os.path.join("tandem", "v1")):
                open(os.path.join(tmp, pkg, "__init__.py"), "a").close()
        try:
            os.rename(tmp, cache_dir)
        except OSError:
            if not os.path.isdir(cache_dir):  # lost a race only if the winner's copy exists
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _tandem_importable():
    try:
        importlib.import_module("tandem.v1.generator_pb2")
        return True
    except ImportError:
        for name in [m for m in sys.modules if m == "tandem" or m.startswith("tandem.")]:
            del sys.modules[name]
        return False


def load():
    """Returns a namespace with the stub modules, generating them first when needed."""
    if not os.path.isfile(os.path.join(HEALTH_DIR, "health.proto")):
        raise StubError(f"{HEALTH_DIR}/health.proto not found; install grpc-proto")
    try:
        import grpc  # noqa: F401  (fail early with a clear message)
    except ImportError:
        raise StubError("python grpcio is missing; use /usr/bin/python3 with "
                        "python3-grpcio installed") from None
    have_tandem = _tandem_importable()
    cache_dir = os.path.join(cache_root(), _digest(not have_tandem))
    if not os.path.isfile(os.path.join(cache_dir, "health_pb2_grpc.py")):
        _generate(cache_dir, not have_tandem)
    if cache_dir not in sys.path:
        sys.path.insert(0, cache_dir)
    ns = types.SimpleNamespace(cache_dir=cache_dir, generated_tandem=not have_tandem)
    for name in ("common_pb2", "generator_pb2", "generator_pb2_grpc", "worker_pb2",
                 "worker_pb2_grpc"):
        setattr(ns, name, importlib.import_module("tandem.v1." + name))
    ns.health_pb2 = importlib.import_module("health_pb2")
    ns.health_pb2_grpc = importlib.import_module("health_pb2_grpc")
    return ns
