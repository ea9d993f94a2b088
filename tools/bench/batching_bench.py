#!/usr/bin/python3
"""Continuous-batching benchmark (issue 13): aggregate tok/s and per-stream inter-token latency
at 1, 2, 4, 8, 16 concurrent streams through the three real processes on loopback.

usage: batching_bench.py [--levels 1,2,4,8,16] [--tokens 128] [--repeats 3] [--threads 2]
                         [--ctx 1024] [--max-sessions 64] [--worker-flags "..."]
                         [--coordinator-flags "--target-timeout-seconds 600"]
                         [--target PATH] [--draft self|smollm2-135m|none|PATH] [--draft-tokens 4]
                         [--modes target,draft,prefix] [--prefix-tokens 256]
                         [--prefix-streams 16] [--tail-tokens 8] [--json OUT.json]
                         [--compare OLD.json] [--cache DIR] [--bin DIR] [--timeout S]

Model: the SmolLM2-360M-shape Q8_0 fixture (random weights, starcoder vocabulary), made once by
`tools/make_fixture_model --preset smollm2-360m --type q8_0 --seed 1 --vocab-from
$TANDEM_SHARED/models/vocab/ggml-vocab-starcoder.gguf` into --cache (default
$XDG_CACHE_HOME/tandem-bench or ~/.cache/tandem-bench), never into the repository. `--target
PATH` runs another model file instead (e.g. activations_bench.py's 1B-shape Q4_K_M fixture);
the draft `self` is then that file.

Modes (each on a fresh stack: target worker, optional draft worker, coordinator; `--threads`
each, `--worker-flags` appended to both workers' command lines):
  target  speculation off. Every prompt is first run alone (the one-at-a-time reference); then
          for each level N, N client threads start together, each a greedy Generate of --tokens
          tokens of its own short prompt, repeated --repeats times; medians are printed.
  draft   the same with speculation on (k = --draft-tokens). The draft is the target file itself
          (`self`, acceptance ~1: every round a full k-verify) or the smollm2-135m-shape Q8_0
          fixture of the same vocabulary (seed 2; random, so acceptance ~0). Outputs are compared
          with the target-only references: greedy output must not depend on the draft.
  prefix  --prefix-streams streams at once whose token-id prompts are one common
          --prefix-tokens prefix (a fixed pseudo-random sequence) + a distinct --tail-tokens
          tail; prints tok/s and the prefill tokens computed (sum of prompt_tokens -
          cached_prompt_tokens from each final Usage, and the target worker's
          tandem_worker_batch_tokens_sum growth plus any *prefill* counter its /metrics has).

Per stream the arrival time of every delta message is recorded (tokens counted per message):
tok/s = all streams' tokens / wall time of the level; ITL = gap between consecutive delta
messages divided by the tokens the later one carries (each token gets that value), pooled over
the level's streams; TTFT = first delta - start. Repeats go round the levels and each row shows
its tok/s range: a neighbour's load on a shared machine moves the ratios. The issue's Done-when
figures are checked and printed as PASS/FAIL. Exit code 0 when every stream matched its
one-at-a-time output. It is slow: run it with `nice -n 19` on a shared machine. Runs on
/usr/bin/python3.
"""
import argparse
import json
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import tandem_stubs  # noqa: E402
import bench_processes  # noqa: E402

STUBS = tandem_stubs.load()
import grpc  # noqa: E402

PROMPTS = [
    "The history of the printing press", "def fibonacci(n):", "Once upon a time in a village",
    "The main causes of inflation are", "import numpy as np\n", "Dear hiring manager,",
    "In mathematics, a prime number", "The quick brown fox", "SELECT name FROM users WHERE",
    "Photosynthesis is the process", "class Stack:\n    def __init__(self):",
    "The weather in spring is", "A recipe for tomato soup:", "The rules of chess say",
    "#include <stdio.h>\nint main() {", "Ten facts about the ocean:"
]
SINGLE_LLAMA_SERVER_8 = 77.0  # tok/s llama-server reaches at 8 streams on this machine (issue 13)


