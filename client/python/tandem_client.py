"""Tandem from Python: a small client of the coordinator's tandem.v1.Generator service.

    import tandem_client

    with tandem_client.Client("127.0.0.1:7000", api_key="KEY", root_certificates="ca.crt",
                              certificate_chain="client.crt", private_key="client.key") as c:
        for event in c.generate("Once upon a time", max_tokens=32, temperature=0):
            if isinstance(event, tandem_client.Delta):
                print(event.text, end="", flush=True)
            else:                       # the last event: a Result
                print("\\n", event.generated_tokens, "tokens,", event.finish_reason)
        reply = c.chat([{"role": "user", "content": "Hello"}], max_tokens=16)
        print(reply.text, reply.result.seed)
        print(c.tokenize("Hello"))

Client(address, *, root_certificates=None, certificate_chain=None, private_key=None,
       tls=False, server_name=None, api_key=None, connect_timeout=5.0)
    address            HOST:PORT of a coordinator.
    root_certificates  the CA (a PEM file path, or its bytes) the server's certificate must be
                       signed by; turns TLS on. tls=True alone uses the system's CAs.
    certificate_chain, private_key
                       the client's own certificate and key (mutual TLS), paths or bytes.
    server_name        the name the server's certificate must carry, when not the host.
    api_key            sent on every call as the metadata `authorization: Bearer KEY`.
    connect_timeout    seconds to wait for the connection (None: do not wait here).
  generate(prompt=None, *, messages=None, token_ids=None, **options)
    Exactly one prompt: text (tokenized as is), messages (a conversation rendered with the
    model's chat template: dicts with role and content, or (role, content) pairs) or token
    ids. Yields Delta(text, token_ids, logprobs, reasoning, tool_calls, choice) as the reply
    streams (reasoning: a reasoning model's <think> text; tool_calls: ToolCallDelta(index, id,
    name, arguments) pieces, id and name in a call's first; choice: 0, or with n > 1 the
    choice's index), then one Result (per choice with n > 1). A message dict may
    carry OpenAI's tool_calls and tool_call_id.
    Leaving the loop early cancels the request (the server frees its caches).
  chat(messages, **options) -> Reply(text, token_ids, logprobs, result, reasoning, tool_calls):
    generate() collected; tool_calls are ToolCall(id, name, arguments) (arguments JSON text).
  tokenize(text=None, *, messages=None, add_special=True, parse_special=False) -> [int]
  describe() -> the DescribeModelResponse message; close_session(session_id).

options (unset ones take the server's defaults, tandem.v1.SamplingParams): max_tokens,
temperature, top_k, top_p, min_p, repetition_penalty, penalty_window, seed, logit_bias ({token
id: bias in [-100, 100]}, -100 bans), presence_penalty, frequency_penalty, stop (strings),
stop_token_ids, speculation (bool), draft_tokens, adaptive, session_id,
require_existing_session, ignore_eos, logprobs, top_logprobs, format (a built-in chat format),
add_generation_prompt (default True), chat_template_kwargs (a dict of chat-template variables
over the server's own, e.g. {"datetime": ...} to pin a template's clock), timeout (seconds for
the whole request), tools (OpenAI's list), tool_choice ("auto", "none", "required" or a
tool's name), parallel_tool_calls, prediction (the text the reply is expected to mostly be,
or a list of token ids: OpenAI's Predicted Outputs; Result.usage.accepted_prediction_tokens
counts its guesses kept), n (choices, each Delta and Result saying which in `choice`; the
last Result's request_usage counts the prompt once and every choice's tokens; chat() takes
one); and at most one output constraint (tandem.v1.Constraint), which the whole reply then matches:
    response_format  OpenAI's: {"type": "json_object"}, or {"type": "json_schema",
                     "json_schema": {"name": ..., "schema": {...}}} ({"type": "text"}: none)
    json_schema      a JSON Schema (a dict, or its JSON text)
    grammar          a GBNF grammar (llama.cpp's format, start rule `root`)
    regex            a regular expression
A bad one raises ValueError before any call; one the server cannot compile, TandemError
INVALID_ARGUMENT naming the culprit.

Every failure of a call raises TandemError, whose `code` is the grpc.StatusCode and
`details` the server's message (an unreachable server: UNAVAILABLE); stubs that cannot be
found or made raise tandem_stubs.StubError. Thread-safe: a Client may serve many threads at once.
Needs Debian's python3-grpcio (/usr/bin/python3); the stubs come from tandem_stubs.py.
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tandem_stubs  # noqa: E402

Delta = collections.namedtuple("Delta", "text token_ids logprobs reasoning tool_calls choice",
                               defaults=("", (), 0))
ToolCallDelta = collections.namedtuple("ToolCallDelta", "index id name arguments")
ToolCall = collections.namedtuple("ToolCall", "id name arguments")
Logprob = collections.namedtuple("Logprob", "token_id logprob token_bytes top")
Reply = collections.namedtuple("Reply", "text token_ids logprobs result reasoning tool_calls",
                               defaults=("", ()))
_SAMPLING = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "penalty_window",
             "seed", "presence_penalty", "frequency_penalty")
_OPTIONS = set(_SAMPLING) | {"logit_bias"} | {
    "max_tokens", "stop", "stop_token_ids", "speculation", "draft_tokens", "adaptive",
    "session_id", "require_existing_session", "ignore_eos", "logprobs", "top_logprobs",
    "format", "add_generation_prompt", "chat_template_kwargs", "timeout", "tools", "tool_choice",
    "parallel_tool_calls", "prediction", "n"} | {
    "response_format", "json_schema", "grammar", "regex"}


class TandemError(Exception):
    """A call failed: `code` is its grpc.StatusCode, `details` the server's message."""

    def __init__(self, code, details):
        super().__init__(f"{code.name}: {details}")
        self.code, self.details = code, details


