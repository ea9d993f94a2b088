#!/usr/bin/python3
"""What the OpenAI-compatible HTTP API costs against gRPC (a benchmark, not a test).

Starts target + draft workers and a coordinator with --http-listen on loopback, then streams
the same greedy request (--max-tokens, ignore_eos) --reps times over gRPC Generate and over
HTTP /v1/completions with "stream": true (Server-Sent Events read with http.client), checks
the two texts are equal, and prints `key value` lines: each path's median tokens/s (client
wall time from sending to the last token) and the HTTP overhead in percent.

usage: tools/bench/http_bench.py [--max-tokens N] [--reps R] [--prompt TEXT]
Needs TANDEM_BIN (or --bin) and TANDEM_SHARED (or --models).
"""
import argparse
import http.client
import json
import os
import re
import statistics
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import concurrency_bench as bench  # noqa: E402


def grpc_run(stack, prompt, max_tokens):
    """(text, tokens, seconds) of one streamed gRPC request."""
    r = bench.request(prompt, max_tokens)
    start = time.monotonic()
    text, tokens = "", 0
    for m in stack.stub.Generate(r, timeout=120):
        if m.HasField("delta"):
            text += m.delta.text
            tokens += len(m.delta.token_ids)
    return text, tokens, time.monotonic() - start


def http_run(address, model, prompt, max_tokens):
    """(text, tokens, seconds) of one streamed HTTP request."""
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens,
                       "temperature": 0, "ignore_eos": True, "stream": True,
                       "stream_options": {"include_usage": True}})
    start = time.monotonic()
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    reply = conn.getresponse()
    text, tokens = "", 0
    for line in reply:
        if not line.startswith(b"data: {"):
            continue
        chunk = json.loads(line[6:])
        if chunk["choices"]:
            text += chunk["choices"][0]["text"]
        elif chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
    seconds = time.monotonic() - start
    conn.close()
    return text, tokens, seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=os.environ.get("TANDEM_BIN", "build/bin"))
    p.add_argument("--models", default=os.path.join(
        os.environ.get("TANDEM_SHARED", "../shared"), "models"))
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--prompt", default="Once upon a time")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as logs, bench.Stack(
            a.bin, a.models, 4, logs, coordinator_args=["--http-listen", "127.0.0.1:0"]) as s:
        m = re.search(r"\(http on (\S+)\)", s.startup_lines["coordinator"])
        address = m.group(1)
        host, port = address.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("GET", "/v1/models")
        model = json.loads(conn.getresponse().read())["data"][0]["id"]
        rates = {"grpc": [], "http": []}
        for _ in range(a.reps):  # interleaved, so that load on the machine hits both alike
            g_text, g_tokens, g_s = grpc_run(s, a.prompt, a.max_tokens)
            h_text, h_tokens, h_s = http_run(address, model, a.prompt, a.max_tokens)
            if (g_text, g_tokens) != (h_text, h_tokens):
                raise SystemExit("HTTP and gRPC replies differ")
            rates["grpc"].append(g_tokens / g_s)
            rates["http"].append(h_tokens / h_s)
        grpc_rate = statistics.median(rates["grpc"])
        http_rate = statistics.median(rates["http"])
        print(f"max_tokens {a.max_tokens}")
        print(f"grpc_stream_tok_per_s {grpc_rate:.1f}")
        print(f"http_stream_tok_per_s {http_rate:.1f}")
        print(f"http_overhead_percent {100 * (grpc_rate - http_rate) / grpc_rate:.2f}")


if __name__ == "__main__":
    main()
