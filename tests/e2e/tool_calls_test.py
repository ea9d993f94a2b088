"""Tool calls and reasoning over the real stack on loopback (issue 28), one fixture model per
tool-call family (tools/make_fixture_model --family: random weights, the family's real chat
template and special tokens), through the three processes, with the official `openai` npm
client (tests/e2e/openai_tools_client.mjs):

  - forced calls (tool_choice "required" and a named function) are valid calls of a tool
    whose arguments validate against its schema (judged by ajv) in 50 of 50 seeded runs per
    family, 25 with the draft and 25 without, finish_reason "tool_calls";
  - streamed deltas, reassembled by the SDK, give the non-streamed call;
  - greedy output with tools (required and auto) is the target alone's, token for token,
    with the draft (the template's `datetime` pinned by chat_template_kwargs, as in every
    request here: firefunction-v2 prints the time to the second);
  - the agent loop: a call, the tool's result sent back, the final answer;
  - auto: a fixture built to open a call (--token-bias on the marker) returns it parsed;
  - a reasoning model (DeepSeek-R1's template and tokens): reasoning_content apart from the
    content, and greedy output with a constraint after the reasoning equal to the target
    alone's when the reasoning's end falls inside the draft's window (draft = target's
    weights, so every guess is kept).

Needs TANDEM_BIN, TANDEM_SHARED (set by CTest), Node and the npm packages in $TANDEM_NPM_DIR
(tools/setup.sh); prints "N passed, N failed".
"""
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402
from stacklib import SCHEME, STUBS, Cluster  # noqa: E402

CLIENT = os.path.join(HERE, "openai_tools_client.mjs")
JUDGE = os.path.join(ROOT, "tools", "validate_json_schema.mjs")
NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))
TEMPLATES = os.path.join(os.environ["TANDEM_SHARED"], "models", "chat_templates")
FOLDER = tempfile.mkdtemp(prefix="tandem-tools-")

# Fixture family -> the tool-call format the coordinator detects for it.
FAMILIES = {
    "llama3.1": "llama3_json",
    "hermes": "hermes",
    "mistral-nemo": "mistral",
    "functionary-v3.1": "functionary_v3.1",
    "functionary-v3.2": "functionary_v3.2",
    "firefunction-v2": "firefunction_v2",
    "command-r": "command_r",
    "deepseek-r1": "deepseek_r1",
}
# Bounded, so that a random model's calls end; described, as Command-R's template needs.
WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "maxLength": 10, "description": "A city."},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7,
                                   "description": "How many days."}},
           "required": ["city", "days"], "additionalProperties": False}
ZONE = {"type": "object",
        "properties": {"zone": {"type": "string", "enum": ["UTC", "CET", "PST"],
                                "description": "A time zone."}},
        "required": ["zone"], "additionalProperties": False}
# A random model never ends its reasoning; this one is likelier to (every position).
FLAGS = {"deepseek-r1": ["--token-bias", "</think>=4"]}
SCHEMAS = {"get_weather": WEATHER, "get_time": ZONE}
TOOLS = [{"type": "function", "function": {"name": name, "description": f"{name} tool",
                                           "parameters": schema}}
         for name, schema in SCHEMAS.items()]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
# firefunction-v2's template prints the time to the second: two requests compared token for
# token must pin it (a random model's output shifts with the prompt's digits).
KWARGS = {"datetime": "Jul 26 2024 00:00:00 GMT"}
HTTP = None
STACK = None
FAMILY = None


def make(family, seed, *flags):
    path = os.path.join(FOLDER, f"{family}-{seed}-{len(flags)}.gguf")
    if not os.path.exists(path):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_fixture_model"),
                            "--family", family, "--templates", TEMPLATES, "--seed", str(seed),
                            *flags, "--out-gguf", path],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (family, r.stderr)
    return path


def node(op, requests):
    args = {"op": op, "base_url": HTTP + "/v1", "requests": requests}
    env = {**os.environ, "TANDEM_NPM_DIR": NPM_DIR}
    if stacklib.SECURITY:
        env.update(NODE_EXTRA_CA_CERTS=stacklib.SECURITY.ca, TANDEM_API_KEY=stacklib.SECURITY.key)
    out = subprocess.run(["node", CLIENT, json.dumps(args)], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, f"node {op}: {out.stderr[-3000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def chat(**fields):
    return {"model": "tandem-fixture", "max_tokens": 300, "messages": MESSAGES, "tools": TOOLS,
            "parallel_tool_calls": False, "chat_template_kwargs": KWARGS, **fields}


def judge(lines):
    """ajv's verdicts on {"schema", "text"} lines; asserts all are valid."""
    out = subprocess.run(["node", JUDGE], input="".join(json.dumps(l) + "\n" for l in lines),
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "TANDEM_NPM_DIR": NPM_DIR})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