def percentile(values, q):
    """Nearest-rank percentile of a non-empty list (q in [0, 100])."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def cache_dir(arg):
    if arg:
        return arg
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tandem-bench")


def fixture(folder, preset, seed, vocab):
    """Path of the cached `preset` Q8_0 fixture, made (atomically) when missing."""
    path = os.path.join(folder, f"{preset}-q8_0-seed{seed}.gguf")
    if os.path.exists(path):
        return path
    if not os.path.isfile(vocab):
        sys.exit(f"batching_bench: vocabulary {vocab} not found (set TANDEM_SHARED)")
    os.makedirs(folder, exist_ok=True)
    print(f"making {path} (once)", flush=True)
    tmp = path + f".tmp{os.getpid()}"
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_fixture_model"), "--preset",
                    preset, "--type", "q8_0", "--seed", str(seed), "--vocab-from", vocab,
                    "--out-gguf", tmp], check=True)
    os.replace(tmp, path)
    return path


def health(address):
    with grpc.insecure_channel(address) as channel:
        stub = STUBS.health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(STUBS.health_pb2.HealthCheckRequest(service=""), timeout=2)
        except grpc.RpcError:
            return False
    return reply.status == STUBS.health_pb2.HealthCheckResponse.SERVING


class Stack(bench_processes.Processes):
    """Target worker, optional draft worker and a coordinator on loopback ports the OS picks."""

    def __init__(self, args, target, draft, log_dir):
        super().__init__(log_dir)
        self.args, self.target_model, self.draft_model = args, target, draft

    def _worker(self, role, model):
        a = self.args
        return self._start(role, [
            os.path.join(a.bin, "tandem-worker"), "--role", role, "--model", model, "--listen",
            "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--threads", str(a.threads),
            "--ctx", str(a.ctx), "--max-sessions", str(a.max_sessions)
        ] + shlex.split(a.worker_flags))

    def __enter__(self):
        try:
            self.target, self.target_metrics = self._worker("target", self.target_model)
            argv = [os.path.join(self.args.bin, "tandem-coordinator"), "--target", self.target,
                    "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                    "--max-sessions", str(self.args.max_sessions), "--draft-tokens",
                    str(self.args.draft_tokens)] + shlex.split(self.args.coordinator_flags)
            if self.draft_model:
                draft, _ = self._worker("draft", self.draft_model)
                argv += ["--draft", draft]
            self.address, self.metrics = self._start("coordinator", argv)
            end = time.monotonic() + 300
            while not health(self.address):
                if time.monotonic() > end or any(p.poll() is not None for p in self.processes):
                    raise RuntimeError(f"the stack did not become SERVING; see {self.log_dir}")
                time.sleep(0.2)
        except Exception:
            self.__exit__()
            raise
        self.channel = grpc.insecure_channel(self.address)
        self.stub = STUBS.generator_pb2_grpc.GeneratorStub(self.channel)
        return self

    def worker_metrics(self):
        """{sample name with labels: value} of the target worker's /metrics."""
        url = f"http://127.0.0.1:{self.target_metrics}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        return {m.group(1): float(m.group(2))
                for m in re.finditer(r"^(tandem_\S+) (\S+)$", text, re.M)}


def request(prompt, tokens, speculate):
    r = STUBS.generator_pb2.GenerateRequest(max_tokens=tokens, ignore_eos=True)
    if isinstance(prompt, str):
        r.text = prompt
    else:
        r.token_ids.ids.extend(prompt)
    r.sampling.temperature = 0
    r.speculation.enabled = speculate
    return r


