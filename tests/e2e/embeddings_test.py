"""POST /v1/embeddings and Generator.Embed (issue 30) over the real stack on loopback
(stories260K target + its draft), through the official `openai` npm client's
`client.embeddings.create` (openai_embeddings_client.mjs): float and base64 vectors equal bit
for bit, single and batched inputs, the same text the same vector alone and in a batch, unit
vectors (the cosine of a text with itself is 1), token-id inputs equal to their text's,
usage counting the prompt tokens, gRPC Embed equal to HTTP, mean and last pooling, and
OpenAI-shaped refusals (400 naming error.param, 404, 413).

Needs TANDEM_BIN, TANDEM_SHARED (set by CTest), Node and the `openai` package in
$TANDEM_NPM_DIR (default ~/.cache/tandem-npm; tools/setup.sh installs it); prints
"N passed, N failed".
"""
import base64
import json
import math
import os
import re
import struct
import subprocess
import sys
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402
from stacklib import SCHEME, STUBS, Cluster  # noqa: E402

CLIENT = os.path.join(HERE, "openai_embeddings_client.mjs")
NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))
STACK = None
HTTP = None
MODEL = "llama"  # general.name of stories260K
DIM = 64  # stories260K's width


def embed(**request):
    """The npm client's reply to embeddings.create(request)."""
    request.setdefault("model", MODEL)
    env = {**os.environ, "TANDEM_NPM_DIR": NPM_DIR}
    if stacklib.SECURITY:
        env.update(NODE_EXTRA_CA_CERTS=stacklib.SECURITY.ca, TANDEM_API_KEY=stacklib.SECURITY.key)
    args = {"base_url": HTTP + "/v1", "request": request}
    out = subprocess.run(["node", CLIENT, json.dumps(args)], capture_output=True, timeout=120,
                         text=True, env=env)
    assert out.returncode == 0, f"node exited {out.returncode}: {out.stderr[-2000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def vectors(reply):
    assert reply.get("object") == "list", reply
    data = reply["data"]
    assert [d["index"] for d in data] == list(range(len(data))), data
    assert all(d["object"] == "embedding" for d in data), data
    return [d["embedding"] for d in data]


def decode(b64):
    raw = base64.b64decode(b64)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def tokens(text):
    r = STUBS.generator_pb2.TokenizeRequest(text=text, add_special=True)
    return list(STACK.stub.Tokenize(r, timeout=30).token_ids)


def test_one_text_is_a_unit_vector_of_the_models_width():
    reply = embed(input="Once upon a time", encoding_format="float")
    [v] = vectors(reply)
    assert len(v) == DIM, len(v)
    assert abs(dot(v, v) - 1.0) < 1e-5, dot(v, v)  # the cosine of a text with itself
    assert reply["model"] == MODEL, reply["model"]
    n = len(tokens("Once upon a time"))
    assert reply["usage"] == {"prompt_tokens": n, "total_tokens": n}, reply["usage"]


def test_base64_and_float_are_the_same_bits():
    [f] = vectors(embed(input="The cat sat.", encoding_format="float"))
    [b] = vectors(embed(input="The cat sat.", encoding_format="base64"))
    assert isinstance(b, str), b
    assert decode(b) == f
    # No encoding_format: the client asks for base64 and decodes it itself.
    [d] = vectors(embed(input="The cat sat."))
    assert d == f


def test_a_text_is_the_same_vector_alone_and_in_a_batch():
    texts = ["Lily had a red ball.", "Tom", "Once upon a time there was a dog."]
    for fmt in ("float", "base64"):
        batch = vectors(embed(input=texts, encoding_format=fmt))
        assert len(batch) == 3
        for i, text in enumerate(texts):
            [alone] = vectors(embed(input=text, encoding_format=fmt))
            assert alone == batch[i], (fmt, text)
    batch = vectors(embed(input=texts, encoding_format="float"))
    assert batch[0] != batch[1]
    assert dot(batch[0], batch[1]) < 1 - 1e-6


def test_token_id_inputs_equal_their_texts():
    ids = tokens("Lily had a red ball.")
    [text] = vectors(embed(input="Lily had a red ball.", encoding_format="float"))
    [one] = vectors(embed(input=ids, encoding_format="float"))
    assert one == text
    both = vectors(embed(input=[ids, ids[:3]], encoding_format="float"))
    assert both[0] == text and len(both) == 2


def test_grpc_embed_equals_http():
    texts = ["Lily had a red ball.", "Tom"]
    r = STUBS.generator_pb2.EmbedRequest()
    for t in texts:
        r.inputs.add(text=t)
    answer = STACK.stub.Embed(r, timeout=60)
    http = vectors(embed(input=texts, encoding_format="float"))
    assert [list(e.values) for e in answer.embeddings] == http
    assert answer.model == MODEL
    assert answer.pooling == STUBS.generator_pb2.EMBED_POOLING_MEAN
    assert answer.prompt_tokens == sum(len(tokens(t)) for t in texts)


def test_last_pooling_differs_from_mean_and_is_a_unit_vector():
    [mean] = vectors(embed(input="Lily had a red ball.", encoding_format="float"))
    [last] = vectors(embed(input="Lily had a red ball.", encoding_format="float",
                           pooling="last"))
    assert last != mean
    assert abs(dot(last, last) - 1.0) < 1e-5
    r = STUBS.generator_pb2.EmbedRequest(pooling=STUBS.generator_pb2.EMBED_POOLING_LAST)
    r.inputs.add(text="Lily had a red ball.")
    assert list(STACK.stub.Embed(r, timeout=60).embeddings[0].values) == last


def test_refusals_come_in_openai_shape():
    cases = [
        ({"input": "x", "dimensions": 32}, 400, "dimensions"),
        ({"input": ""}, 400, "input"),
        ({"input": []}, 400, "input"),
        ({"input": ["a", 1]}, 400, "input[1]"),
        ({"input": [[1, 2], [1 << 20]]}, 400, None),  # outside the vocabulary
        ({"input": "x", "encoding_format": "hex"}, 400, "encoding_format"),
        ({"input": "x", "model": "gpt-4"}, 404, None),
        ({"input": ["a"] * 2049}, 413, "input"),
        ({"input": [[1] * 300]}, 400, None),  # longer than the context (256)
    ]
    for request, status, param in cases:
        reply = embed(**request)
        assert "error" in reply, (request, reply)
        assert reply["error"]["status"] == status, (request, reply)
        if param is not None:
            assert reply["error"]["error"]["param"] == param, (request, reply)
    [ok] = vectors(embed(input="x", dimensions=DIM, encoding_format="float", user="u"))
    assert len(ok) == DIM


def main():
    global STACK, HTTP
    require = os.path.join(NPM_DIR, "node_modules", "openai", "package.json")
    assert os.path.isfile(require), f"no openai npm package in {NPM_DIR}; run tools/setup.sh"
    with Cluster(coordinator_args=["--http-listen", "127.0.0.1:0"],
                 worker_args=["--ctx", "256"]) as stack:
        STACK = stack
        m = re.search(r"\(http on (\S+)\)", stack.coordinator.startup_line)
        assert m, stack.coordinator.startup_line
        HTTP = f"{SCHEME}://" + m.group(1)
        return opslib.run_tests(globals())


if __name__ == "__main__":
    sys.exit(main())
