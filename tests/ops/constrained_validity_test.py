"""Issue 27's validity test: every JSON Schema constrained output of the engine, with no draft, a
model draft and the n-gram drafter, parses as JSON, validates against its schema (ajv:
tools/validate_json_schema.mjs, independent of Tandem's grammar engine) and ended by itself
(an output cut by max_tokens is incomplete JSON and fails).

constrained_samples (core/generation/constrained_samples_main.cc) generates over random bounded
schemas (random_schema_test_util.h, RandomSchemaOptions::bounded) for seeds 1-3 at temperature 1,
greedy too for every fourth schema, on these model sets (target, draft):

  stories260K  stories260K.gguf, stories-draft-distilled.gguf (SentencePiece, 512 tokens)
  llama-F16    the shared fixtures llama-F16.gguf, llama-Q8_0.gguf (stories260K's vocabulary)
  llama2-spm   random weights, Llama-2's SentencePiece vocabulary (32,000), F16 and Q8_0
  gpt2         random weights (qwen2), GPT-2's byte-level BPE vocabulary (50,257), F16 and Q8_0
  llama3       random weights (llama, Llama-3 RoPE), Llama-3's byte-level BPE vocabulary
               (128,000 + 256 special tokens), F16 and Q8_0

The random-weight sets are made here with tools/make_fixture_model (same seed, two types: the
Q8_0 copy drafts for the F16 one). The shared fixtures/*-F16.gguf files all carry stories260K's
vocabulary, hence the made ones. Needs node with the npm packages tools/setup.sh installs and
Debian's python3-numpy; prints counts per model and drafter and "N passed, N failed".
$TANDEM_VALIDITY_SCHEMAS overrides the schema counts (e.g. "stories260K=50,gpt2=10")."""
import collections
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

import opslib

sys.dont_write_bytecode = True
sys.path.insert(0, opslib.repo_path("tools"))
import fixture_tokenizer  # noqa: E402  (tools/fixture_tokenizer.py)

VALIDATOR = opslib.repo_path("tools", "validate_json_schema.mjs")
MAKE_FIXTURE = opslib.repo_path("tools", "make_fixture_model")
NPM_DIR = os.environ.get("TANDEM_NPM_DIR", os.path.expanduser("~/.cache/tandem-npm"))

# Schemas per model set (x 3 seeds x 3 drafters, + greedy for every fourth schema): the full
# 200 but on the Llama-3 vocabulary, where each schema costs most (compiling it for 128k
# tokens, and the 128k-row output layer of every forward pass of target and draft), to keep
# the test near a minute on a 2-core machine. TANDEM_VALIDITY_SCHEMAS=llama3=200 runs the full
# grid everywhere.
SCHEMAS = {"stories260K": 200, "llama-F16": 200, "llama2-spm": 200, "gpt2": 200, "llama3": 100}

# Llama 3's special tokens after its 128,000 BPE tokens (ids 128000-128255).
LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                   "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                   "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                   "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]


def models_dir():
    return os.path.join(opslib.env_dir("TANDEM_SHARED"), "models")


def llama3_vocab_gguf(path):
    """A vocabulary-only GGUF of Llama 3's tokenizer (llama3-bpe-tokenizer/: encoder.json and
    vocab.bpe) with its special tokens, for make_fixture_model --vocab-from."""
    folder = os.path.join(models_dir(), "llama3-bpe-tokenizer")
    with open(os.path.join(folder, "encoder.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    v = fixture_tokenizer.Vocab("gpt2")
    v.pre = "llama-bpe"
    for token in sorted(encoder, key=encoder.get):
        v.add(token)
    with open(os.path.join(folder, "vocab.bpe"), encoding="utf-8") as f:
        v.merges = [tuple(line.split(" ")) for line in f.read().split("\n")
                    if line and not line.startswith("#version")]
    names = LLAMA3_SPECIALS + [f"<|reserved_special_token_{i}|>" for i in range(3, 248)]
    for name in names:
        v.add(name, fixture_tokenizer.CONTROL)
    v.bos, v.eos = v.id("<|begin_of_text|>"), v.id("<|end_of_text|>")
    v.eom, v.eot, v.add_bos = v.id("<|eom_id|>"), v.id("<|eot_id|>"), True
    kvs = fixture_tokenizer.gguf_kvs(v)
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)))
        for key, vtype, raw in kvs:
            f.write(fixture_tokenizer.gguf_string(key) + struct.pack("<I", vtype) + raw)


