"""The tool-call fixture models (issue 28): tools/make_fixture_model --family for each family
whose tool calls Tandem parses (tools/fixture_tokenizer.py) writes a GGUF that embeds the
family's real chat template (../shared/models/chat_templates, read at generation time), whose
special tokens encode to single ids of the type the real model's GGUF gives them, and whose EOS
is the real model's; the chat-template engine (tandem-tokenize) renders a whole tool
conversation (tools, an assistant call, the tool's result, the generation prompt) with it, and
the family's tokens in that render tokenize to their single ids, from the GGUF and from the
Hugging Face folder (--out-hf) alike. --token-bias TEXT=VALUE adds
about VALUE to that token's logit at every position, and nothing to any other (tandem-logits
against the same fixture built with TEXT=0), so that greedy decoding writes it first.

Starts no server. Needs TANDEM_BIN and TANDEM_SHARED (set by CTest).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "ops"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import opslib  # noqa: E402  (the shared test runner)
import fixture_tokenizer as ft  # noqa: E402

BIN = os.environ["TANDEM_BIN"]
TEMPLATES = os.path.join(os.environ["TANDEM_SHARED"], "models", "chat_templates")
CONTROL, USER_DEFINED = ft.CONTROL, ft.USER_DEFINED
TOOL_CALLS_BEGIN = "<\uff5ctool\u2581calls\u2581begin\uff5c>"
R1_EOS = "<\uff5cend\u2581of\u2581sentence\uff5c>"

# family: (EOS text, {special token: GGUF type}, text every tool-conversation render holds,
#          the token a test would bias to make the fixture call, arguments as a JSON string)
FAMILIES = {
    "llama3.1": ("<|eot_id|>", {"<|python_tag|>": CONTROL, "<|eom_id|>": CONTROL,
                                "<|eot_id|>": CONTROL, "<|start_header_id|>": CONTROL},
                 '{"name": "get_weather", "parameters": {"city": "Paris"}}', "<|python_tag|>",
                 False),
    "hermes": ("<|im_end|>", {"<tool_call>": USER_DEFINED, "</tool_call>": USER_DEFINED,
                              "<|im_start|>": CONTROL, "<|im_end|>": CONTROL},
               '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
               '</tool_call>', "<tool_call>", False),
    "mistral-nemo": ("</s>", {"[INST]": CONTROL, "[/INST]": CONTROL, "[TOOL_CALLS]": CONTROL,
                              "[AVAILABLE_TOOLS]": CONTROL, "[/AVAILABLE_TOOLS]": CONTROL,
                              "[TOOL_RESULTS]": CONTROL, "[/TOOL_RESULTS]": CONTROL},
                     '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, '
                     '"id": "call00001"}]</s>', "[TOOL_CALLS]", False),
    "functionary-v3.1": ("<|eot_id|>", {"<|python_tag|>": CONTROL, "<|eom_id|>": CONTROL,
                                        "<|eot_id|>": CONTROL},
                         '<function=get_weather>{"city": "Paris"}</function><|eom_id|>',
                         "<|python_tag|>", True),
    "functionary-v3.2": ("<|eot_id|>", {"<|eot_id|>": CONTROL, "<|start_header_id|>": CONTROL},
                         '>>>get_weather\n{"city": "Paris"}', "get", True),
    "firefunction-v2": ("<|eot_id|>", {"<|eot_id|>": CONTROL, "<|start_header_id|>": CONTROL},
                        ' functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
                        "<|eot_id|>", True),
    "command-r": ("<|END_OF_TURN_TOKEN|>", {
        "<|START_OF_TURN_TOKEN|>": CONTROL, "<|END_OF_TURN_TOKEN|>": CONTROL,
        "<|CHATBOT_TOKEN|>": CONTROL, "<|USER_TOKEN|>": CONTROL, "<|SYSTEM_TOKEN|>": CONTROL,
        "<BOS_TOKEN>": CONTROL},
        '"tool_name": "get_weather"', "<|START_OF_TURN_TOKEN|>", False),
    "deepseek-r1": (R1_EOS, {
        "<think>": USER_DEFINED, "</think>": USER_DEFINED, TOOL_CALLS_BEGIN: CONTROL,
        "<\uff5ctool\u2581sep\uff5c>": CONTROL, "<\uff5cUser\uff5c>": CONTROL,
        "<\uff5cAssistant\uff5c>": CONTROL, R1_EOS: CONTROL},
        TOOL_CALLS_BEGIN + "<\uff5ctool\u2581call\u2581begin\uff5c>function"
        "<\uff5ctool\u2581sep\uff5c>get_weather\n```json\n{\"city\": \"Paris\"}\n```",
        "<think>", True),
    "deepseek-r1-distill": (R1_EOS, {"<think>": USER_DEFINED, "</think>": USER_DEFINED,
                                     "<\uff5cUser\uff5c>": CONTROL, R1_EOS: CONTROL},
                            TOOL_CALLS_BEGIN + "<\uff5ctool\u2581call\u2581begin\uff5c>function",
                            "<think>", True),
}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object",
                   "properties": {"city": {"type": "string", "description": "The city."}},
                   "required": ["city"]}}}]


def conversation(args_as_string):
    arguments = {"city": "Paris"}
    call = {"id": "call00001", "type": "function",
            "function": {"name": "get_weather",
                         "arguments": json.dumps(arguments) if args_as_string else arguments}}
    # firefunction-v2's template reads `functions` (the tools as JSON text) and `datetime`.
    return {"tools": TOOLS, "functions": json.dumps(TOOLS, indent=2), "datetime": "Jul 26 2024",
            "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call00001", "name": "get_weather",
         "content": '{"temperature": 21}'}]}


def make(folder, family, *flags, name="model.gguf"):
    path = os.path.join(folder, name)
    start = time.monotonic()
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_fixture_model"),
                        "--family", family, "--templates", TEMPLATES, *flags, "--out-gguf",
                        path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (family, r.stderr)
    assert time.monotonic() - start < 5, (family, "slower than 5 s")
    return path


def gguf_vocab(path):
    """The file's tokenizer as a fixture_tokenizer.Vocab (its tokenizer.* keys)."""
    with open(path, "rb") as f:
        data = f.read()
    r = ft._Reader(data)
    assert data[:4] == b"GGUF", path
    r.pos = 8
    r.take("<Q")
    n_kv = r.take("<Q")
    kvs = []
    for _ in range(n_kv):
        key, vtype = r.string(), r.take("<I")
        start = r.pos
        r.value(vtype)
        if key.startswith("tokenizer."):
            kvs.append((key, vtype, data[start:r.pos]))
    return ft.vocab_from_kvs(kvs)


