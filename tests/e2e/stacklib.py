"""Real Tandem processes on loopback for the e2e tests: any number of target workers, an
optional draft and a coordinator, each on a port the OS picks; workers can be frozen
(SIGSTOP), resumed, killed and restarted on the same address. Everything started is
resumed and killed on exit.

With TANDEM_E2E_TLS=1 (or Cluster(tls=True)) the stack runs with mutual TLS between the
coordinator and its workers, TLS on the coordinator's gRPC and HTTP listeners and an API key
(certificates made by tools/make-dev-certs.sh into a temporary folder): `channel()`,
`health()` and the Cluster's stub then speak TLS and send the key, and urllib speaks HTTPS
with the key, so the same tests run either way.

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest).
"""
import http.client as http_client
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import tandem_stubs  # noqa: E402

STUBS = tandem_stubs.load()
import grpc  # noqa: E402

BIN = os.environ["TANDEM_BIN"]
MODELS = os.path.join(os.environ["TANDEM_SHARED"], "models", "stories260K")
TARGET = os.path.join(MODELS, "stories260K.gguf")
DRAFT = os.path.join(MODELS, "derived", "stories-draft-distilled.gguf")
TLS = os.environ.get("TANDEM_E2E_TLS") == "1"  # the whole run over mutual TLS with a key


class Security:
    """Dev certificates and an API key in a temporary folder: `ca`, `server_cert`,
    `server_key`, `client_cert`, `client_key`, `keys_file` (paths) and `key`."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tandem-certs-")
        subprocess.run(["bash", os.path.join(ROOT, "tools", "make-dev-certs.sh"), self.dir],
                       check=True, capture_output=True, timeout=60)
        for name in ("ca", "server", "client"):
            setattr(self, f"{name}_cert" if name != "ca" else "ca", f"{self.dir}/{name}.crt")
        self.server_key, self.client_key = f"{self.dir}/server.key", f"{self.dir}/client.key"
        self.key = "e2e-" + secrets.token_hex(16)
        self.keys_file = os.path.join(self.dir, "api-keys")
        with open(self.keys_file, "w") as f:
            f.write(f"# made by stacklib\n{self.key}\n")
        self.key_file = os.path.join(self.dir, "client-key")  # a client's: the key alone
        with open(self.key_file, "w") as f:
            f.write(self.key + "\n")

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()

    def worker_args(self):
        return ["--tls-cert", self.server_cert, "--tls-key", self.server_key,
                "--tls-ca", self.ca, "--tls-client-name", "tandem-coordinator"]

    def coordinator_args(self):
        return ["--tls-cert", self.server_cert, "--tls-key", self.server_key, "--tls-ca",
                self.ca, "--worker-tls-cert", self.client_cert, "--worker-tls-key",
                self.client_key, "--api-keys-file", self.keys_file]

    def chat_args(self):
        """tandem-chat --server's flags: TLS trusting the CA, the key from a file."""
        return ["--tls-ca", self.ca, "--api-key-file", self.key_file]

    def client_kwargs(self):
        """tandem_client.Client's keyword arguments: the CA and the key."""
        return {"root_certificates": self.ca, "api_key": self.key}

    def credentials(self, client_cert=True, key=None):
        """TLS trusting the CA, with the client certificate and `key` as a bearer token."""
        tls = grpc.ssl_channel_credentials(
            root_certificates=self.read(self.ca),
            private_key=self.read(self.client_key) if client_cert else None,
            certificate_chain=self.read(self.client_cert) if client_cert else None)
        if key is None:
            return tls
        return grpc.composite_channel_credentials(tls, grpc.access_token_call_credentials(key))

    def install_https(self):
        """urllib: HTTPS trusting the CA, the key sent with every request."""
        import ssl
        context = ssl.create_default_context(cafile=self.ca)
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))
        opener.addheaders = [("Authorization", f"Bearer {self.key}")]
        urllib.request.install_opener(opener)
        return context


SECURITY = Security() if TLS else None
SCHEME = "https" if TLS else "http"  # of the coordinator's HTTP API
SSL_CONTEXT = SECURITY.install_https() if TLS else None


def http_connection(host, port, timeout):
    """An http.client connection to the coordinator's HTTP API (HTTPS in TLS mode)."""
    if SECURITY is None:
        return http_client.HTTPConnection(host, port, timeout=timeout)
    return http_client.HTTPSConnection(host, port, timeout=timeout, context=SSL_CONTEXT)


def auth_headers():
    """The Authorization header of the run's API key ({} without TLS)."""
    return {"Authorization": f"Bearer {SECURITY.key}"} if SECURITY else {}


RUN = "run"  # `security` of channel() and health(): the run's (SECURITY, None without TLS)


