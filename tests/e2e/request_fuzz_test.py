"""Random Generate requests against the real three-process stack (stories260K target and its
distilled draft, started by stacklib's Cluster: over mutual TLS with an API key under
TANDEM_E2E_TLS=1): valid and invalid fields, edge values, random ids, invalid UTF-8 in text,
chat content, stop strings and session ids, random sampling parameters including NaN, inf,
huge and negative ones; one at a time, then 200 more from 8 clients at once, sharing session
ids.

Every call must end OK or with a code the API documents (INVALID_ARGUMENT, OUT_OF_RANGE,
NOT_FOUND, RESOURCE_EXHAUSTED, ABORTED, or DEADLINE_EXCEEDED from the per-call deadline); a
request carrying invalid UTF-8 in a proto3 string field cannot even be parsed by the server, and
gRPC refuses it (INTERNAL: that is the framework's answer, not the service's). An OK stream is
deltas then exactly one final; every TokenDelta.text is valid UTF-8, every id is in the
vocabulary, no more ids than max_tokens. No process may die; a greedy request afterwards must
still return the golden text. Fixed seed; a failing request is printed (long fields cut).

Needs TANDEM_BIN, TANDEM_SHARED and PYTHONPATH (set by CTest); prints "N passed, N failed".
TANDEM_REQUEST_FUZZ_COUNT overrides the number of requests.
"""
import json
import os
import random
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import tandem_stubs  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "ops"))
import opslib  # noqa: E402  (the shared test runner)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import stacklib  # noqa: E402  (the three processes, over mutual TLS with a key if the run is)

STUBS = tandem_stubs.load()
import grpc  # noqa: E402

PB = STUBS.generator_pb2
SEED = 20261201
COUNT = int(os.environ.get("TANDEM_REQUEST_FUZZ_COUNT", "2500"))
BUDGET_SECONDS = 110  # the run stops early (and says so) past this
MIN_REQUESTS = 300
DEADLINE_SECONDS = 15
VOCAB = 512
INT32_MAX, INT32_MIN = 2**31 - 1, -2**31
ALLOWED = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OUT_OF_RANGE,
           grpc.StatusCode.NOT_FOUND, grpc.StatusCode.RESOURCE_EXHAUSTED,
           grpc.StatusCode.ABORTED, grpc.StatusCode.DEADLINE_EXCEEDED}
SESSIONS = [f"fz-{i}" for i in range(6)]
MAX_RESTARTS = 3
SHOWN_PER_KIND = 2

