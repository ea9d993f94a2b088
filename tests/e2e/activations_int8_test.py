"""int8 activations over real processes (issue 31): with both workers at --activations int8 on
quantized models (stories260K Q8_0 target, Q4_0 draft), greedy speculative output equals the
target alone's token for token, for every k and pipelined, because a position's logits are
bit-identical alone and in a verify batch in that mode too. Each worker names its precision in
its ready line and in Describe (ModelInfo.activations); a bad value is refused naming it.

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest); prints "N passed, N failed".
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402
import stacklib  # noqa: E402
from stacklib import BIN, MODELS, STUBS, generate, request  # noqa: E402

TARGET_Q8 = os.path.join(MODELS, "derived", "stories260K-Q8_0.gguf")
DRAFT_Q4 = os.path.join(MODELS, "derived", "stories260K-Q4_0.gguf")
MAX_TOKENS = 160


def int8_cluster():
    return stacklib.Cluster(targets=1, draft=True, worker_args=["--activations", "int8"],
                            target_model=TARGET_Q8, draft_model=DRAFT_Q4)


def test_greedy_speculation_equals_the_target_alone_with_int8_workers():
    with int8_cluster() as c:
        alone, _, _ = generate(c.stub, request(max_tokens=MAX_TOKENS, speculate=False))
        assert len(alone) == MAX_TOKENS
        for k in (1, 4, 8):
            for pipelined in (False, True):
                r = request(max_tokens=MAX_TOKENS)
                r.speculation.draft_tokens = k
                r.speculation.pipelined = pipelined
                ids, final, _ = generate(c.stub, r)
                assert final.speculation.drafted_tokens > 0, final
                assert final.speculation.accepted_tokens > 0, final
                assert ids == alone, f"k={k} pipelined={pipelined}: differs from the target alone"
        for name, worker in (("target0", c.targets[0]), ("draft", c.draft)):
            with open(os.path.join(c.dir, f"{name}.log")) as f:
                log = f.read()
            assert "activations int8)" in log, f"{name}'s ready line: {log}"
            # Describe tells the coordinator (and operators) each worker's precision.
            stub = STUBS.worker_pb2_grpc.WorkerStub(stacklib.channel(worker.address, c.security))
            described = stub.Describe(STUBS.worker_pb2.DescribeRequest(), timeout=10)
            assert described.model.activations == "int8", (name, described.model)
        print(f"{MAX_TOKENS} greedy tokens equal the target alone's for k = 1, 4, 8, pipelined "
              "or not")


def test_a_bad_precision_is_refused_naming_it():
    r = subprocess.run([os.path.join(BIN, "tandem-worker"), "--role", "target", "--model",
                        TARGET_Q8, "--activations", "int4"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2, r
    assert "--activations: activation precision 'int4' is not one of int16, int8" in r.stderr, \
        r.stderr


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
