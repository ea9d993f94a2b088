"""Structured outputs over the real stack on loopback (stories260K target + its distilled draft),
through the three processes: constrained greedy output is the same token for token for the
target alone, the model draft at k = 1, 4 and 8 (pipelined too) and the n-gram drafter, for a
JSON Schema, a regex and a GBNF grammar; seeded Gumbel-coupled output is the same for every
drafter; seeded standard sampling gives outputs that parse and validate (judged by ajv,
tools/validate_json_schema.mjs, not by the engine). Over HTTP, the official `openai` npm
client: response_format json_schema streamed and not, and chat.completions.parse / .stream with
a zod schema; bad constraints get a 400 naming the culprit.

Needs TANDEM_BIN, TANDEM_SHARED (set by CTest), Node and the npm packages in $TANDEM_NPM_DIR
(tools/setup.sh); prints "N passed, N failed".
"""
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402
from stacklib import SCHEME, STUBS, Cluster  # noqa: E402

CLIENT = os.path.join(HERE, "openai_structured_client.mjs")
JUDGE = os.path.join(ROOT, "tools", "validate_json_schema.mjs")
NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))
STACK = None
HTTP = None
MODEL = "llama"  # general.name of stories260K

# Bounded so that the tiny model's output always ends well within max_tokens.
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 99},
        "good": {"type": "boolean"},
        "friends": {"type": "array", "items": {"type": "string", "maxLength": 8},
                    "maxItems": 3},
    },
    "required": ["name", "age", "good", "friends"],
    "additionalProperties": False,
}
REGEX = r"[A-Z][a-z]{1,8}( [a-z]{1,8}){2,5}\."
GBNF = 'root ::= "Tom has " [1-9] " " ("cats" | "dogs") "."\n'
CONSTRAINTS = {
    "json_schema": lambda c: c.json_schema.CopyFrom(
        STUBS.common_pb2.JsonSchemaConstraint(schema=json.dumps(PERSON))),
    "regex": lambda c: setattr(c, "regex", REGEX),
    "grammar": lambda c: setattr(c, "grammar", GBNF),
}
# Drafters: (name, speculation fields).
DRAFTERS = [
    ("target alone", dict(enabled=False)),
    ("draft k=1", dict(draft_tokens=1)),
    ("draft k=4", dict(draft_tokens=4)),
    ("draft k=8", dict(draft_tokens=8)),
    ("draft k=4 pipelined", dict(draft_tokens=4, pipelined=True)),
    ("n-gram", dict(method=STUBS.generator_pb2.SPECULATION_METHOD_NGRAM)),
]


def request(kind, speculation, temperature=0.0, seed=None, coupling=None):
    r = STUBS.generator_pb2.GenerateRequest(max_tokens=200)
    r.chat.messages.add(role="user", content="Tell me about a friend.")
    r.chat.add_generation_prompt = True
    r.sampling.temperature = temperature
    if seed is not None:
        r.sampling.seed = seed
    CONSTRAINTS[kind](r.constraint)
    for field, value in speculation.items():
        setattr(r.speculation, field, value)
    if coupling is not None:
        r.speculation.coupling = coupling
    return r


def generate(r):
    text, ids, final = "", [], None
    for m in STACK.stub.Generate(r, timeout=120):
        if m.HasField("delta"):
            text += m.delta.text
            ids.extend(m.delta.token_ids)
        else:
            final = m.final
    return text, ids, final


def judge(lines):
    """ajv's verdicts on {"schema", "text"} lines; asserts all are valid."""
    out = subprocess.run(["node", JUDGE], input="".join(json.dumps(l) + "\n" for l in lines),
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "TANDEM_NPM_DIR": NPM_DIR})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


def check_valid(kind, text):
    if kind == "json_schema":
        judge([{"schema": PERSON, "text": text}])
    elif kind == "regex":
        assert re.fullmatch(REGEX, text), text
    else:
        assert re.fullmatch(r"Tom has [1-9] (cats|dogs)\.", text), text


