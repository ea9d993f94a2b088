"""Issue #30's sampling fields through the official `openai` npm client
(openai_http_client.mjs, run with Node) over the real stack on loopback (stories260K target +
its distilled draft): logit_bias -100 bans a token the model otherwise emits, +100 forces one,
presence_penalty and frequency_penalty change greedy output, and with them the output is the
same whether the draft model speculates, the n-gram drafter does, a client's prediction does
or the target runs alone
(greedy; and seeded sampling under Gumbel coupling, which is drafter-invariant). Each HTTP
reply equals gRPC Generate's for the same request, whose token ids the assertions read. Bad
values are 400s naming the field (error.param).

Needs TANDEM_BIN, TANDEM_SHARED (set by CTest), Node and the `openai` package in
$TANDEM_NPM_DIR (default ~/.cache/tandem-npm; tools/setup.sh installs it); prints
"N passed, N failed".
"""
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402
from stacklib import ROOT, SCHEME, STUBS, Cluster  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import tandem_client  # noqa: E402

CLIENT = os.path.join(HERE, "openai_http_client.mjs")
NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))
STACK = None  # the Cluster, started once in main()
HTTP = None  # http(s)://HOST:PORT of the coordinator's HTTP API
MODEL = "llama"  # general.name of stories260K
PROMPT = "Once upon a time"
TOKENS = 32
TARGET_ALONE = {"enabled": False}
NGRAM = {"method": "ngram"}


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


def complete(**fields):
    """The npm client's completion of PROMPT, greedy unless fields say otherwise."""
    request = {"model": MODEL, "prompt": PROMPT, "max_tokens": TOKENS, "temperature": 0,
               "ignore_eos": True, **fields}
    reply = node("generate", endpoint="completions", request=request)
    assert "choices" in reply, reply
    return reply


def text_of(reply):
    return reply["choices"][0]["text"]


def grpc(logit_bias=None, presence=None, frequency=None, speculation=None, temperature=0.0,
         seed=None, prompt=PROMPT):
    """(text, ids) of the same request over gRPC."""
    r = STUBS.generator_pb2.GenerateRequest(text=prompt, max_tokens=TOKENS, ignore_eos=True)
    r.sampling.temperature = temperature
    for token, bias in (logit_bias or {}).items():
        r.sampling.logit_bias[int(token)] = bias
    if presence is not None:
        r.sampling.presence_penalty = presence
    if frequency is not None:
        r.sampling.frequency_penalty = frequency
    if seed is not None:
        r.sampling.seed = seed
    if speculation == TARGET_ALONE:
        r.speculation.enabled = False
    text, ids = "", []
    for m in STACK.stub.Generate(r, timeout=60):
        if m.HasField("delta"):
            text += m.delta.text
            ids.extend(m.delta.token_ids)
    return text, ids


def test_minus_100_bans_a_token_the_model_otherwise_emits():
    plain_text, plain_ids = grpc()
    assert text_of(complete()) == plain_text
    banned = plain_ids[0]
    bias = {str(banned): -100}
    reply = complete(logit_bias=bias)
    text, ids = grpc(logit_bias=bias)
    assert text_of(reply) == text, (text_of(reply), text)
    assert banned not in ids, (banned, ids)
    assert text != plain_text
    # The same with the target alone and with the n-gram drafter.
    assert text_of(complete(logit_bias=bias, speculation=TARGET_ALONE)) == text
    assert text_of(complete(logit_bias=bias, speculation=NGRAM)) == text


def test_plus_100_forces_a_token():
    _, plain_ids = grpc()
    forced = next(t for t in range(3, 500) if t not in plain_ids)  # one greedy never emits
    bias = {str(forced): 100}
    reply = complete(logit_bias=bias, max_tokens=8)
    text, ids = grpc(logit_bias=bias)
    assert set(ids) == {forced}, (forced, ids)
    assert text.startswith(text_of(reply)) and text_of(reply), (text_of(reply), text)
    assert reply["tandem"]["speculation"]["drafted_tokens"] > 0, reply["tandem"]


def test_penalties_change_greedy_output_and_every_drafter_agrees():
    plain = text_of(complete())
    fields = dict(presence_penalty=1.5, frequency_penalty=1.0)
    speculative = complete(**fields)
    assert speculative["tandem"]["speculation"]["drafted_tokens"] > 0, speculative["tandem"]
    text = text_of(speculative)
    assert text != plain, "the penalties changed nothing"
    assert text == grpc(presence=1.5, frequency=1.0)[0]
    assert text_of(complete(**fields, speculation=TARGET_ALONE)) == text
    assert text_of(complete(**fields, speculation=NGRAM)) == text
    # A client's predicted output (the reply without the penalties: wrong in places) is
    # verified with the same steps.
    predicted = complete(**fields, prediction={"type": "content", "content": plain})
    assert text_of(predicted) == text, (text_of(predicted), text)
    # Encouraging repeats (negative penalties) changes it the other way.
    encouraged = text_of(complete(presence_penalty=-2, frequency_penalty=-0.5))
    assert encouraged not in (plain, text)
    assert text_of(complete(presence_penalty=-2, frequency_penalty=-0.5,
                            speculation=TARGET_ALONE)) == encouraged


