#!/usr/bin/python3
"""Speculation under load: does a busy draft stay in use, and how soon does a frozen one
come back?

usage: draft_load_bench.py [--clients 8,16] [--max-tokens 400] [--freeze-seconds 5]
                           [--freeze-clients 16] [--timeout 300] [--bin DIR] [--models DIR]

Starts the real stack on loopback (stories260K target and its distilled draft, each
`tandem-worker --threads 1`, and a `tandem-coordinator` with its default flags) and prints:

- the unloaded figure: one client, then for each --clients count that many concurrent
  greedy requests of --max-tokens tokens (ignore_eos); per count, how many requests reported
  `draft_failed`, how many were exact (equal to the target alone's output), and speculation's
  tokens per round (accepted + 1 per round, summed over the requests' final speculation
  statistics) beside the unloaded figure; the coordinator's tandem_draft_calls_total by outcome;
- a draft freeze: --freeze-clients clients loop on such requests, the draft is stopped
  (SIGSTOP) for --freeze-seconds, then continued (SIGCONT); the seconds from SIGCONT until the
  first draft call answers again (tandem_draft_calls_total{outcome="ok"} grows), the goal
  being at most 2 s.

Exit code 0 when no request reported draft_failed while the draft ran, every request was exact,
and speculation resumed within 2 s of SIGCONT.

Needs TANDEM_BIN (or --bin) and TANDEM_SHARED (or --models). Runs on /usr/bin/python3.
"""
import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import concurrency_bench  # noqa: E402
from concurrency_bench import PROMPTS, STUBS, Stack  # noqa: E402

import grpc  # noqa: E402

RESUME_GOAL = 2.0  # seconds from SIGCONT to the draft's next answered call


def request(prompt, max_tokens, speculate=True):
    r = concurrency_bench.request(prompt, max_tokens)
    r.speculation.enabled = speculate
    return r


def generate(stub, req, timeout):
    """(token ids, final SpeculationStats) of one streamed request."""
    ids, final = [], None
    for r in stub.Generate(req, timeout=timeout):
        if r.HasField("delta"):
            ids.extend(r.delta.token_ids)
        if r.HasField("final"):
            final = r.final.speculation
    return ids, final


def draft_calls(stack):
    """tandem_draft_calls_total by outcome on the coordinator."""
    return {o: stack.metric(f'tandem_draft_calls_total{{outcome="{o}"}}'.replace("{", r"\{")
                            .replace("}", r"\}"))
            for o in ("ok", "slow", "failed")}


def tokens_per_round(stats):
    rounds = sum(s.rounds for s in stats)
    return (sum(s.accepted_tokens for s in stats) + rounds) / rounds if rounds else 0.0


def load(stack, clients, max_tokens, alone, timeout, requests=None):
    """`clients` concurrent clients sending `requests` (default: one each) requests, the i-th
    with PROMPTS[i % 8]; a dict of what they reported."""
    requests = requests or clients
    start_line = threading.Barrier(clients)
    before = draft_calls(stack)
    lock = threading.Lock()
    queue = list(range(requests))

    def client(_):
        start_line.wait()
        out = []
        while True:
            with lock:
                if not queue:
                    return out
                i = queue.pop(0)
            prompt = PROMPTS[i % len(PROMPTS)]
            try:
                ids, final = generate(stack.stub, request(prompt, max_tokens), timeout)
                out.append((ids == alone[prompt], final, None))
            except grpc.RpcError as e:
                out.append((False, None, f"{e.code().name}: {e.details()}"))

    wall = time.monotonic()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        results = [r for rs in pool.map(client, range(clients)) for r in rs]
    wall = time.monotonic() - wall
    after = draft_calls(stack)
    stats = [f for _, f, _ in results if f is not None]
    return {
        "clients": clients,
        "requests": requests,
        "exact": sum(1 for exact, _, _ in results if exact),
        "errors": sorted({e for _, _, e in results if e}),
        "draft_failed": sum(1 for s in stats if s.draft_failed),
        "tokens_per_round": tokens_per_round(stats),
        "calls": {o: int(after[o] - before[o]) for o in after},
        "wall": wall,
    }


