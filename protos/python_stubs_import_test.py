"""The generated Python stubs import, and the .proto sources document every element.

Run by CTest with PYTHONPATH pointing at the generated stubs (build/python).
"""
import os
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOS = ["tandem/v1/common.proto", "tandem/v1/generator.proto", "tandem/v1/worker.proto"]


def check_stubs_import():
    from tandem.v1 import common_pb2, generator_pb2, generator_pb2_grpc  # noqa: F401
    from tandem.v1 import worker_pb2, worker_pb2_grpc

    assert hasattr(generator_pb2_grpc, "GeneratorStub"), "GeneratorStub missing"
    assert hasattr(worker_pb2_grpc, "WorkerStub"), "WorkerStub missing"
    request = generator_pb2.GenerateRequest(text="hi", max_tokens=3)
    request.sampling.temperature = 0.0
    parsed = generator_pb2.GenerateRequest.FromString(request.SerializeToString())
    assert parsed.HasField("sampling") and parsed.sampling.HasField("temperature")
    assert parsed.WhichOneof("prompt") == "text"
    assert worker_pb2.WorkerRole.Name(0) == "WORKER_ROLE_UNSPECIFIED"
    return 1


def undocumented_elements():
    """Paths of messages, fields, enums, values, services and methods without a comment."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        subprocess.run(["protoc", "-I", HERE, "--include_source_info", "--descriptor_set_out",
                        out] + PROTOS, check=True)
        fds = descriptor_pb2.FileDescriptorSet.FromString(open(out, "rb").read())
    missing = []
    for f in fds.file:
        documented = {tuple(loc.path) for loc in f.source_code_info.location
                      if loc.leading_comments.strip() or loc.trailing_comments.strip()}

        def need(path, name):
            if tuple(path) not in documented:
                missing.append(f"{f.name}: {name}")

        def walk_message(m, path, prefix):
            if m.options.map_entry:  # a map field's entry type: the field's comment covers it
                return
            need(path, prefix + m.name)
            for i, field in enumerate(m.field):
                need(path + [2, i], f"{prefix}{m.name}.{field.name}")
            for i, nested in enumerate(m.nested_type):
                walk_message(nested, path + [3, i], f"{prefix}{m.name}.")
            for i, e in enumerate(m.enum_type):
                walk_enum(e, path + [4, i], f"{prefix}{m.name}.")

        def walk_enum(e, path, prefix):
            need(path, prefix + e.name)
            for i, v in enumerate(e.value):
                if i > 0:  # the _UNSPECIFIED zero explains itself
                    need(path + [2, i], f"{prefix}{e.name}.{v.name}")

        for i, m in enumerate(f.message_type):
            walk_message(m, [4, i], "")
        for i, e in enumerate(f.enum_type):
            walk_enum(e, [5, i], "")
        for i, s in enumerate(f.service):
            need([6, i], s.name)
            for j, method in enumerate(s.method):
                need([6, i, 2, j], f"{s.name}.{method.name}")
    return missing


def main():
    passed = failed = 0
    try:
        passed += check_stubs_import()
    except Exception as e:  # report and count, like a test runner
        print(f"FAIL stubs import: {e!r}")
        failed += 1
    missing = undocumented_elements()
    if missing:
        print("FAIL undocumented proto elements:\n  " + "\n  ".join(missing))
        failed += 1
    else:
        passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
