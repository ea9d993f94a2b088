"""client/python/tandem_client.py without a coordinator: it makes its own stubs in a cache
when they are missing (never in the checkout), builds the request from its flags, streams a
fake Generator's reply to stdout and the statistics to stderr, and exits 2 with one line on
bad arguments, an unreachable server or INVALID_ARGUMENT (1 on other server errors)."""
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

import opslib
from opslib import CLIENT, PYTHON, REPO, require_file

CACHE = tempfile.mkdtemp(prefix="tandem-client-test-")


def client(*args, pythonpath=None, timeout=60):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["XDG_CACHE_HOME"] = CACHE
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([PYTHON, require_file(CLIENT, "Python client"), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def load_stubs():
    """The stubs as the client loads them (generated into CACHE) for the fake server."""
    os.environ["XDG_CACHE_HOME"] = CACHE
    sys.path.insert(0, os.path.dirname(CLIENT))
    import tandem_stubs
    return tandem_stubs.load()


class FakeGenerator:
    """A tandem.v1.Generator that records requests and answers from a script."""

    def __init__(self, stubs, reply):
        import grpc
        self.stubs, self.reply, self.requests = stubs, reply, []
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
        handler = grpc.unary_stream_rpc_method_handler(
            self.generate,
            request_deserializer=stubs.generator_pb2.GenerateRequest.FromString,
            response_serializer=stubs.generator_pb2.GenerateResponse.SerializeToString)
        self.server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
            "tandem.v1.Generator", {"Generate": handler})])
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.address = f"127.0.0.1:{self.port}"

    def generate(self, request, context):
        self.requests.append(request)
        yield from self.reply(context)

    def close(self):
        self.server.stop(grace=0).wait(5)


def story_reply(stubs):
    g = stubs.generator_pb2

    def reply(context):
        for text in ("Once", " upon", " a time"):
            yield g.GenerateResponse(delta=g.TokenDelta(text=text, token_ids=[1]))
        final = g.GenerationResult(finish_reason=g.FINISH_REASON_LENGTH, seed=42,
                                   session_id="s1")
        final.usage.prompt_tokens, final.usage.generated_tokens = 5, 3
        final.timing.prefill_seconds, final.timing.decode_seconds = 0.01, 0.5
        final.timing.time_to_first_token_seconds = 0.02
        final.timing.decode_tokens_per_second = 6.0
        s = final.speculation
        s.rounds, s.drafted_tokens, s.accepted_tokens = 2, 8, 6
        s.acceptance_rate, s.tokens_per_round = 0.75, 3.5
        yield g.GenerateResponse(final=final)
    return reply


def test_bare_checkout_generates_stubs_into_the_cache_only():
    before = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--ignored",
                             "client/python"], capture_output=True, text=True).stdout
    r = client("--server", "127.0.0.1:1", "--prompt", "hi", "--connect-timeout", "0.5")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.strip() == "tandem_client: cannot reach server 127.0.0.1:1 within 0.5 s", \
        r.stderr
    stubs_root = os.path.join(CACHE, "tandem", "stubs")
    dirs = [d for d in os.listdir(stubs_root)
            if os.path.isdir(os.path.join(stubs_root, d, "tandem"))]
    assert len(dirs) == 1, os.listdir(stubs_root)
    for name in ("health_pb2.py", "health_pb2_grpc.py", "tandem/v1/generator_pb2.py",
                 "tandem/v1/generator_pb2_grpc.py", "tandem/v1/common_pb2.py"):
        assert os.path.isfile(os.path.join(stubs_root, dirs[0], name)), name
    assert not [d for d in os.listdir(stubs_root) if d.startswith(".gen-")], "temp dir left"
    after = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--ignored",
                            "client/python"],
                           capture_output=True, text=True).stdout
    assert after == before, f"the client wrote into the checkout: {after}"


def test_uses_the_build_stubs_when_importable():
    build_python = os.path.abspath(os.environ.get("PYTHONPATH", "").split(":")[0])
    assert os.path.isfile(os.path.join(build_python, "tandem", "v1", "generator_pb2.py")), \
        f"PYTHONPATH={build_python!r} has no tandem/v1/generator_pb2.py (run through ctest)"
    code = ("import sys; sys.path.insert(0, %r); import tandem_stubs; s = tandem_stubs.load();"
            " print(s.generated_tandem, s.generator_pb2.__file__)" % os.path.dirname(CLIENT))
    env = dict(os.environ, XDG_CACHE_HOME=CACHE, PYTHONPATH=build_python)
    r = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=60,
                       env=env)
    assert r.returncode == 0, r.stderr
    generated, path = r.stdout.split()
    assert generated == "False" and path.startswith(build_python), r.stdout


