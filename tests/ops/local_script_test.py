"""deploy/local/tandem-local.sh manages processes correctly, checked with real workers and a
stand-in coordinator (a worker under the coordinator's name) so that only the script is under
test: start writes the addresses and pids and leaves all three SERVING, status and stop work,
a second start is refused, a failed start stops everything it started, and stop SIGKILLs a
process that ignores SIGTERM. The real coordinator is covered by local_stack_e2e_test.py."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import opslib
from opslib import LOCAL_SCRIPT, require_file

WORK = tempfile.mkdtemp(prefix="tandem-local-test-")
STAND_IN = """#!/bin/sh
# Stand-in coordinator for the test: a target worker that prints the same startup line shape.
exec "{worker}" --role target --model "{model}" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --threads 1
"""


def setup_bin(coordinator_script=None):
    """A bin folder with the real tandem-worker and a stand-in tandem-coordinator. The target
    model is linked under WORK so the processes can be found by their command line."""
    target, draft = opslib.models()
    bin_dir = tempfile.mkdtemp(prefix="bin-", dir=WORK)
    model = os.path.join(WORK, "target-model.gguf")
    if not os.path.exists(model):
        os.symlink(target, model)
    os.symlink(opslib.binary("tandem-worker"), os.path.join(bin_dir, "tandem-worker"))
    coordinator = os.path.join(bin_dir, "tandem-coordinator")
    with open(coordinator, "w") as f:
        f.write(coordinator_script or STAND_IN.format(worker=opslib.binary("tandem-worker"),
                                                      model=model))
    os.chmod(coordinator, 0o755)
    return bin_dir, model, draft


def script(*args, bin_dir, timeout=90):
    env = dict(os.environ, TANDEM_BIN=bin_dir, XDG_CACHE_HOME=os.path.join(WORK, "cache"))
    return subprocess.run([require_file(LOCAL_SCRIPT, "tandem-local.sh"), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def our_processes():
    """PIDs of live processes whose command line mentions WORK."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if WORK in cmdline and state != "Z" and int(entry) != os.getpid():
            pids.append(int(entry))
    return pids


def kill_leftovers():
    for pid in our_processes():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def read(run_dir, name):
    with open(os.path.join(run_dir, name)) as f:
        return f.read().strip()


def test_start_status_stop():
    bin_dir, model, draft = setup_bin()
    run_dir = os.path.join(WORK, "run1")
    try:
        r = script("start", "--target", model, "--draft", draft, "--dir", run_dir,
                   "--threads", "1", "--timeout", "30", bin_dir=bin_dir)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == read(run_dir, "coordinator.addr"), r.stdout
        for name in ("target", "draft", "coordinator"):
            assert read(run_dir, f"{name}.addr").startswith("127.0.0.1:"), name
            assert read(run_dir, f"{name}.metrics").startswith("127.0.0.1:"), name
            assert int(read(run_dir, f"{name}.pid")) > 0, name
        assert len(our_processes()) == 3, our_processes()  # all run from WORK's bin

        r = script("status", "--dir", run_dir, bin_dir=bin_dir)
        assert r.returncode == 0, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert len(lines) == 3 and all(l.endswith("SERVING") for l in lines), r.stdout

        again = script("start", "--target", model, "--dir", run_dir, bin_dir=bin_dir)
        assert again.returncode == 1 and "already running" in again.stderr, again.stderr
        assert len(our_processes()) == 3, "a refused start touched the running stack"

        pids = [int(read(run_dir, f"{n}.pid")) for n in ("target", "draft", "coordinator")]
        start = time.monotonic()
        r = script("stop", "--dir", run_dir, bin_dir=bin_dir)
        assert r.returncode == 0, r.stderr
        assert time.monotonic() - start < 20, "stop took too long"
        assert not our_processes(), our_processes()
        for pid in pids:
            assert not os.path.exists(f"/proc/{pid}/cmdline") or \
                open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z", pid
        r = script("status", "--dir", run_dir, bin_dir=bin_dir)
        assert r.returncode == 3 and "not running" in r.stdout, r
    finally:
        script("stop", "--dir", run_dir, "--timeout", "5", bin_dir=bin_dir)
        kill_leftovers()