# ---------------------------------------------------------------- protobuf wire helpers


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_delimited(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def read_varint(data, pos):
    n = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return n, pos


def fields(data):
    """(field number, wire type, value) of a message's top-level fields."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        elif wire == 2:
            size, pos = read_varint(data, pos)
            value, pos = data[pos:pos + size], pos + size
        else:
            raise ValueError(f"wire type {wire}")
        yield field, wire, value


def delta_text_bytes(response):
    """The raw bytes of GenerateResponse.delta.text, or None (checked before the protobuf
    runtime, which refuses invalid UTF-8 in a string field)."""
    for field, wire, value in fields(response):
        if field == 1 and wire == 2:
            for inner, inner_wire, text in fields(value):
                if inner == 1 and inner_wire == 2:
                    return bytes(text)
            return b""
    return None

# ---------------------------------------------------------------- random requests


def pick(rng, *weighted):
    """pick(rng, (w1, value or callable), ...)"""
    total = sum(w for w, _ in weighted)
    x = rng.uniform(0, total)
    for w, v in weighted:
        x -= w
        if x <= 0:
            return v() if callable(v) else v
    v = weighted[-1][1]
    return v() if callable(v) else v


WORDS = ["Once", "upon", "a", "time", "Lily", "the", "park", "ball", "happy", "dog", "said",
         ".", ",", "\n", "!", "?", "\"", " "]
UNICODE = ["é", "Zürich", "日本語", "🙂", "🌦", "\u0301", "\u200b", "\u2581", "\ufeff",
           "Ω", "<s>", "</s>", "<unk>", "\x00", "\t", "\r\n", "<|im_start|>"]
INVALID_UTF8 = [b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                b"\xc0\xaf", b"abc\x80def", b"\xf0\x9f\x99"]


def random_text(rng, max_words=12):
    n = rng.randint(0, max_words)
    parts = [pick(rng, (6, lambda: rng.choice(WORDS)), (2, lambda: rng.choice(UNICODE)),
                  (1, lambda: "".join(chr(rng.randint(32, 0x2FFF)) for _ in range(3))))
             for _ in range(n)]
    return "".join(p if rng.random() < 0.3 else p + " " for p in parts)


EDGE_FLOATS = [0.0, 1.0, 1e-30, 1e30, 1e-38, 3.4e38, -1.0, float("nan"), float("inf"),
               float("-inf"), 1e-45, 1.0000001, -0.0, 0.999999]


def random_float(rng, low=0.0, high=1.0):
    """Mostly an ordinary value in [low, high], else an edge (NaN, inf, huge, tiny...)."""
    if rng.random() < 0.7:
        return rng.uniform(low, high)
    return rng.choice(EDGE_FLOATS)


def random_int(rng, small=(0, 8)):
    return pick(rng, (4, lambda: rng.randint(*small)), (1, 0), (1, -1), (1, INT32_MAX),
                (1, INT32_MIN), (1, VOCAB - 1), (1, VOCAB), (1, VOCAB + 1))


def random_ids(rng):
    n = pick(rng, (6, lambda: rng.randint(0, 16)), (1, lambda: rng.randint(400, 700)))
    ids = [pick(rng, (12, lambda: rng.randint(0, VOCAB - 1)), (1, 1), (1, 2)) for _ in range(n)]
    if ids and rng.random() < 0.2:  # an id outside the vocabulary somewhere
        ids[rng.randrange(len(ids))] = rng.choice([-1, VOCAB, INT32_MAX, INT32_MIN])
    return ids


def random_sampling(rng, sampling):
    if rng.random() < 0.7:
        sampling.temperature = random_float(rng, 0.0, 1.5)
    if rng.random() < 0.4:
        sampling.top_k = random_int(rng, (0, 40))
    if rng.random() < 0.4:
        sampling.top_p = random_float(rng, 0.05, 1.0)
    if rng.random() < 0.3:
        sampling.min_p = random_float(rng, 0.0, 0.5)
    if rng.random() < 0.3:
        sampling.repetition_penalty = random_float(rng, 0.5, 2.0)
    if rng.random() < 0.3:
        sampling.penalty_window = random_int(rng, (0, 80))
    if rng.random() < 0.6:
        sampling.seed = pick(rng, (4, lambda: rng.getrandbits(64)), (1, 0), (1, 2**64 - 1))


def random_session(rng):
    return pick(rng, (10, ""), (6, lambda: rng.choice(SESSIONS)),
                (1, lambda: random_text(rng, 3)),
                (0.3, lambda: "s" * rng.choice([255, 256, 1024, 8192, 9000])),
                (0.02, lambda: "m" * (1 << 20)))


def random_request(rng):
    """(serialized GenerateRequest, summary dict for printing, max_tokens)."""
    r = PB.GenerateRequest()
    raw = b""  # fields appended after serialization: invalid UTF-8 the API cannot set
    kind = pick(rng, (6, "text"), (3, "token_ids"), (2, "chat"), (0.5, "none"))
    if kind == "text":
        r.text = pick(rng, (8, lambda: random_text(rng)), (1, ""),
                      (0.5, lambda: random_text(rng, 2000)),
                      (1, "Once upon a time"))
        if rng.random() < 0.06:
            raw += length_delimited(1, rng.choice(INVALID_UTF8) + r.text.encode()[:20])
    elif kind == "token_ids":
        r.token_ids.ids.extend(random_ids(rng))
    elif kind == "chat":
        for _ in range(pick(rng, (1, 0), (6, lambda: rng.randint(1, 4)), (0.2, 300))):
            m = r.chat.messages.add(role=pick(rng, (4, "user"), (2, "assistant"), (2, "system"),
                                             (1, ""), (1, lambda: random_text(rng, 2))),
                                    content=random_text(rng))
            if rng.random() < 0.2:
                m.name = random_text(rng, 2)
        if rng.random() < 0.5:
            r.chat.add_generation_prompt = rng.random() < 0.5
        if rng.random() < 0.3:
            r.chat.format = rng.choice(["", "raw", "chatml", "llama2", "llama3", "bogus",
                                        random_text(rng, 1)])
        if rng.random() < 0.06:
            bad = length_delimited(2, rng.choice(INVALID_UTF8))  # ChatMessage.content
            raw += length_delimited(2, length_delimited(1, bad))
    if rng.random() < 0.85:
        random_sampling(rng, r.sampling)
    r.max_tokens = pick(rng, (20, lambda: rng.randint(1, 12)), (1, 0), (1, -1), (1, INT32_MIN),
                        (0.1, INT32_MAX), (0.5, 64))
    if rng.random() < 0.2:
        r.stop_token_ids.extend(rng.choice([-1, 0, 1, 2, 13, VOCAB - 1, VOCAB, INT32_MAX])
                                for _ in range(rng.randint(1, 4)))
    if rng.random() < 0.3:
        r.stop_strings.extend(
            pick(rng, (5, lambda: rng.choice(WORDS + UNICODE + ["", "the ", "e", "a l"])),
                 (1, lambda: random_text(rng, 3)), (0.2, lambda: "x" * 10000))
            for _ in range(pick(rng, (8, lambda: rng.randint(1, 3)), (0.3, 300))))
        if rng.random() < 0.1:
            raw += length_delimited(7, rng.choice(INVALID_UTF8))
    if rng.random() < 0.4:
        if rng.random() < 0.5:
            r.speculation.enabled = rng.random() < 0.7
        if rng.random() < 0.5:
            r.speculation.draft_tokens = pick(rng, (4, lambda: rng.randint(0, 8)), (1, 16),
                                              (1, 17), (1, -1), (1, INT32_MAX))
        if rng.random() < 0.3:
            r.speculation.adaptive = True
    r.session_id = random_session(rng)
    if r.session_id and rng.random() < 0.05:
        raw += length_delimited(9, rng.choice(INVALID_UTF8))
    r.require_existing_session = rng.random() < 0.25
    r.ignore_eos = rng.random() < 0.3
    return r.SerializeToString() + raw, summarize(r, raw), r.max_tokens


def cut(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(value)} long)"


def summarize(r, raw):
    """The request in one line, long fields cut, NaN/inf shown as such."""
    parts = []
    for field, value in r.ListFields():
        if field.name == "chat":
            msgs = [(m.role, m.content) for m in value.messages]
            parts.append(f"chat={cut(msgs, 160)} format={value.format!r}")
        elif field.name == "sampling":
            parts.append("sampling={" + ", ".join(f"{f.name}={v!r}"
                                                  for f, v in value.ListFields()) + "}")
        elif field.name == "speculation":
            parts.append("speculation={" + ", ".join(f"{f.name}={v!r}"
                                                     for f, v in value.ListFields()) + "}")
        elif field.name == "token_ids":
            parts.append(f"token_ids={cut(list(value.ids), 120)}")
        elif field.label == field.LABEL_REPEATED:
            parts.append(f"{field.name}={cut(list(value), 120)}")
        else:
            parts.append(f"{field.name}={cut(value)}")
    if raw:
        parts.append(f"+raw fields {cut(raw, 60)}")
    return "GenerateRequest(" + ", ".join(parts) + ")"

# ---------------------------------------------------------------- running


class Run:
    def __init__(self):
        self.codes = {}
        self.failures = []  # (kind, detail, request summary)
        self.lock = threading.Lock()

    def fail(self, kind, detail, summary):
        with self.lock:
            self.failures.append((kind, detail, summary))

    def count(self, code):
        with self.lock:
            self.codes[code] = self.codes.get(code, 0) + 1

    def report(self):
        kinds = {}
        for kind, _, _ in self.failures:
            kinds[kind] = kinds.get(kind, 0) + 1
        lines = [f"{len(self.failures)} failures: " +
                 ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))]
        shown = {}
        # Deaths first: they explain the rest.
        for kind, detail, summary in sorted(self.failures, key=lambda f: "died" not in f[0]):
            if shown.get(kind, 0) >= SHOWN_PER_KIND:
                continue
            shown[kind] = shown.get(kind, 0) + 1
            lines.append(f"  [{kind}] {detail}\n      {summary}")
        return "\n".join(lines)


def dead_processes(stack):
    """Names (target0, draft, coordinator) of the stack's processes that have exited."""
    return [p.name for p in stack.processes if not p.alive()]


def log_tail(stack, name, lines=3):
    """The last lines of NAME's log, or what it means that they say nothing."""
    try:
        with open(os.path.join(stack.dir, name + ".log"), errors="replace") as f:
            tail = " | ".join(line.strip() for line in f.read().splitlines()[-lines:])
    except OSError:
        return "(no log)"
    if not any(word in tail for word in ("CHECK", "rror", "Sanitizer", "fault", "abort")):
        tail += "  [no error in its log: killed by a signal, e.g. SIGSEGV]"
    return tail


def call(generate, payload, max_tokens, summary, run):
    """One request; checks the stream and records the outcome. Returns the status code and
    its details (an unexpected code is for the caller to record: it may mean a death)."""
    ids, finals, bad_text = [], 0, False
    try:
        for raw in generate(payload, timeout=DEADLINE_SECONDS):
            text = delta_text_bytes(raw)
            if text is not None:
                try:
                    text.decode("utf-8")
                except UnicodeDecodeError as e:
                    if not bad_text:  # once per request
                        run.fail("invalid UTF-8 in TokenDelta.text",
                                 f"{cut(text, 60)}: {e.reason}", summary)
                    bad_text = True
                    continue
            response = PB.GenerateResponse.FromString(raw)
            if response.HasField("delta"):
                if finals:
                    run.fail("delta after final", "", summary)
                ids.extend(response.delta.token_ids)
            else:
                finals += 1
        code = grpc.StatusCode.OK
        details = ""
    except grpc.RpcError as e:
        code, details = e.code(), e.details() or ""
        if code == grpc.StatusCode.INTERNAL and "+raw" in summary:
            # Invalid UTF-8 in a proto3 string: the server's gRPC layer cannot parse it.
            run.count("INTERNAL (unparsable request)")
            return None, details
    if code == grpc.StatusCode.OK:
        if finals != 1:
            run.fail("final messages", f"{finals} final messages", summary)
        bad = [i for i in ids if not 0 <= i < VOCAB]
        if bad:
            run.fail("token id out of range", cut(bad), summary)
        if max_tokens > 0 and len(ids) > max_tokens:
            run.fail("too many tokens", f"{len(ids)} ids for max_tokens {max_tokens}", summary)
    run.count(code.name)
    return code, details


def concurrent_phase(stack, rng, run, clients=8, per_client=25):  # 200 requests
    """Clients at once on a few shared session ids: races between requests of one session
    (ABORTED), and between sessions. The same checks as one at a time."""
    # (A third of random requests name one of SESSIONS, so clients share sessions.)
    requests = [[random_request(rng) for _ in range(per_client)] for _ in range(clients)]
    codes = []

    def client(batch):
        for payload, summary, max_tokens in batch:
            code, details = call(stack.generate, payload, max_tokens, summary, run)
            if code is not None and code != grpc.StatusCode.OK and code not in ALLOWED:
                codes.append((code, details, summary))

    threads = [threading.Thread(target=client, args=(batch,)) for batch in requests]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_SECONDS * per_client)
    dead = dead_processes(stack)
    for name in dead:
        run.fail(f"{name} died", log_tail(stack, name), "during the concurrent phase")
    if not dead:
        for code, details, summary in codes:
            run.fail(f"status {code.name}", cut(details, 160), f"(concurrent) {summary}")


