"""Anthropic's Messages API and OpenAI's Responses API on the coordinator's HTTP front (issue
30), over the real stack on loopback (a Hermes-family fixture model as target and draft:
tools/make_fixture_model), through the official npm clients: `@anthropic-ai/sdk`
(anthropic_messages_client.mjs) and `openai`'s client.responses
(openai_responses_client.mjs):

  - greedy output through either API, streamed and not, equals the same request through
    chat completions (text, usage, the finish reason mapped);
  - the streams' events are in order (message_start ... message_stop; response.created ...
    response.completed with sequence numbers 0, 1, 2, ...) and the SDKs reassemble them into
    the plain reply;
  - tool round trips: a forced call (tool_choice any / required) parsed by the SDK with valid
    arguments, the result sent back, the final answer; streamed calls equal plain ones;
  - count_tokens equals the chat completion's prompt_tokens for the same conversation;
  - text.format json_schema equals chat's response_format for the same greedy request;
  - a reasoning model's reasoning (DeepSeek-R1's fixture) is a `thinking` block and a
    `reasoning` item, equal to chat's reasoning_content;
  - refusals: Anthropic's error shape naming the field (no max_tokens, `thinking`), the
    Responses API's stateful fields (previous_response_id, store true, built-in tools) with
    error.param, and 404 for stored responses.

Needs TANDEM_BIN, TANDEM_SHARED (set by CTest), Node and the npm packages in $TANDEM_NPM_DIR
(tools/setup.sh); prints "N passed, N failed".
"""
import json
import os
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402
from stacklib import SCHEME, Cluster  # noqa: E402

NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))
TEMPLATES = os.path.join(os.environ["TANDEM_SHARED"], "models", "chat_templates")
FOLDER = tempfile.mkdtemp(prefix="tandem-apis-")
MODEL = "tandem-fixture"
HTTP = None
WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "maxLength": 10},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7}},
           "required": ["city", "days"], "additionalProperties": False}
SYSTEM = "You are terse."
QUESTION = "What is the weather in Paris?"


def make(seed, family="hermes", *flags):
    path = os.path.join(FOLDER, f"{family}-{seed}.gguf")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_fixture_model"),
                        "--family", family, "--templates", TEMPLATES, "--seed", str(seed),
                        *flags, "--out-gguf", path], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return path


