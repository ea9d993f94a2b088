#!/usr/bin/python3
"""N-gram (prompt-lookup) speculation benchmark (issue 14): tokens per target pass and speedup
of `speculation.method = NGRAM` over the target alone, on repetitive text, through the real
processes (target worker + coordinator on loopback, no draft worker).

usage: ngram_bench.py [--model GGUF] [--tokens 128,256] [--reps 5] [--draft-tokens 16]
                      [--adaptive] [--threads 2] [--bin DIR] [--json OUT.json]

Model: the shared stories260K (a real model, whose greedy stories repeat their own phrases).
Prompts: a passage quoted and asked for again ("quote"), a list edited item by item ("edit"),
and plain story text ("story", where little repeats: the speedup there is the drafter's cost).
Each prompt runs greedy for each of --tokens lengths (ignore_eos) alternately with speculation
off and with the n-gram drafter, --reps times; medians of decode tok/s (the final Timing) side
by side, the tokens per target pass (all tokens / target calls, counting the calls without
guesses), and whether both outputs were equal (they must be: exit 1 otherwise). Run it in its
own autogroup on a shared machine.

--draft-tokens is the most guesses a round may ask for (the drafter's own length follows its
match: ngram_drafter.h); --adaptive lets the cost model choose k up to it instead.
stories260K copies little of a quoted passage: its output soon leaves the quote and goes on
in its own words, so most rounds find nothing to guess (measured: about 1 round in 7 on
"quote" at 128 tokens). What repeats is its own output once it loops ("edit" past ~128
tokens: "They see a big ball. They see a big ball."), hence the longer run.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import batching_bench  # noqa: E402  (its Stack and stubs)

STUBS = batching_bench.STUBS
PASSAGE = ("Once upon a time, there was a little girl named Lily. She loved to play outside in "
           "the park with her friend Tom. One day, they found a big red ball under a tree.")
PROMPTS = {
    "quote": PASSAGE + " Tell the story again. " + PASSAGE + " Tell the story again. Once upon",
    "edit": ("Tom has a red ball. Tom has a red hat. Tom has a red dog. Tom has a red cat. "
             "Lily has a blue ball. Lily has a blue hat. Lily has a blue dog. Lily has"),
    "story": "Once upon a time",
}


def generate(stub, prompt, tokens, ngram, k, adaptive=False):
    r = STUBS.generator_pb2.GenerateRequest(text=prompt, max_tokens=tokens, ignore_eos=True)
    r.sampling.temperature = 0
    r.speculation.enabled = ngram
    if ngram:
        r.speculation.method = STUBS.generator_pb2.SPECULATION_METHOD_NGRAM
        r.speculation.draft_tokens = k
        r.speculation.adaptive = adaptive
    return batching_bench.ids_and_final(stub, r)


def main():
    shared = os.environ.get("TANDEM_SHARED",
                            os.path.join(os.path.dirname(os.path.dirname(HERE)), "..", "shared"))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=os.path.join(shared, "models", "stories260K",
                                                   "stories260K.gguf"))
    p.add_argument("--tokens", default="128,256", help="generated tokens, comma-separated")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--draft-tokens", type=int, default=16)
    p.add_argument("--adaptive", action="store_true", help="k from the cost model")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--bin", default=os.environ.get(
        "TANDEM_BIN", os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "bin")))
    p.add_argument("--json")
    a = p.parse_args()
    # What batching_bench's Stack reads.
    a.ctx, a.max_sessions, a.worker_flags, a.coordinator_flags = 1024, 8, "", ""
    rows, ok = {}, True
    with tempfile.TemporaryDirectory() as logs, batching_bench.Stack(a, a.model, None,
                                                                     logs) as stack:
        for name, prompt in PROMPTS.items():
            generate(stack.stub, prompt, 8, False, a.draft_tokens)  # warm-up
            for tokens in (int(t) for t in a.tokens.split(",")):
                rows[f"{name} {tokens}"], same = measure(stack.stub, prompt, tokens, a)
                ok &= same
    print(f"n-gram speculation, {os.path.basename(a.model)} through the processes, greedy, "
          f"k <= {a.draft_tokens}{' (cost model)' if a.adaptive else ''}, medians of {a.reps}")
    print("prompt tokens | target alone tok/s | n-gram tok/s | speedup | tokens per target pass"
          " | per round with guesses")
    for name, r in rows.items():
        print(f"{name:13} | {r['target_alone_tok_s']:18.1f} | {r['ngram_tok_s']:12.1f} | "
              f"{r['speedup']:7.2f} | {r['tokens_per_target_pass']:22.2f} | "
              f"{r['tokens_per_guessed_round']:.2f}")
    best = max((r["speedup"], n) for n, r in rows.items() if not n.startswith("story"))
    print(f"{'PASS' if best[0] >= 2.0 else 'FAIL'} n-gram speedup on repetitive text >= 2x "
          f"(best {best[0]:.2f}, {best[1]} tokens)")
    print("outputs equal the target alone's" if ok else "OUTPUTS DIFFER from the target alone's")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if ok else 1


def measure(stub, prompt, tokens, a):
    """One prompt at one length: alternate runs without and with the drafter."""
    plain, ngram, per_pass, per_round, same = [], [], [], [], True
    for _ in range(a.reps):
        ids_off, f_off = generate(stub, prompt, tokens, False, a.draft_tokens)
        ids_on, f_on = generate(stub, prompt, tokens, True, a.draft_tokens, a.adaptive)
        same &= ids_on == ids_off
        plain.append(f_off.timing.decode_tokens_per_second)
        ngram.append(f_on.timing.decode_tokens_per_second)
        # Rounds with guesses yield accepted + 1 tokens each, those without one token (a lone
        # session's target does not continue alone).
        st = f_on.speculation
        per_round.append(st.tokens_per_round if st.rounds else 1.0)
        calls = st.rounds + (len(ids_on) - st.accepted_tokens - st.rounds)
        per_pass.append(len(ids_on) / calls if calls else 1.0)
    return {
        "target_alone_tok_s": statistics.median(plain),
        "ngram_tok_s": statistics.median(ngram),
        "speedup": statistics.median(n / o for n, o in zip(ngram, plain)),
        "tokens_per_target_pass": statistics.median(per_pass),
        "tokens_per_guessed_round": statistics.median(per_round),
        "same_output": same,
    }, same


if __name__ == "__main__":
    sys.exit(main())