def test_streams_the_reply_and_prints_the_statistics():
    stubs = load_stubs()
    server = FakeGenerator(stubs, story_reply(stubs))
    try:
        r = client("--server", server.address, "--prompt", "Tell a story", "--system", "Be kind",
                   "--temperature", "0.8", "--top-p", "0.95", "--seed", "42", "--max-tokens",
                   "16", "--draft-tokens", "3", "--session-id", "s1")
    finally:
        server.close()
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Once upon a time\n", repr(r.stdout)
    assert r.stderr == ("[prompt 5 tokens (0 cached) | prefill 500.0 tok/s | decode 3 tokens, "
                        "6.0 tok/s | first token 20.0 ms | draft acceptance 75.0 % (6/8), "
                        "3.50 tokens/round | length | seed 42]\n"), r.stderr
    (req,) = server.requests
    assert [(m.role, m.content) for m in req.chat.messages] == [("system", "Be kind"),
                                                               ("user", "Tell a story")]
    assert req.chat.add_generation_prompt
    s = req.sampling
    assert abs(s.temperature - 0.8) < 1e-6 and abs(s.top_p - 0.95) < 1e-6 and s.seed == 42
    assert req.max_tokens == 16 and req.session_id == "s1"
    assert req.speculation.enabled and req.speculation.draft_tokens == 3
    assert not req.speculation.adaptive


def test_raw_and_flags_that_leave_server_defaults():
    stubs = load_stubs()
    server = FakeGenerator(stubs, story_reply(stubs))
    try:
        r = client("--server", server.address, "--prompt", "Once", "--raw", "--no-speculation",
                   "--draft-tokens", "auto", "--stats-json")
    finally:
        server.close()
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stderr)
    assert stats["speculation"]["acceptanceRate"] == 0.75, stats
    assert stats["usage"]["generatedTokens"] == 3, stats
    (req,) = server.requests
    assert req.WhichOneof("prompt") == "text" and req.text == "Once"
    for field in ("temperature", "top_k", "top_p", "min_p", "repetition_penalty",
                  "penalty_window", "seed"):
        assert not req.sampling.HasField(field), field  # the server's one set of defaults
    assert req.speculation.HasField("enabled") and not req.speculation.enabled
    assert req.speculation.adaptive


def test_sampling_flags_given_are_sent_zero_included_and_the_rest_left_unset():
    stubs = load_stubs()
    server = FakeGenerator(stubs, story_reply(stubs))
    try:
        r = client("--server", server.address, "--prompt", "Once", "--top-k", "0",
                   "--repeat-last-n", "0", "--repeat-penalty", "1.3", "--min-p", "0")
    finally:
        server.close()
    assert r.returncode == 0, r.stderr
    (req,) = server.requests
    s = req.sampling
    assert s.HasField("top_k") and s.top_k == 0
    assert s.HasField("penalty_window") and s.penalty_window == 0
    assert s.HasField("min_p") and s.min_p == 0
    assert abs(s.repetition_penalty - 1.3) < 1e-6
    assert not s.HasField("temperature") and not s.HasField("top_p") and not s.HasField("seed")


def test_a_server_that_never_answers_ends_at_the_timeout_with_one_line():
    import time
    stubs = load_stubs()

    def reply(context):
        deadline = time.monotonic() + 30  # bounded even if the client never cancels
        while context.is_active() and time.monotonic() < deadline:
            time.sleep(0.05)
        return
        yield  # pragma: no cover
    server = FakeGenerator(stubs, reply)
    start = time.monotonic()
    try:
        r = client("--server", server.address, "--prompt", "x", "--timeout", "1")
    finally:
        server.close()
    assert time.monotonic() - start < 20, "the client did not stop at its deadline"
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr == (f"tandem_client: DEADLINE_EXCEEDED: no complete reply from "
                        f"{server.address} within --timeout 1 s\n"), r.stderr


def test_server_errors_exit_with_one_line():
    import grpc
    stubs = load_stubs()
    for code, exit_code in ((grpc.StatusCode.INVALID_ARGUMENT, 2),
                            (grpc.StatusCode.INTERNAL, 1)):
        def reply(context, code=code):
            context.abort(code, "it went wrong")
            yield  # pragma: no cover
        server = FakeGenerator(stubs, reply)
        try:
            r = client("--server", server.address, "--prompt", "x")
        finally:
            server.close()
        assert r.returncode == exit_code, (code, r.returncode, r.stderr)
        assert r.stderr == f"tandem_client: {code.name}: it went wrong\n", r.stderr
        assert r.stdout == "", r.stdout