def stream(stub, req, start, timeout):
    """One Generate: ids, [(arrival seconds after start, tokens)], final Usage, error."""
    ids, arrivals, usage, spec = [], [], None, None
    try:
        for r in stub.Generate(req, timeout=timeout):
            if r.HasField("delta"):
                if r.delta.token_ids:
                    arrivals.append((time.monotonic() - start, len(r.delta.token_ids)))
                    ids.extend(r.delta.token_ids)
            else:
                usage, spec = r.final.usage, r.final.speculation
    except grpc.RpcError as e:
        return {"ids": ids, "arrivals": arrivals, "error": f"{e.code().name}: {e.details()}"}
    return {"ids": ids, "arrivals": arrivals, "usage": usage, "spec": spec, "error": None}


def ids_and_final(stub, req, timeout=300):
    """One Generate to its end: (token ids, the final GenerationResult)."""
    ids, final = [], None
    for reply in stub.Generate(req, timeout=timeout):
        if reply.HasField("delta"):
            ids.extend(reply.delta.token_ids)
        if reply.HasField("final"):
            final = reply.final
    return ids, final


def concurrent(stub, prompts, tokens, speculate, timeout):
    """Runs one stream per prompt, all released together; (results, wall seconds)."""
    results = [None] * len(prompts)
    gate = threading.Barrier(len(prompts) + 1)
    clock = {}

    def client(i):
        gate.wait()
        results[i] = stream(stub, request(prompts[i], tokens, speculate), clock["start"],
                            timeout)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    clock["start"] = time.monotonic()
    gate.wait()
    for t in threads:
        t.join(timeout + 30)
    ends = [r["arrivals"][-1][0] for r in results if r and r["arrivals"]]
    return results, (max(ends) if ends else float("nan"))


def figures(results, wall):
    """tok/s, ITL p50/p99/max (pooled), TTFT p50 of one level's streams."""
    itl, ttft, total = [], [], 0
    for r in results:
        previous = None
        for t, n in r["arrivals"]:
            total += n
            if previous is None:
                ttft.append(t)
            else:
                itl.extend([(t - previous) / n] * n)
            previous = t
    nan = float("nan")
    return {"tok_s": total / wall if wall > 0 else nan,
            "itl_p50": percentile(itl, 50) if itl else nan,
            "itl_p99": percentile(itl, 99) if itl else nan,
            "itl_max": max(itl) if itl else nan,
            "ttft_p50": percentile(ttft, 50) if ttft else nan}


def prompts_for(n):
    return [PROMPTS[i % len(PROMPTS)] + ("" if i < len(PROMPTS) else f" ({i})") for i in range(n)]


def mismatches(results, prompts, references):
    """Streams whose ids differ from their one-at-a-time output (or failed), as text."""
    bad = []
    for i, r in enumerate(results):
        if r["error"]:
            bad.append(f"stream {i}: {r['error']}")
        elif r["ids"] != references[prompts[i]]:
            want = references[prompts[i]]
            at = next((j for j, (a, b) in enumerate(zip(r["ids"], want)) if a != b),
                      min(len(r["ids"]), len(want)))
            bad.append(f"stream {i}: differs from its one-at-a-time output at token {at}")
    return bad


def references_alone(stub, prompts, tokens, timeout):
    """{prompt: ids} of each prompt run alone, greedy, target only."""
    out = {}
    for p in prompts:
        key = p if isinstance(p, str) else tuple(p)
        if key not in out:
            r = stream(stub, request(p, tokens, False), time.monotonic(), timeout)
            if r["error"]:
                raise RuntimeError(f"the one-at-a-time run failed: {r['error']}")
            out[key] = r["ids"]
    return out


def step_figures(before, after):
    """The target worker's scheduler over a run: mean sessions per step and mean step time."""
    def delta(name):
        key = f'{name}{{role="target"}}'
        return after.get(key, 0) - before.get(key, 0)
    steps = delta("tandem_worker_step_sessions_count")
    return {"step_sessions": delta("tandem_worker_step_sessions_sum") / steps if steps else 0.0,
            "step_ms": 1000 * delta("tandem_worker_step_seconds_sum") / steps if steps else 0.0}


