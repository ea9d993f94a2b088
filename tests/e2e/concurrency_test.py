"""Limits over real processes: 64 clients against --max-sessions 16 workers all complete
exactly (queued, not refused); 16 idle named sessions no longer lock anyone out; a cancelled
request frees its session; oversized requests get their documented codes at once; Attach
streams that never open are closed. tools/bench/concurrency_bench.py's clients against
stacklib's Cluster (over mutual TLS with an API key under TANDEM_E2E_TLS=1).

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import sys
import threading
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "ops"))
import concurrency_bench as bench  # noqa: E402
import opslib  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import stacklib  # noqa: E402

import grpc  # noqa: E402

STUBS = bench.STUBS


class Stack(stacklib.Cluster):
    """bench's stack on stacklib's Cluster: target and draft workers with --max-sessions 16
    and a coordinator (over mutual TLS with a key when the run is)."""

    def __init__(self, coordinator_args=(), worker_args=()):
        super().__init__(coordinator_args=["--metrics-listen", "127.0.0.1:0",
                                           *coordinator_args],
                         worker_args=["--max-sessions", "16", *worker_args])

    def __enter__(self):
        super().__enter__()
        self.target_metrics, self.draft_metrics = self.targets[0].metrics, self.draft.metrics
        return self

    def metric(self, name, address=None):
        """Sum of a metric's samples on the coordinator's (or ADDRESS's) /metrics."""
        return stacklib.metric(address or self.coordinator.metrics, name)


def eventually(check, seconds=10):
    """Polls `check` (bounded) until it holds; returns its last value."""
    end = time.monotonic() + seconds
    while not check() and time.monotonic() < end:
        time.sleep(0.05)
    return check()


def test_64_clients_against_16_session_workers_all_complete_exactly():
    with Stack() as s:
        r = bench.run(s, clients=64, max_tokens=32, prompts=bench.PROMPTS, idle_sessions=0,
                      timeout=120)
        bench.report(r)
        assert r["completed"] == 64 and r["exact"] == 64, r
        assert s.metric("tandem_queued_requests") == 0
        assert s.metric("tandem_active_sessions") == 0


def test_16_idle_named_sessions_no_longer_lock_anyone_out():
    with Stack() as s:
        expected, _ = bench.generate(s.stub, bench.request("Once upon a time", 24), 60)
        for i in range(16):
            bench.generate(s.stub, bench.request("The cat", 2, session=f"idle-{i}"), 60)
        assert s.metric("tandem_worker_active_sessions", s.target_metrics) == 16
        r = bench.run(s, clients=24, max_tokens=24, prompts=["Once upon a time"],
                      idle_sessions=0, timeout=60)
        bench.report(r)
        assert r["completed"] == 24 and r["exact"] == 24, r
        ids, _ = bench.generate(s.stub, bench.request("Once upon a time", 24, "newcomer"), 60)
        assert ids == expected
        # The coordinator let the idle sessions' streams go itself: no worker had to evict.
        assert s.metric("tandem_worker_active_sessions", s.target_metrics) <= 16
        assert s.metric("tandem_worker_evicted_sessions_total", s.target_metrics) == 0
        # A session that let go is re-filled from the coordinator's history, draft included.
        again = bench.request("Once upon a time", 24, "idle-3")
        again.require_existing_session = True
        ids, final = [], None
        for r in s.stub.Generate(again, timeout=60):
            if r.HasField("delta"):
                ids.extend(r.delta.token_ids)
            else:
                final = r.final
        assert ids == expected
        assert final.speculation.drafted_tokens > 0 and not final.speculation.draft_failed, \
            final.speculation


def test_a_cancelled_request_frees_its_session():
    with Stack() as s:
        call = s.stub.Generate(bench.request("Once upon a time", 400, "chat-1"), timeout=60)
        next(call)  # the first delta: the request runs
        call.cancel()  # what Ctrl-C in tandem-chat --server does to the call
        assert eventually(lambda: s.metric("tandem_active_sessions") == 0)
        assert eventually(
            lambda: s.metric("tandem_worker_active_sessions", s.target_metrics) == 0)
        assert eventually(lambda: s.metric("tandem_worker_active_sessions", s.draft_metrics) == 0)


def test_oversized_requests_get_their_documented_codes_at_once():
    cases = [
        ("10 MB prompt", bench.request("a" * (10 << 20), 4), grpc.StatusCode.RESOURCE_EXHAUSTED,
         ""),
        ("2 MB prompt", bench.request("a" * (2 << 20), 4), grpc.StatusCode.INVALID_ARGUMENT,
         "text is 2097152 bytes; the limit is 1048576"),
        ("1 MB session id", bench.request("The cat", 4, "s" * (1 << 20)),
         grpc.StatusCode.INVALID_ARGUMENT, "session_id is 1048576 bytes; the limit is 128"),
    ]
    unknown = bench.request("The cat", 4, "s" * 8192)
    unknown.require_existing_session = True
    cases.append(("8 KB session id", unknown, grpc.StatusCode.INVALID_ARGUMENT,
                  "session_id is 8192 bytes"))
    with Stack() as s:
        for name, req, code, message in cases:
            start = time.monotonic()
            try:
                bench.generate(s.stub, req, 30)
                raise AssertionError(f"{name}: no error")
            except grpc.RpcError as e:
                assert e.code() == code, (name, e.code(), e.details())
                assert message in e.details(), (name, e.details())
            assert time.monotonic() - start < 2, (name, time.monotonic() - start)
        ids, _ = bench.generate(s.stub, bench.request("The cat", 4), 30)
        assert len(ids) == 4


def threads_of(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("Threads:")).split()[1])


def test_attach_streams_that_never_open_are_closed():
    with Stack(worker_args=["--open-timeout-seconds", "1"]) as s:
        target_pid = s.targets[0].pid
        before = threads_of(target_pid)
        channel = stacklib.channel(s.targets[0].address, s.security)
        worker = STUBS.worker_pb2_grpc.WorkerStub(channel)
        codes = []
        lock = threading.Lock()

        def silent_stream():
            never = threading.Event()

            def nothing():  # a request iterator that never yields
                never.wait(15)
                return
                yield

            try:
                for _ in worker.Attach(nothing(), timeout=12):
                    pass
                code = grpc.StatusCode.OK
            except grpc.RpcError as e:
                code = e.code()
            with lock:
                codes.append(code)

        start = time.monotonic()
        streams = [threading.Thread(target=silent_stream) for _ in range(100)]
        for t in streams:
            t.start()
        for t in streams:
            t.join(20)
        elapsed = time.monotonic() - start
        assert codes.count(grpc.StatusCode.CANCELLED) == 100, (elapsed, set(codes))
        assert elapsed < 8, elapsed
        assert eventually(lambda: threads_of(target_pid) <= before + 4), \
            (before, threads_of(target_pid))
        ids, _ = bench.generate(s.stub, bench.request("The cat", 4), 30)
        assert len(ids) == 4


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
