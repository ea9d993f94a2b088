"""Predicted Outputs, per-response speculation metrics and the gateway's gauges (issue 29), over
the real stack on loopback (stories260K target and its distilled draft):

  - with the target's own greedy reply as the prediction, a 10 %-edited one, and an unrelated
    one, the reply is unchanged (greedy, and seeded with Gumbel coupling), the official
    `openai` npm client reads usage.completion_tokens_details.accepted_prediction_tokens /
    rejected_prediction_tokens and metrics.speculative_decoding, streamed and not; an exact
    prediction is mostly kept, an unrelated one costs almost no guesses;
  - gRPC (Prediction.token_ids and text), the Python client's prediction= and tandem-chat
    --prediction give the same reply and counts;
  - the coordinator's tandem_running_requests, tandem_queued_requests and
    tandem_kv_cache_usage_ratio move as requests run and queue, and fall back when they end.

Needs TANDEM_BIN, TANDEM_SHARED (set by CTest), Node and the openai npm package in
$TANDEM_NPM_DIR (tools/setup.sh); prints "N passed, N failed".
"""
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ops"))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402
from stacklib import BIN, SCHEME, STUBS, Cluster, wait_for  # noqa: E402

CLIENT = os.path.join(HERE, "openai_prediction_client.mjs")
NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))
MODEL = "llama"  # general.name of stories260K
MESSAGES = [{"role": "user", "content": "Tell me a story about a cat and a dog."}]
HTTP = None
STACK = None