def run_levels(stack, args, speculate, references):
    """{level: median figures, tok/s spread, mismatches} for every --levels entry. Repeats go
    round the levels (1, 2, 4, .., 1, 2, 4, ..) so a neighbour's load drifts over all alike."""
    runs = {n: [] for n in args.levels}
    bad = {n: [] for n in args.levels}
    acceptance = {n: [] for n in args.levels}
    for repeat in range(args.repeats):
        for n in args.levels:
            prompts = prompts_for(n)
            before = stack.worker_metrics()
            results, wall = concurrent(stack.stub, prompts, args.tokens, speculate, args.timeout)
            after = stack.worker_metrics()
            runs[n].append(figures(results, wall))
            runs[n][-1].update(step_figures(before, after))
            bad[n] += mismatches(results, prompts, references)
            acceptance[n] += [r["spec"].acceptance_rate for r in results
                              if not r["error"] and r["spec"] and r["spec"].drafted_tokens]
            last = runs[n][-1]
            print(f"  run {repeat + 1}, {n:2d} streams: {last['tok_s']:7.1f} tok/s; target "
                  f"steps: {last['step_sessions']:.2f} sessions, {last['step_ms']:.1f} ms each",
                  flush=True)
    rows = {}
    for n in args.levels:
        row = {k: statistics.median(run[k] for run in runs[n]) for k in runs[n][0]}
        row["tok_s_min"] = min(run["tok_s"] for run in runs[n])
        row["tok_s_max"] = max(run["tok_s"] for run in runs[n])
        row["mismatches"] = bad[n]
        if acceptance[n]:
            row["acceptance"] = statistics.mean(acceptance[n])
        rows[n] = row
    return rows


def prefill_counters(stack):
    m = stack.worker_metrics()
    rows = sum(v for k, v in m.items() if k.startswith("tandem_worker_batch_tokens_sum"))
    prefill = {k: v for k, v in m.items() if "prefill" in k and not k.endswith("_bucket")}
    return rows, prefill


def run_prefix(stack, args):
    """The shared-prefix case: tok/s, prefill computed, counters, mismatches."""
    rng = random.Random(13)
    prefix = [rng.randrange(1000, 40000) for _ in range(args.prefix_tokens)]
    prompts = [prefix + [rng.randrange(1000, 40000) for _ in range(args.tail_tokens)]
               for _ in range(args.prefix_streams)]
    rows_before, prefill_before = prefill_counters(stack)
    results, wall = concurrent(stack.stub, prompts, args.tokens, False, args.timeout)
    rows_after, prefill_after = prefill_counters(stack)
    computed = sum(r["usage"].prompt_tokens - r["usage"].cached_prompt_tokens
                   for r in results if not r["error"] and r["usage"])
    references = references_alone(stack.stub, prompts, args.tokens, args.timeout)
    keyed = [tuple(p) for p in prompts]
    out = {"tok_s": figures(results, wall)["tok_s"], "prompt_tokens": sum(map(len, prompts)),
           "prefill_computed": computed, "worker_rows": rows_after - rows_before,
           "prefill_metrics": {k: v - prefill_before.get(k, 0) for k, v in prefill_after.items()},
           "mismatches": mismatches(results, keyed, references)}
    return out


def ratio(a, b):
    return a / b if b and b == b else float("nan")


def table(title, rows):
    print(f"\n{title}")
    print("streams |   tok/s | x single | ITL p50 ms | ITL p99 ms | p99 / single p99 | "
          "ITL max ms | TTFT p50 ms")
    single = rows.get(1)
    for n, r in sorted(rows.items()):
        x = ratio(r["tok_s"], single["tok_s"]) if single else float("nan")
        p = ratio(r["itl_p99"], single["itl_p99"]) if single else float("nan")
        extra = f"  (tok/s {r['tok_s_min']:.1f}..{r['tok_s_max']:.1f}"
        extra += f", acceptance {r['acceptance']:.2f})" if "acceptance" in r else ")"
        print(f"{n:7d} | {r['tok_s']:7.1f} | {x:8.2f} | {r['itl_p50'] * 1e3:10.1f} | "
              f"{r['itl_p99'] * 1e3:10.1f} | {p:16.2f} | {r['itl_max'] * 1e3:10.1f} | "
              f"{r['ttft_p50'] * 1e3:11.1f}{extra}")


