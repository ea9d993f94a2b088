"""TLS, mutual TLS and API keys over the real stack on loopback (always on here, whatever
TANDEM_E2E_TLS says): certificates from tools/make-dev-certs.sh, workers that require a
client certificate of the CA, a coordinator serving gRPC and HTTPS with --api-keys-file.

Pins: a gRPC client without a key, or with a wrong one, is UNAUTHENTICATED on every Generator
method while health stays open; the official `openai` npm client with a bad key gets 401 in
OpenAI's error shape, a good key gets a completion, plain HTTPS without a key gets 401 too; SIGHUP rereads the keys file (and a
broken file keeps the keys in force); a client without a certificate (or of another CA, or
plaintext, or of the CA but not named as --tls-client-name) cannot open a Worker stream, while
the coordinator's certificate can; a worker's
--health-listen port answers plaintext health checks and nothing else; plaintext
clients are refused by the TLS coordinator; tandem-chat --server works with --tls-ca and
--api-key-file and is refused without a key; half-given TLS flags exit 2 at start.

Needs TANDEM_BIN, TANDEM_SHARED (set by CTest), openssl, Node and the `openai` package in
$TANDEM_NPM_DIR (tools/setup.sh); prints "N passed, N failed".
"""
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402
from stacklib import BIN, STUBS, Cluster, Security, grpc, wait_for  # noqa: E402

CLIENT = os.path.join(HERE, "openai_http_client.mjs")
NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))
MODEL = "llama"
MAX_BODY_BYTES = 65536
STACK = None  # the Cluster (tls=True), started once in main()
HTTPS = None  # https://HOST:PORT of its HTTP API


def generator(key):
    """A Generator stub over TLS sending `key` (None: no authorization at all)."""
    ch = grpc.secure_channel(STACK.coordinator.address, STACK.security.credentials(key=key))
    return STUBS.generator_pb2_grpc.GeneratorStub(ch)


def calls(stub):
    """Each Generator method once; the gRPC code of each (OK when it answered)."""
    g = STUBS.generator_pb2
    request = stacklib.request("Once upon a time", max_tokens=2)
    attempts = {
        "Generate": lambda: list(stub.Generate(request, timeout=30)),
        "Tokenize": lambda: stub.Tokenize(g.TokenizeRequest(text="Hi"), timeout=30),
        "DescribeModel": lambda: stub.DescribeModel(g.DescribeModelRequest(), timeout=30),
        "CloseSession": lambda: stub.CloseSession(g.CloseSessionRequest(session_id="x"),
                                                  timeout=30),
    }
    codes = {}
    for name, call in attempts.items():
        try:
            call()
            codes[name] = "OK"
        except grpc.RpcError as e:
            codes[name] = e.code().name
            if e.code() == grpc.StatusCode.UNAUTHENTICATED:
                assert "API key" in e.details() or "Bearer" in e.details(), e.details()
    return codes


def node(op, **args):
    args.update(op=op, base_url=HTTPS + "/v1")
    env = {**os.environ, "TANDEM_NPM_DIR": NPM_DIR, "NODE_EXTRA_CA_CERTS": STACK.security.ca}
    env.pop("TANDEM_API_KEY", None)
    out = subprocess.run(["node", CLIENT, json.dumps(args)], capture_output=True, timeout=120,
                         text=True, env=env)
    assert out.returncode == 0, f"node {op} exited {out.returncode}: {out.stderr[-2000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_grpc_without_a_valid_key_is_unauthenticated_on_every_method():
    everything = {"Generate", "Tokenize", "DescribeModel", "CloseSession"}
    for key in (None, "wrong-key", STACK.security.key + "x"):
        codes = calls(generator(key))
        assert codes == {m: "UNAUTHENTICATED" for m in everything}, (key, codes)
    # Refused before any work: the coordinator counted no request.
    assert stacklib.metric(STACK.coordinator.metrics, "tandem_requests_total") == 0
    codes = calls(generator(STACK.security.key))
    assert stacklib.metric(STACK.coordinator.metrics, "tandem_requests_total") >= 1
    assert codes == {"Generate": "OK", "Tokenize": "OK", "DescribeModel": "OK",
                     "CloseSession": "NOT_FOUND"}, codes  # past the key check, a real answer


