"""tandem-chat as a user runs it: the golden continuation, speculation, and exit codes; with
--server against stacklib's three processes (over mutual TLS with an API key, given to
tandem-chat by --tls-ca and --api-key-file, under TANDEM_E2E_TLS=1).

Needs TANDEM_BIN (the folder with the binaries) and TANDEM_SHARED (set by CTest).
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
sys.path.insert(0, HERE)
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402  (the three processes, over mutual TLS with a key if the run is)

BIN = os.environ["TANDEM_BIN"]
MODELS = os.path.join(os.environ["TANDEM_SHARED"], "models", "stories260K")
TARGET = os.path.join(MODELS, "stories260K.gguf")
DRAFT = os.path.join(MODELS, "derived", "stories-draft-distilled.gguf")
GOLDEN_32 = (", there was a little girl named Lily. She loved to play outside in the park. "
             "One day, she saw")


def chat(*args, stdin=""):
    return subprocess.run([os.path.join(BIN, "tandem-chat"), *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_greedy_prints_the_golden_continuation():
    r = chat(os.path.join(MODELS, "stories260K.gguf"), "--format", "raw", "-p",
             "Once upon a time", "--temp", "0", "--max-tokens", "32")
    assert r.returncode == 0, r.stderr
    assert r.stdout == GOLDEN_32 + "\n", repr(r.stdout)
    assert "prefill" in r.stderr and "decode 32 tokens" in r.stderr, r.stderr


def test_speculation_prints_the_same_text_and_an_acceptance_rate():
    r = chat(os.path.join(MODELS, "stories260K.gguf"), "--format", "raw", "-p",
             "Once upon a time", "--temp", "0", "--max-tokens", "32", "--draft",
             os.path.join(MODELS, "derived", "stories260K-Q4_0.gguf"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == GOLDEN_32 + "\n", repr(r.stdout)
    assert "draft acceptance" in r.stderr, r.stderr


def test_interactive_turns_reuse_the_cache_and_reset():
    r = chat(os.path.join(MODELS, "stories260K.gguf"), "--format", "chatml", "--temp", "0",
             "--max-tokens", "8", stdin="Hello\nMore\n/reset\nHello\n\nignored\n")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3 and lines[0] == lines[2], r.stdout
    stats = [l for l in r.stderr.splitlines() if l.startswith("[prompt")]
    assert len(stats) == 3 and "(0 cached)" in stats[0] and "(0 cached)" not in stats[1], stats
    assert "conversation reset" in r.stderr


def assert_same_text_in_process_and_remote(stack, draft, samplings):
    for sampling in samplings:
        common = ["--format", "raw", "-p", "Once upon a time", "--max-tokens", "48", *sampling]
        remote = chat(*stack.chat_args(), *common)
        local_run = chat(TARGET, *(["--draft", draft] if draft else []), *common)
        assert remote.returncode == 0 and local_run.returncode == 0, (remote.stderr,
                                                                      local_run.stderr)
        assert remote.stdout == local_run.stdout, (sampling, remote.stdout, local_run.stdout)
        assert len(remote.stdout) > 40, remote.stdout
        if draft:
            assert "draft acceptance" in remote.stderr, remote.stderr


def test_three_processes_equal_in_process_output():
    """Greedy and seeded sampling through target + draft workers and the coordinator on
    loopback give exactly the in-process text: with explicit filters, and with the defaults
    both sides share (core/generation/sampling_defaults.h)."""
    with stacklib.Cluster(draft=True) as stack:
        assert_same_text_in_process_and_remote(stack, DRAFT, [
            ["--temp", "0"],
            ["--temp", "0.8", "--top-p", "0.95", "--top-k", "0", "--min-p", "0", "--seed", "5"],
            ["--temp", "0.8", "--seed", "5"],
            ["--seed", "11", "--repeat-penalty", "1.3", "--repeat-last-n", "0"],
        ])


def test_target_alone_equals_in_process_output_for_a_seed():
    """Without a draft the coordinator runs verifies with no guesses; in-process tandem-chat
    runs a Session. The same seed and flags give the same text."""
    with stacklib.Cluster(draft=False) as stack:
        assert_same_text_in_process_and_remote(stack, None, [
            ["--temp", "0.8", "--seed", "5"],
            ["--temp", "1.1", "--seed", "123", "--top-k", "0"],
            ["--seed", "7", "--repeat-penalty", "1.3"],
            # Uniform over the whole vocabulary: byte tokens that never form characters.
            # Both print the same well-formed text (chat() decodes stdout strictly).
            ["--temp", "1e30", "--top-k", "0", "--top-p", "1", "--min-p", "0", "--seed", "3"],
        ])


def test_a_frozen_coordinator_costs_at_most_the_timeout():
    """A coordinator that stops answering (SIGSTOP: a hung host) no longer hangs tandem-chat:
    it gives up within --timeout and says so, at start-up and in the middle of a turn."""
    import signal
    import time
    with stacklib.Cluster(draft=False) as stack:
        server, coordinator = stack.coordinator.address, stack.coordinator
        coordinator.signal(signal.SIGSTOP)
        try:
            start = time.monotonic()
            r = chat(*stack.chat_args(), "--timeout", "2", "-p", "Once upon a time")
            took = time.monotonic() - start
        finally:
            coordinator.signal(signal.SIGCONT)
        assert took < 30, took
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert f"coordinator {server} did not answer DescribeModel within 2s" in r.stderr, \
            r.stderr
        # Frozen after the connection check, in the turn: the stdin loop reports the turn
        # and goes on to the next line.
        proc = subprocess.Popen([os.path.join(BIN, "tandem-chat"), *stack.chat_args(),
                                 "--timeout", "2", "--format", "raw", "--max-tokens", "8"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)  # let it connect
        coordinator.signal(signal.SIGSTOP)
        try:
            start = time.monotonic()
            out, err = proc.communicate("Once upon a time\n", timeout=60)
            took = time.monotonic() - start
        finally:
            coordinator.signal(signal.SIGCONT)
        assert took < 30, took
        assert proc.returncode == 0, (proc.returncode, err)
        assert f"no complete reply from coordinator {server} within --timeout 2s" in err, err


def test_flags_that_mean_nothing_in_a_mode_are_refused():
    """--server talks to workers that own their cache and threads: --kv, --threads, --ctx and
    --draft are refused (even at their default) before connecting; --timeout is --server's."""
    for flag in (["--kv", "f16"], ["--threads", "2"], ["--ctx", "256"],
                 ["--draft", os.path.join(MODELS, "stories260K.gguf")]):
        r = chat("--server", "127.0.0.1:1", *flag, "-p", "x")
        assert r.returncode == 2, (flag, r.returncode, r.stderr)
        assert r.stderr.count("\n") == 1 and flag[0] in r.stderr, (flag, r.stderr)
        assert "cannot apply with --server" in r.stderr, r.stderr
    r = chat(TARGET, "--timeout", "5", "-p", "x")
    assert r.returncode == 2 and "--timeout only applies with --server" in r.stderr, r.stderr


def test_bad_input_exits_2_with_one_line():
    cases = [
        ["/no/such/model.gguf", "-p", "x"],
        [os.path.join(MODELS, "stories260K.gguf"), "--top-p", "1.5", "-p", "x"],
        [os.path.join(MODELS, "stories260K.gguf"), "--kv", "q4", "-p", "x"],
        [os.path.join(MODELS, "stories260K.gguf"), "--draft-tokens", "zero", "-p", "x"],
        [os.path.join(MODELS, "stories260K.gguf"), "--no-such-flag", "-p", "x"],
    ]
    for args in cases:
        r = chat(*args)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert r.stderr.strip(), args
        assert r.stdout == "", args


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