def channel(address, security=RUN, key=True):
    """A channel to a Tandem process: plaintext (`security` None), or TLS with `security`'s
    client certificate and, if `key`, its API key."""
    security = SECURITY if security is RUN else security
    if security is None:
        return grpc.insecure_channel(address)
    return grpc.secure_channel(address, security.credentials(key=security.key if key else None))


def health(address, timeout=1.0, security=RUN):
    """SERVING, NOT_SERVING, ... or UNREACHABLE (the gRPC code) for one health check."""
    with channel(address, security, key=False) as ch:
        stub = STUBS.health_pb2_grpc.HealthStub(ch)
        try:
            reply = stub.Check(STUBS.health_pb2.HealthCheckRequest(service=""), timeout=timeout)
        except grpc.RpcError as e:
            return f"UNREACHABLE ({e.code().name})"
    return STUBS.health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def wait_for(predicate, timeout, step=0.05):
    """Polls `predicate` until true or `timeout` seconds; returns its last value."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= end:
            return value
        time.sleep(step)


class Process:
    """One tandem binary; `address` is parsed from its "listening on" line (a process that
    prints none within 60 s is killed and the constructor raises)."""

    def __init__(self, name, argv, folder):
        self.name = name
        self.log = open(os.path.join(folder, name + ".log"), "ab")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        try:
            self.address = self._read_address(60)
        except BaseException:
            self.signal(signal.SIGKILL)
            self.proc.wait(10)
            self.proc.stdout.close()
            self.log.close()
            raise

    def _read_address(self, timeout):
        end = time.monotonic() + timeout
        line = b""
        while time.monotonic() < end and b"\n" not in line:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                line += chunk
        text = line.decode(errors="replace")
        assert " listening on " in text, f"{self.name} did not start: {text!r}"
        self.startup_line = text.split("\n")[0]
        after = text.split(" listening on ")[1]
        port = after.split("(metrics on ")[1].split(")")[0] if "(metrics on " in after else "0"
        self.metrics = f"127.0.0.1:{port}"
        return after.split()[0]

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def signal(self, sig):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self):
        """SIGTERM (a frozen process is resumed first), SIGKILL after 30 s; the exit code.
        (The coordinator may drain for --drain-seconds 10 after a 1 s notice; on a loaded
        2-core machine that plus its exit came past 15 s.)"""
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc.stdout.close()
        self.log.close()
        return self.proc.returncode


def assert_plaintext_refused(address, http=None):
    """A TLS coordinator at `address` (HTTP API at `http`) serves no plaintext client: gRPC
    and HTTP without TLS fail at the handshake, so a `_tls` test really runs over TLS."""
    with grpc.insecure_channel(address) as ch:
        try:
            STUBS.generator_pb2_grpc.GeneratorStub(ch).DescribeModel(
                STUBS.generator_pb2.DescribeModelRequest(), timeout=5)
            raise AssertionError(f"{address} served a plaintext gRPC client")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.UNAVAILABLE, (e.code(), e.details())
    if http:
        host, port = http.rsplit(":", 1)
        plain = http_client.HTTPConnection(host, int(port), timeout=5)
        try:
            plain.request("GET", "/v1/models", headers=auth_headers())
            status = plain.getresponse().status
            raise AssertionError(f"{http} answered plaintext HTTP with {status}")
        except (http_client.HTTPException, OSError):
            pass  # the TLS server closed the connection: no HTTP response
        finally:
            plain.close()


def http_address(process):
    """HOST:PORT of the coordinator's HTTP API from its start-up line, or None."""
    after = process.startup_line.split("(http on ")
    return after[1].split(")")[0] if len(after) > 1 else None


