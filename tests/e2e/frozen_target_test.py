"""A frozen target (SIGSTOP) over real processes: with a second replica every in-flight
request completes with the target's own text; with none left a request fails UNAVAILABLE in
bounded time and the coordinator's health says NOT_SERVING; a draining coordinator reports
NOT_SERVING before its listener closes.

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import signal
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402
import stacklib  # noqa: E402
from stacklib import generate, grpc, request  # noqa: E402

PROMPTS = ["Once upon a time", "Tom and Sam went to the park", "The little dog"]
TARGET_TIMEOUT = 2  # seconds: each target call
FAILOVER_WAIT = 3   # seconds: waiting for a ready target after a failure
ARGS = ["--target-timeout-seconds", str(TARGET_TIMEOUT), "--failover-wait-seconds",
        str(FAILOVER_WAIT), "--health-interval-ms", "100", "--health-timeout-ms", "300"]
CLIENTS = 16
TOKENS = 400


def test_a_frozen_target_with_a_second_replica_completes_every_in_flight_request():
    with stacklib.Cluster(targets=2, draft=True, coordinator_args=ARGS,
                          worker_args=["--max-sessions", "32"]) as c:
        expected = {p: generate(c.stub, request(p, TOKENS, speculate=False))[0] for p in PROMPTS}
        prompts = [PROMPTS[i % len(PROMPTS)] for i in range(CLIENTS)]
        clients = stacklib.Clients(c.stub, [request(p, TOKENS) for p in prompts])
        assert stacklib.wait_for(lambda: clients.first_deltas == CLIENTS, 30), \
            f"only {clients.first_deltas} of {CLIENTS} clients started"
        frozen = c.targets[0]
        in_flight = stacklib.metric(frozen.metrics, "tandem_worker_active_sessions")
        frozen.signal(signal.SIGSTOP)
        try:
            start = time.monotonic()
            results = clients.join(120)
            took = time.monotonic() - start
            assert in_flight > 0, "no request was on the frozen target"
            lost = [(i, err) for i, (ids, err) in enumerate(results) if err]
            assert not lost, lost
            wrong = [i for i, (ids, _) in enumerate(results) if ids != expected[prompts[i]]]
            assert not wrong, f"clients {wrong} got other text"
            assert stacklib.health(c.coordinator.address) == "SERVING"
            print(f"{int(in_flight)} requests were on the frozen target; all {CLIENTS} "
                  f"done {took:.1f} s after the freeze")

            # With no target left: UNAVAILABLE within the configured bound, NOT_SERVING.
            c.targets[1].signal(signal.SIGSTOP)
            start = time.monotonic()
            try:
                generate(c.stub, request(PROMPTS[0], 16), timeout=60)
                raise AssertionError("a request succeeded with every target frozen")
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.UNAVAILABLE, (e.code(), e.details())
            took = time.monotonic() - start
            assert took <= TARGET_TIMEOUT + FAILOVER_WAIT + 2, f"failed after {took:.1f} s"
            assert stacklib.wait_for(
                lambda: stacklib.health(c.coordinator.address) == "NOT_SERVING", 5), \
                "the coordinator is SERVING without a ready target"
        finally:
            for t in c.targets:
                t.signal(signal.SIGCONT)
        assert stacklib.wait_for(lambda: stacklib.health(c.coordinator.address) == "SERVING", 10)
        ids, _, _ = generate(c.stub, request(PROMPTS[1], TOKENS))
        assert ids == expected[PROMPTS[1]]


def test_a_draining_coordinator_reports_not_serving_before_its_listener_closes():
    with stacklib.Cluster(targets=1, draft=False) as c:
        assert stacklib.health(c.coordinator.address) == "SERVING"
        c.coordinator.signal(signal.SIGTERM)
        seen = []

        def drained():
            seen.append(stacklib.health(c.coordinator.address, timeout=0.5))
            return seen[-1] != "SERVING" and seen[-1] != "NOT_SERVING" or len(seen) > 200
        stacklib.wait_for(drained, 10, step=0.02)
        assert "NOT_SERVING" in seen, seen[:5] + ["..."] + seen[-5:]
        assert seen[-1].startswith("UNREACHABLE"), seen[-1]  # and then it did close


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
