"""The four streaming clients http_bench.py times for one greedy request: gRPC and HTTP each
from Python in this process (grpcio; http.client reading Server-Sent Events line by line) and
from a native program (tandem-chat --server, C++ gRPC; curl -N, C, reading the SSE stream).

Each returns a Reply: the text, the token count, `seconds` from sending the request (for a
program: from starting it) to the reply's last byte, `first` (seconds to the first token's
bytes), `client_cpu` (the client's user + system CPU seconds: this process's for the Python
clients, grpcio's threads included; the child's for a program, from wait4) and `inside` (the
coordinator's own Generate time from the final message, when the client sees it).
Runs on /usr/bin/python3.
"""
import http.client
import json
import os
import re
import subprocess
import time


class Reply:
    def __init__(self, text, tokens, seconds, first, client_cpu, inside=None):
        self.text, self.tokens, self.seconds, self.first = text, tokens, seconds, first
        self.client_cpu, self.inside = client_cpu, inside

    def streaming_rate(self):
        """Tokens per second from the first token's bytes to the last byte (what the client
        sees while the reply streams: no connection set-up, no process start)."""
        return (self.tokens - 1) / (self.seconds - self.first)


def completion_body(model, prompt, tokens):
    return json.dumps({"model": model, "prompt": prompt, "max_tokens": tokens, "temperature": 0,
                       "ignore_eos": True, "stream": True,
                       "stream_options": {"include_usage": True}})


def sse_events(lines):
    """The JSON chunks of an SSE body's `data: {...}` lines -> (text, tokens, inside)."""
    text, count, inside = "", 0, None
    for line in lines:
        if not line.startswith(b"data: {"):
            continue
        chunk = json.loads(line[6:])
        if chunk["choices"]:
            text += chunk["choices"][0]["text"]
        elif chunk.get("usage"):
            count = chunk["usage"]["completion_tokens"]
        if "tandem" in chunk:
            inside = chunk["tandem"]["timing"]["total_seconds"]
    return text, count, inside


def python_grpc(stubs, stub, prompt, tokens, timeout):
    r = stubs.generator_pb2.GenerateRequest(text=prompt, max_tokens=tokens, ignore_eos=True)
    r.sampling.temperature = 0
    cpu, start = time.process_time(), time.monotonic()
    text, count, inside, first = "", 0, None, None
    for m in stub.Generate(r, timeout=timeout):
        if m.HasField("delta"):
            first = first or time.monotonic() - start
            text += m.delta.text
            count += len(m.delta.token_ids)
        else:
            inside = m.final.timing.total_seconds
    seconds = time.monotonic() - start
    return Reply(text, count, seconds, first, time.process_time() - cpu, inside)


def python_http(address, model, prompt, tokens, timeout):
    host, port = address.rsplit(":", 1)
    cpu, start = time.process_time(), time.monotonic()
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    conn.request("POST", "/v1/completions", completion_body(model, prompt, tokens),
                 {"Content-Type": "application/json"})
    reply = conn.getresponse()
    if reply.status != 200:
        raise SystemExit(f"HTTP {reply.status}: {reply.read()[:500]!r}")
    lines, first = [], None
    for line in reply:
        if first is None and line.startswith(b"data: {"):
            first = time.monotonic() - start
        lines.append(line)
    seconds = time.monotonic() - start
    conn.close()
    text, count, inside = sse_events(lines)
    return Reply(text, count, seconds, first, time.process_time() - cpu, inside)


def run_program(argv, timeout):
    """(stdout bytes, stderr text, seconds to the last stdout byte, seconds to the first,
    CPU seconds) of a program whose stdout streams the reply."""
    start = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    out, first, last = b"", None, None
    while time.monotonic() - start < timeout:
        chunk = os.read(p.stdout.fileno(), 65536)
        if not chunk:
            break
        last = time.monotonic() - start
        first = first if first is not None else last
        out += chunk
    err = p.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    p.stdout.close()
    p.stderr.close()
    if p.returncode != 0 or first is None:
        raise SystemExit(f"{argv[0]} failed ({p.returncode}): {err[-500:]}")
    return out, err, last, first, usage.ru_utime + usage.ru_stime


def native_grpc(chat_binary, address, prompt, tokens, timeout):
    """tandem-chat --server: the text on stdout (flushed per delta), tokens from its stats."""
    out, err, seconds, first, cpu = run_program(
        [chat_binary, "--server", address, "-p", prompt, "--format", "raw", "--temp", "0",
         "--max-tokens", str(tokens), "--ignore-eos", "--timeout", str(int(timeout))], timeout)
    m = re.search(r"decode (\d+) tokens", err)
    if not m:
        raise SystemExit(f"no token count in tandem-chat's stats: {err[-300:]}")
    # The reply line ends with the newline printed after the final message.
    return Reply(out.decode().removesuffix("\n"), int(m.group(1)), seconds, first, cpu)


def native_http(address, model, prompt, tokens, timeout):
    """curl -N (no output buffering): the SSE body as it arrives."""
    out, _, seconds, first, cpu = run_program(
        ["curl", "-sS", "-N", "--fail-with-body", "--max-time", str(int(timeout)), "-H",
         "Content-Type: application/json", "-d", completion_body(model, prompt, tokens),
         f"http://{address}/v1/completions"], timeout)
    text, count, inside = sse_events(out.splitlines())
    return Reply(text, count, seconds, first, cpu, inside)
