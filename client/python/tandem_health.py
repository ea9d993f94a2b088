#!/usr/bin/python3
"""Checks a Tandem process (worker or coordinator) over grpc.health.v1.

usage: tandem_health.py --server HOST:PORT [--service NAME] [--wait SECONDS]

Prints the status (SERVING, NOT_SERVING, ...) and exits 0 when SERVING. With --wait it polls
until SERVING or the time is up (exit 1). Bad arguments or missing tools exit 2. Needs Debian's
python3-grpcio (use /usr/bin/python3); generates its stubs on first use (see tandem_stubs.py).
"""
import argparse
import os
import sys
import time

sys.dont_write_bytecode = True  # nothing generated lands in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tandem_stubs  # noqa: E402

PROG = "tandem_health"


class Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write(f"{PROG}: {message} (see --help)\n")
        sys.exit(2)


def check_once(stubs, channel, service, timeout):
    import grpc
    stub = stubs.health_pb2_grpc.HealthStub(channel)
    try:
        reply = stub.Check(stubs.health_pb2.HealthCheckRequest(service=service), timeout=timeout)
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.NOT_FOUND:
            return "SERVICE_UNKNOWN"
        return f"UNREACHABLE ({e.code().name})"
    return stubs.health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def main(argv=None):
    p = Parser(prog=PROG, description="grpc.health.v1 check of a Tandem process")
    p.add_argument("--server", required=True, help="HOST:PORT")
    p.add_argument("--service", default="", help="service name; empty: the whole server")
    p.add_argument("--wait", type=float, default=0, help="poll up to SECONDS for SERVING")
    args = p.parse_args(argv)
    if ":" not in args.server or args.wait < 0:
        p.error("--server must be HOST:PORT and --wait >= 0")
    try:
        stubs = tandem_stubs.load()
    except tandem_stubs.StubError as e:
        sys.stderr.write(f"{PROG}: {e}\n")
        return 2
    import grpc
    deadline = time.monotonic() + args.wait
    with grpc.insecure_channel(args.server) as channel:
        while True:
            status = check_once(stubs, channel, args.service, timeout=2)
            if status == "SERVING" or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    print(status)
    return 0 if status == "SERVING" else 1


if __name__ == "__main__":
    sys.exit(main())
