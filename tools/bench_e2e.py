#!/usr/bin/python3
"""End-to-end speed of Tandem's distributed path (a benchmark, not a test).

Starts a target worker, a draft worker and the coordinator on loopback
(deploy/local/tandem-local.sh), then measures decode tokens/s of greedy requests
  1. through the coordinator with the target alone (speculation disabled),
  2. through the coordinator with speculation (k = --draft-tokens),
  3. in process with tandem-chat --draft (same k, same models),
and prints `key value` lines: each tok/s (median of --reps), the speculative speed-up, and the
overhead of the distributed path against in-process speculation.

usage: tools/bench_e2e.py [--target MODEL] [--draft MODEL] [--draft-tokens K]
                          [--max-tokens N] [--reps R] [--prompt TEXT]
Defaults: the shared stories260K target and its distilled draft.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import tandem_stubs  # noqa: E402


def main():
    shared = os.environ.get("TANDEM_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
    models = os.path.join(shared, "models", "stories260K")
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", default=os.path.join(models, "stories260K.gguf"))
    p.add_argument("--draft", default=os.path.join(models, "derived",
                                                   "stories-draft-distilled.gguf"))
    p.add_argument("--draft-tokens", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--prompt", default="Once upon a time")
    a = p.parse_args()
    bin_dir = os.environ.get("TANDEM_BIN", os.path.join(ROOT, "build", "bin"))
    stubs = tandem_stubs.load()
    import grpc

    local = os.path.join(ROOT, "deploy", "local", "tandem-local.sh")
    with tempfile.TemporaryDirectory() as run:
        env = dict(os.environ, TANDEM_BIN=bin_dir)
        subprocess.run([local, "start", "--target", a.target, "--draft", a.draft, "--dir", run,
                        "--threads", str(a.threads), "--draft-tokens", str(a.draft_tokens)],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        try:
            address = open(os.path.join(run, "coordinator.addr")).read().strip()
            stub = stubs.generator_pb2_grpc.GeneratorStub(grpc.insecure_channel(address))

            def remote(speculate):
                rates, acceptance = [], []
                for _ in range(a.reps + 1):  # the first is a warm-up
                    request = stubs.generator_pb2.GenerateRequest(text=a.prompt,
                                                                  max_tokens=a.max_tokens)
                    request.sampling.temperature = 0
                    request.speculation.enabled = speculate
                    request.speculation.draft_tokens = a.draft_tokens
                    final = [r.final for r in stub.Generate(request) if r.HasField("final")][0]
                    rates.append(final.timing.decode_tokens_per_second)
                    acceptance.append(final.speculation.acceptance_rate)
                return statistics.median(rates[1:]), statistics.median(acceptance[1:])

            target_only, _ = remote(False)
            speculative, acceptance = remote(True)
        finally:
            subprocess.run([local, "stop", "--dir", run], env=env, stdout=subprocess.DEVNULL)

    in_process = []
    for _ in range(a.reps + 1):
        r = subprocess.run([os.path.join(bin_dir, "tandem-chat"), a.target, "--draft", a.draft,
                            "--draft-tokens", str(a.draft_tokens), "--format", "raw", "-p",
                            a.prompt, "--temp", "0", "--max-tokens", str(a.max_tokens),
                            "--threads", str(a.threads)],
                           capture_output=True, text=True, check=True)
        in_process.append(float(re.search(r"decode \d+ tokens, ([0-9.]+) tok/s", r.stderr)[1]))
    in_process_rate = statistics.median(in_process[1:])

    print(f"target_only_tok_s {target_only:.1f}")
    print(f"speculative_tok_s {speculative:.1f}")
    print(f"acceptance_rate {acceptance:.3f}")
    print(f"speculative_speedup {speculative / target_only:.3f}")
    print(f"in_process_speculative_tok_s {in_process_rate:.1f}")
    print(f"distributed_overhead {1 - speculative / in_process_rate:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