def freeze(stack, clients, max_tokens, seconds, timeout):
    """(seconds from SIGSTOP until a draft call failed, draft calls failed during the freeze,
    seconds from SIGCONT until a draft call answered again); None: not seen (within 30 s)."""
    stop = threading.Event()
    draft = stack.processes[1]  # target, draft, coordinator

    def client(i):
        while not stop.is_set():
            try:
                generate(stack.stub, request(PROMPTS[i % len(PROMPTS)], max_tokens), timeout)
            except grpc.RpcError:
                pass

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    time.sleep(2)  # every client mid-request
    failed_before = draft_calls(stack)["failed"]
    stopped_at = time.monotonic()
    os.kill(draft.pid, signal.SIGSTOP)
    dropped = None
    try:
        while time.monotonic() - stopped_at < seconds:
            if dropped is None and draft_calls(stack)["failed"] > failed_before:
                dropped = time.monotonic() - stopped_at
            time.sleep(0.02)
        # Every call in flight at the freeze has failed by now: the next "ok" is a new call.
        calls = draft_calls(stack)
        ok, failed = calls["ok"], int(calls["failed"] - failed_before)
    finally:
        os.kill(draft.pid, signal.SIGCONT)
    resumed_at = time.monotonic()
    resumed = None
    while time.monotonic() - resumed_at < 30:
        if draft_calls(stack)["ok"] > ok:
            resumed = time.monotonic() - resumed_at
            break
        time.sleep(0.02)
    stop.set()
    for t in threads:
        t.join(timeout)
    return dropped, failed, resumed


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", default="8,16", help="comma-separated concurrencies")
    p.add_argument("--max-tokens", type=int, default=400)
    p.add_argument("--freeze-seconds", type=float, default=5)
    p.add_argument("--freeze-clients", type=int, default=16)
    p.add_argument("--timeout", type=float, default=300, help="each request's deadline, s")
    p.add_argument("--bin", default=os.environ.get("TANDEM_BIN",
                                                   os.path.join(concurrency_bench.ROOT, "build",
                                                                "bin")))
    p.add_argument("--models", default=os.path.join(os.environ.get("TANDEM_SHARED", ""), "models"))
    args = p.parse_args(argv)
    counts = [int(c) for c in args.clients.split(",") if c]
    if not counts or min(counts) < 1 or args.max_tokens < 1:
        p.error("--clients and --max-tokens must be >= 1")
    sessions = max(counts + [args.freeze_clients])
    ok = True
    with tempfile.TemporaryDirectory(prefix="tandem-bench-") as logs:
        with Stack(args.bin, args.models, sessions, logs) as stack:
            alone = {}
            for prompt in PROMPTS:
                alone[prompt], _ = generate(stack.stub, request(prompt, args.max_tokens, False),
                                            args.timeout)
            # The same 8 prompts as under load, one request at a time.
            unloaded = load(stack, 1, args.max_tokens, alone, args.timeout, len(PROMPTS))
            print(f"{args.max_tokens} greedy tokens per request, stories260K + distilled draft, "
                  f"--threads 1, {os.cpu_count()} cores", flush=True)
            print(f"1 client ({len(PROMPTS)} requests in turn): draft_failed in "
                  f"{unloaded['draft_failed']}/{len(PROMPTS)}, tokens/round "
                  f"{unloaded['tokens_per_round']:.2f}, draft calls {unloaded['calls']}",
                  flush=True)
            for n in counts:
                r = load(stack, n, args.max_tokens, alone, args.timeout)
                print(f"{n} clients: draft_failed in {r['draft_failed']}/{n}, exact {r['exact']}/{n}, "
                      f"tokens/round {r['tokens_per_round']:.2f} (unloaded "
                      f"{unloaded['tokens_per_round']:.2f}), draft calls {r['calls']}, "
                      f"{r['wall']:.1f} s", flush=True)
                for e in r["errors"]:
                    print(f"  error: {e}", flush=True)
                ok = ok and r["draft_failed"] == 0 and r["exact"] == n
            dropped, failed, resumed = freeze(stack, args.freeze_clients, args.max_tokens,
                                              args.freeze_seconds, args.timeout)
            print(f"{args.freeze_seconds:g} s draft freeze under {args.freeze_clients} clients: "
                  + ("no draft call failed" if dropped is None else
                     f"first draft call failed {dropped:.2f} s after SIGSTOP")
                  + f", {failed} draft calls failed in all", flush=True)
            if resumed is None:
                print(f"{args.freeze_seconds:g} s draft freeze under {args.freeze_clients} "
                      "clients: speculation did not resume within 30 s", flush=True)
                ok = False
            else:
                print(f"{args.freeze_seconds:g} s draft freeze under {args.freeze_clients} "
                      f"clients: speculation resumed {resumed:.2f} s after SIGCONT "
                      f"(goal <= {RESUME_GOAL:g} s)", flush=True)
                ok = ok and resumed <= RESUME_GOAL
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