class Result:
    """The final statistics of a reply (tandem.v1.GenerationResult; `message` is the proto)."""

    def __init__(self, message, stubs):
        self.message = message
        reason = stubs.generator_pb2.FinishReason.Name(message.finish_reason)
        self.finish_reason = reason.replace("FINISH_REASON_", "").lower()  # "length", ...
        self.prompt_tokens = message.usage.prompt_tokens
        self.cached_prompt_tokens = message.usage.cached_prompt_tokens
        self.generated_tokens = message.usage.generated_tokens
        self.accepted_prediction_tokens = message.usage.accepted_prediction_tokens
        self.rejected_prediction_tokens = message.usage.rejected_prediction_tokens
        t, s = message.timing, message.speculation
        self.timing = {f.name: getattr(t, f.name) for f in t.DESCRIPTOR.fields}
        self.speculation = {f.name: getattr(s, f.name) for f in s.DESCRIPTOR.fields}
        self.speculation["accepted_per_position"] = list(s.accepted_per_position)
        self.session_id, self.seed = message.session_id, message.seed
        self.choice = 0  # the choice it ends (n > 1); generate() sets it
        # n > 1, on the last choice to end: the prompt once, every choice's tokens.
        u = message.request_usage
        self.request_usage = ({f.name: getattr(u, f.name) for f in u.DESCRIPTOR.fields}
                              if message.HasField("request_usage") else None)

    def __repr__(self):
        return (f"Result(finish_reason={self.finish_reason!r}, prompt_tokens="
                f"{self.prompt_tokens}, generated_tokens={self.generated_tokens}, "
                f"seed={self.seed})")


def _pem(value):
    """A certificate or key given as bytes or as a file path."""
    if value is None or isinstance(value, bytes):
        return value
    with open(value, "rb") as f:
        return f.read()


def _schema_text(schema, what):
    if isinstance(schema, str):
        return schema
    if not isinstance(schema, dict):
        raise ValueError(f"{what} must be a dict or JSON text, got {type(schema).__name__}")
    return json.dumps(schema)  # keeps the keys' order: properties are generated in it


def _constraint(constraint, options):
    """Fills `constraint` (a tandem.v1.Constraint) from the constraint options."""
    fmt = options.get("response_format")
    if fmt is not None and not isinstance(fmt, dict):
        raise ValueError(f"response_format must be a dict, got {type(fmt).__name__}")
    kind = fmt.get("type") if fmt is not None else None
    if fmt is not None and kind not in ("text", "json_object", "json_schema"):
        raise ValueError(f"response_format type {kind!r} is not 'text', 'json_object' or "
                         "'json_schema'")
    given = [n for n in ("response_format", "json_schema", "grammar", "regex")
             if options.get(n) is not None and not (n == "response_format" and kind == "text")]
    if len(given) > 1:
        raise ValueError(f"give at most one constraint, got {', '.join(given)}")
    if kind == "json_object":
        constraint.json_object.SetInParent()
    elif kind == "json_schema":
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict) or spec.get("schema") is None:
            raise ValueError("response_format json_schema needs json_schema.schema")
        constraint.json_schema.schema = _schema_text(spec["schema"], "json_schema.schema")
    elif options.get("json_schema") is not None:
        constraint.json_schema.schema = _schema_text(options["json_schema"], "json_schema")
    elif options.get("grammar") is not None:
        constraint.grammar = options["grammar"]
    elif options.get("regex") is not None:
        constraint.regex = options["regex"]


