"""tandem-chat as a user runs it: the golden continuation, speculation, and exit codes.

Needs TANDEM_BIN (the folder with the binaries) and TANDEM_SHARED (set by CTest).
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "ops"))
import opslib  # noqa: E402  (the shared test runner)

BIN = os.environ["TANDEM_BIN"]
MODELS = os.path.join(os.environ["TANDEM_SHARED"], "models", "stories260K")
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


def test_three_processes_equal_in_process_output():
    """Greedy and seeded sampling through target + draft workers and the coordinator on
    loopback give exactly the in-process text."""
    import tempfile
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    local = os.path.join(root, "deploy", "local", "tandem-local.sh")
    target = os.path.join(MODELS, "stories260K.gguf")
    draft = os.path.join(MODELS, "derived", "stories-draft-distilled.gguf")
    with tempfile.TemporaryDirectory() as run:
        env = dict(os.environ, TANDEM_BIN=BIN)
        start = subprocess.run([local, "start", "--target", target, "--draft", draft, "--dir", run],
                               capture_output=True, text=True, timeout=120, env=env)
        try:
            assert start.returncode == 0, start.stderr
            server = open(os.path.join(run, "coordinator.addr")).read().strip()
            for sampling in (["--temp", "0"],
                             ["--temp", "0.8", "--top-p", "0.95", "--top-k", "0", "--min-p", "0",
                              "--seed", "5"]):
                common = ["--format", "raw", "-p", "Once upon a time", "--max-tokens", "48",
                          *sampling]
                remote = chat("--server", server, *common)
                local_run = chat(target, "--draft", draft, *common)
                assert remote.returncode == 0 and local_run.returncode == 0, (remote.stderr,
                                                                              local_run.stderr)
                assert remote.stdout == local_run.stdout, (sampling, remote.stdout,
                                                           local_run.stdout)
                assert "draft acceptance" in remote.stderr, remote.stderr
        finally:
            subprocess.run([local, "stop", "--dir", run], capture_output=True, timeout=60,
                           env=env)


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
