#!/usr/bin/python3
"""Checks a Tandem process (worker or coordinator) over grpc.health.v1.

usage: tandem_health.py --server HOST:PORT [--service NAME] [--wait SECONDS]
                        [--tls-ca PEM [--tls-cert PEM --tls-key PEM]]

Prints the status (SERVING, NOT_SERVING, ...) and exits 0 when SERVING. With --wait it polls
until SERVING or the time is up (exit 1). With --tls-ca it speaks TLS, trusting that CA, and
presents --tls-cert/--tls-key to a worker that requires mutual TLS. Bad arguments or missing tools exit 2. Needs Debian's
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


def open_channel(grpc, args):
    """Plaintext, or TLS with --tls-ca (and the client certificate when given)."""
    if not args.tls_ca:
        return grpc.insecure_channel(args.server)

    def read(path):
        with open(path, "rb") as f:
            return f.read()
    credentials = grpc.ssl_channel_credentials(
        root_certificates=read(args.tls_ca),
        private_key=read(args.tls_key) if args.tls_key else None,
        certificate_chain=read(args.tls_cert) if args.tls_cert else None)
    return grpc.secure_channel(args.server, credentials)


def main(argv=None):
    p = Parser(prog=PROG, description="grpc.health.v1 check of a Tandem process")
    p.add_argument("--server", required=True, help="HOST:PORT")
    p.add_argument("--service", default="", help="service name; empty: the whole server")
    p.add_argument("--wait", type=float, default=0, help="poll up to SECONDS for SERVING")
    p.add_argument("--tls-ca", default="", help="PEM CA certificate: TLS, trusting it")
    p.add_argument("--tls-cert", default="", help="PEM client certificate (mutual TLS)")
    p.add_argument("--tls-key", default="", help="PEM private key of --tls-cert")
    args = p.parse_args(argv)
    if ":" not in args.server or args.wait < 0:
        p.error("--server must be HOST:PORT and --wait >= 0")
    if bool(args.tls_cert) != bool(args.tls_key) or (args.tls_cert and not args.tls_ca):
        p.error("--tls-cert and --tls-key go together, and need --tls-ca")
    try:
        stubs = tandem_stubs.load()
    except tandem_stubs.StubError as e:
        sys.stderr.write(f"{PROG}: {e}\n")
        return 2
    import grpc
    deadline = time.monotonic() + args.wait
    try:
        channel = open_channel(grpc, args)
    except OSError as e:
        sys.stderr.write(f"{PROG}: {e}\n")
        return 2
    with channel:
        while True:
            status = check_once(stubs, channel, args.service, timeout=2)
            if status == "SERVING" or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    print(status)
    return 0 if status == "SERVING" else 1


if __name__ == "__main__":
    sys.exit(main())