def check_forced(replies, named=None):
    """Every reply made exactly one call of a tool (`named` when given) with valid arguments."""
    lines = []
    for reply in replies:
        assert "error" not in reply, (FAMILY, reply)
        assert reply["finish_reason"] == "tool_calls", (FAMILY, reply)
        calls = reply["message"]["tool_calls"]
        assert len(calls) == 1, (FAMILY, reply)
        call = calls[0]
        assert call["type"] == "function" and call["id"], (FAMILY, call)
        name = call["function"]["name"]
        assert name in SCHEMAS and (named is None or name == named), (FAMILY, call)
        lines.append({"schema": SCHEMAS[name], "text": call["function"]["arguments"]})
    judge(lines)


def speculation(draft):
    return {"speculation": {"enabled": draft, "draft_tokens": 4}}


def test_forced_calls_are_valid_in_50_of_50_seeded_runs():
    for choice, named in (("required", None),
                          ({"type": "function", "function": {"name": "get_weather"}},
                           "get_weather")):
        requests = [chat(tool_choice=choice, temperature=1.0, seed=seed, **speculation(draft))
                    for seed in range(1, 26) for draft in (True, False)]
        check_forced(node("batch", requests), named)


def test_streamed_deltas_reassemble_to_the_call():
    requests = []
    for seed in (1, 2, 3):
        body = chat(tool_choice="required", temperature=1.0, seed=seed)
        requests += [body, {**body, "stream": True}]
    replies = node("batch", requests)
    for plain, streamed in zip(replies[0::2], replies[1::2]):
        check_forced([plain, streamed])
        a, b = plain["message"]["tool_calls"][0], streamed["message"]["tool_calls"][0]
        assert a["function"] == b["function"], (FAMILY, a, b)
        firsts = [c["choices"][0]["delta"]["tool_calls"][0] for c in streamed["chunks"]
                  if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
        assert firsts and firsts[0]["id"] == b["id"] and firsts[0]["index"] == 0, firsts
        assert all("id" not in f for f in firsts[1:]), firsts


def grpc_request(choice_mode, speculate, **fields):
    r = STUBS.generator_pb2.GenerateRequest(max_tokens=300)
    r.chat.messages.add(role="user", content="What is the weather in Paris?")
    r.chat.add_generation_prompt = True
    r.chat.template_kwargs_json = json.dumps(KWARGS)
    for name, schema in SCHEMAS.items():
        r.chat.tools.add(name=name, parameters_json=json.dumps(schema))
    r.tool_choice.mode = choice_mode
    r.parallel_tool_calls = False
    r.sampling.temperature = 0.0
    r.speculation.enabled = speculate
    r.speculation.draft_tokens = 4
    for key, value in fields.items():
        setattr(r, key, value)
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


def test_greedy_output_with_tools_is_the_target_alones():
    mode = STUBS.generator_pb2.ToolChoice
    for choice in (mode.MODE_REQUIRED, mode.MODE_AUTO):
        _, alone, _ = generate(grpc_request(choice, False))
        _, drafted, final = generate(grpc_request(choice, True))
        assert drafted == alone, (FAMILY, choice, drafted, alone)
        assert final.speculation.drafted_tokens > 0, (FAMILY, final.speculation)
        if choice == mode.MODE_REQUIRED:
            assert len(final.tool_calls) == 1, (FAMILY, final)


def test_agent_loop_call_result_answer():
    reply = node("loop", [chat(tool_choice="required", temperature=0, max_tokens=300)])
    assert reply["first"]["tool_calls"], reply
    assert not reply["second"].get("tool_calls"), reply
    assert reply["second_finish_reason"] in ("stop", "length"), reply
    assert isinstance(reply["second"]["content"], str), reply


def test_tandem_chat_prints_the_call():
    if FAMILY != "hermes":
        return
    tools = os.path.join(FOLDER, "tools.json")
    with open(tools, "w") as f:
        json.dump(TOOLS, f)
    args = [os.path.join(stacklib.BIN, "tandem-chat"), "--server", STACK.coordinator.address,
            "--tools", tools, "--tool-choice", "get_time", "--temp", "0", "-p", "What time?"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "[tool call call_" in out.stdout and "] get_time({" in out.stdout, out.stdout
    # The Python client: the call whole in the reply, and a tool loop's history sent back.
    sys.path.insert(0, os.path.join(ROOT, "client", "python"))
    import tandem_client
    with tandem_client.Client(STACK.coordinator.address) as client:
        reply = client.chat(MESSAGES, tools=TOOLS, tool_choice="required", temperature=0,
                            max_tokens=300, parallel_tool_calls=False)
        assert len(reply.tool_calls) == 1 and reply.tool_calls[0].id.startswith("call_"), reply
        call = reply.tool_calls[0]
        history = MESSAGES + [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call.id, "type": "function",
                 "function": {"name": call.name, "arguments": call.arguments}}]},
            {"role": "tool", "tool_call_id": call.id, "content": "21 degrees"}]
        answer = client.chat(history, tools=TOOLS, tool_choice="none", max_tokens=20)
        assert not answer.tool_calls and answer.result.generated_tokens > 0, answer


