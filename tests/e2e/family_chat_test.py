"""tandem-chat on each architecture's fixture, with its family's tokenizer, chat template and
end-of-turn token (issue 12): a two-turn chat stops both turns at the family's end-of-turn id,
from the GGUF file and from the Hugging Face folder of the same weights, with the same text.

The HF folder also drafts for the GGUF (the same vocabulary): speculation ends the same turns
at the same place. The fixtures are made here, into a temporary folder, by
tools/make_fixture_model --family (tools/fixture_tokenizer.py) with --end-turn-bias: the word
tokens' embeddings share a direction that the end-of-turn token's output row favours, so greedy
decoding ends its turn after a few tokens (the seeds below are ones where both turns say
something first, or at least stop).
If the stop rule missed the family's end-of-turn id, every turn would run to --max-tokens.
Llama 3 and Qwen2 use the real Llama 3.1 and Qwen2.5 templates (../shared/models/chat_templates).

Through the coordinator, stacklib's Cluster runs the processes (over mutual TLS with an API
key under TANDEM_E2E_TLS=1).

Also pins each family's template render through the Jinja engine (tandem-tokenize) and that
the GGUF and the HF folder tokenize alike.

Needs TANDEM_BIN and TANDEM_SHARED (set by CTest).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "ops"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import opslib  # noqa: E402  (the shared test runner)
import fixture_tokenizer  # noqa: E402
import stacklib  # noqa: E402  (the processes, over mutual TLS with a key if the run is)

BIN = os.environ["TANDEM_BIN"]
TEMPLATES = os.path.join(os.environ["TANDEM_SHARED"], "models", "chat_templates")
MAX_TOKENS = 40

# (name, --arch, --family, extra flags, --seed, end-of-turn text)
ARCHITECTURES = [
    ("llama", "llama", "llama2", [], 0, "</s>"),
    ("llama3", "llama", "llama3", ["--llama3-rope", "--chat-template",
                                   os.path.join(TEMPLATES,
                                                "meta-llama-Llama-3.1-8B-Instruct.jinja")],
     0, "<|eot_id|>"),
    ("qwen2", "qwen2", "qwen2", ["--chat-template",
                                 os.path.join(TEMPLATES, "Qwen-Qwen2.5-7B-Instruct.jinja")],
     3, "<|im_end|>"),
    ("qwen3", "qwen3", "qwen3", [], 0, "<|im_end|>"),
    ("phi3", "phi3", "phi3", [], 0, "<|end|>"),
    ("gemma2", "gemma2", "gemma", [], 1, "<end_of_turn>"),
    ("gemma3", "gemma3", "gemma", [], 3, "<end_of_turn>"),
]
STATS = re.compile(r"^\[prompt (\d+) tokens \((\d+) cached\) \| .* decode (\d+) tokens.*\]$")


def make_fixture(folder, arch, family, extra, seed):
    gguf, hf = os.path.join(folder, "model.gguf"), os.path.join(folder, "hf")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_fixture_model"),
                    "--arch", arch, "--family", family, *extra, "--seed", str(seed),
                    "--end-turn-bias", "2", "--out-gguf", gguf, "--out-hf", hf],
                   check=True, capture_output=True, timeout=120)
    return gguf, hf


def chat(model, turns, *flags):
    r = subprocess.run([os.path.join(BIN, "tandem-chat"), model, "--temp", "0", "--max-tokens",
                        str(MAX_TOKENS), *flags], input="".join(t + "\n" for t in turns),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def check_two_turns(name, model, eot_text, *flags):
    r = chat(model, ["Hello there", "Tell me more"], *flags)
    assert "no chat template" not in r.stderr, r.stderr
    stats = [l for l in r.stderr.splitlines() if l.startswith("[prompt")]
    assert len(stats) == 2, (name, r.stderr)
    decoded = []
    for i, line in enumerate(stats):
        m = STATS.match(line)
        assert m, line
        decoded.append(int(m.group(3)))
        assert decoded[-1] < MAX_TOKENS, (name, i, line)
        assert f"| end of turn {eot_text} (id " in line, (name, i, line)
    # The second turn re-renders the conversation: the first turn's prompt is cached.
    assert int(STATS.match(stats[1]).group(2)) > 0, stats
    assert eot_text not in r.stdout, r.stdout
    return r.stdout, decoded


def test_without_a_template_the_familys_builtin_format_is_used():
    """A qwen3 file with no chat template: its <|im_start|> / <|im_end|> make tandem-chat use
    the built-in chatml format (not raw), and the chat still stops at <|im_end|>."""
    with tempfile.TemporaryDirectory() as folder:
        gguf, hf = make_fixture(folder, "qwen3", "qwen3", ["--no-chat-template"], 0)
        for model in (gguf, hf):
            r = chat(model, ["Hello there", "Tell me more"])
            assert "using it (choose another with --format)" in r.stderr, r.stderr
            assert "chatml format" in r.stderr, r.stderr
            stats = [l for l in r.stderr.splitlines() if l.startswith("[prompt")]
            assert len(stats) == 2, r.stderr
            for line in stats:
                assert "| end of turn <|im_end|> (id " in line, line


def test_through_the_coordinator_the_same_turns_end_at_the_same_token():
    """tandem-chat --server with workers serving the fixture: the coordinator stops each turn
    at the family's end-of-turn id too, and the text equals the in-process chat's, with the
    model's template (phi3) and with the family format of a model without one (qwen3)."""
    for arch, family, extra, seed in (("phi3", "phi3", [], 0),
                                      ("qwen3", "qwen3", ["--no-chat-template"], 0)):
        with tempfile.TemporaryDirectory() as folder:
            gguf, _ = make_fixture(folder, arch, family, extra, seed)
            with stacklib.Cluster(draft=False, target_model=gguf) as stack:
                turns = ["Hello there", "Tell me more"]
                remote = subprocess.run(
                    [os.path.join(BIN, "tandem-chat"), *stack.chat_args(), "--temp", "0",
                     "--max-tokens", str(MAX_TOKENS)], input="".join(t + "\n" for t in turns),
                    capture_output=True, text=True, timeout=120)
                assert remote.returncode == 0, remote.stderr
                in_process = chat(gguf, turns)
                assert remote.stdout == in_process.stdout, (arch, remote.stdout,
                                                            in_process.stdout)
                decoded = [int(m.group(3)) for m in map(STATS.match, remote.stderr.splitlines())
                           if m]
                assert len(decoded) == 2 and max(decoded) < MAX_TOKENS, (arch, remote.stderr)


