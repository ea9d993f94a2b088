#!/usr/bin/python3
"""Predicted Outputs benchmark (issue 29): a client edits a text the target wrote and sends it
back as the prediction. Through the three real processes on loopback (target worker, draft
worker, coordinator), greedy:

  1. the target's own output for a prompt (--tokens tokens, speculation off): the reference;
  2. predictions made from it by editing --edits fractions of its tokens (a substitution, an
     insertion or a deletion each, seeded), spread evenly or clustered in runs of 8; plus the
     reference itself and an unrelated prediction (another prompt's output);
  3. each request with its prediction, and the same request without one, interleaved
     --repeats times: decode tok/s (the final Timing's), target passes per output token (the
     coordinator's verify calls), and whether the output is the reference token for token.

Prints the medians, each case's tok/s ratio to the request without a prediction, and PASS/FAIL
for the issue's figures (>= 3x at 5 %, >= 2x at 20 %, >= 0.95x unrelated, outputs identical).
Exit code 0 when every output was identical.

usage: prediction_bench.py [--tokens 256] [--repeats 5] [--edits 0.05,0.20] [--threads 2]
                           [--draft smollm2-135m|none] [--cache DIR] [--bin DIR]

Model: the SmolLM2-360M-shape Q8_0 fixture (random weights, starcoder vocabulary; made once into
--cache, as batching_bench.py does); the draft: the smollm2-135m-shape fixture (seed 2), whose
guesses are random (the coordinator's cost model soon runs the target alone without a
prediction). Speculation is adaptive in every request. Run it in its own session on a quiet
machine: setsid --wait bash -c 'echo -10 > /proc/self/autogroup; exec tools/bench/prediction_bench.py'.
"""
import argparse
import os
import random
import re
import statistics
import sys
import tempfile
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import batching_bench  # noqa: E402  (the fixture, the stack)
from batching_bench import STUBS  # noqa: E402

ROOT = batching_bench.ROOT
VOCAB_SIZE = 49152  # the starcoder vocabulary's
PROMPT = "The history of the printing press"
OTHER_PROMPT = "import numpy as np\n"


def edit(reference, fraction, clustered, seed):
    """`reference` with round(fraction * len) tokens edited: each a substitution, an insertion
    of a random token before it, or its deletion; evenly spread, or in runs of 8."""
    rng = random.Random(seed)
    n = max(1, round(fraction * len(reference)))
    if clustered:
        runs = max(1, n // 8)
        starts = sorted(rng.sample(range(0, len(reference) - 8), runs))
        positions = {s + i for s in starts for i in range(8)}
    else:
        step = len(reference) / n
        positions = {min(len(reference) - 1, int(i * step + rng.random() * step)) for i in range(n)}
    out = []
    for i, token in enumerate(reference):
        if i not in positions:
            out.append(token)
            continue
        op = rng.randrange(3)
        if op == 0:
            out.append(rng.randrange(VOCAB_SIZE))
        elif op == 1:
            out += [rng.randrange(VOCAB_SIZE), token]
        # op 2: deleted
    return out


def request(prompt, tokens, prediction):
    r = STUBS.generator_pb2.GenerateRequest(text=prompt, max_tokens=tokens, ignore_eos=True)
    r.sampling.temperature = 0
    r.speculation.adaptive = True
    if prediction is not None:
        r.prediction.token_ids.ids.extend(prediction)
    return r


def verify_calls(stack):
    url = f"http://127.0.0.1:{stack.metrics}/metrics"
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    m = re.search(r"^tandem_verify_call_seconds_count (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def run(stack, prompt, tokens, prediction):
    """(ids, decode tok/s, target passes per token, accepted, rejected, predicted rounds) of
    one request."""
    before = verify_calls(stack)
    ids, final = [], None
    for message in stack.stub.Generate(request(prompt, tokens, prediction), timeout=600):
        if message.HasField("delta"):
            ids.extend(message.delta.token_ids)
        else:
            final = message.final
    passes = (verify_calls(stack) - before) / max(1, len(ids))
    return (ids, final.timing.decode_tokens_per_second, passes,
            final.usage.accepted_prediction_tokens, final.usage.rejected_prediction_tokens,
            final.speculation.predicted_rounds)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=256)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--edits", default="0.05,0.20")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--draft", default="smollm2-135m")
    p.add_argument("--cache", default="")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    a = p.parse_args(argv)
    shared = os.environ.get("TANDEM_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
    vocab = os.path.join(shared, "models", "vocab", "ggml-vocab-starcoder.gguf")
    folder = batching_bench.cache_dir(a.cache)
    target = batching_bench.fixture(folder, "smollm2-360m", 1, vocab)
    draft = batching_bench.fixture(folder, a.draft, 2, vocab) if a.draft != "none" else None
    stack_args = argparse.Namespace(bin=a.bin, threads=a.threads, ctx=2048, max_sessions=4,
                                    worker_flags="", coordinator_flags="", draft_tokens=4)
    log_dir = tempfile.mkdtemp(prefix="tandem-prediction-bench-")
    with batching_bench.Stack(stack_args, target, draft, log_dir) as stack:
        reference = run(stack, PROMPT, a.tokens, None)[0]
        unrelated = run(stack, OTHER_PROMPT, a.tokens, None)[0]
        cases = [("none", None), ("exact", reference)]
        for fraction in (float(f) for f in a.edits.split(",")):
            for clustered in (False, True):
                name = f"{fraction:.0%} {'clustered' if clustered else 'spread'}"
                cases.append((name, edit(reference, fraction, clustered, seed=len(cases))))
        cases.append(("unrelated", unrelated))
        results = {name: [] for name, _ in cases}
        identical = True
        for repeat in range(a.repeats):
            for name, prediction in cases:
                ids, rate, passes, accepted, rejected, rounds = run(stack, PROMPT, a.tokens,
                                                                    prediction)
                identical &= ids == reference
                if ids != reference:
                    print(f"MISMATCH {name} (repeat {repeat})", flush=True)
                results[name].append((rate, passes, accepted, rejected, rounds))
            print(f"repeat {repeat + 1}/{a.repeats} done", flush=True)
    base = statistics.median(r[0] for r in results["none"])
    print(f"\n{a.tokens} greedy tokens of the SmolLM2-360M-shape Q8_0 fixture, draft {a.draft}, "
          f"{a.threads} threads per process, medians of {a.repeats} interleaved runs")
    print(f"{'prediction':<16} {'tok/s':>8} {'ratio':>6} {'passes/token':>13} "
          f"{'accepted':>9} {'rejected':>9} {'predicted rounds':>17}")
    ratios = {}
    for name, _ in cases:
        rows = results[name]
        rate = statistics.median(r[0] for r in rows)
        ratios[name] = rate / base
        print(f"{name:<16} {rate:8.1f} {rate / base:6.2f} "
              f"{statistics.median(r[1] for r in rows):13.3f} "
              f"{statistics.median(r[2] for r in rows):9.0f} "
              f"{statistics.median(r[3] for r in rows):9.0f} "
              f"{statistics.median(r[4] for r in rows):17.0f}")
    checks = [("outputs identical to the reference in every run", identical)]
    for name, ratio in ratios.items():
        if name.startswith("5%"):
            checks.append((f"{name}: >= 3x ({ratio:.2f}x)", ratio >= 3))
        elif name.startswith("20%"):
            checks.append((f"{name}: >= 2x ({ratio:.2f}x)", ratio >= 2))
    checks.append((f"unrelated: >= 0.95x ({ratios['unrelated']:.2f}x)",
                   ratios["unrelated"] >= 0.95))
    for what, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'} {what}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