def _logprobs(entries):
    def one(t, top):
        return Logprob(t.token_id, t.logprob, t.token_bytes, top)
    return [one(e.token, [one(t, []) for t in e.top]) for e in entries]


class Client:
    """A connection to one coordinator; see the module's documentation."""

    def __init__(self, address, *, root_certificates=None, certificate_chain=None,
                 private_key=None, tls=False, server_name=None, api_key=None,
                 connect_timeout=5.0):
        self._stubs = tandem_stubs.load()  # tandem_stubs.StubError when it cannot
        grpc = _grpc()
        self.address = address
        if (certificate_chain is None) != (private_key is None):
            raise ValueError("certificate_chain and private_key go together")
        options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
        if tls or root_certificates is not None or certificate_chain is not None:
            credentials = grpc.ssl_channel_credentials(
                _pem(root_certificates), _pem(private_key), _pem(certificate_chain))
            self._channel = grpc.secure_channel(address, credentials, options)
        else:
            self._channel = grpc.insecure_channel(address, options)
        self._metadata = (("authorization", f"Bearer {api_key}"),) if api_key else ()
        self._generator = self._stubs.generator_pb2_grpc.GeneratorStub(self._channel)
        if connect_timeout is not None:
            try:
                grpc.channel_ready_future(self._channel).result(timeout=connect_timeout)
            except grpc.FutureTimeoutError:
                self._channel.close()
                raise TandemError(grpc.StatusCode.UNAVAILABLE,
                                  f"cannot reach server {address} within {connect_timeout:g} s"
                                  ) from None

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def request(self, prompt=None, *, messages=None, token_ids=None, **options):
        """The GenerateRequest generate() sends (for inspection or for the raw stub)."""
        unknown = set(options) - _OPTIONS
        if unknown:
            raise TypeError(f"unknown option(s): {', '.join(sorted(unknown))}")
        if sum(p is not None for p in (prompt, messages, token_ids)) != 1:
            raise ValueError("give exactly one of prompt, messages and token_ids")
        g = self._stubs.generator_pb2
        r = g.GenerateRequest(max_tokens=options.get("max_tokens", 0),
                              session_id=options.get("session_id", ""),
                              require_existing_session=options.get("require_existing_session",
                                                                   False),
                              ignore_eos=options.get("ignore_eos", False),
                              logprobs=options.get("logprobs", False),
                              top_logprobs=options.get("top_logprobs", 0),
                              n=options.get("n", 0))
        if prompt is not None:
            r.text = prompt
        elif token_ids is not None:
            r.token_ids.ids.extend(token_ids)
        else:
            self._conversation(r.chat, messages, options)
        r.stop_strings.extend(options.get("stop", ()))
        r.stop_token_ids.extend(options.get("stop_token_ids", ()))
        for name in _SAMPLING:
            if options.get(name) is not None:
                setattr(r.sampling, name, options[name])
        for token, bias in (options.get("logit_bias") or {}).items():  # {id: bias}, as OpenAI's
            r.sampling.logit_bias[int(token)] = bias
        if options.get("speculation") is not None:
            r.speculation.enabled = options["speculation"]
        r.speculation.draft_tokens = options.get("draft_tokens", 0)
        r.speculation.adaptive = options.get("adaptive", False)
        _constraint(r.constraint, options)
        self._tools(r, options)
        prediction = options.get("prediction")
        if isinstance(prediction, str):
            r.prediction.text = prediction
        elif prediction is not None:
            r.prediction.token_ids.ids.extend(prediction)
        return r

    def _tools(self, r, options):
        """tools (OpenAI's list of {"type": "function", "function": {...}}), tool_choice
        ("auto", "none", "required", a tool's name or OpenAI's {"type": "function", ...}) and
        parallel_tool_calls."""
        g = self._stubs.generator_pb2
        for tool in options.get("tools") or ():
            f = tool.get("function", tool)
            parameters = f.get("parameters")
            r.chat.tools.add(name=f["name"], description=f.get("description", ""),
                             parameters_json=json.dumps(parameters) if parameters else "")
        choice = options.get("tool_choice")
        if isinstance(choice, dict):
            choice = choice["function"]["name"]
        modes = {"auto": g.ToolChoice.MODE_AUTO, "none": g.ToolChoice.MODE_NONE,
                 "required": g.ToolChoice.MODE_REQUIRED}
        if choice in modes:
            r.tool_choice.mode = modes[choice]
        elif choice is not None:
            r.tool_choice.mode = g.ToolChoice.MODE_FUNCTION
            r.tool_choice.function = choice
        if options.get("parallel_tool_calls") is not None:
            r.parallel_tool_calls = options["parallel_tool_calls"]

    def _conversation(self, chat, messages, options):
        for m in messages:
            if not isinstance(m, dict):
                chat.messages.add(role=m[0], content=m[1])
                continue
            out = chat.messages.add(role=m["role"], content=m.get("content") or "",
                                    tool_call_id=m.get("tool_call_id") or "")
            for call in m.get("tool_calls") or ():
                f = call.get("function", call)
                arguments = f.get("arguments", "")
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments)
                out.tool_calls.add(id=call.get("id", ""), name=f["name"], arguments=arguments)
        chat.add_generation_prompt = options.get("add_generation_prompt", True)
        chat.format = options.get("format", "")
        kwargs = options.get("chat_template_kwargs")
        if kwargs is not None:
            if not isinstance(kwargs, dict):
                raise ValueError("chat_template_kwargs must be a dict")
            chat.template_kwargs_json = json.dumps(kwargs)

    def generate(self, prompt=None, *, messages=None, token_ids=None, **options):
        """Yields Delta(text, token_ids, logprobs) as the reply streams, then one Result."""
        request = self.request(prompt, messages=messages, token_ids=token_ids, **options)
        call = self._generator.Generate(request, timeout=options.get("timeout"),
                                        metadata=self._metadata)
        try:
            for m in call:
                if m.HasField("delta"):
                    yield Delta(m.delta.text, list(m.delta.token_ids),
                                _logprobs(m.delta.logprobs), m.delta.reasoning_text,
                                tuple(ToolCallDelta(c.index, c.id, c.name, c.arguments)
                                      for c in m.delta.tool_calls), m.choice_index)
                elif m.HasField("final"):
                    result = Result(m.final, self._stubs)
                    result.choice = m.choice_index
                    yield result
        except _grpc().RpcError as e:
            raise TandemError(e.code(), e.details()) from None
        finally:
            call.cancel()  # a no-op after a clean end; otherwise the server stops at once

    def chat(self, messages, **options):
        """The whole reply to a conversation: Reply(text, token_ids, logprobs, result)."""
        if options.get("n", 0) > 1:
            raise ValueError("chat() collects one choice; iterate generate() for n > 1")
        text, ids, logprobs, result, reasoning = [], [], [], None, []
        for event in self.generate(messages=messages, **options):
            if isinstance(event, Delta):
                text.append(event.text)
                reasoning.append(event.reasoning)
                ids += event.token_ids
                logprobs += event.logprobs
            else:
                result = event
        calls = tuple(ToolCall(c.id, c.name, c.arguments)
                      for c in (result.message.tool_calls if result else ()))
        return Reply("".join(text), ids, logprobs, result, "".join(reasoning), calls)

    def tokenize(self, text=None, *, messages=None, add_special=True, parse_special=False,
                 timeout=30.0):
        """Token ids of `text` (or of `messages` rendered with the chat template)."""
        if (text is None) == (messages is None):
            raise ValueError("give exactly one of text and messages")
        r = self._stubs.generator_pb2.TokenizeRequest(add_special=add_special,
                                                      parse_special=parse_special)
        if text is not None:
            r.text = text
        else:
            self._conversation(r.chat, messages, {})
        return list(self._unary(self._generator.Tokenize, r, timeout).token_ids)

    def describe(self, timeout=30.0):
        return self._unary(self._generator.DescribeModel,
                           self._stubs.generator_pb2.DescribeModelRequest(), timeout)

    def close_session(self, session_id, timeout=30.0):
        self._unary(self._generator.CloseSession,
                    self._stubs.generator_pb2.CloseSessionRequest(session_id=session_id),
                    timeout)

    def _unary(self, method, request, timeout):
        try:
            return method(request, timeout=timeout, metadata=self._metadata)
        except _grpc().RpcError as e:
            raise TandemError(e.code(), e.details()) from None


def _grpc():
    import grpc
    return grpc


if __name__ == "__main__":  # the command-line client, as before
    import tandem_cli
    sys.exit(tandem_cli.main())
