"""A target killed and restarted on the same port under 32 concurrent clients, over real
processes: no request is lost. In-flight requests wait (within their deadline) for the
restarted worker to report SERVING and re-sync from the coordinator's history; requests that
arrive while it loads wait too; meanwhile the coordinator's health says NOT_SERVING.

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import signal
import sys
import threading
import time

import grpc

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402
import stacklib  # noqa: E402
from stacklib import generate, request  # noqa: E402

PROMPTS = ["Once upon a time", "Tom and Sam went to the park", "The little dog", "Lily had"]
CLIENTS = 32
TOKENS = 400


def test_a_target_restarted_on_its_port_under_32_clients_loses_no_request():
    with stacklib.Cluster(targets=1, draft=True, worker_args=["--max-sessions", "64"],
                          coordinator_args=["--health-interval-ms", "100"]) as c:
        expected = {p: generate(c.stub, request(p, TOKENS, speculate=False))[0] for p in PROMPTS}
        prompts = [PROMPTS[i % len(PROMPTS)] for i in range(CLIENTS)]
        clients = stacklib.Clients(c.stub, [request(p, TOKENS) for p in prompts])
        assert stacklib.wait_for(lambda: clients.first_deltas == CLIENTS, 30), \
            f"only {clients.first_deltas} of {CLIENTS} clients started"
        in_flight = stacklib.metric(c.targets[0].metrics, "tandem_worker_active_sessions")
        health_seen = []
        watching = threading.Event()

        def watch_health():
            while not watching.is_set():
                health_seen.append(stacklib.health(c.coordinator.address, timeout=0.5))
                time.sleep(0.05)
        watcher = threading.Thread(target=watch_health)
        watcher.start()
        try:
            c.targets[0].signal(signal.SIGKILL)
            c.targets[0].proc.wait(10)
            assert stacklib.wait_for(lambda: "NOT_SERVING" in health_seen, 5), \
                f"the coordinator stayed {set(health_seen)} without its target"
            c.restart_target(0)
            # Requests that arrive while the restarted worker loads wait for it too.
            late = stacklib.Clients(c.stub, [request(p, TOKENS) for p in PROMPTS])
            results = clients.join(120) + late.join(60)
        finally:
            watching.set()
            watcher.join(10)
        assert in_flight > 0, "no request was in flight when the target was killed"
        lost = [(i, err) for i, (ids, err) in enumerate(results) if err]
        assert not lost, f"{len(lost)} lost: {lost[:3]}"
        prompts += PROMPTS
        wrong = [i for i, (ids, _) in enumerate(results) if ids != expected[prompts[i]]]
        assert not wrong, f"clients {wrong} got other text"
        assert stacklib.wait_for(lambda: stacklib.health(c.coordinator.address) == "SERVING", 5)
        print(f"{int(in_flight)} sessions in flight at the kill; all {len(results)} requests "
              f"exact")


def test_with_no_target_up_a_request_fails_at_once_not_after_the_failover_wait():
    """Issue 33: once the only target has been gone past the reconnect grace (5 s), nothing is
    starting: a request gets UNAVAILABLE at once, not after --failover-wait-seconds (30)."""
    with stacklib.Cluster(targets=1, draft=True,
                          coordinator_args=["--health-interval-ms", "100"]) as c:
        generate(c.stub, request("Hi", 4))
        c.targets[0].signal(signal.SIGKILL)
        c.targets[0].proc.wait(10)
        assert stacklib.wait_for(lambda: stacklib.health(c.coordinator.address) ==
                                 "NOT_SERVING", 5), "the coordinator kept serving"
        time.sleep(5.5)  # past the grace in which a restart on the port is waited for
        timings = []
        for _ in range(3):
            start = time.monotonic()
            try:
                generate(c.stub, request("Hi", 4), timeout=60)
                raise AssertionError("a request succeeded with no target")
            except grpc.RpcError as e:
                timings.append(time.monotonic() - start)
                assert e.code() == grpc.StatusCode.UNAVAILABLE, e
                assert "no worker is ready or starting" in e.details(), e.details()
                assert "127.0.0.1" not in e.details(), e.details()  # redacted
        assert max(timings) < 1.0, f"requests took {timings} s"
        print(f"with no target: UNAVAILABLE in {max(timings):.3f} s at most")


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