def verdict(name, ok):
    if ok is None:
        print(f"SKIP {name}")
        return True
    print(f"{'PASS' if ok else 'FAIL'} {name}")
    return ok


def checks(rows, prefix, args, old):
    """The issue's Done-when figures (target-only rows) as PASS/FAIL/SKIP lines."""
    s, r8, r16 = rows.get(1), rows.get(8), rows.get(16)
    print("\nDone-when (issue 13), target only:")
    verdict("8 streams >= 4x single-stream tok/s",
            r8["tok_s"] >= 4 * s["tok_s"] if s and r8 else None)
    verdict(f"8 streams >= 3x llama-server's {SINGLE_LLAMA_SERVER_8:.0f} tok/s (this machine)",
            r8["tok_s"] >= 3 * SINGLE_LLAMA_SERVER_8 if r8 else None)
    verdict("16 streams >= 5x single-stream tok/s",
            r16["tok_s"] >= 5 * s["tok_s"] if s and r16 else None)
    verdict("p99 ITL at 8 streams <= 2.5x single-stream p99",
            r8["itl_p99"] <= 2.5 * s["itl_p99"] if s and r8 else None)
    old_single = (old or {}).get("target", {}).get("1", {}).get("tok_s")
    verdict("single-stream tok/s within 3% of --compare's",
            s["tok_s"] >= 0.97 * old_single if s and old_single else None)
    if prefix:
        limit = args.prefix_tokens + args.prefix_streams * args.tail_tokens + 16
        verdict(f"shared prefix: prefill computed {prefix['prefill_computed']} <= {limit} "
                f"(the prefix once, each tail, one block of slack), every stream exact",
                prefix["prefill_computed"] <= limit and not prefix["mismatches"])


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--levels", default="1,2,4,8,16", help="concurrent streams, comma-separated")
    p.add_argument("--tokens", type=int, default=128, help="greedy tokens per stream")
    p.add_argument("--repeats", type=int, default=3, help="runs per level (medians printed)")
    p.add_argument("--threads", type=int, default=2, help="each worker's --threads")
    p.add_argument("--ctx", type=int, default=1024, help="each worker's --ctx")
    p.add_argument("--max-sessions", type=int, default=64,
                   help="each worker's and the coordinator's --max-sessions")
    p.add_argument("--worker-flags", default="", help="extra flags for both workers")
    p.add_argument("--coordinator-flags", default="--target-timeout-seconds 600",
                   help="extra coordinator flags (default: a 600 s target call deadline, so a "
                   "call queued behind 16 prefills on a loaded machine is not failed over)")
    p.add_argument("--target", help="the target model file (default: the 360M-shape fixture)")
    p.add_argument("--draft", default="self",
                   help="self (the target file), smollm2-135m (fixture, seed 2), none, or a path")
    p.add_argument("--draft-tokens", type=int, default=4, help="k with a draft")
    p.add_argument("--modes", default="target,draft,prefix")
    p.add_argument("--prefix-tokens", type=int, default=256)
    p.add_argument("--prefix-streams", type=int, default=16)
    p.add_argument("--tail-tokens", type=int, default=8)
    p.add_argument("--timeout", type=float, default=900, help="each request's deadline, s")
    p.add_argument("--json", help="also write the figures here")
    p.add_argument("--compare", help="a --json file of an earlier run (single-stream check)")
    p.add_argument("--cache", help="fixture folder (default $XDG_CACHE_HOME/tandem-bench)")
    p.add_argument("--bin", default=os.environ.get("TANDEM_BIN",
                                                   os.path.join(ROOT, "build", "bin")))
    p.add_argument("--shared", default=os.environ.get("TANDEM_SHARED",
                                                      os.path.join(ROOT, "..", "shared")))
    a = p.parse_args(argv)
    try:
        a.levels = sorted({int(x) for x in a.levels.split(",") if x.strip()})
    except ValueError:
        p.error(f"--levels must be integers, got {a.levels!r}")
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    if not a.levels or min(a.levels) < 1 or a.tokens < 1 or a.repeats < 1:
        p.error("--levels, --tokens and --repeats must be >= 1")
    if set(a.modes) - {"target", "draft", "prefix"}:
        p.error(f"--modes: unknown mode in {a.modes}")
    if a.ctx and a.ctx < a.prefix_tokens + a.tail_tokens + a.tokens + 16:
        p.error("--ctx is too small for the prefix case")
    return a