def run_family(family):
    global STACK, HTTP, FAMILY
    FAMILY = family
    target, draft = make(family, 1, *FLAGS.get(family, [])), make(family, 2, *FLAGS.get(family, []))
    with Cluster(target_model=target, draft_model=draft,
                 coordinator_args=["--http-listen", "127.0.0.1:0"]) as stack:
        STACK = stack
        HTTP = f"{SCHEME}://" + stacklib.http_address(stack.coordinator)
        log = open(os.path.join(stack.dir, "coordinator.log")).read()
        assert f"tool calls: {FAMILIES[family]}" in log, (family, log[-2000:])
        tests = {k: v for k, v in globals().items()
                 if k.startswith("test_") and not k.startswith("test_only_")}
        print(f"== {family}", flush=True)
        return opslib.run_tests(tests)


def test_only_auto_returns_the_call_a_biased_model_opens():
    # A Hermes fixture built to open a call: auto lets it, then constrains the call.
    global STACK, HTTP
    target = make("hermes", 1, "--token-bias", "<tool_call>=30")
    with Cluster(target_model=target, draft_model=target,
                 coordinator_args=["--http-listen", "127.0.0.1:0"]) as stack:
        HTTP = f"{SCHEME}://" + stacklib.http_address(stack.coordinator)
        replies = node("batch", [chat(tool_choice="auto", temperature=1.0, seed=s)
                                 for s in (1, 2, 3)])
        check_forced(replies)


def test_reasoning_is_split_from_the_content():
    if FAMILY != "deepseek-r1":
        return
    requests = [{"model": "tandem-fixture", "max_tokens": 60, "temperature": 1.0, "seed": seed,
                 "messages": MESSAGES, "stream": stream}
                for seed in (1, 2, 3, 4) for stream in (False, True)]
    replies = node("batch", requests)
    reasoned = 0
    for plain, streamed in zip(replies[0::2], replies[1::2]):
        # The SDK does not reassemble reasoning_content (not OpenAI's): the chunks' pieces do.
        deltas = [c["choices"][0]["delta"] for c in streamed["chunks"] if c["choices"]]
        for key in ("content", "reasoning_content"):
            pieces = "".join(d.get(key) or "" for d in deltas)
            assert (plain["message"].get(key) or "") == pieces, (key, plain, deltas)
        reasoning = plain["message"].get("reasoning_content") or ""
        assert "<think>" not in reasoning[:7] and "</think>" not in reasoning, plain
        reasoned += bool(reasoning)
    assert reasoned > 0, replies


def test_only_a_constraint_after_the_reasoning_is_exact_when_its_end_is_in_the_window():
    # DeepSeek-R1's template opens <think> in the prompt; the constraint (a forced call)
    # starts after "</think>". The draft has the target's weights, so its guesses are kept
    # and the reasoning's end falls inside a draft window; the output must not change.
    global STACK, HTTP
    target = make("deepseek-r1", 1, *FLAGS["deepseek-r1"])
    with Cluster(target_model=target, draft_model=target,
                 coordinator_args=["--http-listen", "127.0.0.1:0"]) as stack:
        STACK = stack
        mode = STUBS.generator_pb2.ToolChoice
        outputs = {}
        for k in (1, 4, 8):
            r = grpc_request(mode.MODE_REQUIRED, True)
            r.speculation.draft_tokens = k
            r.max_tokens = 300
            text, ids, final = generate(r)
            outputs[k] = ids
            assert len(final.tool_calls) == 1, final
            assert final.speculation.accepted_tokens > 0, final.speculation
        _, alone, _ = generate(grpc_request(mode.MODE_REQUIRED, False, max_tokens=300))
        assert outputs[1] == alone and outputs[4] == alone and outputs[8] == alone, outputs
        # auto: free text (the lazy grammar) where the draft's guesses are kept.
        _, alone, _ = generate(grpc_request(mode.MODE_AUTO, False))
        for k in (1, 4, 8):
            r = grpc_request(mode.MODE_AUTO, True)
            r.speculation.draft_tokens = k
            _, ids, final = generate(r)
            assert ids == alone, (k, ids, alone)
            assert final.speculation.accepted_tokens > 0, final.speculation


def main():
    for package in ("openai", "ajv"):
        manifest = os.path.join(NPM_DIR, "node_modules", package, "package.json")
        assert os.path.isfile(manifest), f"no {package} npm package in {NPM_DIR}; run tools/setup.sh"
    failed = 0
    for family in FAMILIES:
        failed += run_family(family)
    failed += opslib.run_tests({k: v for k, v in globals().items() if k.startswith("test_only_")})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