def test_health_stays_open_without_a_key():
    assert stacklib.health(STACK.coordinator.address, security=STACK.security) == "SERVING"


def test_openai_client_with_a_bad_key_gets_401_and_a_good_key_a_reply():
    request = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}],
               "max_tokens": 4, "temperature": 0}
    # (The client always sends a key: no key at all is the urllib test's.)
    for key in ("wrong-key", STACK.security.key + "x"):
        for stream in (False, True):
            reply = node("generate", endpoint="chat", api_key=key,
                         request={**request, "stream": stream})
            e = reply.get("error") or {}
            assert (e.get("status"), e.get("name")) == (401, "AuthenticationError"), reply
            assert set(e["error"]) == {"message", "type", "param", "code"}, e
            assert e["error"]["type"] == "authentication_error", e
        models = node("models", api_key=key)
        assert models["error"]["status"] == 401, models
    reply = node("generate", endpoint="chat", api_key=STACK.security.key, request=request)
    assert reply["usage"]["completion_tokens"] == 4, reply


def test_https_health_needs_no_key_and_plain_http_is_refused():
    import ssl
    context = ssl.create_default_context(cafile=STACK.security.ca)
    plain = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))
    with plain.open(HTTPS + "/health", timeout=10) as r:
        assert r.status == 200
    try:
        plain.open(HTTPS + "/v1/models", timeout=10)
        raise AssertionError("/v1/models answered without a key")
    except urllib.error.HTTPError as e:
        assert e.code == 401 and e.headers.get("WWW-Authenticate") == "Bearer", e.code
        assert json.loads(e.read())["error"]["code"] == "invalid_api_key"
    # The key is checked before the body is read: a request announcing a body over the limit
    # and sending none is answered 401 at once (not 413, and without waiting for the body).
    host, port = HTTPS[len("https://"):].rsplit(":", 1)
    conn = stacklib.http_client.HTTPSConnection(host, int(port), timeout=10, context=context)
    conn.putrequest("POST", "/v1/completions")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(MAX_BODY_BYTES + 1))
    conn.endheaders()
    reply = conn.getresponse()
    assert reply.status == 401, (reply.status, reply.read())
    conn.close()
    try:
        urllib.request.build_opener().open(HTTPS.replace("https:", "http:") + "/health",
                                           timeout=10)
        raise AssertionError("the HTTPS port answered plain HTTP")
    except (urllib.error.URLError, ConnectionError, OSError):
        pass


def test_sighup_rereads_the_keys_file_and_a_broken_one_keeps_the_keys():
    security = STACK.security
    old, new = security.key, "rotated-" + security.key
    try:
        with open(security.keys_file, "w") as f:
            f.write(new + "\n")
        STACK.coordinator.signal(signal.SIGHUP)
        assert wait_for(lambda: calls(generator(new))["Tokenize"] == "OK", 10), "new key refused"
        assert calls(generator(old))["Tokenize"] == "UNAUTHENTICATED"
        with open(security.keys_file, "w") as f:
            f.write("# nothing\n")
        STACK.coordinator.signal(signal.SIGHUP)
        log = os.path.join(STACK.dir, "coordinator.log")
        assert wait_for(lambda: b"keeping the API keys in force" in open(log, "rb").read(), 10)
        assert calls(generator(new))["Tokenize"] == "OK"
    finally:
        with open(security.keys_file, "w") as f:
            f.write(old + "\n")
        STACK.coordinator.signal(signal.SIGHUP)
        assert wait_for(lambda: calls(generator(old))["Tokenize"] == "OK", 10)


def attach(address, credentials):
    """The gRPC code of opening a Worker stream (Attach + open) with `credentials`."""
    ch = grpc.secure_channel(address, credentials) if credentials else \
        grpc.insecure_channel(address)
    stub = STUBS.worker_pb2_grpc.WorkerStub(ch)
    opening = STUBS.worker_pb2.SessionRequest(request_id=0)
    opening.open.session_id = "intruder"
    opening.open.context_size = 64
    try:
        for _ in stub.Attach(iter([opening]), timeout=10):
            return "OK"
        return "OK"
    except grpc.RpcError as e:
        return e.code().name
    finally:
        ch.close()


