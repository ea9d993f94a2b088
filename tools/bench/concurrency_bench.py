#!/usr/bin/python3
"""Many concurrent clients against workers with few sessions: every request must complete
(queued, not refused) with exactly the output it gets alone.

usage: concurrency_bench.py [--clients 64] [--max-sessions 16] [--max-tokens 32]
                            [--prompts 8] [--idle-sessions 0] [--timeout 300]
                            [--bin DIR] [--models DIR]

Starts the real stack on loopback (a stories260K target and its distilled draft, both
`tandem-worker --max-sessions N`, and a `tandem-coordinator`), runs each prompt once alone
(greedy), optionally opens --idle-sessions named 2-token sessions that then stay idle (they
used to hold every worker slot), then starts all clients at once and prints how many
completed, how many were exact, and the p50/p99/max latency. Exit code 0 only when every
client completed with its single-client output.

Needs TANDEM_BIN (or --bin: the folder with tandem-worker and tandem-coordinator) and
TANDEM_SHARED (or --models: the folder holding stories260K/). Runs on /usr/bin/python3.
"""
import argparse
import os
import re
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import tandem_stubs  # noqa: E402
import bench_processes  # noqa: E402

STUBS = tandem_stubs.load()
import grpc  # noqa: E402

PROMPTS = ["Once upon a time", "Tom and Sam went to the park", "The cat", "Lily had a red ball",
           "One day, a little bird", "The sun was hot", "Mom said", "Ben wanted to play"]


def percentile(values, q):
    """Nearest-rank percentile of a non-empty list (q in [0, 100])."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n q / 100)
    return ordered[int(rank) - 1]


class Stack(bench_processes.Processes):
    """target + draft workers and a coordinator on loopback ports the OS picks."""

    def __init__(self, bin_dir, models, max_sessions, log_dir, coordinator_args=(),
                 worker_args=()):
        folder = os.path.join(models, "stories260K")
        self.target_model = os.path.join(folder, "stories260K.gguf")
        self.draft_model = os.path.join(folder, "derived", "stories-draft-distilled.gguf")
        super().__init__(log_dir, grace_seconds=20)
        self.bin = bin_dir
        self.max_sessions = max_sessions
        self.coordinator_args = list(coordinator_args)
        self.worker_args = list(worker_args)

    def __enter__(self):
        try:
            worker = os.path.join(self.bin, "tandem-worker")
            common = ["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                      "--threads", "1", "--max-sessions", str(self.max_sessions)
                      ] + self.worker_args
            self.target, self.target_metrics = self._start(
                "target", [worker, "--role", "target", "--model", self.target_model] + common)
            draft, self.draft_metrics = self._start(
                "draft", [worker, "--role", "draft", "--model", self.draft_model] + common)
            self.address, self.metrics = self._start("coordinator", [
                os.path.join(self.bin, "tandem-coordinator"), "--target", self.target, "--draft",
                draft, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"
            ] + self.coordinator_args)
        except Exception:
            self.__exit__()
            raise
        self.channel = grpc.insecure_channel(self.address)
        self.stub = STUBS.generator_pb2_grpc.GeneratorStub(self.channel)
        return self

    def metric(self, name, port=None):
        """Sum of a metric's samples on the coordinator's (or PORT's) /metrics."""
        url = f"http://127.0.0.1:{port or self.metrics}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        return sum(float(m.group(1)) for m in
                   re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def request(prompt, max_tokens, session=""):
    r = STUBS.generator_pb2.GenerateRequest(text=prompt, max_tokens=max_tokens, session_id=session,
                                            ignore_eos=True)
    r.sampling.temperature = 0
    return r


def generate(stub, req, timeout):
    """(token ids, seconds) of one streamed request."""
    start = time.monotonic()
    ids = []
    for r in stub.Generate(req, timeout=timeout):
        if r.HasField("delta"):
            ids.extend(r.delta.token_ids)
    return ids, time.monotonic() - start


def run(stack, clients, max_tokens, prompts, idle_sessions, timeout):
    """Runs the benchmark on a started stack; returns a dict of results."""
    alone = {p: generate(stack.stub, request(p, max_tokens), timeout)[0] for p in prompts}
    for i in range(idle_sessions):  # named, tiny, then left idle
        generate(stack.stub, request("The cat", 2, session=f"idle-{i}"), timeout)
    start_line = threading.Barrier(clients)

    def client(i):
        prompt = prompts[i % len(prompts)]
        start_line.wait()
        try:
            ids, seconds = generate(stack.stub, request(prompt, max_tokens), timeout)
            return ids == alone[prompt], seconds, None
        except grpc.RpcError as e:
            return False, None, f"{e.code().name}: {e.details()}"

    wall = time.monotonic()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        results = list(pool.map(client, range(clients)))
    wall = time.monotonic() - wall
    latencies = [s for _, s, _ in results if s is not None]
    return {
        "clients": clients,
        "completed": len(latencies),
        "exact": sum(1 for exact, _, _ in results if exact),
        "errors": sorted({e for _, _, e in results if e}),
        "p50": percentile(latencies, 50) if latencies else None,
        "p99": percentile(latencies, 99) if latencies else None,
        "max": max(latencies) if latencies else None,
        "wall": wall,
        "tokens": max_tokens,
    }


def report(r):
    line = (f"{r['completed']}/{r['clients']} completed, {r['exact']}/{r['clients']} exact "
            f"({r['tokens']} greedy tokens each) in {r['wall']:.2f} s")
    if r["completed"]:
        line += f"; latency p50 {r['p50']:.3f} s, p99 {r['p99']:.3f} s, max {r['max']:.3f} s"
    print(line, flush=True)
    for e in r["errors"]:
        print(f"  error: {e}", flush=True)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--max-sessions", type=int, default=16, help="each worker's --max-sessions")
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--prompts", type=int, default=len(PROMPTS), help="distinct prompts")
    p.add_argument("--idle-sessions", type=int, default=0,
                   help="named sessions opened first and left idle")
    p.add_argument("--timeout", type=float, default=300, help="each request's deadline, s")
    p.add_argument("--bin", default=os.environ.get("TANDEM_BIN", os.path.join(ROOT, "build", "bin")))
    p.add_argument("--models", default=os.path.join(os.environ.get("TANDEM_SHARED", ""), "models"))
    args = p.parse_args(argv)
    if args.clients < 1 or args.max_sessions < 1 or args.max_tokens < 1:
        p.error("--clients, --max-sessions and --max-tokens must be >= 1")
    if not 1 <= args.prompts <= len(PROMPTS):
        p.error(f"--prompts must be in [1, {len(PROMPTS)}]")
    with tempfile.TemporaryDirectory(prefix="tandem-bench-") as logs:
        with Stack(args.bin, args.models, args.max_sessions, logs) as stack:
            print(f"{args.clients} clients, workers with --max-sessions {args.max_sessions}, "
                  f"{args.idle_sessions} idle named sessions", flush=True)
            r = run(stack, args.clients, args.max_tokens, PROMPTS[:args.prompts],
                    args.idle_sessions, args.timeout)
    report(r)
    return 0 if r["completed"] == r["clients"] == r["exact"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
