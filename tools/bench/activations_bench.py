#!/usr/bin/python3
"""int16 against int8 activations (issue 31): tandem-bench figures of both modes, side by side.

usage: activations_bench.py [--models 360m,1b] [--prompts 128,512] [--reps 3]
                            [--sessions 1,8,16,32] [--threads 2] [--cache DIR] [--bin DIR]
                            [--json OUT.json]

Models (random weights, starcoder vocabulary, made once into --cache by tools/make_fixture_model,
never into the repository):
  360m  the SmolLM2-360M-shape Q8_0 fixture (--preset smollm2-360m --type q8_0 --seed 1)
  1b    a 1B shape in Q4_K_M (--dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192
        --type q4_k_m --seed 1): real Q4_K and Q6_K rows, a multiple of 256 wide
  1b-q5_k_m, 1b-q5_0  the same shape in Q5_K_M (Q5_K and Q6_K) and in Q5_0 (Q8_0 output)

For each model and prompt length, `tandem-bench --activations int16|int8` runs --reps times,
the two modes interleaved in a fresh random order each round; every figure is the median of its
runs. Printed per model: prefill tok/s at each prompt length, decode tok/s and its fraction of
the measured read bandwidth, the 5-row verify's cost in decode steps, and (with --sessions) one
decode step of N sessions at once in single steps; then int8 ÷ int16 for each. Run it in its
own autogroup on a quiet machine (the ratios move with a neighbour's load):
  setsid --wait bash -c 'echo -10 > /proc/self/autogroup; exec tools/bench/activations_bench.py'
Many streams through the processes: batching_bench.py --worker-flags '--activations int8'.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODES = ("int16", "int8")
MODELS = {
    "360m": ("smollm2-360m-q8_0-seed1.gguf",
             ["--preset", "smollm2-360m", "--type", "q8_0", "--seed", "1"]),
    "1b": ("1b-q4_k_m-seed1.gguf",
           ["--dim", "2048", "--layers", "16", "--heads", "32", "--kv-heads", "8", "--ffn",
            "8192", "--type", "q4_k_m", "--seed", "1"]),
    "1b-q5_k_m": ("1b-q5_k_m-seed1.gguf",
                  ["--dim", "2048", "--layers", "16", "--heads", "32", "--kv-heads", "8",
                   "--ffn", "8192", "--type", "q5_k_m", "--seed", "1"]),
    "1b-q5_0": ("1b-q5_0-seed1.gguf",
                ["--dim", "2048", "--layers", "16", "--heads", "32", "--kv-heads", "8",
                 "--ffn", "8192", "--type", "q5_0", "--seed", "1"]),
}


def fixture(name, cache, shared):
    file, flags = MODELS[name]
    path = os.path.join(cache, file)
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        vocab = os.path.join(shared, "models", "vocab", "ggml-vocab-starcoder.gguf")
        subprocess.run([os.path.join(ROOT, "tools", "make_fixture_model"), *flags,
                        "--vocab-from", vocab, "--out-gguf", path], check=True)
    return path


def bench(binary, model, mode, prompt, sessions, threads):
    """One tandem-bench run: its `name value` lines as a dict of floats."""
    cmd = [binary, model, "--activations", mode, "--p", str(prompt), "--n", "32",
           "--batch", "1,5", "--reps", "1", "--threads", str(threads)]
    if sessions:
        cmd += ["--sessions", sessions]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    figures = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                figures[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return figures


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="360m,1b")
    p.add_argument("--prompts", default="128,512", help="prefill prompt lengths")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--sessions", default="", help="session counts for one batched step")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cache", default=os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "tandem-bench"))
    p.add_argument("--bin", default=os.environ.get("TANDEM_BIN", os.path.join(ROOT, "build", "bin")))
    p.add_argument("--shared", default=os.environ.get(
        "TANDEM_SHARED", os.path.join(os.path.dirname(ROOT), "shared")))
    p.add_argument("--json", help="also write the medians here")
    args = p.parse_args()
    binary = os.path.join(args.bin, "tandem-bench")
    prompts = [int(v) for v in args.prompts.split(",")]
    results = {}
    for name in args.models.split(","):
        model = fixture(name, args.cache, args.shared)
        runs = {(mode, prompt): [] for mode in MODES for prompt in prompts}
        for _ in range(args.reps):
            order = list(runs)
            random.shuffle(order)
            for mode, prompt in order:
                # Decode, verify and session figures come from the first prompt's runs only.
                sessions = args.sessions if prompt == prompts[0] else ""
                runs[(mode, prompt)].append(
                    bench(binary, model, mode, prompt, sessions, args.threads))
        medians = {}
        for (mode, prompt), figures in runs.items():
            for key in figures[0]:
                if prompt != prompts[0] and key != "prefill_tok_s":
                    continue
                label = f"prefill_{prompt}_tok_s" if key == "prefill_tok_s" else key
                medians.setdefault(mode, {})[label] = statistics.median(f[key] for f in figures)
        results[name] = medians
        report(name, medians)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def report(name, medians):
    keys = [k for k in medians["int16"] if k.startswith(("prefill_", "decode_tok_s",
                                                           "decode_fraction", "batch_5",
                                                           "sessions_"))]
    print(f"\n{name}: medians ({', '.join(MODES)}), int8 / int16")
    for key in keys:
        a, b = medians["int16"][key], medians["int8"].get(key, float("nan"))
        print(f"  {key:32s} {a:10.3f} {b:10.3f}   {b / a if a else float('nan'):.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