def make_fixture(out, args):
    subprocess.run(["/usr/bin/python3", MAKE_FIXTURE, "--seed", "1", "--out-gguf", out] + args,
                   check=True, capture_output=True, timeout=300)
    return out


def model_sets(tmp):
    """[(name, target, draft, extra constrained_samples flags)]."""
    models = models_dir()
    stories = os.path.join(models, "stories260K")
    fixtures = os.path.join(models, "fixtures")
    sets = [("stories260K", os.path.join(stories, "stories260K.gguf"),
             os.path.join(stories, "derived", "stories-draft-distilled.gguf"), []),
            ("llama-F16", os.path.join(fixtures, "llama-F16.gguf"),
             os.path.join(fixtures, "llama-Q8_0.gguf"), ["--context=512", "--max_tokens=480"])]
    llama3_vocab = os.path.join(tmp, "llama3-vocab.gguf")
    llama3_vocab_gguf(llama3_vocab)
    made = {"llama2-spm": ["--arch", "llama", "--vocab-from",
                           os.path.join(models, "vocab", "ggml-vocab-llama-spm.gguf")],
            "gpt2": ["--arch", "qwen2", "--vocab-from",
                     os.path.join(models, "vocab", "ggml-vocab-gpt-2.gguf")],
            "llama3": ["--arch", "llama", "--llama3-rope", "--vocab-from", llama3_vocab]}
    for name, args in made.items():
        target = make_fixture(os.path.join(tmp, f"{name}-f16.gguf"), args + ["--type", "f16"])
        draft = make_fixture(os.path.join(tmp, f"{name}-q8_0.gguf"), args + ["--type", "q8_0"])
        sets.append((name, target, draft, ["--prompt=JSON:"]))
    return sets


def schema_counts():
    counts = dict(SCHEMAS)
    for item in os.environ.get("TANDEM_VALIDITY_SCHEMAS", "").split(","):
        if item:
            name, n = item.split("=")
            counts[name] = int(n)
    return counts


def judge(lines):
    """[verdict per line] of the validator over JSON `lines`."""
    r = subprocess.run(["node", VALIDATOR], input="".join(l + "\n" for l in lines),
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "TANDEM_NPM_DIR": NPM_DIR})
    assert r.returncode in (0, 1), f"validator exited {r.returncode}: {r.stderr}"
    out = [l for l in r.stdout.split("\n") if l]
    assert out and out[-1].endswith(" invalid"), r.stdout
    assert len(out) - 1 == len(lines), (len(out), len(lines))
    return out[:-1]


def test_every_constrained_output_is_valid_and_finished():
    counts = schema_counts()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        sets = model_sets(tmp)
        print(f"fixtures made in {time.monotonic() - start:.1f} s")
        for name, target, draft, flags in sets:
            start = time.monotonic()
            r = subprocess.run([opslib.binary("constrained_samples"), f"--model={name}",
                                f"--target={target}", f"--draft={draft}",
                                f"--schemas={counts[name]}"] + flags,
                               capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, r.stderr
            # Not splitlines(): outputs may hold U+2028 and other characters it splits at.
            got = [l for l in r.stdout.split("\n") if l]
            print(f"{name}: {len(got)} outputs of {counts[name]} schemas in "
                  f"{time.monotonic() - start:.1f} s")
            for summary in r.stderr.strip().split("\n"):  # per drafter: speculation counts
                print(f"  {summary}")
            lines += got
    start = time.monotonic()
    verdicts = judge(lines)
    print(f"ajv judged {len(lines)} outputs in {time.monotonic() - start:.1f} s")
    tally = collections.defaultdict(collections.Counter)
    bad = []
    for line, verdict in zip(lines, verdicts):
        item = json.loads(line)
        key = (item["model"], item["drafter"].split(" ")[0])
        tally[key]["outputs"] += 1
        ok = verdict == "valid" and item["finished"] and "error" not in item
        tally[key]["valid"] += verdict == "valid"
        tally[key]["finished"] += bool(item["finished"])
        tally[key]["tokens"] += item["tokens"]
        if not ok:
            bad.append((item["model"], item["drafter"], item["seed"], item.get("error"),
                        verdict, item["text"][:200], json.dumps(item["schema"])[:300]))
    for (model, drafter), t in sorted(tally.items()):
        print(f"  {model:12} {drafter:6} {t['outputs']:5} outputs, {t['valid']:5} valid, "
              f"{t['finished']:5} finished, {t['tokens']:6} tokens")
    print(f"{len(lines) - len(bad)} of {len(lines)} outputs valid and finished")
    assert not bad, bad[:5]


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
