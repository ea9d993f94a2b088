"""Issue 30's names, browsers and small routes, over the real stack (stories260K target + its
draft) with an API key and --cors-origins naming one page origin:

- a headless Chromium page (Debian's chromium, driven by playwright-core:
  browser_cors_client.mjs) on the allowed origin calls the API with fetch(): the preflight
  passes without the key, so a request without it reads its 401 and one with it succeeds,
  streamed too (through the /v1-less alias); /tokenize and /detokenize round trip;
- the same page on a disallowed origin is blocked by the browser on every call;
- preflights and CORS headers on the wire (204 without a key, Allow-Origin and Vary on 200s,
  401s and 404s; none for a disallowed origin);
- --served-model-name: /models lists every alias, /v1/models/{alias} answers, the official
  `openai` npm client uses an alias as `model` and sees it, and system_fingerprint, in the
  reply and every chunk;
- gRPC: DescribeModel's served_model_names and system_fingerprint, the fingerprint in
  GenerationResult, Detokenize (ids outside the vocabulary: INVALID_ARGUMENT);
- the fingerprint is the same after the coordinator restarts with the same settings.

Needs TANDEM_BIN, TANDEM_SHARED (set by CTest), Node with `openai` and `playwright-core` in
$TANDEM_NPM_DIR and /usr/bin/chromium (tools/setup.sh installs them); prints
"N passed, N failed".
"""
import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402  (the shared test runner)
from stacklib import STUBS, Cluster  # noqa: E402

CLIENT = os.path.join(HERE, "browser_cors_client.mjs")
NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))
KEY = "browser-e2e-key"
NAMES = ["stories", "gpt-4o-mini"]  # --served-model-name
FINGERPRINT = re.compile(r"^fp_[0-9a-f]{16}$")
STACK = None
API = None  # http://127.0.0.1:PORT of the coordinator's HTTP API
PAGE_PORT = None  # the page server's; http://127.0.0.1:PAGE_PORT is the allowed origin


class Page(http.server.BaseHTTPRequestHandler):
    """A blank page on its own origin, for the browser to run fetch() in."""

    def do_GET(self):
        body = b"<!doctype html><title>tandem cors test</title><p>page</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def allowed_origin():
    return f"http://127.0.0.1:{PAGE_PORT}"


def node(op, **args):
    env = {**os.environ, "TANDEM_NPM_DIR": NPM_DIR}
    out = subprocess.run(["node", CLIENT, json.dumps({"op": op, **args})], capture_output=True,
                         timeout=180, text=True, env=env)
    assert out.returncode == 0, f"node {op} exited {out.returncode}: {out.stderr[-2000:]}"
    reply = json.loads(out.stdout.strip().splitlines()[-1])
    assert "error" not in reply, reply
    return reply