def main(argv):
    args = parse(argv)
    vocab = os.path.join(args.shared, "models", "vocab", "ggml-vocab-starcoder.gguf")
    folder = cache_dir(args.cache)
    target = args.target or fixture(folder, "smollm2-360m", 1, vocab)
    if not os.path.isfile(target):
        sys.exit(f"batching_bench: --target {target} not found")
    draft = {"self": target, "none": None}.get(args.draft, args.draft)
    if args.draft == "smollm2-135m":
        draft = fixture(folder, "smollm2-135m", 2, vocab)
    print(f"target {target}; draft {args.draft} ({draft}); {args.threads} threads per worker, "
          f"--ctx {args.ctx}, worker flags {args.worker_flags!r}", flush=True)
    out = {"args": dict(vars(args)), "target": {}, "draft": {}}
    prefix = None
    with tempfile.TemporaryDirectory(prefix="tandem-batching-bench-") as logs:
        with Stack(args, target, None, logs) as stack:
            references = references_alone(stack.stub, prompts_for(max(args.levels)), args.tokens,
                                          args.timeout)
            if "target" in args.modes:
                print("target only (speculation off):", flush=True)
                out["target"] = run_levels(stack, args, False, references)
            if "prefix" in args.modes:
                print("shared prefix:", flush=True)
                prefix = out["prefix"] = run_prefix(stack, args)
        if "draft" in args.modes and draft:
            with Stack(args, target, draft, logs) as stack:
                print(f"with the draft ({args.draft}, k = {args.draft_tokens}):", flush=True)
                out["draft"] = run_levels(stack, args, True, references)
    if out["target"]:
        table("Target only (speculation off), medians of "
              f"{args.repeats} runs, {args.tokens} greedy tokens per stream", out["target"])
    if out["draft"]:
        table(f"With the draft ({args.draft}, k = {args.draft_tokens})", out["draft"])
    if prefix:
        print(f"\nShared prefix: {args.prefix_streams} streams x ({args.prefix_tokens} common + "
              f"{args.tail_tokens} own prompt tokens), {args.tokens} tokens each: "
              f"{prefix['tok_s']:.1f} tok/s; prefill computed {prefix['prefill_computed']} of "
              f"{prefix['prompt_tokens']} prompt tokens (Usage); target worker rows run "
              f"{prefix['worker_rows']:.0f} (tandem_worker_batch_tokens_sum, prefill + decode)")
        for k, v in sorted(prefix["prefill_metrics"].items()):
            print(f"  {k} +{v:g}")
    old = json.load(open(args.compare)) if args.compare else None
    checks(out["target"], prefix, args, old)
    bad = [f"{mode} {n}: {m}" for mode in ("target", "draft")
           for n, r in out[mode].items() for m in r["mismatches"]]
    bad += [f"prefix: {m}" for m in (prefix or {}).get("mismatches", [])]
    print(f"\n{len(bad)} streams differ from their one-at-a-time output")
    for line in bad[:20]:
        print("  " + line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