def node(requests):
    args = {"base_url": HTTP + "/v1", "requests": requests}
    env = {**os.environ, "TANDEM_NPM_DIR": NPM_DIR}
    if stacklib.SECURITY:
        env.update(NODE_EXTRA_CA_CERTS=stacklib.SECURITY.ca, TANDEM_API_KEY=stacklib.SECURITY.key)
    out = subprocess.run(["node", CLIENT, json.dumps(args)], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, f"node: {out.stderr[-3000:]}"
    replies = json.loads(out.stdout.strip().splitlines()[-1])
    for reply in replies:
        assert "error" not in reply, reply
    return replies


def chat(prediction=None, **fields):
    request = {"model": MODEL, "messages": MESSAGES, "max_tokens": 200, "temperature": 0,
               "ignore_eos": True, **fields}
    if prediction is not None:
        request["prediction"] = {"type": "content", "content": prediction}
    return request


def edited(text, every):
    """`text` with one word in `every` replaced (spread edits)."""
    words = text.split(" ")
    for i in range(every // 2, len(words), every):
        words[i] = "banana"
    return " ".join(words)


REFERENCE = {}


def reference():
    if "text" not in REFERENCE:
        REFERENCE["text"] = node([chat()])[0]["text"]
        assert len(REFERENCE["text"]) > 300, REFERENCE
    return REFERENCE["text"]


def test_an_exact_prediction_is_kept_and_changes_nothing():
    text = reference()
    plain, streamed = node([chat(text), chat(text, stream=True)])
    for reply in (plain, streamed):
        assert reply["text"] == text, reply
        details = reply["usage"]["completion_tokens_details"]
        completion = reply["usage"]["completion_tokens"]
        # Most tokens are the prediction's, kept; a refused guess is a tokenization seam.
        assert details["accepted_prediction_tokens"] >= 0.8 * completion, reply
        assert details["rejected_prediction_tokens"] <= 0.1 * completion, reply
        spec = reply["metrics"]["speculative_decoding"]
        for field in ("mean_acceptance_length", "draft_acceptance_rate", "acceptance_histogram",
                      "num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens"):
            assert field in spec, spec
        assert sum(spec["acceptance_histogram"]) == spec["num_spec_steps"], spec


def test_an_edited_prediction_changes_nothing_and_realigns():
    text = reference()
    prediction = edited(text, 10)
    assert prediction != text
    plain, streamed = node([chat(prediction), chat(prediction, stream=True)])
    for reply in (plain, streamed):
        assert reply["text"] == text, reply
        details = reply["usage"]["completion_tokens_details"]
        # Edits cost guesses (how many rounds the prediction then gets against the draft is
        # the cost model's choice: realignment itself is pinned by prediction_drafter_test).
        assert details["accepted_prediction_tokens"] > 0, reply
        assert details["rejected_prediction_tokens"] > 0, reply["usage"]


def test_an_unrelated_prediction_changes_nothing_and_costs_little():
    text = reference()
    unrelated = "The quarterly report shows revenue of 4.2 million, up 3 % on the year. " * 8
    reply = node([chat(unrelated)])[0]
    assert reply["text"] == text, reply
    details = reply["usage"]["completion_tokens_details"]
    assert details["rejected_prediction_tokens"] <= 0.2 * reply["usage"]["completion_tokens"], \
        reply["usage"]


def test_seeded_gumbel_output_is_unchanged_by_a_prediction():
    gumbel = {"temperature": 0.9, "seed": 7, "speculation": {"coupling": "gumbel"}}
    alone = node([chat(**gumbel)])[0]["text"]
    predicted, other = node([chat(alone, **gumbel), chat(edited(alone, 5), **gumbel)])
    assert predicted["text"] == alone, (predicted, alone)
    assert other["text"] == alone, (other, alone)
    assert predicted["usage"]["completion_tokens_details"]["accepted_prediction_tokens"] > 0


def grpc_request(**prediction):
    r = STUBS.generator_pb2.GenerateRequest(max_tokens=200, ignore_eos=True)
    r.chat.messages.add(role="user", content=MESSAGES[0]["content"])
    r.sampling.temperature = 0
    if "text" in prediction:
        r.prediction.text = prediction["text"]
    if "ids" in prediction:
        r.prediction.token_ids.ids.extend(prediction["ids"])
    return r


def test_grpc_python_client_and_tandem_chat_take_the_prediction():
    text = reference()
    ids, final, _ = stacklib.generate(STACK.stub, grpc_request())
    assert final.usage.accepted_prediction_tokens == 0
    for prediction in ({"text": text}, {"ids": ids}):
        got_ids, final, _ = stacklib.generate(STACK.stub, grpc_request(**prediction))
        assert got_ids == ids, prediction.keys()
        assert final.usage.accepted_prediction_tokens >= 0.8 * len(ids), final.usage
        assert final.speculation.predicted_accepted_tokens == \
            final.usage.accepted_prediction_tokens
    bad = grpc_request(ids=[1, 10 ** 6])
    try:
        stacklib.generate(STACK.stub, bad)
        raise AssertionError("an id outside the vocabulary was taken")
    except Exception as e:  # grpc.RpcError
        assert "prediction token 1000000" in str(e), e

    import tandem_client
    with tandem_client.Client(STACK.coordinator.address, **STACK.client_kwargs()) as client:
        reply = client.chat(MESSAGES, max_tokens=200, temperature=0, ignore_eos=True,
                            prediction=text)
        assert reply.token_ids == ids
        assert reply.result.accepted_prediction_tokens >= 0.8 * len(ids), reply.result

    path = os.path.join(STACK.dir, "prediction.txt")
    with open(path, "w") as f:
        f.write(text)
    out = subprocess.run([os.path.join(BIN, "tandem-chat"), *STACK.chat_args(), "-p",
                          MESSAGES[0]["content"], "--temp", "0", "--max-tokens", "200",
                          "--ignore-eos", "--prediction", path],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == text.strip(), (out.stdout, text)
    assert re.search(r"prediction: \d+ of \d+ guesses kept", out.stderr), out.stderr


def gauges(address):
    return {name: stacklib.metric(address, name)
            for name in ("tandem_running_requests", "tandem_queued_requests",
                         "tandem_kv_cache_usage_ratio")}


def test_only_the_gateway_gauges_move_as_requests_run_and_queue():
    # One session slot on a bounded KV budget: one request runs, the others queue.
    args = ["--metrics-listen", "127.0.0.1:0", "--health-interval-ms", "100"]
    with Cluster(draft=False, coordinator_args=args,
                 worker_args=["--max-sessions", "1", "--kv-budget-mb", "8"]) as c:
        address = c.coordinator.metrics
        assert wait_for(lambda: gauges(address)["tandem_running_requests"] == 0, 5)
        idle = gauges(address)
        assert idle == {"tandem_running_requests": 0, "tandem_queued_requests": 0,
                        "tandem_kv_cache_usage_ratio": 0}, idle
        results = []

        def run():
            r = stacklib.request(prompt="Once upon a time", max_tokens=480)
            r.sampling.temperature = 0
            results.append(stacklib.generate(c.stub, r, timeout=120))

        threads = [threading.Thread(target=run) for _ in range(3)]
        for t in threads:
            t.start()
        seen = {}

        def busy():
            g = gauges(address)
            for name, value in g.items():
                seen[name] = max(seen.get(name, 0), value)
            return g["tandem_running_requests"] == 1 and g["tandem_queued_requests"] >= 1 and \
                g["tandem_kv_cache_usage_ratio"] > 0
        assert wait_for(busy, 30, step=0.02), seen
        for t in threads:
            t.join(180)
        assert len(results) == 3
        assert wait_for(lambda: gauges(address) == idle, 10), gauges(address)


def main():
    manifest = os.path.join(NPM_DIR, "node_modules", "openai", "package.json")
    assert os.path.isfile(manifest), f"no openai npm package in {NPM_DIR}; run tools/setup.sh"
    global STACK, HTTP
    with Cluster(coordinator_args=["--http-listen", "127.0.0.1:0"]) as stack:
        STACK = stack
        HTTP = f"{SCHEME}://{stacklib.http_address(stack.coordinator)}"
        failed = opslib.run_tests({k: v for k, v in globals().items()
                                   if k.startswith("test_") and not k.startswith("test_only_")})
    failed += opslib.run_tests({k: v for k, v in globals().items() if k.startswith("test_only_")})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
