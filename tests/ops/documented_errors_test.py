"""The errors Generate can return are the ones its contract documents: every status code that
the coordinator's request path constructs (validation, limits, admission, sessions) is named in
generator.proto's comment on Generate and in docs/grpc-api.md's table. (Issue 33 found ABORTED,
"session busy", missing from both.)"""
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opslib  # noqa: E402
from opslib import repo_path  # noqa: E402

# The request path of Generate; Coordinator::Init's start-up checks are not a request's.
REQUEST_PATH = ["validated_request.cc", "request_limits.cc", "admission_queue.cc",
                "coordinator.cc", "memory_pause.cc"]
START_UP_ONLY = {"FAILED_PRECONDITION"}  # Coordinator::Init: workers that disagree


def snake(camel):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).upper()


def constructed_codes():
    codes = set()
    for name in REQUEST_PATH:
        path = repo_path("services", "coordinator", name)
        if not os.path.exists(path):
            continue
        for m in re.finditer(r"absl::(\w+)Error\(", open(path).read()):
            codes.add(snake(m.group(1)))
    return codes - START_UP_ONLY


def generate_comment():
    proto = open(repo_path("protos", "tandem", "v1", "generator.proto")).read()
    end = proto.index("rpc Generate(")
    start = proto.rindex("\n\n", 0, end)
    return proto[start:end]


def test_the_request_path_constructs_the_codes_the_test_expects():
    codes = constructed_codes()
    assert {"INVALID_ARGUMENT", "ABORTED", "RESOURCE_EXHAUSTED"} <= codes, codes


def test_every_code_of_the_request_path_is_in_the_protos_comment():
    comment = generate_comment()
    missing = sorted(c for c in constructed_codes() if c not in comment)
    assert not missing, f"generator.proto's Generate comment does not name {missing}"


def test_every_code_of_the_request_path_is_in_the_grpc_api_doc():
    doc = open(repo_path("docs", "grpc-api.md")).read()
    missing = sorted(c for c in constructed_codes() if f"| `{c}` |" not in doc)
    assert not missing, f"docs/grpc-api.md's error table does not name {missing}"


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