def greedy(stub, prompt, max_tokens):
    r = PB.GenerateRequest(text=prompt, max_tokens=max_tokens)
    r.sampling.temperature = 0
    ids, text = [], ""
    for response in stub.Generate(r, timeout=60):
        if response.HasField("delta"):
            ids.extend(response.delta.token_ids)
            text += response.delta.text
    return ids, text


def close_sessions(stub):
    for session in SESSIONS:
        try:
            stub.CloseSession(PB.CloseSessionRequest(session_id=session), timeout=10)
        except grpc.RpcError:
            pass  # NOT_FOUND: never made, or already closed


class Stack(stacklib.Cluster):
    def __init__(self):
        # A 512-token context keeps the longest request short and makes long prompts
        # OUT_OF_RANGE cheaply; max_tokens 0 means 16.
        super().__init__(worker_args=["--ctx=512"], coordinator_args=["--max-tokens=16"])

    def __enter__(self):
        super().__enter__()
        self.generate = self.channel.unary_stream(
            "/tandem.v1.Generator/Generate", request_serializer=lambda b: b,
            response_deserializer=lambda b: b)
        return self


def test_random_generate_requests_end_ok_or_with_a_documented_code():
    golden = json.load(open(os.path.join(os.environ["TANDEM_SHARED"], "models",
                                         "golden.json")))["stories260K"]["cases"]
    rng = random.Random(SEED)
    requests = [random_request(rng) for _ in range(COUNT)]
    run = Run()
    restarts, done, start = 0, 0, time.monotonic()
    begun = start
    stack = Stack().__enter__()
    try:
        for index, (payload, summary, max_tokens) in enumerate(requests):
            if time.monotonic() - start > BUDGET_SECONDS:
                break
            code, details = call(stack.generate, payload, max_tokens, summary, run)
            done += 1
            if index % 200 == 199:
                close_sessions(stack.stub)  # named sessions must not fill the workers
            if code is None or code == grpc.StatusCode.OK or code in ALLOWED:
                continue
            dead = dead_processes(stack)
            if not dead:
                run.fail(f"status {code.name}", cut(details, 160), summary)
                continue
            for name in dead:
                run.fail(f"{name} died", log_tail(stack, name), f"#{index} {summary}")
            restart = time.monotonic()
            stack.stop()  # a process died: its exit code is already a failure
            restarts += 1
            if restarts > MAX_RESTARTS:
                stack = None
                break
            stack = Stack().__enter__()
            start += time.monotonic() - restart  # restarts do not eat the budget
        if stack is not None:
            concurrent_phase(stack, random.Random(SEED + 1), run)
        print(f"{done} of {len(requests)} requests one at a time, then 200 from 8 clients at "
              f"once, in {time.monotonic() - begun:.0f} s ({restarts} restarts after a death); "
              f"codes: {dict(sorted(run.codes.items()))}", flush=True)
        if stack is not None:
            for name in dead_processes(stack):
                run.fail(f"{name} died", log_tail(stack, name), "(at the end)")
            close_sessions(stack.stub)
            for case in golden[1:3]:
                ids, text = greedy(stack.stub, case["prompt"], len(case["greedy_ids"]))
                if ids != case["greedy_ids"] or text != case["greedy_text"]:
                    run.fail("golden greedy text", f"{cut(text, 60)} != "
                             f"{cut(case['greedy_text'], 60)}", f"prompt {case['prompt']!r}")
    finally:
        if stack is not None:
            stack.__exit__(None, None, None)
    if run.failures:
        print(run.report(), flush=True)
    assert not run.failures, f"{len(run.failures)} failures (listed above)"
    # (An ASan build runs a fraction of them in the budget; fewer than this is no test.)
    assert done >= min(len(requests), MIN_REQUESTS), \
        f"only {done} requests ran in {BUDGET_SECONDS} s"


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