def test_ignore_eos_runs_each_reply_to_max_tokens_in_process_and_through_the_coordinator():
    """tandem-chat --ignore-eos (benchmarks on random models): the end-of-turn id the fixture
    ends its turns with no longer stops a reply, which runs to --max-tokens; without the flag
    the same reply stops early (the case can fail)."""
    with tempfile.TemporaryDirectory() as folder:
        gguf, _ = make_fixture(folder, "qwen3", "qwen3", [], 0)

        def decoded(r):
            return [int(m.group(3)) for m in map(STATS.match, r.stderr.splitlines()) if m]

        assert decoded(chat(gguf, ["Hello there"]))[0] < MAX_TOKENS
        assert decoded(chat(gguf, ["Hello there"], "--ignore-eos")) == [MAX_TOKENS]
        with stacklib.Cluster(draft=False, target_model=gguf) as stack:
            remote = subprocess.run(
                [os.path.join(BIN, "tandem-chat"), *stack.chat_args(), "--temp", "0",
                 "--max-tokens", str(MAX_TOKENS), "--ignore-eos"], input="Hello there\n",
                capture_output=True, text=True, timeout=120)
            assert remote.returncode == 0, remote.stderr
            assert decoded(remote) == [MAX_TOKENS], remote.stderr


def tokenize(model, text):
    r = subprocess.run([os.path.join(BIN, "tandem-tokenize"), "--model", model,
                        "--parse-special", "--add-special"], input=text, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_each_architecture_chats_two_turns_and_stops_at_its_end_of_turn():
    failures = []
    for name, arch, family, extra, seed, eot_text in ARCHITECTURES:
        with tempfile.TemporaryDirectory() as folder:
            gguf, hf = make_fixture(folder, arch, family, extra, seed)
            try:
                text_gguf, decoded_gguf = check_two_turns(name, gguf, eot_text)
                text_hf, decoded_hf = check_two_turns(name, hf, eot_text)
                assert (text_gguf, decoded_gguf) == (text_hf, decoded_hf), \
                    (name, text_gguf, text_hf, decoded_gguf, decoded_hf)
                # The HF folder as the GGUF's draft: one vocabulary, and speculation stops at
                # the same end of turn with the same text.
                speculative = check_two_turns(name, gguf, eot_text, "--draft", hf)
                assert speculative == (text_gguf, decoded_gguf), (name, speculative)
                print(f"  {name}: replies of {decoded_gguf} tokens, each ended by {eot_text}")
            except AssertionError as e:
                failures.append(f"{name}: {e}")
    assert not failures, "\n".join(failures)


def test_gguf_and_hf_folder_tokenize_alike():
    sample = "Hello there, little girl named Lily!\n\n12345 what?  <|im_start|>user\n"
    for name, arch, family, extra, seed, _ in ARCHITECTURES:
        with tempfile.TemporaryDirectory() as folder:
            gguf, hf = make_fixture(folder, arch, family, [], seed)
            ids = tokenize(gguf, sample)
            assert len(ids) > 10, (name, ids)
            assert ids == tokenize(hf, sample), (name, ids, tokenize(hf, sample))
            # BOS as the family adds it (Llama 3's from its tokenizer.json post-processor).
            bos = fixture_tokenizer.family_vocab(family).bos
            adds_bos = family in ("llama2", "llama3", "gemma")
            assert (ids[0] == str(bos)) == adds_bos, (name, ids[:3], bos)


MESSAGES = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "More?"}]
RENDERS = {
    "llama2": "<s>[INST] Hi [/INST] Hello. </s><s>[INST] More? [/INST]",
    "llama3": ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nMore?<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\n"),
    "chatml": ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
               "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nMore?<|im_end|>\n"
               "<|im_start|>assistant\n"),
    "phi3": ("<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello.<|end|>\n"
             "<|user|>\nMore?<|end|>\n<|assistant|>\n"),
    "gemma": ("<bos><start_of_turn>system\nBe brief.<end_of_turn>\n<start_of_turn>user\nHi"
              "<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>user\n"
              "More?<end_of_turn>\n<start_of_turn>model\n"),
}


def test_family_templates_render_each_format():
    bos_eos = {"llama2": ("<s>", "</s>"), "llama3": ("<|begin_of_text|>", "<|end_of_text|>"),
               "chatml": ("", "<|endoftext|>"), "phi3": ("<s>", "<|endoftext|>"),
               "gemma": ("<bos>", "<eos>")}
    with tempfile.TemporaryDirectory() as folder:
        messages = os.path.join(folder, "messages.json")
        with open(messages, "w") as f:
            json.dump(MESSAGES, f)
        for name, expected in RENDERS.items():
            template = os.path.join(folder, name + ".jinja")
            with open(template, "w") as f:
                f.write(fixture_tokenizer.TEMPLATES[name])
            bos, eos = bos_eos[name]
            r = subprocess.run([os.path.join(BIN, "tandem-tokenize"), "--chat-template",
                                template, "--messages", messages, "--bos-token", bos,
                                "--eos-token", eos, "--add-generation-prompt"],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, (name, r.stderr)
            assert r.stdout == expected, (name, r.stdout)


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
