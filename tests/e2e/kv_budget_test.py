"""Paged KV memory (issue 13): 64 named sessions with 2,048-token contexts are held by a target
worker whose --kv-budget-mb holds exactly 8 full contexts, as long as they are not all active;
when they outgrow the budget, idle sessions' blocks are reclaimed and refilled transparently;
nothing fails, every turn equals what a fresh unbudgeted stack returns for the same
conversation, and the worker's peak RSS stays within its loaded size + the budget + a slack.

The model is a random-weight fixture (tools/make_fixture_model, stories260K's vocabulary) with
wide KV rows, so the KV cache dominates the worker's memory: 8 layers x 4 KV heads x head_dim
32 x (K, V) x 2 bytes (f16) = 4 KiB per position, 8 MiB per 2,048-position context; the budget
is 8 contexts = 64 MiB (1,024 blocks of 16 positions).

Conversation (token ids, greedy, target only; each follow-up repeats the conversation so far,
as GenerateRequest.session_id documents), 64 sessions in waves of 8 concurrent:
  turn 1: 40-id prompt + 152 generated = 192 positions (12 blocks; 64 x 12 = 768 <= 1,024)
  turn 2: +8 ids + 24 generated = 224 (14 blocks; 64 x 14 = 896 <= 1,024): every session is
          still held, so each turn 2 must find its whole conversation cached
          (Usage.cached_prompt_tokens)
  turn 3: +8 ids + 120 generated = 352 (22 blocks; 64 x 22 = 1,408 > 1,024): blocks must be
          reclaimed from idle sessions and refilled when they return
  turn 4: sessions 0..7 (the least recently used) again, +8 ids + 16 generated.

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import stacklib  # noqa: E402
import opslib  # noqa: E402

import grpc  # noqa: E402

STUBS = stacklib.STUBS
LAYERS, KV_HEADS, HEAD_DIM, CTX = 8, 4, 32, 2048
BYTES_PER_POSITION = LAYERS * KV_HEADS * HEAD_DIM * 2 * 2  # K and V, f16 (--kv f16)
BUDGET_MB = -(-BYTES_PER_POSITION * CTX * 8 // (1 << 20))  # 8 full contexts, rounded up: 64
SESSIONS, WAVE = 64, 8
PROMPT = 40
TURNS = [(8, 24), (8, 120)]  # (new ids, generated) of turns 2 and 3
FIRST_GENERATED = 152
LAST = (8, 16)  # turn 4, sessions 0..7
# Peak RSS slack over (RSS after load + budget): activations, gRPC buffers, 64 sessions'
# bookkeeping and allocator fragmentation.
SLACK_MB = 48


def make_model(folder):
    path = os.path.join(folder, "kv-wide.gguf")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_fixture_model"), "--dim",
                    "128", "--layers", str(LAYERS), "--heads", "4", "--kv-heads", str(KV_HEADS),
                    "--head-dim", str(HEAD_DIM), "--ffn", "256", "--context", str(CTX),
                    "--vocab-from", stacklib.TARGET, "--seed", "5", "--out-gguf", path],
                   check=True, stdout=subprocess.DEVNULL)
    return path


class Stack(stacklib.Cluster):
    """A target worker of `model` (no draft) and a coordinator on stacklib's Cluster (over
    mutual TLS with a key when the run is)."""

    def __init__(self, model, worker_args=()):
        super().__init__(targets=1, draft=False, target_model=model,
                         coordinator_args=["--max-sessions", str(2 * SESSIONS)],
                         worker_args=["--ctx", str(CTX), "--kv", "f16", "--max-sessions",
                                      str(SESSIONS), *worker_args])

    def memory_mb(self, field):
        """VmRSS or VmHWM of the target worker, MiB."""
        with open(f"/proc/{self.targets[0].pid}/status") as f:
            line = next(line for line in f if line.startswith(field + ":"))
        return int(line.split()[1]) / 1024


def request(ids, generated, session=""):
    r = STUBS.generator_pb2.GenerateRequest(max_tokens=generated, session_id=session,
                                            ignore_eos=True)
    r.token_ids.ids.extend(ids)
    r.sampling.temperature = 0
    r.speculation.enabled = False
    return r


def wave(stub, reqs):
    """Runs the requests concurrently; [(ids, Usage)]; raises on the first failure."""
    out = [None] * len(reqs)

    def client(i):
        try:
            ids, final, _ = stacklib.generate(stub, reqs[i], timeout=120)
            out[i] = (ids, final.usage)
        except grpc.RpcError as e:
            out[i] = f"{e.code().name}: {e.details()}"

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(reqs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(150)
    for i, r in enumerate(out):
        assert isinstance(r, tuple), f"request {i} of the wave failed: {r}"
    return out


def prompts():
    rng = random.Random(2026)
    first = [[rng.randrange(3, 512) for _ in range(PROMPT)] for _ in range(SESSIONS)]
    tails = [[[rng.randrange(3, 512) for _ in range(n)] for _ in range(SESSIONS)]
             for n, _ in TURNS + [LAST]]
    return first, tails


def converse(stub, named):
    """Runs every session's turns in waves of WAVE; outputs[turn][session] = (ids, Usage).
    Named: follow-ups carry the session id; else each turn is a one-off request."""
    first, tails = prompts()
    contexts = [list(p) for p in first]
    plan = [(None, FIRST_GENERATED, range(SESSIONS))]
    plan += [(tails[t], n, range(SESSIONS)) for t, (_, n) in enumerate(TURNS)]
    plan += [(tails[len(TURNS)], LAST[1], range(WAVE))]
    outputs = []
    for tail, generated, sessions in plan:
        sessions = list(sessions)
        turn = {}
        for w in range(0, len(sessions), WAVE):
            batch = sessions[w:w + WAVE]
            prompts_now = [contexts[s] + (tail[s] if tail else []) for s in batch]
            reqs = [request(p, generated, f"kv-{s}" if named else "")
                    for s, p in zip(batch, prompts_now)]
            for s, p, (ids, usage) in zip(batch, prompts_now, wave(stub, reqs)):
                assert len(ids) == generated, (s, len(ids), generated)
                turn[s] = (ids, usage)
                contexts[s] = p + ids
        outputs.append(turn)
    return outputs


def compare(got, want):
    """Problems: (turn, session) whose output differs from the fresh stack's."""
    bad = []
    for t, (g, w) in enumerate(zip(got, want)):
        for s in sorted(w):
            if g[s][0] != w[s][0]:
                at = next((j for j, (a, b) in enumerate(zip(g[s][0], w[s][0])) if a != b), -1)
                bad.append(f"turn {t + 1} of session {s} differs from the fresh stack's at "
                           f"token {at}")
    return bad