def raw(method, path, headers=None, body=None):
    """(status, headers, body) of one request to the HTTP API, errors included."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(API + path, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def keyed(origin=None):
    h = {"Authorization": f"Bearer {KEY}"}
    if origin:
        h["Origin"] = origin
    return h


def chat_body(**extra):
    return {"model": NAMES[1], "max_tokens": 12, "temperature": 0,
            "messages": [{"role": "user", "content": "Once upon a time"}], **extra}


def sse_chunks(body):
    return [json.loads(line[6:]) for line in body.splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def test_page_on_the_allowed_origin_calls_the_api():
    r = node("page", page=allowed_origin() + "/", api=API, key=KEY, model=NAMES[1])
    for name in ("models_without_key", "chat_without_key"):  # the preflight passed; 401 read
        assert r[name].get("status") == 401, (name, r[name])
        assert json.loads(r[name]["body"])["error"]["code"] == "invalid_api_key", r[name]
    assert r["chat_with_key"]["status"] == 200, r["chat_with_key"]
    reply = json.loads(r["chat_with_key"]["body"])
    assert reply["model"] == NAMES[1], reply
    assert FINGERPRINT.match(reply["system_fingerprint"]), reply
    assert r["chat_unknown_model"]["status"] == 404, r["chat_unknown_model"]
    stream = r["stream_with_key"]
    assert stream["status"] == 200 and stream["body"].rstrip().endswith("data: [DONE]"), stream
    chunks = sse_chunks(stream["body"])
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == reply["choices"][0]["message"]["content"], (text, reply)
    assert {c["system_fingerprint"] for c in chunks} == {reply["system_fingerprint"]}, chunks
    tokens = json.loads(r["tokenize"]["body"])["tokens"]
    assert r["tokenize"]["status"] == 200 and len(tokens) >= 4, r["tokenize"]
    assert all(isinstance(t["piece"], str) for t in tokens), tokens
    assert r["detokenize"]["status"] == 200, r["detokenize"]
    content = json.loads(r["detokenize"]["body"])["content"]
    assert content == "".join(t["piece"] for t in tokens), (content, tokens)
    assert content.strip() == "Once upon a time", content


def test_page_on_another_origin_is_blocked():
    r = node("page", page=f"http://localhost:{PAGE_PORT}/", api=API, key=KEY, model=NAMES[1])
    for name, result in r.items():
        assert "blocked" in result, (name, result)


def test_preflight_needs_no_key_and_errors_carry_the_origin():
    origin = allowed_origin()
    status, h, _ = raw("OPTIONS", "/v1/chat/completions", {
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type,x-stainless-os"})
    assert status == 204, status
    assert h["Access-Control-Allow-Origin"] == origin, dict(h)
    assert "POST" in h["Access-Control-Allow-Methods"], dict(h)
    allowed = h["Access-Control-Allow-Headers"]
    for name in ("authorization", "content-type", "x-api-key", "x-stainless-os"):
        assert name in allowed, allowed
    assert int(h["Access-Control-Max-Age"]) > 0, dict(h)
    for method, path, headers, want in (
            ("GET", "/v1/models", {"Origin": origin}, 401),
            ("GET", "/v1/models", keyed(origin), 200),
            ("GET", "/v1/nothing", keyed(origin), 404),
            ("POST", "/v1/chat/completions", keyed(origin), 400)):
        status, h, _ = raw(method, path, headers, {"model": NAMES[0]} if method == "POST" else None)
        assert status == want, (method, path, status)
        assert h["Access-Control-Allow-Origin"] == origin, (path, dict(h))
        assert h["Vary"] == "Origin", (path, dict(h))
    status, h, _ = raw("OPTIONS", "/v1/models", {"Origin": "http://evil.example"})
    assert status == 204 and "Access-Control-Allow-Origin" not in h, dict(h)
    status, h, _ = raw("GET", "/v1/models", keyed("http://evil.example"))
    assert status == 200 and "Access-Control-Allow-Origin" not in h, dict(h)


def test_models_lists_every_served_name():
    for path in ("/v1/models", "/models"):
        status, _, body = raw("GET", path, keyed())
        assert status == 200, (path, status, body)
        assert [m["id"] for m in json.loads(body)["data"]] == NAMES, body
    for name in NAMES:
        status, _, body = raw("GET", f"/v1/models/{name}", keyed())
        assert status == 200 and json.loads(body)["id"] == name, body
    status, _, body = raw("GET", "/models/llama", keyed())  # the GGUF's own name is not served
    assert status == 404, body
    status, _, body = raw("POST", "/chat/completions", keyed(), chat_body(model="llama"))
    assert status == 404 and "'stories', 'gpt-4o-mini'" in body, body


def test_openai_client_uses_an_alias_and_sees_the_fingerprint():
    request = chat_body()
    reply = node("openai", api=API, key=KEY, request=request)
    assert reply["model"] == NAMES[1], reply
    assert FINGERPRINT.match(reply["system_fingerprint"]), reply
    streamed = node("openai", api=API, key=KEY, request={**request, "stream": True})["chunks"]
    assert {c["system_fingerprint"] for c in streamed} == {reply["system_fingerprint"]}
    assert {c["model"] for c in streamed} == {NAMES[1]}
    other = node("openai", api=API, key=KEY, request={**request, "model": NAMES[0]})
    assert other["model"] == NAMES[0], other
    assert other["choices"][0]["message"] == reply["choices"][0]["message"], (other, reply)


def grpc_metadata():
    return [("authorization", f"Bearer {KEY}")]


def test_grpc_names_fingerprint_and_detokenize():
    stub = STACK.stub
    described = stub.DescribeModel(STUBS.generator_pb2.DescribeModelRequest(),
                                   metadata=grpc_metadata(), timeout=30)
    assert list(described.served_model_names) == NAMES, described
    assert FINGERPRINT.match(described.system_fingerprint), described
    _, _, body = raw("POST", "/v1/chat/completions", keyed(), chat_body())
    assert json.loads(body)["system_fingerprint"] == described.system_fingerprint, body
    request = STUBS.generator_pb2.GenerateRequest(text="Once upon a time", max_tokens=4)
    finals = [m.final for m in stub.Generate(request, metadata=grpc_metadata(), timeout=60)
              if m.HasField("final")]
    assert [f.system_fingerprint for f in finals] == [described.system_fingerprint], finals
    ids = stub.Tokenize(STUBS.generator_pb2.TokenizeRequest(text="Once upon a time"),
                        metadata=grpc_metadata(), timeout=30).token_ids
    text = stub.Detokenize(STUBS.generator_pb2.DetokenizeRequest(token_ids=ids),
                           metadata=grpc_metadata(), timeout=30).text
    assert text.strip() == "Once upon a time", text
    try:
        stub.Detokenize(STUBS.generator_pb2.DetokenizeRequest(token_ids=[1, 10 ** 6]),
                        metadata=grpc_metadata(), timeout=30)
        raise AssertionError("an id outside the vocabulary was detokenized")
    except Exception as e:  # grpc.RpcError
        assert "INVALID_ARGUMENT" in str(e.code()), e
    status, _, body = raw("POST", "/detokenize", keyed(), {"tokens": [1, 10 ** 6]})
    assert status == 400 and json.loads(body)["error"]["param"] == "tokens[1]", body


def test_zz_fingerprint_survives_a_restart():
    """Last (tests run by name): restarts the coordinator with the same flags."""
    global API
    _, _, body = raw("GET", "/v1/models", keyed())
    _, _, before = raw("POST", "/v1/chat/completions", keyed(), chat_body())
    old = STACK.coordinator
    STACK.channel.close()
    assert old.stop() == 0
    STACK.processes.remove(old)
    STACK.start_coordinator()
    API = "http://" + re.search(r"\(http on (\S+)\)", STACK.coordinator.startup_line).group(1)
    _, _, after = raw("POST", "/v1/chat/completions", keyed(), chat_body())
    assert json.loads(after)["system_fingerprint"] == json.loads(before)["system_fingerprint"]
    assert json.loads(after)["choices"] == json.loads(before)["choices"], (before, after)


def main():
    global STACK, API, PAGE_PORT
    for package in ("openai", "playwright-core"):
        manifest = os.path.join(NPM_DIR, "node_modules", package, "package.json")
        assert os.path.isfile(manifest), f"no {package} npm package in {NPM_DIR}; run tools/setup.sh"
    assert os.path.exists("/usr/bin/chromium"), "no /usr/bin/chromium; run tools/setup.sh"
    pages = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    PAGE_PORT = pages.server_address[1]
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    keys = tempfile.NamedTemporaryFile("w", prefix="tandem-keys-", delete=False)
    keys.write(KEY + "\n")
    keys.close()
    args = ["--http-listen", "127.0.0.1:0", "--api-keys-file", keys.name,
            "--cors-origins", allowed_origin(), "--served-model-name", ",".join(NAMES)]
    try:
        with Cluster(coordinator_args=args, tls=False) as stack:
            STACK = stack
            m = re.search(r"\(http on (\S+)\)", stack.coordinator.startup_line)
            assert m, stack.coordinator.startup_line
            API = "http://" + m.group(1)
            return opslib.run_tests(globals())
    finally:
        pages.shutdown()
        os.unlink(keys.name)


if __name__ == "__main__":
    sys.exit(main())
