"""Pipelined rounds (issue 14, speculation.pipelined) over real processes: the draft worker's
next call runs while the target verifies. Greedy text equals the target alone's for every k,
seeded sampled text (standard rule) equals the sequential rounds' with the same seed and k,
the statistics say how many rounds used guesses drafted ahead, and tandem-chat --pipeline
gives the same text in-process and with --server.

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402
import stacklib  # noqa: E402
from stacklib import BIN, DRAFT, TARGET, generate, request  # noqa: E402

MAX_TOKENS = 160


def pipelined(req, k, on=True):
    req.speculation.draft_tokens = k
    req.speculation.pipelined = on
    return req


def seeded(k, on):
    r = pipelined(request(max_tokens=MAX_TOKENS), k, on)
    r.sampling.temperature = 0.9
    r.sampling.top_p = 0.95
    r.sampling.seed = 21
    return r


def test_greedy_and_seeded_text_equal_the_sequential_rounds():
    with stacklib.Cluster(targets=1, draft=True) as c:
        alone, _, _ = generate(c.stub, request(max_tokens=MAX_TOKENS, speculate=False))
        assert len(alone) == MAX_TOKENS
        for k in (1, 4, 8):
            ids, final, _ = generate(c.stub, pipelined(request(max_tokens=MAX_TOKENS), k))
            s = final.speculation
            assert ids == alone, f"k={k}: pipelined greedy text differs from the target alone"
            assert s.pipelined and s.ahead_drafts > 0 and 0 < s.predrafted_rounds <= s.rounds, s
            assert not s.draft_failed
            sequential, _, _ = generate(c.stub, seeded(k, False))
            ids, final, _ = generate(c.stub, seeded(k, True))
            assert ids == sequential, f"k={k}: pipelined seeded text differs from sequential"
            print(f"k={k}: {s.predrafted_rounds} of {s.rounds} rounds pre-drafted "
                  f"({s.ahead_drafts} calls ahead)")
        _, final, _ = generate(c.stub, pipelined(request(max_tokens=32), 4, on=False))
        assert not final.speculation.pipelined and final.speculation.ahead_drafts == 0


def chat(*args):
    return subprocess.run([os.path.join(BIN, "tandem-chat"), *args], capture_output=True,
                          text=True, timeout=120)


def test_tandem_chat_pipeline_in_process_and_with_server():
    common = ["--format", "raw", "-p", "Once upon a time", "--max-tokens", "64", "--ignore-eos",
              "--temp", "0", "--draft-tokens", "4"]
    alone = chat(TARGET, *common)
    assert alone.returncode == 0, alone.stderr
    local = chat(TARGET, "--draft", DRAFT, "--pipeline", *common)
    assert local.returncode == 0, local.stderr
    assert local.stdout == alone.stdout, (local.stdout, alone.stdout)
    assert "pipelined:" in local.stderr, local.stderr
    with stacklib.Cluster(targets=1, draft=True) as c:
        remote = chat(*c.chat_args(), "--pipeline", *common)
        assert remote.returncode == 0, remote.stderr
        assert remote.stdout == alone.stdout, (remote.stdout, alone.stdout)
        assert "pipelined:" in remote.stderr, remote.stderr


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
