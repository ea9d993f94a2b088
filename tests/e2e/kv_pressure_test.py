"""Memory never fails a request that has started (issue 33): 32 concurrent 400-token requests
against a target whose --kv-budget-mb holds only 3 of them at once (and a draft whose budget
holds one) all complete; the coordinator admits requests while the target's KV blocks can hold
the most each may need, queues the rest, and a request that could never fit is refused with
RESOURCE_EXHAUSTED before its first token, naming the numbers. Two coordinators sharing that
target admit twice what it holds: requests it cannot grow pause and resume instead of failing.
Every text equals the target alone's (greedy, a fresh stack without a budget or a draft).

The model is kv_budget_test's random-weight fixture with wide KV rows: 4 KiB per position
(f16), 64 KiB per block of 16 positions, 16 blocks per MiB. A request of a 24-id prompt and
400 tokens needs up to 24 + 400 + a round (draft 4 + pending 1) = 429 positions = 27 blocks;
the target's 6 MiB hold 96 blocks (3 such requests), the draft's 2 MiB hold 32 (one).

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import random
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import kv_budget_test  # noqa: E402  (its fixture model)
import stacklib  # noqa: E402
import opslib  # noqa: E402

import grpc  # noqa: E402

STUBS = stacklib.STUBS
CTX = kv_budget_test.CTX
TARGET_BUDGET_MB, DRAFT_BUDGET_MB = 6, 2
BLOCKS = TARGET_BUDGET_MB * 16
CLIENTS, PROMPT, TOKENS = 32, 24, 400
TOO_MANY = 1600  # 24 + 1600 + 5 positions = 102 blocks > 96


class Stack(stacklib.Cluster):
    """A target (and, with `draft`, a draft) of `model`, each with its own KV budget."""

    def __init__(self, model, draft, target_budget_mb=0, draft_budget_mb=0):
        super().__init__(targets=1, draft=draft, target_model=model, draft_model=model,
                         worker_args=["--ctx", str(CTX), "--kv", "f16"])
        self.budgets = {"target": target_budget_mb, "draft": draft_budget_mb}

    def worker(self, role, name, listen="127.0.0.1:0", wait=True):
        budget = self.budgets[role]
        saved = self.worker_args
        self.worker_args = saved + (["--kv-budget-mb", str(budget)] if budget else [])
        try:
            return super().worker(role, name, listen, wait)
        finally:
            self.worker_args = saved


def request(ids, max_tokens, speculate):
    r = STUBS.generator_pb2.GenerateRequest(max_tokens=max_tokens, ignore_eos=True)
    r.token_ids.ids.extend(ids)
    r.sampling.temperature = 0
    r.speculation.enabled = speculate
    return r


def run(stub, reqs, finals=None):
    """Runs the requests concurrently: [(ids, error, ids before the error)]; the final
    messages go to `finals` (a dict by index) when given."""
    out = [None] * len(reqs)

    def client(i):
        ids = []
        try:
            for r in stub.Generate(reqs[i], timeout=240):
                if r.HasField("delta"):
                    ids.extend(r.delta.token_ids)
                elif finals is not None:
                    finals[i] = r.final
            out[i] = (ids, None, len(ids))
        except grpc.RpcError as e:
            out[i] = (ids, f"{e.code().name}: {e.details()}", len(ids))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(reqs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return out


def prompts():
    rng = random.Random(33)
    return [[rng.randrange(3, 512) for _ in range(PROMPT)] for _ in range(CLIENTS)]


def test_32_requests_in_a_budget_of_3_fail_none_after_the_first_token_and_equal_the_target():
    with tempfile.TemporaryDirectory(prefix="tandem-kv-admission-") as folder:
        model = kv_budget_test.make_model(folder)
        with Stack(model, draft=True, target_budget_mb=TARGET_BUDGET_MB,
                   draft_budget_mb=DRAFT_BUDGET_MB) as s:
            start = time.monotonic()
            finals = {}
            got = run(s.stub, [request(p, TOKENS, True) for p in prompts()], finals)
            seconds = time.monotonic() - start
            too_many = run(s.stub, [request(prompts()[0], TOO_MANY, True)])[0]
            preempted = stacklib.metric(s.targets[0].metrics, "tandem_worker_preemptions_total")
        with Stack(model, draft=False) as fresh:
            want = run(fresh.stub, [request(p, TOKENS, False) for p in prompts()])
    failed_late = [(i, n, e) for i, (_, e, n) in enumerate(got) if e and n > 0]
    failed = [(i, e) for i, (_, e, _) in enumerate(got) if e]
    differ = [i for i, ((g, _, _), (w, _, _)) in enumerate(zip(got, want)) if g != w]
    # The draft's 2 MiB run short: those sessions go on with the target alone.
    dropped = sum(1 for f in finals.values() if f.speculation.draft_failed)
    accepted = sum(f.speculation.accepted_tokens for f in finals.values())
    print(f"  {CLIENTS} requests of {TOKENS} tokens, target budget {BLOCKS} blocks: "
          f"{seconds:.1f} s; {len(failed)} failed ({len(failed_late)} after their first token); "
          f"{len(differ)} differ from the target alone; target preemptions {preempted:g}; "
          f"speculation dropped in {dropped}, {accepted} guesses accepted in all; "
          f"the {TOO_MANY}-token request: {too_many[1]} after {too_many[2]} tokens", flush=True)
    problems = []
    if failed:
        problems.append(f"{len(failed)} requests failed ({len(failed_late)} after their first "
                        f"token), e.g. {failed[:3]}")
    if any(e for _, e, _ in want):
        problems.append(f"the fresh stack failed: {[e for _, e, _ in want if e][:3]}")
    if differ:
        problems.append(f"{len(differ)} texts differ from the target alone's (requests "
                        f"{differ[:10]})")
    ids, error, streamed = too_many
    if not (error and error.startswith("RESOURCE_EXHAUSTED") and streamed == 0):
        problems.append(f"a request needing more than the whole budget got {error!r} after "
                        f"{streamed} tokens, not RESOURCE_EXHAUSTED before its first")
    else:
        for part in ["--kv-budget-mb", f"max_tokens {TOO_MANY}", f"holds: {BLOCKS} blocks"]:
            if part not in error:
                problems.append(f"the refusal does not name {part!r}: {error}")
    assert not problems, "; ".join(problems)


def second_coordinator(s):
    """Another coordinator of the stack's target: a stub to it."""
    argv = [os.path.join(stacklib.BIN, "tandem-coordinator"), "--listen", "127.0.0.1:0",
            "--target", s.target_list(),
            *(s.security.coordinator_args() if s.security else []), *s.coordinator_args]
    p = stacklib.Process("coordinator2", argv, s.dir)
    s.processes.append(p)
    assert stacklib.wait_for(lambda: stacklib.health(p.address, security=s.security) ==
                             "SERVING", 60), "coordinator2 not SERVING"
    return STUBS.generator_pb2_grpc.GeneratorStub(stacklib.channel(p.address, s.security))