class Cluster:
    """`targets` target workers (of `target_model`), a draft (of `draft_model`; optional) and
    a coordinator given `coordinator_args`; each worker gets `worker_args`. Logs go to `dir`,
    one NAME.log per process (target0.., draft, coordinator)."""

    def __init__(self, targets=1, draft=True, coordinator_args=(), worker_args=(), tls=None,
                 target_model=TARGET, draft_model=DRAFT):
        self.security = (SECURITY or Security()) if (TLS if tls is None else tls) else None
        self.n_targets = targets
        self.with_draft = draft
        self.target_model, self.draft_model = target_model, draft_model
        self.coordinator_args = list(coordinator_args)
        self.worker_args = list(worker_args)
        self.dir = tempfile.mkdtemp(prefix="tandem-e2e-")
        self.processes = []
        self.targets = []
        self.draft = None
        self.coordinator = None

    def worker(self, role, name, listen="127.0.0.1:0", wait=True):
        model = self.target_model if role == "target" else self.draft_model
        p = Process(name, [os.path.join(BIN, "tandem-worker"), "--role", role, "--model", model,
                           "--listen", listen, "--metrics-listen", "127.0.0.1:0", "--threads", "1",
                           *(self.security.worker_args() if self.security else []),
                           *self.worker_args], self.dir)
        self.processes.append(p)
        if wait:
            assert wait_for(lambda: health(p.address, security=self.security) == "SERVING",
                            60), f"{name} not SERVING"
        return p

    def target_list(self):
        """The coordinator's --target: the targets' addresses."""
        return ",".join(t.address for t in self.targets)

    def start_coordinator(self):
        argv = [os.path.join(BIN, "tandem-coordinator"), "--listen", "127.0.0.1:0",
                "--target", self.target_list(),
                *(self.security.coordinator_args() if self.security else []),
                *self.coordinator_args]
        if self.draft:
            argv += ["--draft", self.draft.address]
        self.coordinator = Process("coordinator", argv, self.dir)
        self.processes.append(self.coordinator)
        assert wait_for(lambda: health(self.coordinator.address,
                                       security=self.security) == "SERVING", 60), \
            "coordinator not SERVING"
        if self.security:
            assert_plaintext_refused(self.coordinator.address, http_address(self.coordinator))
        self.channel = channel(self.coordinator.address, self.security)
        self.stub = STUBS.generator_pb2_grpc.GeneratorStub(self.channel)

    def __enter__(self):
        try:
            self.targets = [self.worker("target", f"target{i}") for i in range(self.n_targets)]
            if self.with_draft:
                self.draft = self.worker("draft", "draft")
            self.start_coordinator()
        except BaseException:
            self.__exit__()
            raise
        return self

    def chat_args(self):
        """tandem-chat's flags to reach this coordinator (--server, TLS and the key)."""
        return ["--server", self.coordinator.address,
                *(self.security.chat_args() if self.security else [])]

    def client_kwargs(self):
        """tandem_client.Client's keyword arguments for this coordinator (TLS and the key)."""
        return self.security.client_kwargs() if self.security else {}

    def restart_target(self, i):
        """Starts target i again on its old address (after it was killed); returns at once."""
        old = self.targets[i]
        self.targets[i] = self.worker("target", f"target{i}-restarted", listen=old.address,
                                      wait=False)
        return self.targets[i]

    def stop(self):
        """Stops every process (the coordinator first); {name: exit code}. The Cluster's own
        channel is closed first: an open client connection holds the coordinator's drain
        (5.7 s instead of 1.8 s when idle), which under load came near the 15 s kill."""
        if getattr(self, "channel", None) is not None:
            self.channel.close()
            self.channel = None
        codes = {p.name: p.stop() for p in reversed(self.processes)}
        self.processes = []
        return codes

    def __exit__(self, *exc):
        codes = self.stop()
        # The coordinator drains and exits cleanly whatever its workers went through.
        if not exc or exc[0] is None:
            coordinator = codes.get("coordinator")
            assert coordinator in (None, 0), f"the coordinator exited with {coordinator}; " \
                f"see {self.dir}/coordinator.log"
        return False


def request(prompt="Once upon a time", max_tokens=128, speculate=True, session=""):
    r = STUBS.generator_pb2.GenerateRequest(text=prompt, max_tokens=max_tokens, session_id=session,
                                            ignore_eos=True)
    r.sampling.temperature = 0
    r.speculation.enabled = speculate
    return r


def collect(responses, on_delta=None):
    """(ids, final) of a Generate stream; `on_delta(n)` after each delta with the ids so far."""
    ids, final = [], None
    for r in responses:
        if r.HasField("delta"):
            ids.extend(r.delta.token_ids)
            if on_delta:
                on_delta(len(ids))
        else:
            final = r.final
    return ids, final


def generate(stub, req, timeout=60, on_delta=None):
    """(ids, final, seconds) of one request."""
    start = time.monotonic()
    ids, final = collect(stub.Generate(req, timeout=timeout), on_delta)
    return ids, final, time.monotonic() - start


class Clients:
    """Runs `requests` concurrently, each in its own thread; `first_deltas` counts the
    clients that have received at least one delta. join() gives [(ids, error)]."""

    def __init__(self, stub, requests, timeout=90):
        self.results = [None] * len(requests)
        self.first_deltas = 0
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(i, stub, r, timeout))
                         for i, r in enumerate(requests)]
        for t in self._threads:
            t.start()

    def _run(self, i, stub, req, timeout):
        seen = []

        def on_delta(n):
            if not seen:
                seen.append(n)
                with self._lock:
                    self.first_deltas += 1
        try:
            ids, _ = collect(stub.Generate(req, timeout=timeout), on_delta)
            self.results[i] = (ids, None)
        except grpc.RpcError as e:
            self.results[i] = (None, f"{e.code().name}: {e.details()}")

    def join(self, timeout=120):
        end = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, end - time.monotonic()))
        return self.results


def metric(address, name):
    """Sum of a metric's samples at http://ADDRESS/metrics (0 when absent)."""
    import re
    import urllib.request
    text = urllib.request.urlopen(f"http://{address}/metrics", timeout=5).read().decode()
    return sum(float(m[1]) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))
