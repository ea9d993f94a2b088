"""A frozen draft (SIGSTOP: a hung host, or a partition without RST) over real processes: a
greedy request pays the draft's deadline once and returns the target's own text; the next
request does not wait for the draft at all; once the draft answers again it is used again.

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import signal
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402
import stacklib  # noqa: E402
from stacklib import generate, request  # noqa: E402

# The draft's deadline is its floor here: the stories260K draft answers in about a
# millisecond, so 4 × p95 is far below it.
DEADLINE = 1.0
SLACK = 0.6  # scheduling noise on a shared machine; less than DEADLINE, so two waits fail


def test_a_frozen_draft_costs_one_deadline_and_the_text_is_the_targets():
    args = ["--draft-deadline-floor-ms", str(int(DEADLINE * 1000)),
            "--draft-cold-deadline-ms", str(int(DEADLINE * 1000)),
            "--draft-backoff-ms", "1000", "--health-interval-ms", "100"]
    with stacklib.Cluster(targets=1, draft=True, coordinator_args=args) as c:
        spec_ids, spec_final, _ = generate(c.stub, request(max_tokens=128))
        assert spec_final.speculation.drafted_tokens > 0
        alone_ids, _, alone_s = min((generate(c.stub, request(max_tokens=128, speculate=False))
                                     for _ in range(3)), key=lambda r: r[2])
        assert spec_ids == alone_ids and len(alone_ids) == 128

        c.draft.signal(signal.SIGSTOP)
        try:
            ids, final, frozen_s = generate(c.stub, request(max_tokens=128), timeout=60)
            assert ids == alone_ids, "the text differs from the target alone"
            assert final.speculation.draft_failed
            bound = DEADLINE + 1.5 * alone_s + SLACK
            assert frozen_s <= bound, f"{frozen_s:.3f} s > {bound:.3f} s (alone {alone_s:.3f} s)"
            # The next request does not try the frozen draft again: no deadline to pay.
            ids, final, next_s = generate(c.stub, request(max_tokens=128), timeout=60)
            assert ids == alone_ids
            assert next_s <= 1.5 * alone_s + SLACK, f"{next_s:.3f} s (alone {alone_s:.3f} s)"
            print(f"target alone {alone_s:.3f} s, frozen draft {frozen_s:.3f} s, "
                  f"next {next_s:.3f} s")
            assert stacklib.health(c.coordinator.address) == "SERVING"
        finally:
            c.draft.signal(signal.SIGCONT)

        # After its backoff, and once its health probe answers, the draft is used again.
        def speculates():
            ids, final, _ = generate(c.stub, request(max_tokens=32), timeout=60)
            assert ids == alone_ids[:32]
            return final.speculation.drafted_tokens > 0
        assert stacklib.wait_for(speculates, 15, step=0.2), "the draft was never used again"


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
