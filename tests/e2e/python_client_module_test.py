"""client/python/tandem_client.py as a module, against the real stack on loopback (stories260K
target + its distilled draft): generate() streams deltas then one Result whose statistics
match the raw Generate reply; leaving the loop early cancels the request and frees the
workers' sessions; chat() collects a reply; tokenize() equals the server's Tokenize; logprobs
come through; errors are TandemError with the gRPC code.

TLS and the API key are checked through a front in this test that terminates mutual TLS
(certificates made here with Debian's openssl) and requires `authorization: Bearer KEY`
before it forwards each call, byte for byte, to the real coordinator: with the CA, a client
certificate and the key the reply equals the plain one; without the key it is
UNAUTHENTICATED; without a client certificate the handshake fails (UNAVAILABLE). Under
TANDEM_E2E_TLS=1 the stack itself runs over mutual TLS with stacklib's key, and every client
here (the front's too) connects with its CA and key.

Needs TANDEM_BIN, TANDEM_SHARED (set by CTest) and openssl; prints "N passed, N failed".
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402
from stacklib import ROOT, STUBS, metric, wait_for  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import tandem_client  # noqa: E402

import grpc  # noqa: E402

KEY = "test-key-0123456789"
STACK = None
CERTS = None  # folder with ca.crt, server.crt/key, client.crt/key


def client(**kw):
    """A module client of the stack's coordinator (with its CA and key in a TLS run)."""
    return tandem_client.Client(STACK.coordinator.address, **STACK.client_kwargs(), **kw)


def raw_generate(prompt, max_tokens):
    r = STUBS.generator_pb2.GenerateRequest(text=prompt, max_tokens=max_tokens, ignore_eos=True)
    r.sampling.temperature = 0
    text, final = "", None
    for m in STACK.stub.Generate(r, timeout=60):
        if m.HasField("delta"):
            text += m.delta.text
        else:
            final = m.final
    return text, final


def test_generate_yields_deltas_then_the_final_statistics():
    with client() as c:
        events = list(c.generate("Once upon a time", max_tokens=24, temperature=0,
                                 ignore_eos=True))
    deltas, result = events[:-1], events[-1]
    assert deltas and all(isinstance(d, tandem_client.Delta) for d in deltas), events
    assert isinstance(result, tandem_client.Result), result
    text, final = raw_generate("Once upon a time", 24)
    assert "".join(d.text for d in deltas) == text
    assert sum(len(d.token_ids) for d in deltas) == result.generated_tokens == 24
    assert result.finish_reason == "length" and result.prompt_tokens == final.usage.prompt_tokens
    assert result.speculation["drafted_tokens"] > 0, result.speculation
    assert result.timing["total_seconds"] > 0 and result.session_id, result.timing
    assert all(d.logprobs == [] for d in deltas)


def cancelled_requests():
    text = urllib.request.urlopen(f"http://{STACK.coordinator.metrics}/metrics",
                                  timeout=5).read().decode()
    return sum(float(m[1]) for m in re.finditer(
        r'^tandem_requests_total\{[^}]*outcome="cancelled"[^}]*\} (\S+)$', text, re.M))


def test_leaving_the_loop_early_cancels_and_frees_the_workers():
    before = cancelled_requests()
    with client() as c:
        for i, _ in enumerate(c.generate("Once upon a time", max_tokens=2000, ignore_eos=True,
                                         speculation=False)):
            if i == 2:
                break
    assert wait_for(lambda: cancelled_requests() == before + 1, 10), "not cancelled"
    target = STACK.targets[0].metrics
    assert wait_for(lambda: metric(target, "tandem_worker_active_sessions") == 0, 10), \
        "the target still holds the cancelled request's session"


def test_chat_collects_the_reply_and_speculation_does_not_change_greedy_output():
    messages = [{"role": "user", "content": "Tell me a story"}]
    with client() as c:
        on = c.chat(messages, max_tokens=20, temperature=0, ignore_eos=True)
        off = c.chat([("user", "Tell me a story")], max_tokens=20, temperature=0,
                     ignore_eos=True, speculation=False)
    assert on.text and on.text == off.text and on.token_ids == off.token_ids, (on, off)
    assert len(on.token_ids) == on.result.generated_tokens == 20
    assert off.result.speculation["drafted_tokens"] == 0, off.result.speculation


def test_tokenize_equals_the_servers_tokenize():
    want = STACK.stub.Tokenize(STUBS.generator_pb2.TokenizeRequest(
        text="Once upon a time", add_special=True), timeout=30).token_ids
    with client() as c:
        assert c.tokenize("Once upon a time") == list(want)
        assert c.tokenize("Once upon a time", add_special=False) == list(want)[1:]
        rendered = c.tokenize(messages=[("user", "Hi")])
        assert len(rendered) > 2, rendered
        assert c.describe().target.name == "llama"


def test_logprobs_come_through_the_module():
    with client() as c:
        reply = c.chat([("user", "Hi")], max_tokens=8, temperature=0, ignore_eos=True,
                       logprobs=True, top_logprobs=2)
    assert [lp.token_id for lp in reply.logprobs] == reply.token_ids, reply
    assert all(lp.logprob <= 0 and len(lp.top) == 2 and lp.top[0].token_id == lp.token_id
               for lp in reply.logprobs), reply.logprobs


