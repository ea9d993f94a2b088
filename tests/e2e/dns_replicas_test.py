"""Target replicas named by DNS, over real processes: the coordinator is given
`dns:///localhost:PORT` entries (resolved by getaddrinfo in the binary, re-resolved every
second) instead of addresses, spreads 8 concurrent sessions 4/4 over the two targets, and when
one target process is killed mid-generation every session completes with the same greedy
output as when run alone. (One name resolving to several pods is pinned, with an injected
resolver, by services/coordinator/headless_service_test.cc: /etc/hosts gives localhost one
address here.)

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import signal
import sys

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "ops"))
import opslib  # noqa: E402
import stacklib  # noqa: E402
from stacklib import Clients, request, wait_for  # noqa: E402

PROMPTS = ["Once upon a time", "Tom and Sam went to the park", "The little cat",
           "Lily saw a big red ball", "One day, a bird", "The sun was hot and",
           "Ben had a toy car", "Mom said"]


class DnsCluster(stacklib.Cluster):
    """Two targets and a draft; the coordinator knows the targets by name only."""

    def __init__(self):
        # Probes only at start: the split then rests on the sessions the coordinator pins.
        super().__init__(targets=2, coordinator_args=[
            "--resolve-interval-seconds", "1", "--health-interval-ms", "600000"])

    def target_list(self):
        return ",".join("dns:///localhost:" + t.address.rsplit(":", 1)[1] for t in self.targets)

    def sessions_on(self, i):
        return stacklib.metric(self.targets[i].metrics, "tandem_worker_active_sessions")


def test_sessions_spread_over_named_targets_and_survive_a_killed_one():
    with DnsCluster() as c:
        alone = [stacklib.generate(c.stub, request(p, 200))[0] for p in PROMPTS]
        clients = Clients(c.stub, [request(p, 200, session=f"s{i}")
                                   for i, p in enumerate(PROMPTS)], timeout=120)
        assert wait_for(lambda: clients.first_deltas == len(PROMPTS), 60), clients.first_deltas
        spread = [c.sessions_on(0), c.sessions_on(1)]
        c.targets[0].signal(signal.SIGKILL)
        results = clients.join(150)
        assert spread == [4, 4], spread
        for i, (ids, error) in enumerate(results):
            assert error is None, f"session {i}: {error}"
            assert ids == alone[i], f"session {i} differs from its run alone"
        # The named sessions all live on the surviving target now.
        assert wait_for(lambda: c.sessions_on(1) == len(PROMPTS), 10), c.sessions_on(1)
        log = open(os.path.join(c.dir, "coordinator.log")).read()
        assert "resolves to 127.0.0.1:" in log, "the entries were not resolved"
        assert "failover to" in log, "the kill came after the sessions had finished"


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
