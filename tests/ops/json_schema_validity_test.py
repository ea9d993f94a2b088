"""The JSON Schema judge of issue 27 (tools/validate_json_schema.mjs: ajv's 2020-12 dialect and
ajv-formats, independent of Tandem's grammar engine) gives the known verdicts on known cases,
and every random sentence of the grammars the JSON Schema compiler makes for random schemas
(json_schema_samples, core/grammar/random_schema_test_util.h) validates against its schema.

Needs node and the npm packages tools/setup.sh installs; prints "N passed, N failed"."""
import json
import os
import subprocess
import sys

import opslib

VALIDATOR = opslib.repo_path("tools", "validate_json_schema.mjs")
NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))


def judge(lines):
    """(exit code, [verdict per line]) of the validator over JSON `lines`."""
    r = subprocess.run(["node", VALIDATOR], input="".join(l + "\n" for l in lines),
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TANDEM_NPM_DIR": NPM_DIR})
    assert r.returncode in (0, 1), f"validator exited {r.returncode}: {r.stderr}"
    out = [l for l in r.stdout.split("\n") if l]
    assert out and out[-1].endswith(" invalid"), r.stdout
    return r.returncode, out[:-1]


def case(schema, instance=None, text=None):
    item = {"schema": schema}
    if text is not None:
        item["text"] = text
    else:
        item["instance"] = instance
    return json.dumps(item)


def test_the_judge_gives_the_known_verdicts():
    date = {"type": "string", "format": "date"}
    closed = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
              "additionalProperties": False}
    cases = [  # (line, expected verdict prefix)
        (case(date, "2024-02-29"), "valid"),
        (case(date, "2023-02-29"), "invalid"),
        (case({"type": "string", "format": "email"}, "a.b@example.com"), "valid"),
        (case(closed, text='{"a":1}'), "valid"),
        (case(closed, text='{"a":1,"b":2}'), "invalid"),
        (case(closed, text='{"a":'), "invalid: the text is not JSON"),
        (case({"prefixItems": [{"type": "string"}], "items": False}, ["x", 1]), "invalid"),
        (case({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1), "invalid"),
        (case({"type": "integer", "exclusiveMaximum": 3}, 3), "invalid"),
        (case({"$ref": "#/$defs/x", "$defs": {"x": {"const": 1}}}, 1), "valid"),
        ("not json", "invalid: not a JSON line"),
    ]
    code, verdicts = judge([line for line, _ in cases])
    assert code == 1, code
    assert len(verdicts) == len(cases), verdicts
    for (line, expected), verdict in zip(cases, verdicts):
        assert verdict.startswith(expected), (line, verdict)
    code, verdicts = judge([line for line, want in cases if want == "valid"])
    assert code == 0 and all(v == "valid" for v in verdicts), verdicts


def test_every_sentence_of_random_schema_grammars_validates():
    samples = subprocess.run([opslib.binary("json_schema_samples"), "300", "5"],
                             capture_output=True, text=True, timeout=300)
    assert samples.returncode == 0, samples.stderr
    # Not splitlines(): sentences may hold U+2028 and other characters it splits at.
    lines = [l for l in samples.stdout.split("\n") if l]
    assert len(lines) >= 1200, len(lines)
    code, verdicts = judge(lines)
    bad = [(lines[i][:300], v) for i, v in enumerate(verdicts) if v != "valid"]
    assert code == 0 and not bad, bad[:5]


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