def test_constrained_greedy_output_is_the_same_for_every_drafter():
    for kind in CONSTRAINTS:
        outputs = {}
        for name, speculation in DRAFTERS:
            text, ids, final = generate(request(kind, speculation))
            assert final.finish_reason == STUBS.generator_pb2.FINISH_REASON_STOP_TOKEN, (kind, name, final)
            outputs[name] = ids
            check_valid(kind, text)
            spec = final.speculation
            if name.startswith("draft"):  # the draft really guessed, under the constraint
                assert spec.drafted_tokens > 0 and spec.accepted_tokens > 0, (kind, name, spec)
            if kind == "json_schema" and name != "target alone":  # the keys are forced
                assert spec.forced_tokens > 0, (kind, name, spec)
        alone = outputs["target alone"]
        for name, ids in outputs.items():
            assert ids == alone, (kind, name, ids, alone)
    # Both workers masked, and said how long it took.
    for worker in (STACK.targets[0], STACK.draft):
        assert stacklib.metric(worker.metrics, "tandem_worker_constraint_mask_seconds_count") > 0


def test_seeded_gumbel_output_is_the_same_for_every_drafter():
    gumbel = STUBS.common_pb2.COUPLING_GUMBEL
    for kind in CONSTRAINTS:
        for seed in (1, 2):
            outputs = {}
            for name, speculation in DRAFTERS:
                text, ids, _ = generate(request(kind, speculation, temperature=0.9, seed=seed,
                                                coupling=gumbel))
                outputs[name] = ids
                check_valid(kind, text)
            for name, ids in outputs.items():
                assert ids == outputs["target alone"], (kind, seed, name)


def test_seeded_sampled_outputs_are_valid_with_and_without_speculation():
    lines = []
    for seed in range(1, 7):
        for name, speculation in DRAFTERS:
            text, _, final = generate(request("json_schema", speculation, temperature=1.0,
                                              seed=seed))
            assert final.finish_reason == STUBS.generator_pb2.FINISH_REASON_STOP_TOKEN, (seed, name)
            lines.append({"schema": PERSON, "text": text})
    judge(lines)


def chi_square_p_value(statistic, dof):
    """P(X >= statistic) for X ~ chi-square(dof): the regularized upper incomplete gamma
    Q(dof/2, statistic/2), by its series (x < a + 1) or its continued fraction."""
    import math
    a, x = dof / 2.0, statistic / 2.0
    if x <= 0:
        return 1.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:  # P(a, x) = e^-x x^a / Gamma(a) * sum x^n / (a (a+1) ... (a+n))
        term = total = 1.0 / a
        n = a
        while term > total * 1e-15:
            n += 1
            term *= x / n
            total += term
        return 1.0 - total * math.exp(log_front)
    # Lentz's method for the continued fraction of Q(a, x).
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return math.exp(log_front) * h


def test_sampled_constrained_outputs_with_a_draft_are_distributed_as_the_targets():
    # Two-sample chi-square at 0.001 over the first three tokens of a regex-constrained
    # output: 400 seeds with the model draft (standard coupling) against 400 other seeds with
    # the target alone. Outputs seen fewer than 10 times in all are pooled.
    from collections import Counter
    regex = "(Tom|Sue|Max|Ann|Bob) (ran|sat|ate|hid|saw) [a-z]{1,6}"
    samples = {}
    for name, speculation, seeds in (("draft", dict(draft_tokens=4), range(1, 401)),
                                     ("alone", dict(enabled=False), range(1001, 1401))):
        counts = Counter()
        for seed in seeds:
            r = request("regex", speculation, temperature=1.0, seed=seed)
            r.constraint.regex = regex
            r.max_tokens = 3
            _, ids, _ = generate(r)
            counts[tuple(ids)] += 1
        samples[name] = counts
    total = samples["draft"] + samples["alone"]
    pooled = {k: ("other" if total[k] < 10 else k) for k in total}
    cells = sorted(set(pooled.values()), key=str)
    table = {name: Counter() for name in samples}
    for name, counts in samples.items():
        for k, n in counts.items():
            table[name][pooled[k]] += n
    assert len(cells) >= 3, cells
    statistic = 0.0
    for cell in cells:
        column = table["draft"][cell] + table["alone"][cell]
        for name in table:
            expected = column * 400 / 800
            statistic += (table[name][cell] - expected) ** 2 / expected
    p = chi_square_p_value(statistic, len(cells) - 1)
    assert p > 0.001, (statistic, len(cells), p, table)


