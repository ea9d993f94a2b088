"""The three processes under failure: a draft killed mid-request, a target restarted
mid-session, a client that cancels. Real processes on loopback (stacklib's Cluster; over
mutual TLS with an API key under TANDEM_E2E_TLS=1).

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import signal
import sys
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "ops"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402  (stubs, binaries, models, requests and their replies)
from stacklib import STUBS, collect, grpc, request  # noqa: E402


class Stack(stacklib.Cluster):
    """target + draft + coordinator on stacklib's Cluster (mutual TLS and a key when the run
    is), stopped on exit."""

    def __init__(self, **kwargs):
        super().__init__(coordinator_args=["--metrics-listen", "127.0.0.1:0"], **kwargs)

    def metric(self, name, process):
        """Sum of a metric's samples on PROCESS's /metrics."""
        where = {"coordinator": self.coordinator, "draft": self.draft, "target": self.targets[0]}
        return stacklib.metric(where[process].metrics, name)


def target_alone(prompt, max_tokens):
    """The target's own greedy ids, computed in process (tandem-chat has no id output, so
    this asks the coordinator with speculation off)."""
    with Stack() as stack:
        ids, _ = collect(stack.stub.Generate(request(prompt, max_tokens, speculate=False)))
    return ids


def test_killing_the_draft_mid_request_keeps_the_output_exact():
    expected = target_alone("Once upon a time", 600)
    with Stack() as stack:
        killed = []

        def kill_draft(n):
            if n >= 20 and not killed:
                stack.draft.signal(signal.SIGKILL)
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
        stack.targets[0].signal(signal.SIGKILL)
        stack.targets[0].proc.wait(10)
        time.sleep(0.3)
        stack.restart_target(0)
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
    stack = Stack(draft_model=other)
    try:
        with stack:
            raise AssertionError("the coordinator started with an incompatible draft")
    except AssertionError as e:
        assert "coordinator did not start" in str(e), e
    log = open(os.path.join(stack.dir, "coordinator.log")).read()
    assert "FAILED_PRECONDITION" in log and "llama-2-tiny-random" in log, log

if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
