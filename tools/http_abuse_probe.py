#!/usr/bin/python3
"""Abuses the coordinator's HTTP front on loopback and prints what it held (issue 33).

usage: http_abuse_probe.py (--url http://127.0.0.1:PORT --pid PID | --bin DIR --model GGUF)
                           [--api-key KEY] [--duration 30] [--slowloris 1000] [--idle 1000]
                           [--sources 8] [--flood-connections 4] [--flood-lines 32000]
                           [--chunked-connections 4] [--chunked-mib 200] [--allow-late 0]
                           [--json OUT]

Loopback only, bounded in connections and in time (--duration seconds of abuse, then every
socket is closed), Python's standard library only. With --bin/--model it starts a target
worker and a coordinator (--http-listen, an API key) of its own and stops them after.

While a monitor measures the coordinator's RSS (/proc/PID/status) every 100 ms, GET /health
every 100 ms and a keyed completion (POST /v1/completions, 4 tokens) every 500 ms, each on
a new connection from 127.0.0.1, it
  - holds --slowloris connections that each send a request head one header line per second,
    and --idle connections that send nothing, from --sources addresses 127.0.0.2.. (a
    connection the server closes is opened again, so the population holds);
  - floods headers: --flood-connections connections each sending GET /health followed by
    up to --flood-lines header lines of 8 kB, until the server answers or closes;
  - sends chunked bodies past the limit: --chunked-connections keyed POSTs of up to
    --chunked-mib MiB in 1 MiB chunks, until the server answers or closes;
  - sends the request-smuggling and malformed shapes, one connection each.
Then prints the figures and the Done-when verdicts: RSS under 2x its idle value, every
/health and completion answered within 200 ms, every malformed shape answered 4xx and its
connection closed (--allow-late N lets N answers of each kind be late, never failed, for a
machine shared with other load). Exit status 0 when all hold, 1 when one does not, 2 on bad
usage.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

LIMIT_MS = 200.0


def now():
    return time.monotonic()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def percentile(values, p):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100.0 * (len(values) - 1))))]


def read_response(sock, timeout):
    """(status or 0, closed) of the first response on `sock`: reads until the head and its
    Content-Length body are in, then whether the server closes within `timeout`."""
    sock.settimeout(timeout)
    data, closed, end = b"", False, now() + timeout
    try:
        while now() < end:
            head_end = data.find(b"\r\n\r\n")
            if head_end >= 0:
                m = re.search(rb"\r\ncontent-length: *(\d+)", data[:head_end], re.I)
                if len(data) >= head_end + 4 + (int(m.group(1)) if m else 0):
                    break
            chunk = sock.recv(65536)
            if not chunk:
                closed = True
                break
            data += chunk
        while not closed and now() < end:
            chunk = sock.recv(65536)
            if not chunk:
                closed = True
    except (socket.timeout, ConnectionError, OSError) as e:
        closed = closed or isinstance(e, ConnectionError)
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return (int(m.group(1)) if m else 0), closed


class Target:
    def __init__(self, url, api_key, model):
        parsed = urllib.parse.urlparse(url)
        assert parsed.scheme == "http", "plain http:// only"
        self.host, self.port = parsed.hostname, parsed.port
        assert self.host in ("127.0.0.1", "localhost", "::1"), "loopback only"
        self.api_key, self.model = api_key, model

    def connect(self, source="127.0.0.1", timeout=5.0):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.bind((source, 0))
        s.connect(("127.0.0.1", self.port))
        return s

    def auth(self):
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def request(self, method, path, body=None, timeout=5.0):
        """(status, seconds, body) on a new connection."""
        start = now()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            headers = {"Content-Type": "application/json", **self.auth()}
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            return r.status, now() - start, data
        except (OSError, http.client.HTTPException):
            return 0, now() - start, b""
        finally:
            conn.close()

    def completion(self):
        body = json.dumps({"model": self.model, "prompt": "Once upon a time", "max_tokens": 4,
                           "temperature": 0})
        return self.request("POST", "/v1/completions", body)


def monitor(target, pid, stop, out):
    """RSS every 100 ms, /health every 100 ms, a completion every 500 ms, until `stop`; in a
    process of its own, so that its timing is the server's, not this script's other threads'.
    Puts {"rss": [KiB], "health" and "completions": [(status, ms, seconds into the run)]}."""
    rss, health, completions = [], [], []
    began = next_completion = now()
    while not stop.is_set():
        t = now()
        rss.append(rss_kib(pid))
        status, seconds, _ = target.request("GET", "/health")
        health.append((status, seconds * 1000, t - began))
        if t >= next_completion:
            status, seconds, _ = target.completion()
            completions.append((status, seconds * 1000, now() - began))
            next_completion = t + 0.5
        stop.wait(max(0.0, 0.1 - (now() - t)))
    out.put({"rss": rss, "health": health, "completions": completions})


class Holders:
    """Slowloris and idle connections from the source addresses, reopened when closed."""

    def __init__(self, target, slowloris, idle, sources, stop):
        self.target, self.stop = target, stop
        self.want = {"slowloris": slowloris, "idle": idle}
        self.sources = [f"127.0.0.{2 + i}" for i in range(sources)]
        self.socks = {}  # socket -> [kind, lines sent, next line time]
        self.opened = {"slowloris": 0, "idle": 0}
        self.closed = {"slowloris": 0, "idle": 0}
        self.answers = {}  # status -> count, of what closed connections were told
        self.peak = {"slowloris": 0, "idle": 0}
        self.connect_errors = 0
        self.selector_poll = select.poll()

    def open(self, kind):
        source = self.sources[(self.opened[kind]) % len(self.sources)]
        try:
            s = self.target.connect(source, timeout=2.0)
        except OSError:
            self.connect_errors += 1
            return
        s.setblocking(False)
        self.opened[kind] += 1
        if kind == "slowloris":
            s.send(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        self.socks[s.fileno()] = [s, kind, 0, now() + 1.0]
        self.selector_poll.register(s.fileno(), select.POLLIN)

    def drop(self, fd, told):
        s, kind = self.socks[fd][0], self.socks[fd][1]
        self.selector_poll.unregister(fd)
        del self.socks[fd]
        s.close()
        self.closed[kind] += 1
        m = re.match(rb"HTTP/1\.[01] (\d{3})", told)
        key = m.group(1).decode() if m else "none"
        self.answers[f"{kind}:{key}"] = self.answers.get(f"{kind}:{key}", 0) + 1

    def run(self):
        while not self.stop.is_set():
            count = {"slowloris": 0, "idle": 0}
            for entry in self.socks.values():
                count[entry[1]] += 1
            for kind in ("slowloris", "idle"):
                self.peak[kind] = max(self.peak[kind], count[kind])
                for _ in range(min(100, self.want[kind] - count[kind])):  # ramp, 100 per turn
                    self.open(kind)
            t = now()
            for fd, entry in list(self.socks.items()):
                s, kind, lines, due = entry
                if kind == "slowloris" and t >= due:
                    try:
                        s.send(b"X-Drip-%d: 1\r\n" % lines)
                        entry[2], entry[3] = lines + 1, t + 1.0
                    except OSError:
                        self.drop(fd, b"")
            for fd, _ in self.selector_poll.poll(50):
                if fd not in self.socks:
                    continue
                try:
                    told = self.socks[fd][0].recv(4096)
                except OSError:
                    told = b""
                self.drop(fd, told)
        for fd in list(self.socks):
            self.socks[fd][0].close()
        self.socks.clear()

    def figures(self):
        return {"peak": self.peak, "opened": self.opened, "closed": self.closed,
                "answers": self.answers, "connect_errors": self.connect_errors}


def hold(target, slowloris, idle, sources, stop, out):
    """The holders, in a process of their own; their figures go to `out`."""
    holders = Holders(target, slowloris, idle, sources, stop)
    holders.run()
    out.put(holders.figures())


def flood(target, kind, index, limit_lines, limit_mib, deadline, results):
    """A header flood or a chunked body past the limit on one connection; records the
    status, whether the connection was closed, and what was sent before the answer."""
    sent, s = 0, None
    try:
        s = target.connect(f"127.0.0.{100 + index}", timeout=5.0)
        if kind == "headers":
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            line = b"X-Flood: " + b"a" * 8000 + b"\r\n"
            pieces = (line for _ in range(limit_lines))
        else:
            auth = "".join(f"{k}: {v}\r\n" for k, v in target.auth().items())
            s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                       f"application/json\r\n{auth}Transfer-Encoding: chunked\r\n\r\n").encode())
            chunk = b"100000\r\n" + b"a" * (1 << 20) + b"\r\n"
            pieces = (chunk for _ in range(limit_mib))
        answered = select.poll()
        answered.register(s.fileno(), select.POLLIN)
        for piece in pieces:
            if now() > deadline:
                break
            if answered.poll(0):  # answered (or closed) already
                break
            s.sendall(piece)
            sent += len(piece)
    except OSError:
        pass
    status, closed = read_response(s, 5.0) if s is not None else (0, True)
    if s is not None:
        s.close()
    results.append({"kind": kind, "status": status, "closed": closed, "sent_bytes": sent})


BASE = "Host: x\r\n"
SHAPES = [  # (name, request bytes) each must be answered 4xx, then closed
    ("two Content-Length", "POST /v1/completions HTTP/1.1\r\n" + BASE +
     "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}}"),
    ("two equal Content-Length", "POST /v1/completions HTTP/1.1\r\n" + BASE +
     "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
    ("Content-Length list", "POST /v1/completions HTTP/1.1\r\n" + BASE +
     "Content-Length: 2, 2\r\n\r\n{}"),
    ("Content-Length with Transfer-Encoding", "POST /v1/completions HTTP/1.1\r\n" + BASE +
     "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    ("Transfer-Encoding with Content-Length", "POST /v1/completions HTTP/1.1\r\n" + BASE +
     "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"),
    ("Transfer-Encoding gzip, chunked", "POST /v1/completions HTTP/1.1\r\n" + BASE +
     "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
    ("Transfer-Encoding twice", "POST /v1/completions HTTP/1.1\r\n" + BASE +
     "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    ("chunked in HTTP/1.0", "POST /v1/completions HTTP/1.0\r\nTransfer-Encoding: chunked\r\n"
     "\r\n0\r\n\r\n"),
    ("header line with no colon", "GET /health HTTP/1.1\r\n" + BASE + "NoColonHere\r\n\r\n"),
    ("space before colon", "GET /health HTTP/1.1\r\n" + BASE + "X-A : 1\r\n\r\n"),
    ("folded header line", "GET /health HTTP/1.1\r\n" + BASE + "X-A: 1\r\n  more\r\n\r\n"),
    ("NUL in a header", "GET /health HTTP/1.1\r\n" + BASE + "X-A: a\0b\r\n\r\n"),
    ("bare CR", "GET /health HTTP/1.1\r\n" + BASE + "X-A: a\rb\r\n\r\n"),
    ("bare LF", "GET /health HTTP/1.1\n" + BASE + "\r\n"),
    ("two Host headers", "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
    ("bad chunk size", "POST /v1/completions HTTP/1.1\r\n" + BASE +
     "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
    ("chunk longer than its size", "POST /v1/completions HTTP/1.1\r\n" + BASE +
     "Transfer-Encoding: chunked\r\n\r\n1\r\n{}\r\n0\r\n\r\n"),
    ("huge Content-Length", "POST /v1/completions HTTP/1.1\r\n" + BASE +
     "Content-Length: 99999999999999999999999\r\n\r\n"),
    ("negative Content-Length", "POST /v1/completions HTTP/1.1\r\n" + BASE +
     "Content-Length: -1\r\n\r\n"),
]


def smuggling(target):
    results = []
    auth = "".join(f"{k}: {v}\r\n" for k, v in target.auth().items())
    for name, raw in SHAPES:
        # The key goes right after the request line, so that a refusal is for the shape.
        first, rest = raw.split("\n", 1)
        data = (first + "\n" + auth + rest).encode("latin-1")
        try:
            s = target.connect("127.0.0.1", timeout=5.0)
            s.sendall(data)
            status, closed = read_response(s, 3.0)
            s.close()
        except OSError:
            status, closed = 0, True
        results.append({"shape": name, "status": status, "closed": closed})
    return results


def start_stack(bin_dir, model, folder):
    """A target worker and a coordinator with HTTP and an API key: (processes, url, pid, key)."""
    def start(name, argv):
        log = open(os.path.join(folder, name + ".log"), "ab")
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
        line, end = b"", now() + 60
        while b"\n" not in line and now() < end:
            if select.select([p.stdout], [], [], 0.2)[0]:
                chunk = os.read(p.stdout.fileno(), 4096)
                if not chunk:
                    break
                line += chunk
        text = line.decode(errors="replace")
        if " listening on " not in text:
            p.kill()
            sys.exit(f"{name} did not start: {text!r} (see {folder})")
        return p, text
    key = "probe-key-" + os.urandom(8).hex()
    keys = os.path.join(folder, "keys")
    with open(keys, "w") as f:
        f.write(key + "\n")
    worker, line = start("target", [os.path.join(bin_dir, "tandem-worker"), "--role", "target",
                                    "--model", model, "--listen", "127.0.0.1:0", "--threads", "1"])
    address = line.split(" listening on ")[1].split()[0]
    coordinator, line = start("coordinator", [
        os.path.join(bin_dir, "tandem-coordinator"), "--listen", "127.0.0.1:0", "--target",
        address, "--http-listen", "127.0.0.1:0", "--api-keys-file", keys])
    http = re.search(r"\(http on (\S+)\)", line).group(1)
    return [coordinator, worker], f"http://{http}", coordinator.pid, key


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--bin")
    ap.add_argument("--model")
    ap.add_argument("--api-key", default="")
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--slowloris", type=int, default=1000)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--sources", type=int, default=8)
    ap.add_argument("--flood-connections", type=int, default=4)
    ap.add_argument("--flood-lines", type=int, default=32000)
    ap.add_argument("--chunked-connections", type=int, default=4)
    ap.add_argument("--chunked-mib", type=int, default=200)
    ap.add_argument("--allow-late", type=int, default=0,
                    help="samples of /health and of completions that may pass 200 ms (each); "
                         "for runs on a machine shared with other load")
    ap.add_argument("--json")
    args = ap.parse_args()
    if not ((args.url and args.pid) or (args.bin and args.model)):
        ap.print_usage()
        return 2
    if not 1 <= args.sources <= 90 or args.duration > 600:
        sys.exit("--sources is 1..90 and --duration at most 600 s")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.slowloris + args.idle + 256
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, need), hard))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop what was started, then exit
    processes = []
    folder = tempfile.mkdtemp(prefix="tandem-http-probe-")
    try:
        if args.bin:
            processes, args.url, args.pid, args.api_key = start_stack(args.bin, args.model,
                                                                      folder)
        return probe(args)
    finally:
        for p in processes:
            p.send_signal(signal.SIGTERM)
        for p in processes:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


def probe(args):
    target = Target(args.url, args.api_key, "")
    end = now() + 60
    while now() < end and target.request("GET", "/health")[0] != 200:
        time.sleep(0.2)
    status, _, body = target.request("GET", "/v1/models")
    assert status == 200, f"GET /v1/models: {status} {body[:200]!r}"
    target.model = json.loads(body)["data"][0]["id"]
    for _ in range(3):  # warm: the first requests allocate what every request will use
        target.completion()
    time.sleep(0.5)
    idle_rss = rss_kib(args.pid)

    context = multiprocessing.get_context("fork")
    stop, monitor_out, holders_out = context.Event(), context.Queue(), context.Queue()
    holders = context.Process(target=hold, args=(target, args.slowloris, args.idle,
                                                 args.sources, stop, holders_out), daemon=True)
    watcher = context.Process(target=monitor, args=(target, args.pid, stop, monitor_out),
                              daemon=True)
    holders.start()
    watcher.start()
    try:
        floods, shapes = abuse(target, args)
    finally:
        stop.set()
    watched = monitor_out.get(timeout=30)
    held = holders_out.get(timeout=30)
    watcher.join(10)
    holders.join(10)
    return report(args, idle_rss, watched, held, floods, shapes)


def abuse(target, args):
    """The floods and the shapes, while the holders hold, until --duration has passed."""
    start = now()
    # The floods start once the holders are up, and end by the duration.
    time.sleep(min(3.0, args.duration / 4))
    floods = []
    threads = [threading.Thread(target=flood, args=(target, "headers", i, args.flood_lines, 0,
                                                    start + args.duration - 2, floods))
               for i in range(args.flood_connections)]
    threads += [threading.Thread(target=flood, args=(target, "chunked", 50 + i, 0,
                                                     args.chunked_mib, start + args.duration - 2,
                                                     floods))
                for i in range(args.chunked_connections)]
    for t in threads:
        t.start()
    shapes = smuggling(target)
    for t in threads:
        t.join(args.duration + 10)
    time.sleep(max(0.0, start + args.duration - now()))
    return floods, shapes


def report(args, idle_rss, watched, held, floods, shapes):
    """Prints the figures and the verdicts; the exit status."""

    health_ms = [ms for _, ms, _ in watched["health"]]
    completion_ms = [ms for _, ms, _ in watched["completions"]]
    # (status, milliseconds, seconds into the run) of each late or failed answer
    bad_health = [(s, round(ms), round(t, 1)) for s, ms, t in watched["health"]
                  if s != 200 or ms > LIMIT_MS]
    bad_completion = [(s, round(ms), round(t, 1)) for s, ms, t in watched["completions"]
                      if s != 200 or ms > LIMIT_MS]
    peak_rss = max(watched["rss"] + [idle_rss])
    bad_shapes = [s for s in shapes if not (400 <= s["status"] < 500 and s["closed"])]
    bad_floods = [f for f in floods if not (400 <= f["status"] < 500 and f["closed"])]
    figures = {
        "url": args.url, "duration_s": args.duration,
        "idle_rss_mib": round(idle_rss / 1024, 1), "peak_rss_mib": round(peak_rss / 1024, 1),
        "rss_ratio": round(peak_rss / max(1, idle_rss), 2),
        "health": {"count": len(health_ms), "p50_ms": round(percentile(health_ms, 50), 1),
                   "p99_ms": round(percentile(health_ms, 99), 1),
                   "max_ms": round(max(health_ms, default=0), 1), "failed": bad_health[:10],
                   "failed_count": len(bad_health)},
        "completion": {"count": len(completion_ms),
                       "p50_ms": round(percentile(completion_ms, 50), 1),
                       "max_ms": round(max(completion_ms, default=0), 1),
                       "failed": bad_completion[:10], "failed_count": len(bad_completion)},
        "slowloris": {"wanted": args.slowloris, "peak_held": held["peak"]["slowloris"],
                      "opened": held["opened"]["slowloris"],
                      "closed_by_server": held["closed"]["slowloris"]},
        "idle": {"wanted": args.idle, "peak_held": held["peak"]["idle"],
                 "opened": held["opened"]["idle"], "closed_by_server": held["closed"]["idle"]},
        "holder_answers": held["answers"], "connect_errors": held["connect_errors"],
        "floods": floods, "shapes": shapes,
    }
    verdicts = {
        "rss_under_2x_idle": peak_rss < 2 * idle_rss,
        "health_within_200ms": bool(health_ms) and all(b[0] == 200 for b in bad_health) and
                               len(bad_health) <= args.allow_late,
        "completion_within_200ms": bool(completion_ms) and
                                   all(b[0] == 200 for b in bad_completion) and
                                   len(bad_completion) <= args.allow_late,
        "malformed_4xx_and_closed": not bad_shapes and not bad_floods and
                                    len(floods) == args.flood_connections +
                                    args.chunked_connections,
        "held_1000_and_1000": held["peak"]["slowloris"] >= args.slowloris and
                              held["peak"]["idle"] >= args.idle,
    }
    figures["verdicts"] = verdicts
    print(f"coordinator RSS: idle {figures['idle_rss_mib']} MiB, peak "
          f"{figures['peak_rss_mib']} MiB ({figures['rss_ratio']}x)")
    h, c = figures["health"], figures["completion"]
    print(f"/health: {h['count']} requests, p50 {h['p50_ms']} ms, p99 {h['p99_ms']} ms, max "
          f"{h['max_ms']} ms, {h['failed_count']} failed or over {LIMIT_MS:.0f} ms "
          f"(status, ms, s into the run) {h['failed']}")
    print(f"completion (keyed, 4 tokens): {c['count']} requests, p50 {c['p50_ms']} ms, max "
          f"{c['max_ms']} ms, {c['failed_count']} failed or over {LIMIT_MS:.0f} ms {c['failed']}")
    for kind in ("slowloris", "idle"):
        k = figures[kind]
        print(f"{kind}: held {k['peak_held']} of {k['wanted']} at peak, opened {k['opened']}, "
              f"closed by the server {k['closed_by_server']}")
    print(f"what closed holders were told: {held['answers']}; connect errors "
          f"{held['connect_errors']}")
    for f in floods:
        print(f"{f['kind']} flood: {f['status']} after {f['sent_bytes'] / 2**20:.1f} MiB sent, "
              f"closed {f['closed']}")
    for s in shapes:
        print(f"  {s['shape']:<40} {s['status']}  closed {s['closed']}")
    for name, ok in verdicts.items():
        print(f"{'PASS' if ok else 'FAIL'} {name}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
