#!/usr/bin/python3
"""Time to first token with the coordinator tokenizing prompts itself (its copy of the target's
tokenizer, local_tokenizer.h) against a coordinator that asks the target (--nolocal-tokenizer,
one Tokenize call before the first token).

usage: local_tokenizer_bench.py [--requests 200] [--rtt-ms 0,2] [--bin DIR] [--models DIR]

Starts one stories260K target worker (1 thread) and two coordinators on it, one each way, on
loopback ports the OS picks, the coordinators reaching the worker through a delay line that
adds --rtt-ms of round-trip time (half each way; 0: direct); sends the same greedy
max_tokens=1 requests (a text prompt and a chat prompt) to both in turn over one gRPC channel
each, and prints the p50/p90 of the time from sending to the first delta, for each added RTT,
kind of prompt and coordinator. Exit code 1 if the two coordinators' first tokens ever differ.

Needs TANDEM_BIN (or --bin) and TANDEM_SHARED (or --models: the folder holding stories260K/).
Runs on /usr/bin/python3.
"""
import argparse
import heapq
import os
import socket
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import tandem_stubs  # noqa: E402
import bench_processes  # noqa: E402

STUBS = tandem_stubs.load()
import grpc  # noqa: E402

TEXT = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the "
        "sun with her red ball and her dog, Max. One day, Lily saw a big tree in the park.")


def percentile(values, q):
    """Nearest-rank percentile of a non-empty list (q in [0, 100])."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


class DelayLine:
    """A TCP proxy on 127.0.0.1 to `upstream` that delivers every chunk `delay` seconds after
    it arrived, in order, each direction (a pure delay: chunks do not wait for each other)."""

    def __init__(self, upstream, delay):
        self.upstream, self.delay = upstream.rsplit(":", 1), delay
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            client, _ = self.server.accept()
            try:
                upstream = socket.create_connection((self.upstream[0], int(self.upstream[1])))
            except OSError:  # the worker is gone (the stack is closing)
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                for s in (a, b):
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._pipe(a, b)

    def _pipe(self, source, sink):
        due, ready = [], threading.Condition()

        def read():
            n = 0
            while True:
                try:
                    data = source.recv(65536)
                except OSError:  # reset: end this direction as if closed
                    data = b""
                with ready:
                    heapq.heappush(due, (time.monotonic() + self.delay, n, data))
                    ready.notify()
                n += 1
                if not data:
                    return

        def write():
            while True:
                with ready:
                    while not due:
                        ready.wait()
                    when, _, data = heapq.heappop(due)
                time.sleep(max(0.0, when - time.monotonic()))
                try:
                    if not data:
                        sink.shutdown(socket.SHUT_WR)
                        return
                    sink.sendall(data)
                except OSError:  # the other side is gone
                    return

        threading.Thread(target=read, daemon=True).start()
        threading.Thread(target=write, daemon=True).start()


class Stack(bench_processes.Processes):
    """A target worker and two coordinators on it (through a DelayLine of `rtt` seconds):
    local tokenizer on, and off."""

    def __init__(self, bin_dir, models, log_dir, rtt):
        super().__init__(log_dir, grace_seconds=20)
        self.bin = bin_dir
        self.model = os.path.join(models, "stories260K", "stories260K.gguf")
        self.rtt = rtt

    def __enter__(self):
        try:
            target, _ = self._start("target", [
                os.path.join(self.bin, "tandem-worker"), "--role", "target", "--model",
                self.model, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                "--threads", "1"])
            if self.rtt > 0:
                target = DelayLine(target, self.rtt / 2).address
            self.stubs = {}
            for name, flag in (("local", "--local-tokenizer"), ("asks", "--nolocal-tokenizer")):
                address, _ = self._start(name, [
                    os.path.join(self.bin, "tandem-coordinator"), "--target", target, "--listen",
                    "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", flag])
                channel = grpc.insecure_channel(address)
                self.stubs[name] = STUBS.generator_pb2_grpc.GeneratorStub(channel)
        except Exception:
            self.__exit__()
            raise
        return self


def request(kind):
    r = STUBS.generator_pb2.GenerateRequest(max_tokens=1, ignore_eos=True)
    r.sampling.temperature = 0
    if kind == "text":
        r.text = TEXT
    else:
        for role, content in (("user", "Tell me a story about a dog."),
                              ("assistant", "Once upon a time"), ("user", TEXT)):
            r.chat.messages.add(role=role, content=content)
    return r


def first_token(stub, kind):
    """(seconds to the first delta, its token ids)."""
    start = time.monotonic()
    for m in stub.Generate(request(kind), timeout=60):
        if m.HasField("delta"):
            return time.monotonic() - start, list(m.delta.token_ids)
    raise RuntimeError("no delta")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rtt-ms", default="0,2", help="added round-trip times, comma-separated")
    parser.add_argument("--bin", default=os.environ.get("TANDEM_BIN"))
    parser.add_argument("--models",
                        default=os.path.join(os.environ.get("TANDEM_SHARED", ""), "models"))
    args = parser.parse_args()
    differ = 0
    print("added RTT ms | prompt | coordinator          | TTFT p50 ms | TTFT p90 ms")
    for rtt_ms in (float(x) for x in args.rtt_ms.split(",")):
        with tempfile.TemporaryDirectory() as logs, \
                Stack(args.bin, args.models, logs, rtt_ms / 1e3) as stack:
            differ += measure(stack, args.requests, rtt_ms)
    print(f"first tokens that differ: {differ}")
    return 1 if differ else 0


def measure(stack, requests, rtt_ms):
    """Prints one table block; returns how many first tokens differed."""
    ttft = {(name, kind): [] for name in stack.stubs for kind in ("text", "chat")}
    for kind in ("text", "chat"):
        for name in stack.stubs:  # warm-up: channels, the worker's first session
            first_token(stack.stubs[name], kind)
    differ = 0
    for i in range(requests):
        kind = "text" if i % 2 == 0 else "chat"
        firsts = {}
        for name in (("local", "asks") if i % 4 < 2 else ("asks", "local")):
            seconds, ids = first_token(stack.stubs[name], kind)
            ttft[(name, kind)].append(seconds)
            firsts[name] = ids
        differ += firsts["local"] != firsts["asks"]
    for kind in ("text", "chat"):
        for name, label in (("asks", "asks the target"), ("local", "tokenizes itself")):
            values = ttft[(name, kind)]
            print(f"{rtt_ms:11.1f} | {kind:6} | {label:20} | {percentile(values, 50) * 1e3:11.2f} |"
                  f" {percentile(values, 90) * 1e3:11.2f}")
    return differ


if __name__ == "__main__":
    sys.exit(main())
