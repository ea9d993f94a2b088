"""The processes of a benchmark's stack on loopback: each started with its stderr in a log
file, its address read from its "listening on HOST:PORT (metrics on M)" line, and all stopped
(SIGTERM, then SIGKILL past the grace time) when the stack closes. Used by
concurrency_bench.py and batching_bench.py; runs on /usr/bin/python3."""
import os
import re
import subprocess


class Processes:
    """Base of a benchmark's Stack: `_start` and `__exit__`; subclasses add `__enter__`."""

    def __init__(self, log_dir, grace_seconds=30):
        self.log_dir = log_dir
        self.grace_seconds = grace_seconds
        self.processes = []
        self.startup_lines = {}  # name -> its "listening on" line

    def _start(self, name, argv):
        """Starts `argv` as `name`; returns (address, metrics port) from its startup line."""
        log = open(os.path.join(self.log_dir, name + ".log"), "w")
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True,
                             stdin=subprocess.DEVNULL)
        self.processes.append(p)
        line = p.stdout.readline()  # "... listening on HOST:PORT (metrics on M)"
        self.startup_lines[name] = line
        m = re.search(r"listening on (\S+) \(metrics on (\d+)\)", line)
        if not m:
            raise RuntimeError(f"{name} did not start: {line!r}; see {log.name}")
        return m.group(1), m.group(2)

    def __exit__(self, *exc):
        for p in reversed(self.processes):
            p.terminate()
        for p in self.processes:
            try:
                p.wait(timeout=self.grace_seconds)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stdout.close()