def test_the_prompt_does_not_count_for_the_penalties():
    # A prompt that holds the token greedy decoding emits first: were the prompt counted, the
    # strongest penalties would push that token down; counted from the output's start (the
    # coordinator's output_start on every worker call), the first token is greedy's.
    prompt = ("Once upon a time, there was a little girl. She was very happy. "
              "Once upon a time, there was a little")
    _, plain = grpc(prompt=prompt)
    prompt_ids = STACK.stub.Tokenize(STUBS.generator_pb2.TokenizeRequest(
        text=prompt, add_special=True), timeout=30).token_ids
    assert plain[0] in prompt_ids, (plain[0], list(prompt_ids))  # the test has teeth
    for speculation in (None, TARGET_ALONE):
        _, penalised = grpc(prompt=prompt, presence=2, frequency=2, speculation=speculation)
        assert penalised[0] == plain[0], (penalised, plain)
        assert penalised != plain  # the penalties do act on the output


def test_seeded_sampling_with_bias_and_penalties_is_drafter_invariant_under_gumbel():
    _, plain_ids = grpc()
    fields = dict(temperature=1.0, seed=77, logit_bias={str(plain_ids[0]): -100, "5": 2},
                  presence_penalty=0.8, frequency_penalty=0.3)
    gumbel = {"coupling": "gumbel"}
    speculative = complete(**fields, speculation=gumbel)
    assert speculative["tandem"]["speculation"]["drafted_tokens"] > 0
    alone = complete(**fields, speculation={**gumbel, "enabled": False})
    ngram = complete(**fields, speculation={**gumbel, "method": "ngram"})
    assert text_of(speculative) == text_of(alone) == text_of(ngram), (
        text_of(speculative), text_of(alone), text_of(ngram))


def test_the_python_client_sends_them_as_grpc_does():
    _, plain_ids = grpc()
    bias = {plain_ids[0]: -100}
    want = grpc(logit_bias=bias, presence=0.5, frequency=0.25)
    with tandem_client.Client(STACK.coordinator.address, **STACK.client_kwargs()) as c:
        r = c.request(PROMPT, max_tokens=TOKENS, temperature=0, ignore_eos=True,
                      logit_bias=bias, presence_penalty=0.5, frequency_penalty=0.25)
        assert dict(r.sampling.logit_bias) == bias and r.sampling.presence_penalty == 0.5, r
        got = [t for d in c.generate(PROMPT, max_tokens=TOKENS, temperature=0, ignore_eos=True,
                                     logit_bias=bias, presence_penalty=0.5,
                                     frequency_penalty=0.25)
               if isinstance(d, tandem_client.Delta) for t in d.token_ids]
    assert got == want[1], (got, want)


def test_bad_values_are_400_naming_the_field():
    cases = [  # (fields, param, words in the message)
        ({"logit_bias": {"x": 1}}, "logit_bias", "key 'x' is not a token id"),
        ({"logit_bias": {"5": 101}}, "logit_bias", "101 is outside [-100, 100]"),
        ({"presence_penalty": 2.5}, "presence_penalty", "2.5 is outside [-2, 2]"),
        ({"frequency_penalty": -3}, "frequency_penalty", "-3 is outside [-2, 2]"),
        # Past the target's vocabulary: the coordinator's check.
        ({"logit_bias": {"100000": 1}}, "logit_bias",
         "logit_bias token 100000 is outside the vocabulary"),
    ]
    for fields, param, words in cases:
        for endpoint in ("chat", "completions"):
            request = {"model": MODEL, "max_tokens": 4, **fields}
            request["messages" if endpoint == "chat" else "prompt"] = (
                [{"role": "user", "content": "Hi"}] if endpoint == "chat" else "Hi")
            reply = node("generate", endpoint=endpoint, request=request)
            assert "error" in reply, (fields, reply)
            e = reply["error"]
            assert (e["status"], e["name"]) == (400, "BadRequestError"), (fields, e)
            assert words in e["error"]["message"], (fields, e)
            assert e["error"]["param"] == param, (fields, e)
    # More entries than the request limit: 413, as every limit.
    many = {str(i): 1 for i in range(1025)}
    reply = node("generate", endpoint="completions",
                 request={"model": MODEL, "max_tokens": 4, "prompt": "Hi", "logit_bias": many})
    e = reply["error"]
    assert e["status"] == 413 and "sampling.logit_bias is 1025 entries; the limit is 1024" in \
        e["error"]["message"], e


def main():
    global STACK, HTTP
    require = os.path.join(NPM_DIR, "node_modules", "openai", "package.json")
    assert os.path.isfile(require), f"no openai npm package in {NPM_DIR}; run tools/setup.sh"
    with Cluster(coordinator_args=["--http-listen", "127.0.0.1:0"]) as stack:
        STACK = stack
        m = re.search(r"\(http on (\S+)\)", stack.coordinator.startup_line)
        assert m, stack.coordinator.startup_line
        HTTP = f"{SCHEME}://" + m.group(1)
        return opslib.run_tests(globals())


if __name__ == "__main__":
    sys.exit(main())
