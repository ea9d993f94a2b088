#!/usr/bin/python3
"""Streams one reply from a Tandem coordinator (tandem.v1.Generator) -- from any language.
The command-line client over the tandem_client module (its API is documented there).

usage: tandem_client.py --server HOST:PORT --prompt TEXT [--system TEXT] [--format NAME]
                        [--raw] [--temperature T] [--top-k K] [--top-p P] [--min-p P]
                        [--repeat-penalty R] [--repeat-last-n N] [--seed N]
                        [--max-tokens N] [--draft-tokens N|auto] [--no-speculation]
                        [--session-id ID] [--timeout S] [--stats-json]
                        [--tls-ca FILE [--tls-cert FILE --tls-key FILE] [--tls-server-name N]]
                        [--api-key-file FILE]
       (tandem_cli.py takes the same arguments)

A sampling flag left out is left unset in the request, so the server applies the one set of
defaults (tandem.v1.SamplingParams in protos/tandem/v1/common.proto names them; tandem-chat's
flags default to the same numbers).

The reply streams to stdout as it is generated; the statistics go to stderr, one line in the
format of tandem-chat (or the final message as JSON with --stats-json). The prompt is sent as
a conversation rendered with the model's chat template (or --format NAME; the raw format when
the model has none); --raw sends it as plain text instead.

TLS: --tls-ca is the CA the server's certificate must be signed by (turns TLS on);
--tls-cert/--tls-key the client's own certificate for mutual TLS. The API key is read from
--api-key-file (its first line) or $TANDEM_API_KEY, never from the command line (which other
users can see), and sent as `authorization: Bearer KEY`.

Exit codes: 0 done; 2 bad arguments, unreachable server or a request the server rejected as
invalid; 1 any other failure; 130 interrupted. Errors are one line on stderr.

Runs on Debian's python3-grpcio (/usr/bin/python3) from a bare checkout: when the generated
stubs are not importable it makes them itself (tandem_stubs.py).
"""
import argparse
import math
import os
import sys

sys.dont_write_bytecode = True  # nothing generated lands in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tandem_client  # noqa: E402
import tandem_stubs  # noqa: E402

PROG = "tandem_client"


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse_args(argv):
    p = Parser(prog=PROG, description="Stream a reply from a Tandem coordinator.")
    p.add_argument("--server", required=True, help="coordinator HOST:PORT")
    p.add_argument("--prompt", required=True, help="the user's message (or text with --raw)")
    p.add_argument("--system", help="system message")
    p.add_argument("--format", default="", help="built-in chat format instead of the model's")
    p.add_argument("--raw", action="store_true", help="send the prompt as plain text")
    p.add_argument("--temperature", type=float, help="0 is greedy; unset: server default")
    p.add_argument("--top-k", type=int, help=">= 0; 0 disables; unset: server default")
    p.add_argument("--top-p", type=float, help="in (0, 1]; 1 disables; unset: server default")
    p.add_argument("--min-p", type=float, help="in [0, 1); 0 disables; unset: server default")
    p.add_argument("--repeat-penalty", type=float,
                   help="repetition penalty > 0; 1 disables; unset: server default")
    p.add_argument("--repeat-last-n", type=int,
                   help="tokens the penalty looks back at, >= 0; unset: server default")
    p.add_argument("--seed", type=int, help="seed of the random stream; unset: server picks")
    p.add_argument("--max-tokens", type=int, default=0, help="0: server default")
    p.add_argument("--draft-tokens", default="0", help="guesses per round, or 'auto'")
    p.add_argument("--no-speculation", action="store_true", help="target alone")
    p.add_argument("--session-id", default="", help="multi-turn session to reuse")
    p.add_argument("--timeout", type=float, default=300.0, help="request deadline, seconds")
    p.add_argument("--connect-timeout", type=float, default=5.0, help="seconds to connect")
    p.add_argument("--stats-json", action="store_true", help="final message as JSON on stderr")
    p.add_argument("--tls-ca", help="CA certificate (PEM) the server's must be signed by")
    p.add_argument("--tls-cert", help="client certificate (PEM) for mutual TLS")
    p.add_argument("--tls-key", help="the client certificate's private key (PEM)")
    p.add_argument("--tls-server-name", help="name the server's certificate carries")
    p.add_argument("--api-key-file", help="file whose first line is the API key "
                   "(default: $TANDEM_API_KEY)")
    args = p.parse_args(argv)

    host, sep, port = args.server.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(f"--server must be HOST:PORT, got '{args.server}'")
    if not args.prompt:
        raise UsageError("--prompt must not be empty")
    if args.raw and (args.system or args.format):
        raise UsageError("--raw sends plain text: it takes no --system or --format")
    if args.temperature is not None and (not math.isfinite(args.temperature)
                                         or args.temperature < 0):
        raise UsageError("--temperature must be a finite number >= 0")
    if args.top_p is not None and not 0 < args.top_p <= 1:
        raise UsageError("--top-p must be in (0, 1]")
    if args.min_p is not None and not 0 <= args.min_p < 1:
        raise UsageError("--min-p must be in [0, 1)")
    if args.repeat_penalty is not None and (not math.isfinite(args.repeat_penalty)
                                            or args.repeat_penalty <= 0):
        raise UsageError("--repeat-penalty must be a finite number > 0")
    if any(v is not None and v < 0 for v in (args.top_k, args.repeat_last_n)) or \
            args.max_tokens < 0:
        raise UsageError("--top-k, --repeat-last-n and --max-tokens must be >= 0")
    if args.seed is not None and not 0 <= args.seed < 2**64:
        raise UsageError("--seed must be in [0, 2^64)")
    if args.timeout <= 0 or args.connect_timeout <= 0:
        raise UsageError("--timeout and --connect-timeout must be > 0")
    if (args.tls_cert is None) != (args.tls_key is None):
        raise UsageError("--tls-cert and --tls-key go together")
    if args.tls_cert and not args.tls_ca:
        raise UsageError("--tls-cert needs --tls-ca")
    args.api_key = os.environ.get("TANDEM_API_KEY") or None
    if args.api_key_file:
        try:
            with open(args.api_key_file) as f:
                args.api_key = f.readline().strip()
        except OSError as e:
            raise UsageError(f"cannot read --api-key-file {args.api_key_file}: "
                             f"{e.strerror}") from None
        if not args.api_key:
            raise UsageError(f"--api-key-file {args.api_key_file} has no key on its first line")
    args.adaptive = args.draft_tokens == "auto"
    if args.adaptive:
        args.draft_tokens = 0
    else:
        try:
            args.draft_tokens = int(args.draft_tokens)
        except ValueError:
            raise UsageError(f"--draft-tokens must be a number or 'auto', got "
                             f"'{args.draft_tokens}'") from None
        if args.draft_tokens < 0:
            raise UsageError("--draft-tokens must be >= 0")
    return args


