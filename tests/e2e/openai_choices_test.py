"""Several choices per request (`n`, issue #30) through the official `openai` npm client
(openai_http_client.mjs) against the real stack on loopback (stories260K target alone, so
seeded replies are the target's): chat and completions with n = 2, streamed and not. Each
reply has one choice per index with its own text and finish_reason, and the
system_fingerprint of n = 1 on the reply and every chunk; seeded choices are
reproducible and choice 0 equals the same request with n = 1; a streamed reply's chunks,
grouped by their choice index, concatenate to the plain reply's choices; usage counts the
prompt once and every choice's tokens; the target worker served the second choice's prompt
from the first's KV blocks (tandem_worker_prefix_cached_tokens_total); n over --max-choices
and n with a session_id are 400 naming `n`; the gRPC stream tags each message with its
choice_index, and the Python client (tandem_client) each event with its choice.

Needs TANDEM_BIN, TANDEM_SHARED (set by CTest), Node and the `openai` package in
$TANDEM_NPM_DIR (default ~/.cache/tandem-npm; tools/setup.sh installs it); prints
"N passed, N failed".
"""
import json
import os
import re
import subprocess
import sys
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402
from stacklib import SCHEME, STUBS, Cluster  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "client", "python"))
import tandem_client  # noqa: E402

CLIENT = os.path.join(HERE, "openai_http_client.mjs")
NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))
STACK = None  # the Cluster, started once in main()
HTTP = None  # http(s)://HOST:PORT of the coordinator's HTTP API
MODEL = "llama"  # general.name of stories260K
# Long enough for whole 16-token KV blocks to share between the choices.
PROMPT = ("Once upon a time, there was a little girl named Lily. She loved to play outside in "
          "the park with her friends. One day, she saw a big red ball")
FIELDS = dict(max_tokens=24, temperature=1.0, seed=4242, ignore_eos=True)


def node(op, **args):
    """Runs one operation of the npm client; its JSON reply."""
    args.update(op=op, base_url=HTTP + "/v1")
    env = {**os.environ, "TANDEM_NPM_DIR": NPM_DIR}
    if stacklib.SECURITY:  # HTTPS with the run's CA and key (TANDEM_E2E_TLS=1)
        env.update(NODE_EXTRA_CA_CERTS=stacklib.SECURITY.ca, TANDEM_API_KEY=stacklib.SECURITY.key)
    out = subprocess.run(["node", CLIENT, json.dumps(args)], capture_output=True, timeout=120,
                         text=True, env=env)
    assert out.returncode == 0, f"node {op} exited {out.returncode}: {out.stderr[-2000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def generate(endpoint, **fields):
    request = {"model": MODEL, **fields}
    if endpoint == "chat":
        request["messages"] = [{"role": "user", "content": PROMPT}]
    else:
        request["prompt"] = PROMPT
    return node("generate", endpoint=endpoint, request=request)


def choice_text(choice):
    return choice["message"]["content"] if "message" in choice else choice["text"]


def streamed_choices(chunks):
    """{index: (text, finish_reason)} of a streamed reply."""
    out = {}
    for c in chunks:
        for choice in c["choices"]:
            text, finish = out.get(choice["index"], ("", None))
            text += choice.get("delta", {}).get("content") or choice.get("text") or ""
            out[choice["index"]] = (text, choice.get("finish_reason") or finish)
    return out


def metric(address, name):
    text = urllib.request.urlopen(f"http://{address}/metrics", timeout=5).read().decode()
    return sum(float(m.group(2)) for m in re.finditer(rf"^{name}(\{{[^}}]*\}})? (\S+)$", text,
                                                      re.M))


def check_plain_reply(endpoint):
    """Two seeded choices; returns them."""
    one = generate(endpoint, **FIELDS)
    reply = generate(endpoint, n=2, **FIELDS)
    choices = reply["choices"]
    assert [c["index"] for c in choices] == [0, 1], reply
    for c in choices:
        assert c["finish_reason"] == "length", c
        assert choice_text(c), c
    assert choice_text(choices[0]) == choice_text(one["choices"][0]), (choices, one)
    assert choice_text(choices[0]) != choice_text(choices[1]), choices
    assert reply["tandem"]["seed"] == 4242, reply["tandem"]
    assert reply["system_fingerprint"] == one["system_fingerprint"], (reply, one)
    assert choices[0]["tandem"]["seed"] == 4242 and choices[1]["tandem"]["seed"] != 4242, choices
    usage = reply["usage"]
    assert usage["prompt_tokens"] == one["usage"]["prompt_tokens"], (usage, one["usage"])
    assert usage["completion_tokens"] == 48, usage
    assert usage["total_tokens"] == usage["prompt_tokens"] + 48, usage
    again = generate(endpoint, n=2, **FIELDS)
    assert [choice_text(c) for c in again["choices"]] == [choice_text(c) for c in choices]
    return choices