def node(client, op, requests, base):
    args = {"op": op, "base_url": base, "requests": requests}
    env = {**os.environ, "TANDEM_NPM_DIR": NPM_DIR}
    if stacklib.SECURITY:
        env.update(NODE_EXTRA_CA_CERTS=stacklib.SECURITY.ca, TANDEM_API_KEY=stacklib.SECURITY.key)
    out = subprocess.run(["node", os.path.join(HERE, client), json.dumps(args)],
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, f"node {client} {op}: {out.stderr[-3000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def anthropic(op, requests):
    return node("anthropic_messages_client.mjs", op, requests, HTTP)


def responses(op, requests):
    return node("openai_responses_client.mjs", op, requests, HTTP + "/v1")


def chat(requests):
    return node("openai_tools_client.mjs", "batch", requests, HTTP + "/v1")


def raw(method, path, body=None, headers=None):
    """(status, parsed JSON body) of one plain HTTP request."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(HTTP + path, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})})
    if stacklib.SECURITY and "x-api-key" not in (headers or {}):
        request.add_header("Authorization", f"Bearer {stacklib.SECURITY.key}")
    context = ssl.create_default_context(cafile=stacklib.SECURITY.ca) if stacklib.SECURITY else None
    try:
        with urllib.request.urlopen(request, timeout=60, context=context) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def chat_request(**fields):
    return {"model": MODEL, "max_tokens": 24, "temperature": 0,
            "messages": [{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": QUESTION}], **fields}


def messages_request(**fields):
    return {"model": MODEL, "max_tokens": 24, "temperature": 0, "system": SYSTEM,
            "messages": [{"role": "user", "content": QUESTION}], **fields}


def responses_request(**fields):
    return {"model": MODEL, "max_output_tokens": 24, "temperature": 0, "instructions": SYSTEM,
            "input": QUESTION, **fields}


def text_of(message):
    return "".join(b["text"] for b in message["content"] if b["type"] == "text")


def test_messages_greedy_equals_chat_completions_streamed_and_not():
    [expected] = chat([chat_request()])
    plain, streamed = anthropic("batch", [messages_request(), messages_request(stream=True)])
    for reply in (plain, streamed):
        assert reply.get("error") is None, reply
        assert text_of(reply) == expected["message"]["content"], (reply, expected)
        want = {"length": "max_tokens", "stop": "end_turn"}[expected["finish_reason"]]
        assert reply["stop_reason"] == want, reply
        assert reply["role"] == "assistant" and reply["type"] == "message", reply
        assert reply["usage"]["output_tokens"] > 0, reply
    assert plain["usage"]["input_tokens"] == streamed["usage"]["input_tokens"] > 0
    assert plain["usage"]["output_tokens"] == streamed["usage"]["output_tokens"]


def test_messages_stream_events_are_in_anthropic_order():
    [reply] = anthropic("batch", [messages_request(stream=True)])
    types = [e["type"] for e in reply["events"]]
    assert types[0] == "message_start" and types[-1] == "message_stop", types
    assert types[-2] == "message_delta", types
    starts = [e["index"] for e in reply["events"] if e["type"] == "content_block_start"]
    stops = [e["index"] for e in reply["events"] if e["type"] == "content_block_stop"]
    assert starts == stops == list(range(len(reply["content"]))), (starts, stops)


def test_messages_stop_sequence_is_named():
    [plain] = anthropic("batch", [messages_request(max_tokens=40)])
    text = text_of(plain)
    if len(text) < 4:
        return  # nothing to stop on
    stop = text[2:4]
    [stopped] = anthropic("batch", [messages_request(max_tokens=40, stop_sequences=[stop])])
    assert stopped["stop_reason"] == "stop_sequence" and stopped["stop_sequence"] == stop, stopped
    assert text_of(stopped) == text[:text.index(stop)], (stopped, text)


def tool_messages(**fields):
    tools = [{"name": "get_weather", "description": "The weather.", "input_schema": WEATHER}]
    return messages_request(max_tokens=120, tools=tools,
                            tool_choice={"type": "any", "disable_parallel_tool_use": True},
                            **fields)


def check_weather_input(arguments):
    assert set(arguments) == {"city", "days"}, arguments
    assert isinstance(arguments["city"], str) and len(arguments["city"]) <= 10, arguments
    assert isinstance(arguments["days"], int) and 1 <= arguments["days"] <= 7, arguments


def test_messages_tool_round_trip():
    plain, streamed = anthropic("batch", [tool_messages(), tool_messages(stream=True)])
    for reply in (plain, streamed):
        assert reply["stop_reason"] == "tool_use", reply
        [use] = [b for b in reply["content"] if b["type"] == "tool_use"]
        assert use["name"] == "get_weather" and use["id"], use
        check_weather_input(use["input"])
    assert [b["input"] for b in plain["content"] if b["type"] == "tool_use"] == \
        [b["input"] for b in streamed["content"] if b["type"] == "tool_use"]
    loop = anthropic("loop", [tool_messages()])
    assert loop["first"]["stop_reason"] == "tool_use", loop
    assert loop["second"]["stop_reason"] in ("end_turn", "max_tokens"), loop
    assert all(b["type"] != "tool_use" for b in loop["second"]["content"]), loop


def test_count_tokens_equals_the_chat_prompt_tokens():
    tools = [{"name": "get_weather", "description": "The weather.", "input_schema": WEATHER}]
    counted = anthropic("count", [{"model": MODEL, "system": SYSTEM,
                                   "messages": [{"role": "user", "content": QUESTION}]},
                                  {"model": MODEL, "system": SYSTEM, "tools": tools,
                                   "messages": [{"role": "user", "content": QUESTION}]}])
    _, plain = raw("POST", "/v1/chat/completions", chat_request(max_tokens=1))
    chat_tools = [{"type": "function", "function": {"name": "get_weather", "description":
                                                    "The weather.", "parameters": WEATHER}}]
    _, with_tools = raw("POST", "/v1/chat/completions",
                        chat_request(max_tokens=1, tools=chat_tools, tool_choice="none"))
    assert counted[0]["input_tokens"] == plain["usage"]["prompt_tokens"] > 0, (counted, plain)
    assert counted[1]["input_tokens"] == with_tools["usage"]["prompt_tokens"], (counted, with_tools)
    assert counted[1]["input_tokens"] > counted[0]["input_tokens"], counted


def test_messages_refusals_in_anthropic_shape():
    no_max = messages_request()
    del no_max["max_tokens"]
    cases = [(no_max, "max_tokens"),
             (messages_request(thinking={"type": "enabled", "budget_tokens": 1024}), "thinking"),
             (messages_request(messages=[{"role": "user", "content": [
                 {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                              "data": "AA=="}}]}]), "messages[0].content[0]")]
    replies = anthropic("batch", [c for c, _ in cases])
    for reply, (_, field) in zip(replies, cases):
        assert reply["error"]["status"] == 400, reply
        body = reply["error"]["body"]
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error", body
        assert field in body["error"]["message"], (field, body)
    status, body = raw("POST", "/v1/messages", messages_request(model="claude-x"))
    assert status == 404 and body["error"]["type"] == "not_found_error", body


def test_responses_greedy_equals_chat_completions_streamed_and_not():
    [expected] = chat([chat_request()])
    plain, streamed = responses("batch", [responses_request(), responses_request(stream=True)])
    for reply in (plain, streamed):
        assert reply.get("error") is None, reply
        assert reply["output_text"] == expected["message"]["content"], (reply, expected)
        want = {"length": "incomplete", "stop": "completed"}[expected["finish_reason"]]
        assert reply["status"] == want, reply
        assert reply["usage"]["total_tokens"] == \
            reply["usage"]["input_tokens"] + reply["usage"]["output_tokens"], reply
    assert plain["usage"] == streamed["usage"], (plain["usage"], streamed["usage"])


def test_responses_stream_events_are_numbered_in_order():
    [reply] = responses("batch", [responses_request(stream=True)])
    events = reply["events"]
    assert [e["sequence_number"] for e in events] == list(range(len(events))), events
    types = [e["type"] for e in events]
    assert types[:2] == ["response.created", "response.in_progress"], types
    assert types[-1] in ("response.completed", "response.incomplete"), types
    for t in ("response.output_item.added", "response.content_part.added",
              "response.output_text.delta", "response.output_text.done",
              "response.content_part.done", "response.output_item.done"):
        assert t in types, (t, types)


def tool_responses(**fields):
    tools = [{"type": "function", "name": "get_weather", "description": "The weather.",
              "parameters": WEATHER}]
    return responses_request(max_output_tokens=120, tools=tools, tool_choice="required",
                             parallel_tool_calls=False,
                             input=[{"role": "user", "content": QUESTION}], **fields)


def test_responses_tool_round_trip():
    plain, streamed = responses("batch", [tool_responses(), tool_responses(stream=True)])
    for reply in (plain, streamed):
        assert reply.get("error") is None, reply
        [call] = [i for i in reply["output"] if i["type"] == "function_call"]
        assert call["name"] == "get_weather" and call["call_id"], call
        check_weather_input(json.loads(call["arguments"]))
    if "events" in streamed:
        types = [e["type"] for e in streamed["events"]]
        assert "response.function_call_arguments.delta" in types, types
        assert "response.function_call_arguments.done" in types, types
    loop = responses("loop", [tool_responses()])
    assert all(i["type"] != "function_call" for i in loop["second"]["output"]), loop


def test_responses_text_format_equals_chat_response_format():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    [expected] = chat([chat_request(max_tokens=40, response_format={
        "type": "json_schema", "json_schema": {"name": "s", "schema": schema}})])
    [reply] = responses("batch", [responses_request(max_output_tokens=40, text={
        "format": {"type": "json_schema", "name": "s", "schema": schema}})])
    assert reply["output_text"] == expected["message"]["content"], (reply, expected)


def test_responses_refuses_state_and_built_in_tools():
    cases = [(responses_request(previous_response_id="resp_1"), "previous_response_id"),
             (responses_request(store=True), "store"),
             (responses_request(tools=[{"type": "web_search"}]), "tools[0].type"),
             (responses_request(background=True), "background")]
    for body, param in cases:
        status, reply = raw("POST", "/v1/responses", body)
        assert status == 400 and reply["error"]["param"] == param, (param, reply)
    [ok] = responses("batch", [responses_request(store=False)])
    assert ok.get("error") is None, ok
    for method in ("GET", "DELETE"):
        status, reply = raw(method, "/v1/responses/resp_1")
        assert status == 404 and "stored" in reply["error"]["message"], reply


def test_x_api_key_is_accepted():
    if not stacklib.SECURITY:
        return  # no keys without TLS in this harness
    status, _ = raw("POST", "/v1/messages/count_tokens",
                    {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
                    headers={"x-api-key": stacklib.SECURITY.key})
    assert status == 200
    status, body = raw("POST", "/v1/messages/count_tokens",
                       {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
                       headers={"x-api-key": "wrong"})
    assert status == 401 and body["error"]["type"] == "authentication_error", body


def test_only_reasoning_is_a_thinking_block_and_a_reasoning_item():
    # A reasoning model (DeepSeek-R1's template and tokens): chat's reasoning_content is the
    # Messages API's thinking block and the Responses API's reasoning item, streamed or not.
    global HTTP
    target = make(1, "deepseek-r1")  # greedy, it reasons to the end of max_tokens
    with Cluster(target_model=target, draft_model=target,
                 coordinator_args=["--http-listen", "127.0.0.1:0"]) as stack:
        HTTP = f"{SCHEME}://" + stacklib.http_address(stack.coordinator)
        [expected] = chat([chat_request(max_tokens=40)])
        reasoning = expected["message"].get("reasoning_content") or ""
        assert reasoning, expected
        for reply in anthropic("batch", [messages_request(max_tokens=40),
                                         messages_request(max_tokens=40, stream=True)]):
            thinking = [b["thinking"] for b in reply["content"] if b["type"] == "thinking"]
            assert thinking == [reasoning], (reply, expected)
            assert text_of(reply) == (expected["message"]["content"] or ""), (reply, expected)
        for reply in responses("batch", [responses_request(max_output_tokens=40),
                                         responses_request(max_output_tokens=40, stream=True)]):
            items = [i for i in reply["output"] if i["type"] == "reasoning"]
            assert [i["content"][0]["text"] for i in items] == [reasoning], (reply, expected)
            assert reply["output_text"] == (expected["message"]["content"] or ""), reply


def main():
    global HTTP
    for package in ("openai", "@anthropic-ai/sdk"):
        manifest = os.path.join(NPM_DIR, "node_modules", package, "package.json")
        assert os.path.isfile(manifest), f"no {package} npm package in {NPM_DIR}; run tools/setup.sh"
    target, draft = make(1), make(2)
    with Cluster(target_model=target, draft_model=draft,
                 coordinator_args=["--http-listen", "127.0.0.1:0"]) as stack:
        HTTP = f"{SCHEME}://" + stacklib.http_address(stack.coordinator)
        failed = opslib.run_tests({k: v for k, v in globals().items()
                                   if k.startswith("test_") and not k.startswith("test_only_")})
    return failed | opslib.run_tests({k: v for k, v in globals().items()
                                      if k.startswith("test_only_")})


if __name__ == "__main__":
    sys.exit(main())