def node(op, **fields):
    args = {"op": op, "base_url": HTTP + "/v1",
            "request": {"model": MODEL, "max_tokens": 200, "temperature": 0,
                        "messages": [{"role": "user", "content": "Tell me about a friend."}],
                        **fields}}
    env = {**os.environ, "TANDEM_NPM_DIR": NPM_DIR}
    if stacklib.SECURITY:
        env.update(NODE_EXTRA_CA_CERTS=stacklib.SECURITY.ca, TANDEM_API_KEY=stacklib.SECURITY.key)
    out = subprocess.run(["node", CLIENT, json.dumps(args)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, f"node {op}: {out.stderr[-2000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def json_schema_format():
    return {"type": "json_schema",
            "json_schema": {"name": "person", "schema": PERSON, "strict": True}}


def test_openai_client_json_schema_streamed_and_not():
    plain = node("create", response_format=json_schema_format())
    text = plain["choices"][0]["message"]["content"]
    assert plain["choices"][0]["finish_reason"] == "stop", plain
    judge([{"schema": PERSON, "text": text}])
    streamed = node("create", response_format=json_schema_format(), stream=True)
    deltas = "".join(c["choices"][0]["delta"].get("content") or ""
                     for c in streamed["chunks"] if c["choices"])
    assert deltas == text, (deltas, text)
    grpc_text, _, _ = generate(request("json_schema", {}))
    assert grpc_text == text, (grpc_text, text)


def test_openai_client_parse_with_a_zod_schema_streamed_and_not():
    for op in ("parse", "stream_parse"):
        reply = node(op)
        assert reply["finish_reason"] == "stop", reply
        parsed = reply["parsed"]
        assert parsed == json.loads(reply["content"]), reply
        assert set(parsed) == {"name", "age", "good", "friends"}, parsed
        assert 0 <= parsed["age"] <= 99 and len(parsed["friends"]) <= 3, parsed


def post(body):
    data = json.dumps({"model": MODEL, "max_tokens": 8,
                       "messages": [{"role": "user", "content": "hi"}], **body}).encode()
    req = urllib.request.Request(HTTP + "/v1/chat/completions", data=data,
                                 headers={"Content-Type": "application/json"})
    try:  # (in TLS mode stacklib's installed opener speaks HTTPS and sends the key)
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_bad_constraints_get_400_naming_the_culprit():
    cases = [
        ({"response_format": {"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"type": "object", "not": {"type": "null"}}}}}, "'not'"),
        ({"response_format": {"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"type": "strin"}}}}, "strin"),
        ({"regex": "a(b"}, "regex"),
        ({"regex": "(a)\\1"}, "backreference"),
        ({"grammar": "root ::= undefined-rule"}, "undefined-rule"),
        ({"grammar": "expr ::= expr \"+\" \"1\" | \"1\"\nroot ::= expr"}, "left recursion"),
        ({"regex": "a", "grammar": "root ::= \"a\""}, "regex"),
    ]
    for body, culprit in cases:
        status, reply = post(body)
        assert status == 400, (body, status, reply)
        message = reply["error"]["message"]
        assert culprit.lower() in message.lower(), (body, message)


def main():
    global STACK, HTTP
    for package in ("openai", "zod", "ajv"):
        manifest = os.path.join(NPM_DIR, "node_modules", package, "package.json")
        assert os.path.isfile(manifest), f"no {package} npm package in {NPM_DIR}; run tools/setup.sh"
    with Cluster(coordinator_args=["--http-listen", "127.0.0.1:0"]) as stack:
        STACK = stack
        m = re.search(r"\(http on (\S+)\)", stack.coordinator.startup_line)
        assert m, stack.coordinator.startup_line
        HTTP = f"{SCHEME}://" + m.group(1)
        return opslib.run_tests(globals())


if __name__ == "__main__":
    sys.exit(main())