def test_bad_arguments_exit_2_with_one_line():
    cases = [
        [],
        ["--prompt", "x"],
        ["--server", "nohost", "--prompt", "x"],
        ["--server", "127.0.0.1:1", "--prompt", ""],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--temperature", "-1"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--temperature", "nan"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--top-p", "0"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--top-p", "1.5"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--max-tokens", "-3"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--draft-tokens", "-1"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--draft-tokens", "many"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--seed", "-5"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--top-k", "-1"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--min-p", "1"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--repeat-penalty", "0"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--repeat-last-n", "-1"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--raw", "--system", "s"],
        ["--server", "127.0.0.1:1", "--prompt", "x", "--no-such-flag"],
    ]
    for args in cases:
        r = client(*args)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tandem_client: "), (args, r.stderr)
        assert r.stdout == "", (args, r.stdout)


def test_the_module_sends_at_most_one_constraint():
    load_stubs()
    import tandem_client
    c = tandem_client.Client("127.0.0.1:1", connect_timeout=None)
    try:
        schema = {"type": "object", "properties": {"b": {"type": "string"}, "a": {}}}
        r = c.request("p", response_format={"type": "json_schema",
                                            "json_schema": {"name": "n", "schema": schema}})
        assert r.constraint.json_schema.schema == json.dumps(schema), r.constraint
        assert c.request("p", json_schema='{"type": "integer"}').constraint.json_schema.schema \
            == '{"type": "integer"}'
        assert c.request("p", response_format={"type": "json_object"}).constraint \
            .HasField("json_object")
        assert c.request("p", grammar='root ::= "a"').constraint.grammar == 'root ::= "a"'
        assert c.request("p", regex="[0-9]+").constraint.regex == "[0-9]+"
        for none in ({}, {"response_format": {"type": "text"}}):
            assert not c.request("p", **none).HasField("constraint"), none
        # {"type": "text"} is no constraint, so it goes with one.
        assert c.request("p", response_format={"type": "text"}, regex="a").constraint.regex == "a"
        for bad, message in [
                ({"grammar": "g", "regex": "r"}, "give at most one constraint, got grammar, regex"),
                ({"response_format": {"type": "json_object"}, "json_schema": {}},
                 "got response_format, json_schema"),
                ({"response_format": {"type": "xml"}}, "'xml' is not 'text'"),
                ({"response_format": "json_object"}, "response_format must be a dict"),
                ({"response_format": {"type": "json_schema", "json_schema": {"name": "n"}}},
                 "needs json_schema.schema"),
                ({"json_schema": ["type"]}, "json_schema must be a dict or JSON text")]:
            try:
                c.request("p", **bad)
            except ValueError as e:
                assert message in str(e), (bad, str(e))
            else:
                raise AssertionError(f"{bad} was accepted")
    finally:
        c.close()


def test_the_module_sends_chat_template_kwargs_as_json():
    load_stubs()
    import tandem_client
    c = tandem_client.Client("127.0.0.1:1", connect_timeout=None)
    try:
        messages = [{"role": "user", "content": "Hi"}]
        kwargs = {"datetime": "Jul 26 2024 00:00:00 GMT", "enable_thinking": False}
        r = c.request(messages=messages, chat_template_kwargs=kwargs)
        assert json.loads(r.chat.template_kwargs_json) == kwargs, r.chat
        assert c.request(messages=messages).chat.template_kwargs_json == ""
        try:
            c.request(messages=messages, chat_template_kwargs="datetime=now")
        except ValueError as e:
            assert "chat_template_kwargs must be a dict" in str(e), str(e)
        else:
            raise AssertionError("a string was accepted as chat_template_kwargs")
    finally:
        c.close()


def test_help_exits_0():
    r = client("--help")
    assert r.returncode == 0 and "--server" in r.stdout, r


def test_health_tool_reports_unreachable_and_bad_arguments():
    tool = require_file(os.path.join(os.path.dirname(CLIENT), "tandem_health.py"))
    env = dict(os.environ, XDG_CACHE_HOME=CACHE)
    r = subprocess.run([PYTHON, tool, "--server", "127.0.0.1:1", "--wait", "0.3"],
                       capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 1 and r.stdout.startswith("UNREACHABLE"), r
    r = subprocess.run([PYTHON, tool, "--server", "nohost"], capture_output=True, text=True,
                       timeout=30, env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r


if __name__ == "__main__":
    try:
        code = opslib.run_tests(globals())
    finally:
        import shutil
        shutil.rmtree(CACHE, ignore_errors=True)
    sys.exit(code)