def test_errors_are_tandem_errors_with_the_grpc_code():
    with client() as c:
        try:
            list(c.generate("x", temperature=-1))
            raise AssertionError("a negative temperature was accepted")
        except tandem_client.TandemError as e:
            assert e.code == grpc.StatusCode.INVALID_ARGUMENT and "temperature" in e.details, e
        try:
            c.close_session("no-such-session")
            raise AssertionError("an unknown session was closed")
        except tandem_client.TandemError as e:
            assert e.code == grpc.StatusCode.NOT_FOUND, e
    try:
        tandem_client.Client("127.0.0.1:1", connect_timeout=0.5)
        raise AssertionError("connected to port 1")
    except tandem_client.TandemError as e:
        assert e.code == grpc.StatusCode.UNAVAILABLE and "cannot reach server" in e.details, e


def make_certs(folder):
    """A CA and a server (127.0.0.1) and client certificate signed by it, with openssl."""
    def ssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=folder,
                       timeout=60)
    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca",
        "-keyout", "ca.key", "-out", "ca.crt")
    with open(os.path.join(folder, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        ssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout",
            f"{name}.key", "-out", f"{name}.csr")
        ssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "1", "-extfile", "san.ext", "-out", f"{name}.crt")


class TlsFront:
    """A Generator front on TLS that needs a client certificate and the key, then forwards
    every call's bytes to the real coordinator."""

    def __init__(self, target, certs):
        read = lambda name: open(os.path.join(certs, name), "rb").read()  # noqa: E731
        self.channel = stacklib.channel(target, STACK.security)
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=8))
        handlers = {}
        for method, streaming in (("Generate", True), ("Tokenize", False),
                                  ("DescribeModel", False), ("CloseSession", False)):
            handlers[method] = self._handler(f"/tandem.v1.Generator/{method}", streaming)
        self.server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("tandem.v1.Generator", handlers)])
        credentials = grpc.ssl_server_credentials(
            [(read("server.key"), read("server.crt"))], root_certificates=read("ca.crt"),
            require_client_auth=True)
        self.port = self.server.add_secure_port("127.0.0.1:0", credentials)
        self.server.start()
        self.address = f"127.0.0.1:{self.port}"

    def _handler(self, path, streaming):
        def check(context):
            if dict(context.invocation_metadata()).get("authorization") != f"Bearer {KEY}":
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "no valid API key")

        if streaming:
            forward = self.channel.unary_stream(path)

            def call(request, context):
                check(context)
                yield from forward(request, timeout=60)
            return grpc.unary_stream_rpc_method_handler(call)
        forward = self.channel.unary_unary(path)

        def unary(request, context):
            check(context)
            return forward(request, timeout=60)
        return grpc.unary_unary_rpc_method_handler(unary)

    def close(self):
        self.server.stop(grace=0).wait(5)
        self.channel.close()


def test_tls_with_a_client_certificate_and_the_api_key_reach_the_stack():
    front = TlsFront(STACK.coordinator.address, CERTS)
    files = {k: os.path.join(CERTS, v) for k, v in (
        ("root_certificates", "ca.crt"), ("certificate_chain", "client.crt"),
        ("private_key", "client.key"))}
    try:
        with tandem_client.Client(front.address, api_key=KEY, **files) as c:
            reply = c.chat([("user", "Tell me a story")], max_tokens=12, temperature=0,
                           ignore_eos=True)
            assert c.tokenize("Once upon a time")
        with client() as plain:
            want = plain.chat([("user", "Tell me a story")], max_tokens=12, temperature=0,
                              ignore_eos=True)
        assert reply.text == want.text and reply.token_ids == want.token_ids, (reply, want)
        with tandem_client.Client(front.address, **files) as no_key:
            try:
                no_key.chat([("user", "Hi")], max_tokens=2)
                raise AssertionError("a call without the key was served")
            except tandem_client.TandemError as e:
                assert e.code == grpc.StatusCode.UNAUTHENTICATED, e
        try:
            tandem_client.Client(front.address, api_key=KEY, connect_timeout=3,
                                 root_certificates=files["root_certificates"])
            raise AssertionError("connected without a client certificate")
        except tandem_client.TandemError as e:
            assert e.code == grpc.StatusCode.UNAVAILABLE, e
        # The command line on the module: TLS flags and the key from a file.
        key_file = os.path.join(CERTS, "api.key")
        with open(key_file, "w") as f:
            f.write(KEY + "\n")
        cli = [sys.executable, os.path.join(ROOT, "client", "python", "tandem_client.py"),
               "--server", front.address, "--prompt", "Tell me a story", "--max-tokens", "12",
               "--temperature", "0", "--tls-ca", files["root_certificates"], "--tls-cert",
               files["certificate_chain"], "--tls-key", files["private_key"]]
        out = subprocess.run(cli + ["--api-key-file", key_file], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(want.text[:8]), (out.stdout, want.text)
        refused = subprocess.run(cli, capture_output=True, text=True, timeout=60,
                                 env={k: v for k, v in os.environ.items()
                                      if k != "TANDEM_API_KEY"})
        assert refused.returncode == 1 and "UNAUTHENTICATED" in refused.stderr, refused.stderr
        with open(files["root_certificates"], "rb") as f:  # certificates as bytes work too
            ca = f.read()
        with tandem_client.Client(front.address, api_key=KEY, root_certificates=ca,
                                  certificate_chain=open(files["certificate_chain"], "rb").read(),
                                  private_key=open(files["private_key"], "rb").read()) as c:
            assert c.describe().target.name == "llama"
    finally:
        front.close()


def main():
    global STACK, CERTS
    with tempfile.TemporaryDirectory() as certs, stacklib.Cluster(
            coordinator_args=["--metrics-listen", "127.0.0.1:0"]) as STACK:
        make_certs(certs)
        CERTS = certs
        start = time.monotonic()
        code = opslib.run_tests(globals())
        print(f"({time.monotonic() - start:.1f} s)")
        return code


if __name__ == "__main__":
    sys.exit(main())
