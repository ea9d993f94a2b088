"""What an operator sees of the servers, over real processes on loopback: a busy port is
refused with one line and exit 2, reflection (v1 and v1alpha) lets a client with no .proto call
health Check, the coordinator logs each request outcome and says which worker it waits for,
DescribeModel and client errors hide file paths and worker addresses, a model load prints one
summary line, tandem-bench answers --help. Under TANDEM_E2E_TLS=1 every server runs with
stacklib's certificates and key (mutual TLS to the workers) and the clients use them.

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "ops"))
import opslib  # noqa: E402  (the shared test runner)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import stacklib  # noqa: E402  (the run's TLS: stacklib.SECURITY, stacklib.channel)
from stacklib import BIN, DRAFT, STUBS, TARGET, grpc  # noqa: E402  (stubs, binaries, models)
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

GRPC_PROTO = "/usr/share/grpc-proto/grpc"
# Under TANDEM_E2E_TLS=1 every server here runs with the run's certificates and key.
WORKER_TLS = stacklib.SECURITY.worker_args() if stacklib.SECURITY else []
COORDINATOR_TLS = stacklib.SECURITY.coordinator_args() if stacklib.SECURITY else []


class Process:
    """A Tandem binary with stdout/stderr in files; killed (by its own pid) on exit."""

    def __init__(self, name, *args):
        self.dir = tempfile.mkdtemp(prefix="tandem-ops-e2e-")
        self.out_path = os.path.join(self.dir, "out")
        self.err_path = os.path.join(self.dir, "err")
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen([os.path.join(BIN, name), *args], stdout=out,
                                         stderr=err, stdin=subprocess.DEVNULL)

    def stdout(self):
        return open(self.out_path).read()

    def stderr(self):
        return open(self.err_path).read()

    def wait_for(self, pattern, where="stdout", timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, self.stdout() if where == "stdout" else self.stderr())
            if m:
                return m
            assert self.proc.poll() is None, f"exited {self.proc.returncode}: {self.stderr()}"
            time.sleep(0.05)
        raise AssertionError(f"no /{pattern}/ in {where} after {timeout} s: {self.stderr()}")

    def address(self):
        return self.wait_for(r"listening on (\S+)").group(1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def worker(*extra):
    return Process("tandem-worker", "--role", "target", "--model", TARGET, "--threads", "1",
                   *WORKER_TLS, *extra)


def run(name, *args, timeout=30):
    start = time.monotonic()
    r = subprocess.run([os.path.join(BIN, name), *args], capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    return r, time.monotonic() - start


def assert_one_line_exit_2(r, seconds, *needles):
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert seconds < 10, seconds


def test_a_second_worker_on_a_busy_port_exits_2_with_one_line():
    with worker() as first:
        taken = first.address()
        r, seconds = run("tandem-worker", "--role", "target", "--model", TARGET, "--listen", taken,
                         *WORKER_TLS)
        assert_one_line_exit_2(r, seconds, taken, "already in use")
        assert first.proc.poll() is None


def test_a_worker_given_a_bad_model_says_so_and_never_says_listening():
    """Issue 33: a model path that does not open fails before any port is bound."""
    not_a_model = os.path.join(tempfile.mkdtemp(prefix="tandem-ops-e2e-"), "notes.gguf")
    with open(not_a_model, "w") as f:
        f.write("this is not a GGUF file\n")
    missing = "/nonexistent/model.gguf"
    for path in (missing, not_a_model):
        r, seconds = run("tandem-worker", "--role", "target", "--model", path,
                         "--listen", "127.0.0.1:0", *WORKER_TLS)
        assert "listening" not in r.stdout, r.stdout
        assert_one_line_exit_2(r, seconds, path, "")


def test_a_worker_without_metrics_prints_no_metrics_port():
    p = Process("tandem-worker", "--role", "target", "--model", TARGET, "--threads", "1",
                "--listen", "127.0.0.1:0", *WORKER_TLS)
    try:
        line = p.wait_for(r"tandem-worker listening on \S+.*").group(0)
        assert "metrics on" not in line, line
    finally:
        p.proc.kill()
        p.proc.wait()


def test_a_coordinator_on_a_busy_port_exits_2_before_waiting_for_workers():
    with socket.socket() as held, socket.socket() as s:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        taken = f"127.0.0.1:{held.getsockname()[1]}"
        s.bind(("127.0.0.1", 0))
        nobody = f"127.0.0.1:{s.getsockname()[1]}"
        for flag in ("--listen", "--metrics-listen"):
            r, seconds = run("tandem-coordinator", "--target", nobody, flag, taken,
                             "--worker-wait-seconds", "60", *COORDINATOR_TLS)
            assert_one_line_exit_2(r, seconds, taken, "already in use")


def test_a_busy_metrics_port_exits_2_with_one_line():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        metrics = f"127.0.0.1:{held.getsockname()[1]}"
        r, seconds = run("tandem-worker", "--role", "target", "--model", TARGET,
                         "--metrics-listen", metrics, *WORKER_TLS)
        assert_one_line_exit_2(r, seconds, metrics, "/metrics")


def reflection_stubs(version):
    """Stubs for grpc.reflection.VERSION, from grpc-proto, under a file name of their own (the
    two versions share a file name and must not collide in Python's descriptor pool)."""
    out = tempfile.mkdtemp(prefix=f"tandem-refl-{version}-")
    name = f"reflection_{version}"
    shutil.copy(os.path.join(GRPC_PROTO, "reflection", version, "reflection.proto"),
                os.path.join(out, name + ".proto"))
    subprocess.run(["/usr/bin/protoc", f"-I{out}", f"--python_out={out}", f"--grpc_out={out}",
                    "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin", name + ".proto"],
                   check=True, timeout=60)
    sys.path.insert(0, out)
    return __import__(name + "_pb2"), __import__(name + "_pb2_grpc")


def reflect(channel, pb2, pb2_grpc, **request):
    stub = pb2_grpc.ServerReflectionStub(channel)
    responses = list(stub.ServerReflectionInfo(iter([pb2.ServerReflectionRequest(**request)]),
                                               timeout=10))
    assert len(responses) == 1, responses
    return responses[0]


def test_reflection_v1_and_v1alpha_describe_health_for_a_client_without_protos():
    with worker() as w:
        address = w.address()
        w.wait_for(r"loaded ", where="stderr")
        channel = stacklib.channel(address, key=False)
        for version in ("v1", "v1alpha"):
            pb2, pb2_grpc = reflection_stubs(version)
            listed = reflect(channel, pb2, pb2_grpc, list_services="")
            names = {s.name for s in listed.list_services_response.service}
            assert {"tandem.v1.Worker", "grpc.health.v1.Health",
                    "grpc.reflection.v1.ServerReflection",
                    "grpc.reflection.v1alpha.ServerReflection"} <= names, (version, names)
            found = reflect(channel, pb2, pb2_grpc, file_containing_symbol="grpc.health.v1.Health")
            assert found.WhichOneof("message_response") == "file_descriptor_response", found
            # Only what reflection gave: build the messages, call Check by its full name.
            pool = descriptor_pool.DescriptorPool()
            files = [descriptor_pb2.FileDescriptorProto.FromString(b)
                     for b in found.file_descriptor_response.file_descriptor_proto]
            for f in files:
                pool.Add(f)
            assert "grpc/health/v1/health.proto" in [f.name for f in files], version
            service = pool.FindServiceByName("grpc.health.v1.Health")
            check = service.FindMethodByName("Check")
            factory = message_factory.MessageFactory(pool)
            request_cls = factory.GetPrototype(check.input_type)
            response_cls = factory.GetPrototype(check.output_type)
            call = channel.unary_unary("/grpc.health.v1.Health/Check",
                                       request_serializer=request_cls.SerializeToString,
                                       response_deserializer=response_cls.FromString)
            deadline = time.monotonic() + 30
            while True:
                status = call(request_cls(), timeout=10).status
                if status == 1 or time.monotonic() > deadline:  # SERVING
                    break
                time.sleep(0.1)
            assert status == 1, (version, status)


def test_a_model_load_prints_one_summary_line_without_a_terminal():
    with worker() as w:
        w.wait_for(r"loaded ", where="stderr")
        lines = [line for line in w.stderr().splitlines() if "loaded " in line]
        assert len(lines) == 1, w.stderr()
        assert re.fullmatch(rf"loaded {re.escape(TARGET)}: llama, F32 x37 \+ 11 vectors, "
                            r"[0-9.]+ MiB in [0-9.]+ s", lines[0]), lines[0]
        assert "\r" not in w.stderr()


def test_the_coordinator_says_which_worker_it_waits_for_and_stops_when_asked():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nobody = f"127.0.0.1:{s.getsockname()[1]}"  # closed again: nothing listens there
    with Process("tandem-coordinator", "--target", nobody, "--worker-wait-seconds", "8",
                 *COORDINATOR_TLS) as c:
        line = c.wait_for(rf"waiting for worker {re.escape(nobody)}[^\n]*", where="stderr",
                          timeout=6)
        assert "more" in line.group(0), line.group(0)
        # A stop request during start-up ends it at once, with one line.
        start = time.monotonic()
        c.proc.send_signal(signal.SIGTERM)
        assert c.proc.wait(timeout=5) == 0
        assert time.monotonic() - start < 2, time.monotonic() - start
        assert "tandem-coordinator: SIGTERM during start-up: exiting" in c.stderr(), c.stderr()


def test_the_coordinator_logs_each_outcome_and_hides_paths_and_addresses():
    with worker() as w:
        target = w.address()
        with Process("tandem-coordinator", "--target", target, *COORDINATOR_TLS) as c:
            if stacklib.SECURITY:
                stacklib.assert_plaintext_refused(c.address())
            stub = STUBS.generator_pb2_grpc.GeneratorStub(stacklib.channel(c.address()))
            described = stub.DescribeModel(STUBS.generator_pb2.DescribeModelRequest(),
                                           timeout=10)
            assert described.target.path == "" and described.target.name, described.target
            r = STUBS.generator_pb2.GenerateRequest(text="Once upon a time", max_tokens=8,
                                                    ignore_eos=True)
            r.sampling.temperature = 0
            tokens = sum(len(m.delta.token_ids) for m in stub.Generate(r, timeout=60))
            assert tokens == 8, tokens
            line = c.wait_for(r"request \d+ session=oneoff-\d+ outcome=ok tokens=8 "
                              r"finish=FINISH_REASON_LENGTH seconds=[0-9.]+", where="stderr",
                              timeout=10)
            assert line
            # The target goes away: the client's error names no worker address; the log does.
            w.stop()
            try:
                list(stub.Generate(r, timeout=30))
                raise AssertionError("a request without a target succeeded")
            except grpc.RpcError as e:
                assert e.code() in (grpc.StatusCode.UNAVAILABLE,
                                    grpc.StatusCode.DEADLINE_EXCEEDED), e
                assert target not in (e.details() or ""), e.details()
            c.wait_for(rf"request \d+ session=- outcome=\w+ tokens=0 seconds=[0-9.]+: "
                       rf"[^\n]*{re.escape(target)}", where="stderr", timeout=40)


def test_tandem_bench_answers_help_and_refuses_unknown_flags():
    r, _ = run("tandem-bench", "--help")
    assert r.returncode == 0, r.stderr
    assert "usage: tandem-bench MODEL" in r.stdout and "--threads" in r.stdout, r.stdout
    r, _ = run("tandem-bench", "--no-such-flag", TARGET)
    assert r.returncode == 2 and "unknown flag --no-such-flag" in r.stderr, r.stderr


def test_tandem_chat_prints_one_load_line_per_model():
    r, _ = run("tandem-chat", TARGET, "--draft", DRAFT, "-p", "Once upon a time", "--temp", "0",
               "--max-tokens", "4", timeout=120)
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("loaded ")]
    assert [line.split(":")[0] for line in lines] == [f"loaded {TARGET}", f"loaded {DRAFT}"], \
        r.stderr


def test_kv_help_states_the_i8_contract():
    for name in ("tandem-worker", "tandem-bench"):
        r, _ = run(name, "--help")
        assert r.returncode == 0, r.stderr
        assert "close to f32's, not equal" in r.stdout, (name, r.stdout)


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