def test_failed_start_stops_what_it_started():
    bin_dir, model, _ = setup_bin()
    bad_draft = os.path.join(WORK, "not-a-model.gguf")
    with open(bad_draft, "w") as f:
        f.write("this is not GGUF\n")
    run_dir = os.path.join(WORK, "run2")
    try:
        r = script("start", "--target", model, "--draft", bad_draft, "--dir", run_dir,
                   "--threads", "1", "--timeout", "30", bin_dir=bin_dir)
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert "draft" in r.stderr and "GGUF" in r.stderr, r.stderr
        deadline = time.monotonic() + 10
        while our_processes() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not our_processes(), f"left running: {our_processes()}"
        assert not [f for f in os.listdir(run_dir) if f.endswith(".pid")], os.listdir(run_dir)
    finally:
        kill_leftovers()


def test_coordinator_that_dies_at_startup_is_reported_and_workers_stopped():
    bin_dir, model, _ = setup_bin(
        "#!/bin/sh\necho 'tandem-coordinator: no target answers' >&2\nexit 2\n")
    run_dir = os.path.join(WORK, "run3")
    try:
        r = script("start", "--target", model, "--dir", run_dir, "--threads", "1",
                   "--timeout", "30", bin_dir=bin_dir)
        assert r.returncode == 1, r.stderr
        assert "coordinator exited during startup" in r.stderr, r.stderr
        assert "no target answers" in r.stderr, r.stderr
        deadline = time.monotonic() + 10
        while our_processes() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not our_processes(), f"left running: {our_processes()}"
    finally:
        kill_leftovers()


def test_stop_kills_a_process_that_ignores_sigterm():
    run_dir = os.path.join(WORK, "run4")
    os.makedirs(run_dir)
    # Ignored signals stay ignored across exec; argv[0] makes it look like ours to the script.
    stubborn = subprocess.Popen(["bash", "-c", f"trap '' TERM; exec -a tandem-stubborn-{WORK} "
                                 "sleep 60"], start_new_session=True)
    try:
        time.sleep(0.3)
        with open(os.path.join(run_dir, "coordinator.pid"), "w") as f:
            f.write(f"{stubborn.pid}\n")
        start = time.monotonic()
        r = script("stop", "--dir", run_dir, "--timeout", "1", bin_dir=WORK)
        elapsed = time.monotonic() - start
        assert r.returncode == 0, r.stderr
        assert "did not stop within 1s; killing it" in r.stderr, r.stderr
        assert stubborn.wait(timeout=5) == -signal.SIGKILL, stubborn.returncode
        assert elapsed < 8, elapsed
    finally:
        if stubborn.poll() is None:
            stubborn.kill()
            stubborn.wait()


def test_usage_errors_exit_2():
    bin_dir = WORK
    for args in ([], ["frobnicate"], ["start"], ["start", "--target"],
                 ["start", "--target", "/no/such/model.gguf"],
                 ["start", "--target", LOCAL_SCRIPT, "--threads", "0"],
                 ["stop", "--timeout", "soon"], ["status", "--bogus"]):
        r = script(*args, bin_dir=bin_dir)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    r = script("--help", bin_dir=bin_dir)
    assert r.returncode == 0 and "usage: tandem-local.sh start" in r.stdout, r


def test_missing_binaries_are_named():
    empty = tempfile.mkdtemp(prefix="empty-bin-", dir=WORK)
    target, _ = opslib.models()
    r = script("start", "--target", target, "--dir", os.path.join(WORK, "run5"), bin_dir=empty)
    assert r.returncode == 1 and "tandem-worker not found" in r.stderr, r.stderr


if __name__ == "__main__":
    try:
        code = opslib.run_tests(globals())
    finally:
        kill_leftovers()
        shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(code)