def options(args):
    """tandem_client options from the flags: only what was given, so that an unset sampling
    field takes the server's (the one) defaults."""
    given = {"temperature": args.temperature, "top_k": args.top_k, "top_p": args.top_p,
             "min_p": args.min_p, "repetition_penalty": args.repeat_penalty,
             "penalty_window": args.repeat_last_n, "seed": args.seed}
    o = {k: v for k, v in given.items() if v is not None}
    o.update(max_tokens=args.max_tokens, session_id=args.session_id,
             speculation=not args.no_speculation, draft_tokens=args.draft_tokens,
             adaptive=args.adaptive, timeout=args.timeout)
    if not args.raw:
        o["format"] = args.format
    return o


def prompt(args):
    """generate()'s prompt arguments: the text, or the conversation."""
    if args.raw:
        return {"prompt": args.prompt}
    messages = [("system", args.system)] if args.system else []
    return {"messages": messages + [("user", args.prompt)]}


def stats_line(stubs, final):
    u, t, sp = final.usage, final.timing, final.speculation
    prefill_tokens = u.prompt_tokens - u.cached_prompt_tokens
    prefill_rate = prefill_tokens / t.prefill_seconds if t.prefill_seconds > 0 else 0.0
    line = (f"[prompt {u.prompt_tokens} tokens ({u.cached_prompt_tokens} cached) | "
            f"prefill {prefill_rate:.1f} tok/s | decode {u.generated_tokens} tokens, "
            f"{t.decode_tokens_per_second:.1f} tok/s | first token "
            f"{1000 * t.time_to_first_token_seconds:.1f} ms")
    if sp.drafted_tokens > 0:
        line += (f" | draft acceptance {100 * sp.acceptance_rate:.1f} % "
                 f"({sp.accepted_tokens}/{sp.drafted_tokens}), "
                 f"{sp.tokens_per_round:.2f} tokens/round")
    if sp.draft_failed:
        line += " | draft failed, went on with the target"
    reason = stubs.generator_pb2.FinishReason.Name(final.finish_reason)
    line += f" | {reason.replace('FINISH_REASON_', '').lower()} | seed {final.seed}]"
    return line


def fail(code, message):
    sys.stderr.write(f"{PROG}: {message}\n")
    return code


def connect(args):
    tls_files = dict(root_certificates=args.tls_ca, certificate_chain=args.tls_cert,
                     private_key=args.tls_key)
    try:
        return tandem_client.Client(args.server, api_key=args.api_key,
                                    server_name=args.tls_server_name,
                                    connect_timeout=args.connect_timeout, **tls_files)
    except OSError as e:
        raise UsageError(f"cannot read a TLS file: {e.filename}: {e.strerror}") from None


def run(args):
    try:
        client = connect(args)
    except tandem_stubs.StubError as e:
        return fail(2, str(e))
    except tandem_client.TandemError as e:
        return fail(2, e.details)
    import grpc  # importable now: the stubs loaded
    from google.protobuf import json_format

    final = None
    wrote = False
    with client:
        try:
            for event in client.generate(**prompt(args), **options(args)):
                if isinstance(event, tandem_client.Delta):
                    sys.stdout.write(event.text)
                    sys.stdout.flush()
                    wrote = wrote or bool(event.text)
                else:
                    final = event.message
        except KeyboardInterrupt:
            if wrote:
                sys.stdout.write("\n")
            return fail(130, "interrupted")
        except tandem_client.TandemError as e:
            if wrote:
                sys.stdout.write("\n")
            exit_code = 2 if e.code in (grpc.StatusCode.INVALID_ARGUMENT,
                                        grpc.StatusCode.UNAVAILABLE) else 1
            if e.code == grpc.StatusCode.DEADLINE_EXCEEDED:
                return fail(exit_code, f"DEADLINE_EXCEEDED: no complete reply from "
                                       f"{args.server} within --timeout {args.timeout:g} s")
            return fail(exit_code, f"{e.code.name}: {e.details}")
    sys.stdout.write("\n")
    sys.stdout.flush()
    if final is None:
        return fail(1, "the stream ended without a final message")
    if args.stats_json:
        sys.stderr.write(json_format.MessageToJson(final, including_default_value_fields=True,
                                                   indent=None) + "\n")
    else:
        sys.stderr.write(stats_line(tandem_stubs.load(), final) + "\n")
    return 0


def main(argv=None):
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as e:
        return fail(2, f"{e} (see --help)")
    try:
        return run(args)
    except UsageError as e:
        return fail(2, f"{e} (see --help)")
    except KeyboardInterrupt:
        return fail(130, "interrupted")


if __name__ == "__main__":
    sys.exit(main())