def client_cert_named(security, name):
    """(key, cert) PEM bytes of a client certificate CN=`name` signed by `security`'s CA."""
    d = security.dir
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-out", f"{d}/{name}.key"], check=True,
                   capture_output=True, timeout=30)
    subprocess.run(["openssl", "req", "-new", "-key", f"{d}/{name}.key", "-subj", f"/CN={name}",
                    "-out", f"{d}/{name}.csr"], check=True, capture_output=True, timeout=30)
    with open(f"{d}/{name}.ext", "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    subprocess.run(["openssl", "x509", "-req", "-in", f"{d}/{name}.csr", "-CA", security.ca,
                    "-CAkey", f"{d}/ca.key", "-CAcreateserial", "-days", "1", "-extfile",
                    f"{d}/{name}.ext", "-out", f"{d}/{name}.crt"], check=True,
                   capture_output=True, timeout=30)
    return security.read(f"{d}/{name}.key"), security.read(f"{d}/{name}.crt")


def test_a_client_without_a_certificate_of_the_ca_cannot_open_a_worker_stream():
    target = STACK.targets[0].address
    security = STACK.security
    other = Security()  # another CA's client certificate
    ca = security.read(security.ca)
    # The CA's own, but not the coordinator's (--tls-client-name): handshake, then refused.
    key, cert = client_cert_named(security, "intruder")
    named = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                         certificate_chain=cert)
    assert attach(target, named) == "UNAUTHENTICATED"
    refused = {
        "no certificate": grpc.ssl_channel_credentials(root_certificates=ca),
        "another CA": grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=other.read(other.client_key),
            certificate_chain=other.read(other.client_cert)),
        "plaintext": None,
    }
    for name, credentials in refused.items():
        assert attach(target, credentials) == "UNAVAILABLE", name
    # The coordinator's certificate opens one: the refusals were the certificate's doing.
    assert attach(target, security.credentials()) == "OK"


def plaintext_health(address):
    """SERVING, ... or the gRPC code of a plaintext health check (a probe without TLS)."""
    with grpc.insecure_channel(address) as ch:
        try:
            reply = STUBS.health_pb2_grpc.HealthStub(ch).Check(
                STUBS.health_pb2.HealthCheckRequest(service=""), timeout=5)
        except grpc.RpcError as e:
            return e.code().name
    return STUBS.health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def test_a_plaintext_health_port_tells_probes_the_health_of_an_mtls_worker():
    # --health-listen: what a probe without a certificate (the kubelet's) can ask.
    line = STACK.targets[0].startup_line
    m = re.search(r"\(health on (\d+)\)", line)
    assert m, line
    health = f"127.0.0.1:{m.group(1)}"
    assert plaintext_health(health) == "SERVING"
    # The main port wants the certificate, health checks included.
    assert plaintext_health(STACK.targets[0].address) == "UNAVAILABLE"
    # Nothing but health on the plaintext port.
    with grpc.insecure_channel(health) as ch:
        try:
            STUBS.worker_pb2_grpc.WorkerStub(ch).Describe(STUBS.worker_pb2.DescribeRequest(),
                                                          timeout=10)
            raise AssertionError("the health port served the Worker service")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.UNIMPLEMENTED, e.code()


def test_a_plaintext_client_is_refused_by_the_tls_coordinator():
    ch = grpc.insecure_channel(STACK.coordinator.address)
    stub = STUBS.generator_pb2_grpc.GeneratorStub(ch)
    try:
        stub.DescribeModel(STUBS.generator_pb2.DescribeModelRequest(), timeout=5)
        raise AssertionError("a plaintext client was served")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.UNAVAILABLE, e.code()