def check_streamed_reply(endpoint, plain):
    chunks = generate(endpoint, n=2, stream=True, stream_options={"include_usage": True},
                      **FIELDS)["chunks"]
    got = streamed_choices(chunks)
    want = {c["index"]: (choice_text(c), c["finish_reason"]) for c in plain}
    assert got == want, (got, want)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 48, \
        chunks[-1]
    assert all(c.get("usage") is None for c in chunks[:-1]), "usage before the last chunk"
    fingerprints = {c.get("system_fingerprint") for c in chunks}
    assert len(fingerprints) == 1 and None not in fingerprints, fingerprints
    if endpoint == "chat":  # each choice opens with its role
        roles = [ch["index"] for c in chunks for ch in c["choices"]
                 if ch.get("delta", {}).get("role") == "assistant"]
        assert sorted(roles) == [0, 1], roles


def test_chat_n2_gives_two_seeded_choices_streamed_and_not():
    check_streamed_reply("chat", check_plain_reply("chat"))


def test_completions_n2_gives_two_seeded_choices_streamed_and_not():
    check_streamed_reply("completions", check_plain_reply("completions"))


def test_the_second_choice_adopts_the_prompts_blocks_on_the_target():
    before = metric(STACK.targets[0].metrics, "tandem_worker_prefix_cached_tokens_total")
    # A prompt this stack has not seen: only the other choice can have written its blocks.
    reply = node("generate", endpoint="completions", request={
        "model": MODEL, "prompt": PROMPT.replace("Lily", "Sue") + " and a kite", "n": 2,
        **FIELDS})
    adopted = metric(STACK.targets[0].metrics, "tandem_worker_prefix_cached_tokens_total") - before
    prompt = reply["usage"]["prompt_tokens"]
    assert reply["usage"]["prompt_tokens_details"]["cached_tokens"] == 0, reply["usage"]
    assert prompt - 16 <= adopted < prompt, (adopted, prompt)


def test_n_over_the_limit_or_with_a_session_is_400_naming_n():
    for fields, words in (({"n": 9}, "the limit is 8 (--max-choices)"),
                          ({"n": 2, "session_id": "s-1"}, "with a session_id")):
        for stream in (False, True):
            reply = generate("chat", max_tokens=4, stream=stream, **fields)
            e = reply.get("error")
            assert e and e["status"] == 400, reply
            assert words in e["error"]["message"] and e["error"]["param"] == "n", e


def test_grpc_tags_every_message_with_its_choice_index():
    r = STUBS.generator_pb2.GenerateRequest(text=PROMPT, n=3, max_tokens=8, ignore_eos=True)
    r.sampling.temperature = 1.0
    r.sampling.seed = 7
    finals = {}
    tokens = {0: 0, 1: 0, 2: 0}
    last = None
    for m in STACK.stub.Generate(r, timeout=60):
        if m.HasField("delta"):
            tokens[m.choice_index] += len(m.delta.token_ids)
        else:
            finals[m.choice_index] = m.final
            last = m.final
    assert sorted(finals) == [0, 1, 2] and tokens == {0: 8, 1: 8, 2: 8}, (finals, tokens)
    assert finals[0].seed == 7 and len({f.seed for f in finals.values()}) == 3
    assert last.HasField("request_usage") and last.request_usage.generated_tokens == 24, last
    assert sum(f.HasField("request_usage") for f in finals.values()) == 1


def test_the_python_client_says_which_choice_each_event_is():
    with tandem_client.Client(STACK.coordinator.address, **STACK.client_kwargs()) as c:
        texts, results = {}, {}
        for event in c.generate(PROMPT, n=2, max_tokens=8, temperature=1.0, seed=5,
                                ignore_eos=True):
            if isinstance(event, tandem_client.Delta):
                texts[event.choice] = texts.get(event.choice, "") + event.text
            else:
                results[event.choice] = event
        assert sorted(texts) == [0, 1] and sorted(results) == [0, 1], (texts, results)
        assert results[0].seed == 5 and results[1].seed != 5, results
        usage = [r.request_usage for r in results.values() if r.request_usage]
        assert len(usage) == 1 and usage[0]["generated_tokens"] == 16, usage
        try:
            c.chat([("user", "Hi")], n=2)
            raise AssertionError("chat() took n=2")
        except ValueError:
            pass


def main():
    global STACK, HTTP
    require = os.path.join(NPM_DIR, "node_modules", "openai", "package.json")
    assert os.path.isfile(require), f"no openai npm package in {NPM_DIR}; run tools/setup.sh"
    args = ["--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"]
    with Cluster(draft=False, coordinator_args=args) as stack:
        STACK = stack
        m = re.search(r"\(http on (\S+)\)", stack.coordinator.startup_line)
        assert m, stack.coordinator.startup_line
        HTTP = f"{SCHEME}://" + m.group(1)
        return opslib.run_tests(globals())


if __name__ == "__main__":
    sys.exit(main())
