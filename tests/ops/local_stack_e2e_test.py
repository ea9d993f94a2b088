"""The README's path end to end: deploy/local/tandem-local.sh starts target, draft and
coordinator on loopback; the Python client streams a reply through the coordinator and gets
the statistics; the script reports and stops the stack cleanly."""
import json
import os
import sys
import time

import opslib
from opslib import LocalStack, run_client

GOLDEN_32 = (", there was a little girl named Lily. She loved to play outside in the park. "
             "One day, she saw")


def test_python_client_streams_a_reply_with_statistics_through_three_processes():
    with LocalStack() as stack:
        env = dict(stack.env)
        r = run_client(stack.coordinator, "--prompt", "Once upon a time", "--raw",
                       "--temperature", "0", "--max-tokens", "32", env=env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip(), "empty reply"
        assert r.stdout == GOLDEN_32 + "\n", repr(r.stdout)
        stats = r.stderr.strip().splitlines()[-1]
        assert stats.startswith("[prompt ") and "decode 32 tokens" in stats, r.stderr
        assert "draft acceptance" in stats and "tokens/round" in stats, stats

        # Sampled, as a chat, with the statistics as JSON.
        r = run_client(stack.coordinator, "--prompt", "Tell me a story", "--system", "Be kind",
                       "--temperature", "0.8", "--top-p", "0.95", "--seed", "7",
                       "--max-tokens", "24", "--stats-json", env=env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip(), "empty reply"
        final = json.loads(r.stderr.strip().splitlines()[-1])
        assert final["usage"]["generatedTokens"] > 0, final
        assert final["usage"]["promptTokens"] > 0, final
        spec = final["speculation"]
        assert spec["draftedTokens"] > 0 and 0 <= spec["acceptanceRate"] <= 1, spec
        assert final["seed"] == "7", final
        assert final["finishReason"].startswith("FINISH_REASON_"), final

        # The target alone, through the same coordinator.
        r = run_client(stack.coordinator, "--prompt", "Once upon a time", "--raw",
                       "--temperature", "0", "--max-tokens", "32", "--no-speculation", env=env)
        assert r.returncode == 0, r.stderr
        assert r.stdout == GOLDEN_32 + "\n", repr(r.stdout)
        assert "draft acceptance" not in r.stderr, r.stderr

        # A request the coordinator rejects: one line, exit 2, the stack keeps serving.
        r = run_client(stack.coordinator, "--prompt", "x", "--format", "no-such-format",
                       env=env)
        assert r.returncode == 2 and "INVALID_ARGUMENT" in r.stderr, r.stderr

        status = opslib.subprocess.run([opslib.LOCAL_SCRIPT, "status", "--dir", stack.dir],
                                       capture_output=True, text=True, timeout=30,
                                       env=stack.env)
        assert status.returncode == 0, status.stdout + status.stderr
        assert status.stdout.count("SERVING") == 3, status.stdout

        pids = [stack.pid(n) for n in ("target", "draft", "coordinator")]
        start = time.monotonic()
        stop = stack.stop()
        assert stop.returncode == 0, stop.stderr
        assert time.monotonic() - start < 25, "stop took too long"
        assert "did not stop" not in stop.stderr, stop.stderr
        for pid in pids:
            alive = os.path.exists(f"/proc/{pid}/stat") and \
                open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
            assert not alive, f"pid {pid} still running after stop"


def test_target_only_stack_serves_without_a_draft():
    with LocalStack(with_draft=False) as stack:
        assert not os.path.exists(os.path.join(stack.dir, "draft.pid"))
        r = run_client(stack.coordinator, "--prompt", "Once upon a time", "--raw",
                       "--temperature", "0", "--max-tokens", "32", env=stack.env)
        assert r.returncode == 0, r.stderr
        assert r.stdout == GOLDEN_32 + "\n", repr(r.stdout)


def test_tls_stack_needs_the_key_and_the_certificates():
    # --tls: mutual TLS to the workers, TLS and an API key on the coordinator.
    with LocalStack(extra=["--tls"]) as stack:
        tls = os.path.join(stack.dir, "tls")
        key = open(os.path.join(tls, "api-key")).read().strip()
        assert key and "API key in" in stack.start_output.stderr, stack.start_output.stderr
        chat = [opslib.binary("tandem-chat"), "--server", stack.coordinator, "--tls-ca",
                os.path.join(tls, "ca.crt"), "-p", "Once upon a time", "--format", "raw",
                "--temp", "0", "--max-tokens", "32"]
        env = {k: v for k, v in stack.env.items() if k != "TANDEM_API_KEY"}
        r = opslib.subprocess.run(chat, capture_output=True, text=True, timeout=60,
                                  env={**env, "TANDEM_API_KEY": key})
        assert r.returncode == 0, r.stderr
        assert r.stdout == GOLDEN_32 + "\n", repr(r.stdout)
        r = opslib.subprocess.run(chat, capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 2 and "UNAUTHENTICATED" in r.stderr, r.stderr
        # status speaks TLS with the client certificate; a plaintext check reaches nothing.
        status = opslib.subprocess.run([opslib.LOCAL_SCRIPT, "status", "--dir", stack.dir],
                                       capture_output=True, text=True, timeout=30,
                                       env=stack.env)
        assert status.returncode == 0 and status.stdout.count("SERVING") == 3, status.stdout
        health = opslib.subprocess.run(
            ["/usr/bin/python3", opslib.repo_path("client", "python", "tandem_health.py"),
             "--server", stack.addr("target")], capture_output=True, text=True, timeout=30)
        assert health.returncode == 1 and "UNREACHABLE" in health.stdout, health.stdout
        assert stack.stop().returncode == 0


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