def run(*args, stdin=""):
    r = subprocess.run([os.path.join(BIN, args[0]), *args[1:]], input=stdin,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def tokenize(model, text):
    return [int(t) for t in run("tandem-tokenize", "--model", model, "--parse-special",
                                stdin=text).split()]


def render(folder, v, args_as_string):
    template, messages = os.path.join(folder, "t.jinja"), os.path.join(folder, "m.json")
    with open(template, "w", encoding="utf-8") as f:
        f.write(v.chat_template)
    with open(messages, "w", encoding="utf-8") as f:
        json.dump(conversation(args_as_string), f)
    bos = v.tokens[v.bos] if v.bos is not None else ""
    return run("tandem-tokenize", "--chat-template", template, "--messages", messages,
               "--bos-token", bos, "--eos-token", v.tokens[v.eos], "--add-generation-prompt")


def check_family(folder, family):
    eos, specials, call_text, _, args_as_string = FAMILIES[family]
    gguf = make(folder, family, "--out-hf", os.path.join(folder, "hf"))
    v = gguf_vocab(gguf)
    with open(os.path.join(TEMPLATES, ft.TOOL_TEMPLATES[family]), encoding="utf-8") as f:
        assert v.chat_template == f.read(), "the GGUF's template is not the shared file"
    assert v.tokens[v.eos] == eos, v.tokens[v.eos]
    for text, ttype in specials.items():
        ids = tokenize(gguf, text)
        assert len(ids) == 1 and v.tokens[ids[0]] == text, (text, ids)
        assert v.types[ids[0]] == ttype, (text, v.types[ids[0]], ttype)
    rendered = render(folder, v, args_as_string)
    assert call_text in rendered, (call_text, rendered)
    assert "get_weather" in rendered and "temperature" in rendered, rendered
    ids = tokenize(gguf, rendered)
    for text in specials:
        assert ids.count(v.tokens.index(text)) == rendered.count(text), (text, rendered)
    assert tokenize(os.path.join(folder, "hf"), rendered) == ids, "the HF folder differs"
    return gguf, v, ids


def test_each_tool_family_embeds_its_template_tokens_and_eos():
    failures = []
    for family in FAMILIES:
        with tempfile.TemporaryDirectory() as folder:
            try:
                check_family(folder, family)
                print(f"  {family}: template, tokens and tool conversation render ok")
            except AssertionError as e:
                failures.append(f"{family}: {e}")
    assert not failures, "\n".join(failures)


# The "special" flags of the real models' tokenizer_config.json, which the HF folder keeps
# (a GGUF makes the ones that look special control tokens all the same).
HF_SPECIAL = {
    "hermes": {"<|im_end|>": True, "<tool_call>": False, "</tool_call>": False},
    "mistral-nemo": {"[TOOL_CALLS]": True, "[INST]": True, "</s>": True},
    "command-r": {"<|START_OF_TURN_TOKEN|>": False, "<|END_OF_TURN_TOKEN|>": True,
                  "<|CHATBOT_TOKEN|>": False, "<BOS_TOKEN>": True},
    "deepseek-r1": {R1_EOS: True, "<\uff5cUser\uff5c>": False, "<think>": False,
                    TOOL_CALLS_BEGIN: False},
    "llama3.1": {"<|python_tag|>": True, "<|eot_id|>": True},
}


def test_the_hf_folder_keeps_each_models_special_flags():
    for family, flags in HF_SPECIAL.items():
        with tempfile.TemporaryDirectory() as folder:
            make(folder, family, "--out-hf", os.path.join(folder, "hf"))
            with open(os.path.join(folder, "hf", "tokenizer_config.json"),
                      encoding="utf-8") as f:
                decoder = json.load(f)["added_tokens_decoder"].values()
            got = {t["content"]: t["special"] for t in decoder if t["content"] in flags}
            assert got == flags, (family, got)


def logits(folder, model, ids, name):
    out = os.path.join(folder, name + ".npy")
    run("tandem-logits", "--model", model, "--tokens", ",".join(map(str, ids)), "--out", out)
    return np.load(out)


def test_token_bias_makes_the_token_the_greedy_output_at_every_position():
    """Each family's marker biased by 30 is the argmax after the rendered tool conversation
    (and at every position of it); against TEXT=0 (the same weights otherwise) its logit rose
    by 30 +- 15 % everywhere and no other logit moved."""
    failures = []
    for family, (_, _, _, marker, _) in FAMILIES.items():
        with tempfile.TemporaryDirectory() as folder:
            try:
                _, v, ids = check_family(folder, family)
                gguf = make(folder, family, name="plain.gguf")
                assert len(tokenize(gguf, marker)) == 1, marker
                tid = tokenize(gguf, marker)[0]
                biased = make(folder, family, "--token-bias", f"{marker}=30", name="b.gguf")
                zero = make(folder, family, "--token-bias", f"{marker}=0", name="z.gguf")
                lb, lz = logits(folder, biased, ids, "b"), logits(folder, zero, ids, "z")
                assert (lb.argmax(axis=1) == tid).all(), (marker, lb.argmax(axis=1))
                rise = lb[:, tid] - lz[:, tid]
                assert (abs(rise - 30) < 4.5).all(), (marker, rise.min(), rise.max())
                others = np.delete(lb - lz, tid, axis=1)
                assert abs(others).max() < 1e-3, abs(others).max()
                print(f"  {family}: {marker!r} +{rise.min():.1f}..{rise.max():.1f} "
                      f"over {len(ids)} positions")
            except AssertionError as e:
                failures.append(f"{family}: {e}")
    assert not failures, "\n".join(failures)


def test_token_bias_refuses_an_unknown_text_and_a_bad_value():
    for spec, message in (("<nope>=3", "no token of text '<nope>'"),
                          ("<tool_call>=x", "is not a number"), ("=3", "is not TEXT=VALUE")):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_fixture_model"),
                            "--family", "hermes", "--templates", TEMPLATES, "--token-bias",
                            spec, "--out-gguf", os.devnull], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2 and message in r.stderr, (spec, r.returncode, r.stderr)


def test_a_missing_template_folder_is_named():
    with tempfile.TemporaryDirectory() as folder:
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_fixture_model"),
                            "--family", "hermes", "--templates", folder, "--out-gguf",
                            os.path.join(folder, "m.gguf")], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2, r.stderr
        assert "Qwen-Qwen2.5-7B-Instruct.jinja" in r.stderr, r.stderr


if __name__ == "__main__":
    sys.exit(opslib.run_tests(globals()))