def test_tandem_chat_over_tls_with_a_key_file():
    security = STACK.security
    key_file = os.path.join(security.dir, "chat-key")
    with open(key_file, "w") as f:
        f.write(security.key + "\n")
    base = [os.path.join(BIN, "tandem-chat"), "--server", STACK.coordinator.address,
            "--tls-ca", security.ca, "-p", "Once upon a time", "--format", "raw",
            "--max-tokens", "8", "--temp", "0", "--timeout", "30"]
    env = {k: v for k, v in os.environ.items() if k != "TANDEM_API_KEY"}
    r = subprocess.run(base + ["--api-key-file", key_file], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0 and r.stdout.strip(), (r.returncode, r.stderr)
    r = subprocess.run(base, capture_output=True, text=True, timeout=60,
                       env={**env, "TANDEM_API_KEY": security.key})
    assert r.returncode == 0 and r.stdout.strip(), (r.returncode, r.stderr)
    r = subprocess.run(base, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2 and "UNAUTHENTICATED" in r.stderr, (r.returncode, r.stderr)


def test_half_given_tls_flags_exit_2_naming_the_flag():
    security = STACK.security
    cases = [
        (["tandem-worker", "--role", "target", "--model", stacklib.TARGET, "--tls-cert",
          security.server_cert], "--tls-cert needs --tls-key"),
        (["tandem-worker", "--role", "target", "--model", stacklib.TARGET, "--tls-ca",
          security.ca], "--tls-ca needs --tls-cert"),
        (["tandem-worker", "--role", "target", "--model", stacklib.TARGET, "--tls-cert",
          security.server_key, "--tls-key", security.server_key], "holds no PEM CERTIFICATE"),
        (["tandem-coordinator", "--target", "127.0.0.1:1", "--worker-tls-cert",
          security.client_cert, "--worker-tls-key", security.client_key],
         "--worker-tls-cert needs --tls-ca"),
        (["tandem-coordinator", "--target", "127.0.0.1:1", "--api-keys-file",
          "/nonexistent/keys"], "/nonexistent/keys"),
    ]
    for argv, words in cases:
        r = subprocess.run([os.path.join(BIN, argv[0]), *argv[1:]], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 2 and words in r.stderr, (argv, r.returncode, r.stderr)


def test_make_dev_certs_names_the_given_hosts_and_refuses_bad_names():
    import tempfile
    script = os.path.join(stacklib.ROOT, "tools", "make-dev-certs.sh")
    folder = tempfile.mkdtemp(prefix="tandem-certs-")
    r = subprocess.run(["bash", script, folder, "tandem-target.tandem.svc"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = subprocess.run(["openssl", "x509", "-in", f"{folder}/server.crt", "-noout", "-text"],
                          capture_output=True, text=True, timeout=30, check=True).stdout
    for name in ("DNS:localhost", "IP Address:127.0.0.1", "DNS:tandem-target.tandem.svc"):
        assert name in text, (name, text)
    for cert in ("server.crt", "client.crt"):
        subprocess.run(["openssl", "verify", "-CAfile", f"{folder}/ca.crt", f"{folder}/{cert}"],
                       check=True, capture_output=True, timeout=30)
    assert oct(os.stat(f"{folder}/server.key").st_mode & 0o777) == "0o600"
    r = subprocess.run(["bash", script, folder, "bad name;rm"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "is not a DNS name" in r.stderr, (r.returncode, r.stderr)
    r = subprocess.run(["bash", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "tools/make-dev-certs.sh DIR" in r.stdout, r


def main():
    global STACK, HTTPS
    require = os.path.join(NPM_DIR, "node_modules", "openai", "package.json")
    assert os.path.isfile(require), f"no openai npm package in {NPM_DIR}; run tools/setup.sh"
    args = ["--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
            "--max-prompt-bytes", "4096", "--max-message-bytes", str(MAX_BODY_BYTES)]
    with Cluster(coordinator_args=args, tls=True,
                 worker_args=["--health-listen", "127.0.0.1:0"]) as stack:
        STACK = stack
        m = re.search(r"\(http on (\S+)\)", stack.coordinator.startup_line)
        assert m, stack.coordinator.startup_line
        HTTPS = "https://" + m.group(1)
        return opslib.run_tests(globals())


if __name__ == "__main__":
    sys.exit(main())
