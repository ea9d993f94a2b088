#!/usr/bin/python3
"""Single-stream speed of two builds side by side (issue 13's "single-stream within 3 % of
today's"), through the real processes on loopback.

usage: single_stream_ab.py --baseline-bin DIR [--bin DIR] [--rounds 24] [--tokens 128]
                           [--threads 2] [--json OUT.json]

Both stacks (target worker + coordinator of each build, batching_bench.py's Stack, on the
SmolLM2-360M-shape Q8_0 fixture) stay up for the whole run; each round sends one greedy stream
of --tokens to each, in alternating order (AB, BA, ...), after one warm-up round. On a machine
whose memory bandwidth drifts by 10-20 % between minutes, this pairs each measurement of one
build with one of the other taken seconds apart, where separate runs would compare different
minutes. The rate of a stream is its decode tok/s: tokens after the first over the time from
the first token to the last. Prints both medians, the median of the paired ratios new/baseline
(with its quartiles) and PASS when that median is >= 1 - --tolerance (0.03). Run it in its own
autogroup with nothing else running.
"""
import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import batching_bench  # noqa: E402  (its Stack, fixture, request and stream)


def decode_rate(result):
    """tok/s of one stream from its first token to its last, or None if it failed."""
    arrivals = result["arrivals"]
    if result["error"] or len(arrivals) < 2:
        return None
    tokens = sum(n for _, n in arrivals[1:])
    return tokens / (arrivals[-1][0] - arrivals[0][0])


def run_rounds(stubs, rounds, tokens, timeout):
    """[(baseline rate, new rate)] per round; round 0 is a warm-up and is dropped."""
    prompts = batching_bench.prompts_for(8)
    pairs = []
    for r in range(rounds + 1):
        rates = [None, None]
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            req = batching_bench.request(prompts[r % len(prompts)], tokens, False)
            rates[i] = decode_rate(batching_bench.stream(stubs[i], req, time.monotonic(),
                                                         timeout))
        if None in rates:
            raise RuntimeError(f"round {r}: a stream failed")
        if r > 0:
            pairs.append(tuple(rates))
            print(f"round {r:3d}: baseline {rates[0]:6.1f}  new {rates[1]:6.1f} tok/s  "
                  f"new/baseline {rates[1] / rates[0]:.3f}", flush=True)
    return pairs


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline-bin", required=True, help="bin folder of the baseline build")
    p.add_argument("--rounds", type=int, default=24)
    p.add_argument("--tolerance", type=float, default=0.03)
    p.add_argument("--json", help="also write the rates and figures here")
    a, rest = p.parse_known_args(argv)
    b = batching_bench.parse(["--levels", "1"] + rest)  # --bin, --tokens, --threads, ...
    b.baseline_bin, b.rounds, b.tolerance, b.json = (a.baseline_bin, a.rounds, a.tolerance,
                                                     a.json)
    if b.rounds < 4:
        p.error("--rounds must be >= 4")
    return b


def main(argv):
    args = parse(argv)
    vocab = os.path.join(args.shared, "models", "vocab", "ggml-vocab-starcoder.gguf")
    target = batching_bench.fixture(batching_bench.cache_dir(args.cache), "smollm2-360m", 1,
                                    vocab)
    print(f"target {target}; baseline {args.baseline_bin}; new {args.bin}; "
          f"{args.threads} threads per worker, {args.tokens} tokens per stream", flush=True)
    stacks = []
    with tempfile.TemporaryDirectory(prefix="tandem-ab-") as logs:
        try:
            for name, folder in (("baseline", args.baseline_bin), ("new", args.bin)):
                a = copy.copy(args)
                a.bin = folder
                os.makedirs(os.path.join(logs, name))
                stacks.append(batching_bench.Stack(a, target, None,
                                                   os.path.join(logs, name)).__enter__())
            pairs = run_rounds([s.stub for s in stacks], args.rounds, args.tokens, args.timeout)
        finally:
            for s in reversed(stacks):
                s.__exit__()
    ratios = [new / base for base, new in pairs]
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    out = {"baseline_median": statistics.median(b for b, _ in pairs),
           "new_median": statistics.median(n for _, n in pairs),
           "paired_ratio_median": statistics.median(ratios), "q1": q1, "q3": q3,
           "pairs": pairs}
    ok = out["paired_ratio_median"] >= 1 - args.tolerance
    print(f"baseline median {out['baseline_median']:.1f} tok/s, new median "
          f"{out['new_median']:.1f} tok/s; paired new/baseline median "
          f"{out['paired_ratio_median']:.3f} (quartiles {q1:.3f}..{q3:.3f}) over "
          f"{len(pairs)} rounds")
    print(f"{'PASS' if ok else 'FAIL'}: single-stream within {args.tolerance:.0%} of the "
          f"baseline")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