def not_held(turn2):
    """Turn-2 requests that did not find their whole turn-1 conversation cached."""
    full = PROMPT + FIRST_GENERATED - 1  # the last generated token may not have run yet
    return [s for s, (_, usage) in sorted(turn2.items()) if usage.cached_prompt_tokens < full]


def test_64_sessions_in_a_budget_of_8_contexts_are_held_reclaimed_and_refilled_exactly():
    with tempfile.TemporaryDirectory(prefix="tandem-kv-budget-") as folder:
        model = make_model(folder)
        model_mb = os.path.getsize(model) / (1 << 20)
        with Stack(model, ["--kv-budget-mb", str(BUDGET_MB)]) as s:
            loaded_mb = s.memory_mb("VmRSS")
            start = time.monotonic()
            got = converse(s.stub, named=True)
            seconds = time.monotonic() - start
            peak_mb = s.memory_mb("VmHWM")
            evicted = stacklib.metric(s.targets[0].metrics, "tandem_worker_evicted_sessions_total")
        with Stack(model) as fresh:
            want = converse(fresh.stub, named=False)
    problems = compare(got, want)
    missing = not_held(got[1])
    cached = [sum(u.cached_prompt_tokens for _, u in turn.values()) for turn in got]
    limit_mb = loaded_mb + BUDGET_MB + SLACK_MB
    print(f"  model {model_mb:.1f} MiB, budget {BUDGET_MB} MiB; worker RSS after load "
          f"{loaded_mb:.1f} MiB, peak {peak_mb:.1f} MiB (limit {limit_mb:.1f}); "
          f"{seconds:.1f} s; cached prompt tokens per turn {cached}; "
          f"{len(missing)} of {SESSIONS} turn-2 requests not fully cached; "
          f"tandem_worker_evicted_sessions_total {evicted:g}", flush=True)
    if missing:
        problems.append(f"{len(missing)} of {SESSIONS} sessions were not held: their turn 2 "
                        f"found less than {PROMPT + FIRST_GENERATED - 1} tokens cached "
                        f"(sessions {missing[:10]}...)")
    if peak_mb > limit_mb:
        problems.append(f"peak RSS {peak_mb:.1f} MiB > RSS after load {loaded_mb:.1f} + budget "
                        f"{BUDGET_MB} + slack {SLACK_MB} MiB")
    assert not problems, "; ".join(problems[:12])


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
