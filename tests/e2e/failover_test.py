"""The three processes under failure: a draft killed mid-request, a target restarted
mid-session, a client that cancels. Real processes on loopback (deploy/local/tandem-local.sh).

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "ops"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402  (stubs, binaries, models, requests and their replies)
from stacklib import BIN, DRAFT, STUBS, TARGET, collect, grpc, request  # noqa: E402

LOCAL = os.path.join(ROOT, "deploy", "local", "tandem-local.sh")


class Stack:
    """target + draft + coordinator on loopback, stopped on exit."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="tandem-failover-")
        self.env = dict(os.environ, TANDEM_BIN=BIN)
        r = subprocess.run([LOCAL, "start", "--target", TARGET, "--draft", DRAFT, "--dir",
                            self.dir], capture_output=True, text=True, timeout=120, env=self.env)
        assert r.returncode == 0, r.stderr
        self.stub = STUBS.generator_pb2_grpc.GeneratorStub(
            grpc.insecure_channel(self.read("coordinator.addr")))
        return self

    def __exit__(self, *exc):
        subprocess.run([LOCAL, "stop", "--dir", self.dir], capture_output=True, timeout=60,
                       env=self.env)
        for name in ("target-restarted",):
            pid_file = os.path.join(self.dir, name + ".pid")
            if os.path.exists(pid_file):
                try:
                    os.kill(int(self.read(name + ".pid")), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def read(self, name):
        with open(os.path.join(self.dir, name)) as f:
            return f.read().strip()

    def metric(self, name, process):
        """Sum of a metric's samples on PROCESS's /metrics."""
        return stacklib.metric(self.read(process + ".metrics"), name)


def target_alone(prompt, max_tokens):
    """The target's own greedy ids, computed in process (tandem-chat has no id output, so
    this asks the coordinator with speculation off)."""
    with Stack() as stack:
        ids, _ = collect(stack.stub.Generate(request(prompt, max_tokens, speculate=False)))
    return ids


def test_killing_the_draft_mid_request_keeps_the_output_exact():
    expected = target_alone("Once upon a time", 600)
    with Stack() as stack:
        draft_pid = int(stack.read("draft.pid"))
        killed = []

        def kill_draft(n):
            if n >= 20 and not killed:
                os.kill(draft_pid, signal.SIGKILL)
                killed.append(n)

        ids, final = collect(stack.stub.Generate(request("Once upon a time", 600)), kill_draft)
        assert killed, "the draft was never killed"
        assert ids == expected, (len(ids), len(expected))
        assert final.speculation.draft_failed
        assert stack.metric("tandem_draft_failures_total", "coordinator") >= 1


def test_a_restarted_target_resyncs_the_session():
    with Stack() as stack:
        first, _ = collect(stack.stub.Generate(request("Tom and Sam went to the park", 16,
                                                       session="s1")))
        # Kill the target and start a new one on the same address.
        address = stack.read("target.addr")
        os.kill(int(stack.read("target.pid")), signal.SIGKILL)
        time.sleep(0.3)
        restarted = subprocess.Popen([os.path.join(BIN, "tandem-worker"), "--role", "target",
                                      "--model", TARGET, "--listen", address],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        with open(os.path.join(stack.dir, "target-restarted.pid"), "w") as f:
            f.write(str(restarted.pid))
        assert "listening on" in restarted.stdout.readline()
        follow_up = "Tom and Sam went to the park" + "".join([])  # same prefix, longer reply
        second, final = collect(stack.stub.Generate(request(follow_up, 32, session="s1")))
    expected = target_alone(follow_up, 32)
    assert second == expected, (second, expected)
    assert first == expected[:16]


def test_cancelling_a_stream_frees_both_workers_sessions():
    with Stack() as stack:
        responses = stack.stub.Generate(request("Once upon a time", 2000, session="c1"))
        for r in responses:
            if r.HasField("delta"):
                responses.cancel()
                break
        deadline = time.time() + 10
        while time.time() < deadline:
            busy = (stack.metric("tandem_worker_active_sessions", "target") +
                    stack.metric("tandem_worker_active_sessions", "draft"))
            if busy == 0:
                break
            time.sleep(0.1)
        assert busy == 0, f"{busy} sessions still open"


def test_eight_concurrent_clients_get_their_one_at_a_time_outputs():
    import threading
    def req(i):
        r = request("Tom and Sam went to the park" if i % 3 == 0 else "Once upon a time", 40)
        r.sampling.temperature = 0.0 if i % 2 == 0 else 0.9
        r.sampling.seed = 300 + i
        r.ignore_eos = False
        return r
    with Stack() as stack:
        alone = [collect(stack.stub.Generate(req(i)))[0] for i in range(8)]
        together = [None] * 8
        def client(i):
            together[i] = collect(stack.stub.Generate(req(i)))[0]
        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert together == alone, [i for i in range(8) if together[i] != alone[i]]


def test_malformed_requests_are_refused_and_the_stack_keeps_serving():
    with Stack() as stack:
        cases = []
        empty = STUBS.generator_pb2.GenerateRequest(text="")
        cases.append((empty, grpc.StatusCode.INVALID_ARGUMENT))
        bad_p = request("Hi", 4)
        bad_p.sampling.top_p = 2.0
        cases.append((bad_p, grpc.StatusCode.INVALID_ARGUMENT))
        bad_k = request("Hi", 4)
        bad_k.speculation.draft_tokens = -1
        cases.append((bad_k, grpc.StatusCode.INVALID_ARGUMENT))
        unknown = request("Hi", 4, session="nope")
        unknown.require_existing_session = True
        cases.append((unknown, grpc.StatusCode.NOT_FOUND))
        for r, code in cases:
            try:
                collect(stack.stub.Generate(r))
                raise AssertionError(f"accepted {r}")
            except grpc.RpcError as e:
                assert e.code() == code, (e.code(), e.details())
        ids, final = collect(stack.stub.Generate(request("Once upon a time", 8)))
        assert len(ids) == 8 and final.usage.generated_tokens == 8


def test_an_incompatible_draft_is_refused_at_start():
    other = os.path.join(os.environ["TANDEM_SHARED"], "models", "llama-2-tiny-random",
                         "llama-2-tiny-random.gguf")
    with tempfile.TemporaryDirectory() as run:
        env = dict(os.environ, TANDEM_BIN=BIN)
        r = subprocess.run([LOCAL, "start", "--target", TARGET, "--draft", other, "--dir", run],
                           capture_output=True, text=True, timeout=120, env=env)
        subprocess.run([LOCAL, "stop", "--dir", run], capture_output=True, timeout=60, env=env)
        assert r.returncode != 0
        log = open(os.path.join(run, "coordinator.log")).read()
        assert "FAILED_PRECONDITION" in log and "llama-2-tiny-random" in log, log


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
