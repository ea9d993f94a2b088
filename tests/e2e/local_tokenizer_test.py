"""The coordinator tokenizes prompts itself with its target's tokenizer (issue 14: no Tokenize
round trip before the first token), and its ids are the worker's: for each architecture's
fixture (GGUF and Hugging Face folder, the families' real tokenizers and chat templates), the
coordinator's Tokenize (answered in the coordinator, its log says so) equals the target
worker's own Tokenize for text with and without special tokens and for conversations with the
model's template, built-in formats and raw. A coordinator whose target replicas tokenize
differently (the same vocabulary from a GGUF and from its HF export, with other merge data)
falls back to the targets' Tokenize, says so in its log, and its ids are still the workers'.

Plaintext only: it calls the workers directly. Needs TANDEM_BIN and TANDEM_SHARED (CTest).
"""
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "ops"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import opslib  # noqa: E402  (the shared test runner)
import stacklib  # noqa: E402

STUBS = stacklib.STUBS
import grpc  # noqa: E402

TEMPLATES = os.path.join(os.environ["TANDEM_SHARED"], "models", "chat_templates")
LOCAL = "prompts are tokenized in the coordinator"
FALLBACK = "prompts are tokenized on the target workers"
# (--arch, --family, extra flags) of tools/make_fixture_model
FIXTURES = [
    ("llama", "llama2", []),
    ("llama", "llama3", ["--llama3-rope", "--chat-template",
                         os.path.join(TEMPLATES, "meta-llama-Llama-3.1-8B-Instruct.jinja")]),
    ("qwen2", "qwen2", ["--chat-template",
                        os.path.join(TEMPLATES, "Qwen-Qwen2.5-7B-Instruct.jinja")]),
    ("qwen3", "qwen3", ["--no-chat-template"]),
    ("phi3", "phi3", []),
    ("gemma2", "gemma", []),
]
TEXTS = ["Hello there, little girl named Lily!\n\n12345 what?  <|im_start|>user\n",
         " \u00e9t\u00e9 \u4f60\u597d  \t tabs and  double  spaces</s><s>"]


def make_fixture(folder, arch, family, extra):
    gguf, hf = os.path.join(folder, "model.gguf"), os.path.join(folder, "hf")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_fixture_model"),
                    "--arch", arch, "--family", family, *extra, "--out-gguf", gguf,
                    "--out-hf", hf], check=True, capture_output=True, timeout=120)
    return gguf, hf


def requests():
    """Tokenize requests: text each way, and a conversation in each format."""
    g = STUBS.generator_pb2
    out = []
    for text in TEXTS:
        for add_special, parse_special in ((False, False), (True, False), (True, True)):
            out.append(g.TokenizeRequest(text=text, add_special=add_special,
                                         parse_special=parse_special))
    for fmt in ("", "chatml", "llama3", "raw"):
        r = g.TokenizeRequest()
        r.chat.format = fmt
        for role, content in (("system", "Be brief."), ("user", "Hi <|im_end|> there"),
                              ("assistant", "Hello."), ("user", TEXTS[1])):
            r.chat.messages.add(role=role, content=content)
        out.append(r)
    return out


def worker_stub(process):
    return STUBS.worker_pb2_grpc.WorkerStub(grpc.insecure_channel(process.address))


def log_of(stack):
    with open(os.path.join(stack.dir, "coordinator.log"), errors="replace") as f:
        return f.read()


def assert_same_ids(stack, workers, name):
    """The coordinator's answer to every request is a worker's (one of them, when replicas
    tokenize differently and the coordinator asks whichever is least loaded)."""
    for i, r in enumerate(requests()):
        mine = stack.stub.Tokenize(r, timeout=30)
        theirs = [w.Tokenize(r, timeout=30) for w in workers]
        assert any(list(mine.token_ids) == list(t.token_ids) and
                   mine.rendered_text == t.rendered_text for t in theirs), (name, i, r)
        assert len(mine.token_ids) > 3, (name, i)


def test_the_coordinators_ids_are_the_workers_for_every_family_gguf_and_hf():
    failures = []
    for arch, family, extra in FIXTURES:
        with tempfile.TemporaryDirectory() as folder:
            for model in make_fixture(folder, arch, family, extra):
                name = f"{family} {os.path.basename(model)}"
                try:
                    with stacklib.Cluster(draft=False, target_model=model, tls=False) as stack:
                        assert LOCAL in log_of(stack), (name, log_of(stack))
                        assert_same_ids(stack, [worker_stub(stack.targets[0])], name)
                except AssertionError as e:
                    failures.append(f"{name}: {e}")
    assert not failures, "\n".join(failures)


def test_replicas_that_tokenize_differently_make_the_coordinator_ask_them():
    """stories260K from its GGUF (SentencePiece scores) and from its HF folder (tokenizer.json
    merges): one vocabulary, so both are replicas of one target, but not one tokenizer."""
    models = os.path.join(os.environ["TANDEM_SHARED"], "models", "stories260K")
    stack = stacklib.Cluster(targets=0, draft=False, tls=False,
                             target_model=os.path.join(models, "stories260K.gguf"))
    try:
        stack.targets = [stack.worker("target", "target0")]
        stack.target_model = os.path.join(models, "hf")
        stack.targets.append(stack.worker("target", "target1"))
        workers = [worker_stub(t) for t in stack.targets]
        d = [w.Describe(STUBS.worker_pb2.DescribeRequest(), timeout=30).model for w in workers]
        assert d[0].vocabulary_fingerprint == d[1].vocabulary_fingerprint, d
        assert d[0].tokenizer_fingerprint != d[1].tokenizer_fingerprint, d
        stack.start_coordinator()
        assert stacklib.wait_for(lambda: FALLBACK in log_of(stack), 10), log_of(stack)
        assert_same_ids(stack, workers, "stories260K replicas")
    finally:
        stack.__exit__(None, None, None)


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
