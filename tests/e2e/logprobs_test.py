"""Generate's logprobs (GenerateRequest.logprobs/top_logprobs) over the real stack on loopback
(stories260K target with --kv f32 + its distilled draft): for a greedy request, every
generated token's logprob and its top alternatives equal a log-softmax computed here with
numpy from the target's own logits at every position (`tandem-logits`, a separate program
that runs the whole sequence in one pass), with the draft speculating and without it (the
values are the target's: speculation does not change them, bit for bit); a stop string cuts
the logprobs with the tokens; a bad top_logprobs is INVALID_ARGUMENT.

Needs TANDEM_BIN (with tandem-worker, tandem-coordinator, tandem-logits), TANDEM_SHARED and
numpy (python3-numpy); prints "N passed, N failed".
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402
from stacklib import BIN, STUBS, TARGET  # noqa: E402

import grpc  # noqa: E402

PROMPT = "Once upon a time"
TOKENS = 40
TOP = 5
# Both sides log-softmax the same float32 logits (the worker in double, numpy in float64):
# only the final rounding to float32 differs.
ATOL = 1e-5
STACK = None


def generate(speculate, top=TOP, stop_strings=(), max_tokens=TOKENS):
    """(prompt ids, generated ids, [TokenLogprobs], final) of one greedy request."""
    r = STUBS.generator_pb2.GenerateRequest(text=PROMPT, max_tokens=max_tokens, ignore_eos=True,
                                            logprobs=True, top_logprobs=top)
    r.sampling.temperature = 0
    r.speculation.enabled = speculate
    r.stop_strings.extend(stop_strings)
    ids, logprobs, final = [], [], None
    for m in STACK.stub.Generate(r, timeout=120):
        if m.HasField("delta"):
            assert len(m.delta.logprobs) == len(m.delta.token_ids), m
            ids.extend(m.delta.token_ids)
            logprobs.extend(m.delta.logprobs)
        else:
            final = m.final
    prompt = STACK.stub.Tokenize(STUBS.generator_pb2.TokenizeRequest(text=PROMPT,
                                                                     add_special=True),
                                 timeout=30).token_ids
    return list(prompt), ids, logprobs, final


def reference_logprobs(sequence):
    """log_softmax of the target's logits at every position of `sequence` ([n, vocab])."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "logits.npy")
        subprocess.run([os.path.join(BIN, "tandem-logits"), "--model", TARGET, "--tokens",
                        ",".join(map(str, sequence)), "--out", out, "--threads", "1"],
                       check=True, capture_output=True, timeout=120)
        logits = np.load(out).astype(np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def check_against_reference(prompt, ids, logprobs):
    ref = reference_logprobs(prompt + ids)
    assert len(logprobs) == len(ids) == TOKENS, (len(logprobs), len(ids))
    for i, (token, lp) in enumerate(zip(ids, logprobs)):
        row = ref[len(prompt) - 1 + i]  # the position that predicted generated token i
        assert lp.token.token_id == token, (i, lp.token.token_id, token)
        assert abs(lp.token.logprob - row[token]) <= ATOL, (i, lp.token.logprob, row[token])
        assert lp.token.logprob <= 0
        # Greedy: the token is the most likely one, so it leads its own alternatives.
        want_top = sorted(range(len(row)), key=lambda t: (-row[t], t))[:TOP]
        assert [t.token_id for t in lp.top] == want_top, (i, list(lp.top), want_top)
        for t in lp.top:
            assert abs(t.logprob - row[t.token_id]) <= ATOL, (i, t, row[t.token_id])
        assert lp.top[0].token_id == token, (i, lp.top[0], token)


def test_target_alone_logprobs_equal_a_log_softmax_of_the_targets_logits():
    prompt, ids, logprobs, final = generate(speculate=False)
    assert final.speculation.drafted_tokens == 0, final.speculation
    check_against_reference(prompt, ids, logprobs)
    assert logprobs[0].token.token_bytes, "the coordinator adds each token's bytes"


def test_speculation_does_not_change_the_logprobs():
    prompt, ids, with_draft, final = generate(speculate=True)
    assert final.speculation.accepted_tokens > 0, final.speculation  # multi-token rounds ran
    check_against_reference(prompt, ids, with_draft)
    _, alone_ids, alone, _ = generate(speculate=False)
    assert ids == alone_ids
    assert [lp.SerializeToString() for lp in with_draft] == \
        [lp.SerializeToString() for lp in alone], "logprobs differ with and without the draft"


def test_top_zero_gives_the_chosen_tokens_only():
    _, ids, logprobs, _ = generate(speculate=True, top=0, max_tokens=8)
    assert [lp.token.token_id for lp in logprobs] == ids
    assert all(len(lp.top) == 0 for lp in logprobs), logprobs


def test_a_stop_string_cuts_the_logprobs_with_the_tokens():
    _, _, full, _ = generate(speculate=True)
    text = "".join(lp.token.token_bytes.decode("utf-8", "replace") for lp in full)
    stop = text[30:34]
    _, ids, logprobs, final = generate(speculate=True, stop_strings=[stop])
    assert final.finish_reason == STUBS.generator_pb2.FINISH_REASON_STOP_STRING, final
    assert len(logprobs) == len(ids) < TOKENS, (len(logprobs), len(ids))
    assert [lp.SerializeToString() for lp in logprobs] == \
        [lp.SerializeToString() for lp in full[:len(ids)]]


def test_top_logprobs_out_of_range_or_without_logprobs_is_invalid_argument():
    for fields, message in [(dict(logprobs=True, top_logprobs=21), "top_logprobs 21"),
                            (dict(logprobs=True, top_logprobs=-1), "top_logprobs -1"),
                            (dict(top_logprobs=3), "needs logprobs")]:
        r = STUBS.generator_pb2.GenerateRequest(text=PROMPT, max_tokens=4, **fields)
        try:
            list(STACK.stub.Generate(r, timeout=30))
            raise AssertionError(f"{fields} was accepted")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, (fields, e.code())
            assert message in e.details(), (fields, e.details())


def main():
    global STACK
    with stacklib.Cluster(draft=True, worker_args=["--kv", "f32"]) as STACK:
        return opslib.run_tests(globals())


if __name__ == "__main__":
    sys.exit(main())
