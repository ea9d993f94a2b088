"""A real Prometheus (Debian's) scrapes the three processes with monitoring/prometheus.yml
(targets pointed at the local stack's metrics ports) and its recording rules, and after a
request PromQL returns the acceptance rate -- equal to the client's accepted/drafted -- and
the generated tokens/s, both as raw PromQL and as the recording rules."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import opslib
from opslib import LocalStack, repo_path, require_file, run_client

# TANDEM_E2E_TLS=1: the stack runs with tandem-local.sh --tls (mutual TLS to the workers, TLS
# and an API key on the coordinator).
TLS = os.environ.get("TANDEM_E2E_TLS") == "1"

PROMETHEUS = "/usr/bin/prometheus"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(stack, folder):
    """monitoring/prometheus.yml with its static targets replaced by the stack's ports."""
    import yaml
    with open(require_file(repo_path("monitoring", "prometheus.yml"))) as f:
        config = yaml.safe_load(f)
    for job in config["scrape_configs"]:
        for static in job["static_configs"]:
            static["targets"] = [stack.metrics(static["labels"]["component"])]
    config["rule_files"] = [repo_path("monitoring", r) for r in config["rule_files"]]
    for path in config["rule_files"]:
        require_file(path, "rule file")
    path = os.path.join(folder, "prometheus.yml")
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    return path


class Prometheus:
    def __init__(self, config, folder):
        assert os.access(PROMETHEUS, os.X_OK), f"{PROMETHEUS} missing: install Debian's prometheus"
        self.port = free_port()
        self.log = open(os.path.join(folder, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{self.port}",
             f"--storage.tsdb.path={os.path.join(folder, 'data')}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.folder = folder

    def get(self, path, timeout=5):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}",
                                    timeout=timeout) as r:
            return r.read().decode()

    def query(self, expr):
        body = json.loads(self.get("/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
        assert body["status"] == "success", body
        return body["data"]["result"]

    def wait(self, what, predicate, timeout):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"prometheus exited: {self.tail()}"
            try:
                last = predicate()
                if last:
                    return last
            except (OSError, ValueError) as e:  # not up yet
                last = e
            time.sleep(0.5)
        raise AssertionError(f"{what} not seen within {timeout} s (last: {last!r}); "
                             f"log: {self.tail()}")

    def tail(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-1500:]

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.log.close()


def scalar(result):
    assert len(result) == 1, result
    return float(result[0]["value"][1])


def test_prometheus_reports_acceptance_rate_and_tokens_per_second():
    folder = tempfile.mkdtemp(prefix="tandem-prom-")
    prometheus = None
    try:
        with LocalStack(extra=["--tls"] if TLS else []) as stack:
            client_tls = []
            if TLS:  # the coordinator over TLS with a key; the metrics ports stay plaintext
                tls = os.path.join(stack.dir, "tls")
                client_tls = ["--tls-ca", os.path.join(tls, "ca.crt"),
                              "--api-key-file", os.path.join(tls, "api-key")]
            prometheus = Prometheus(write_config(stack, folder), folder)
            prometheus.wait("/-/ready", lambda: "Ready" in prometheus.get("/-/ready"), 30)
            # All three scraped and a baseline sample of the (zero) counters taken.
            prometheus.wait("up == 1 for all three",
                            lambda: len(prometheus.query('up{component=~"coordinator|target|'
                                                         'draft"} == 1')) == 3, 20)
            prometheus.wait("the coordinator's counters",
                            lambda: prometheus.query("tandem_draft_tokens_total"), 10)

            drafted = accepted = generated = 0
            for seed in (1, 2):
                r = run_client(stack.coordinator, "--prompt", "Once upon a time", "--raw",
                               "--temperature", "0.8", "--top-p", "0.95", "--seed", str(seed),
                               "--max-tokens", "48", "--stats-json", *client_tls,
                               env=stack.env)
                assert r.returncode == 0, r.stderr
                final = json.loads(r.stderr.strip().splitlines()[-1])
                drafted += final["speculation"]["draftedTokens"]
                accepted += final["speculation"]["acceptedTokens"]
                generated += final["usage"]["generatedTokens"]
            assert drafted > 0 and generated > 0, (drafted, generated)

            raw_acceptance = ("sum(rate(tandem_accepted_tokens_total[1m])) / "
                              "sum(rate(tandem_draft_tokens_total[1m]))")
            # Both counters start at 0 and are scraped together, so the ratio of their rates
            # is exactly accepted / drafted.
            want = accepted / drafted
            value = prometheus.wait(
                "the acceptance rate", lambda: prometheus.query(raw_acceptance) and
                abs(scalar(prometheus.query(raw_acceptance)) - want) < 1e-9 and
                scalar(prometheus.query(raw_acceptance)), 20)
            assert 0 < value <= 1, value
            tok_s = prometheus.wait(
                "generated tokens/s", lambda: prometheus.query(
                    "sum(rate(tandem_generated_tokens_total[1m]))") and scalar(
                    prometheus.query("sum(rate(tandem_generated_tokens_total[1m]))")), 20)
            assert tok_s > 0, tok_s

            # The recording rules give the same figures (they run every second).
            prometheus.wait(
                "tandem:acceptance_rate:ratio_rate1m",
                lambda: prometheus.query("tandem:acceptance_rate:ratio_rate1m") and abs(
                    scalar(prometheus.query("tandem:acceptance_rate:ratio_rate1m")) - want)
                < 1e-9, 20)
            prometheus.wait("tandem:generated_tokens:rate1m",
                            lambda: prometheus.query("tandem:generated_tokens:rate1m") and scalar(
                                prometheus.query("tandem:generated_tokens:rate1m")) > 0, 20)
            prometheus.wait("TTFT p50", lambda: prometheus.query(
                "tandem:time_to_first_token_seconds:p50_1m"), 20)

            # The workers are scraped too: the target did verify passes, the draft drafted.
            for role, kind in (("target", "verify"), ("draft", "draft")):
                expr = (f'sum(tandem_worker_compute_seconds_count{{role="{role}",'
                        f'kind="{kind}",component="{role}"}})')
                prometheus.wait(f"{role} {kind} compute", lambda expr=expr: prometheus.query(
                    expr) and scalar(prometheus.query(expr)) > 0, 20)
            kv = prometheus.query("tandem_worker_kv_cache_capacity_bytes")
            assert {s["metric"]["role"] for s in kv} == {"target", "draft"}, kv
            print(f"acceptance {value:.3f} (client {accepted}/{drafted}), "
                  f"generated {tok_s:.2f} tok/s over 1m")
    finally:
        if prometheus:
            prometheus.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