def test_two_coordinators_sharing_a_target_pause_requests_short_of_memory_instead_of_failing():
    """Each coordinator counts only its own requests' blocks, so together they admit twice what
    the target's budget holds: a request the worker cannot grow after its first token pauses
    and resumes from its history (memory_pause.h), exactly."""
    half = CLIENTS // 2
    with tempfile.TemporaryDirectory(prefix="tandem-kv-admission-") as folder:
        model = kv_budget_test.make_model(folder)
        with Stack(model, draft=False, target_budget_mb=TARGET_BUDGET_MB) as s:
            other = second_coordinator(s)
            reqs = [request(p, TOKENS, False) for p in prompts()]
            out = [None, None]
            start = time.monotonic()
            threads = [threading.Thread(target=lambda k, stub: out.__setitem__(
                k, run(stub, reqs[k * half:(k + 1) * half])), args=(k, stub))
                for k, stub in enumerate([s.stub, other])]
            for t in threads:
                t.start()
            for t in threads:
                t.join(400)
            seconds = time.monotonic() - start
            got = out[0] + out[1]
            preempted = stacklib.metric(s.targets[0].metrics, "tandem_worker_preemptions_total")
            with open(os.path.join(s.dir, "coordinator.log")) as f:
                pauses = f.read().count("short of KV memory")
        with Stack(model, draft=False) as fresh:
            want = run(fresh.stub, reqs)
    failed_late = [(i, n, e) for i, (_, e, n) in enumerate(got) if e and n > 0]
    failed_early = [(i, e) for i, (_, e, n) in enumerate(got) if e and n == 0]
    differ = [i for i, ((g, e, _), (w, _, _)) in enumerate(zip(got, want)) if not e and g != w]
    print(f"  2 coordinators x {half} requests of {TOKENS} tokens, target budget {BLOCKS} "
          f"blocks: {seconds:.1f} s; {len(failed_late)} failed after their first token, "
          f"{len(failed_early)} before; {len(differ)} differ from the target alone; "
          f"{pauses} pauses in the first coordinator's log; target preemptions {preempted:g}",
          flush=True)
    problems = []
    if failed_late:
        problems.append(f"{len(failed_late)} requests failed after their first token, e.g. "
                        f"{failed_late[:3]}")
    if differ:
        problems.append(f"{len(differ)} texts differ from the target alone's ({differ[:10]})")
    assert not problems, "; ".join(problems)


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
