"""The tokenizers make_fixture_model writes: small vocabularies in each model family's own form,
with the family's special tokens, end-of-turn ids and chat template, as GGUF `tokenizer.*` keys
and as a Hugging Face folder's tokenizer.json, tokenizer_config.json and generation_config.json.

  llama2  SentencePiece (scores, byte fallback, dummy prefix); </s> ends a turn; [INST] format
  llama3  byte-level BPE, pre-tokenizer llama-bpe (ignore_merges); <|eot_id|>, <|eom_id|>
  qwen2   byte-level BPE, pre-tokenizer qwen2; <|im_end|> (ChatML)
  qwen3   as qwen2, EOS <|im_end|>, and the <think> </think> added tokens
  phi3    SentencePiece with Phi-3's chat tokens after the base vocabulary; <|end|>
  gemma   SentencePiece without a dummy prefix, <pad> <eos> <bos> <unk> first; <end_of_turn>

The tool-call families (issue 28) are byte-level BPE vocabularies with the special tokens of
the models whose tool-call syntax Tandem parses, and name the model's real chat template
(TOOL_TEMPLATES: a file of ../shared/models/chat_templates that make_fixture_model embeds at
generation time; it is never copied here):

  llama3.1             Llama 3.1's tokens; EOS <|eot_id|>, EOM <|eom_id|>, <|python_tag|>
  hermes               Qwen2.5-Instruct: ChatML, <tool_call> </tool_call> user-defined
  mistral-nemo         Mistral Nemo: <unk> <s> </s> [INST] [/INST] [AVAILABLE_TOOLS]
                       [/AVAILABLE_TOOLS] [TOOL_RESULTS] [/TOOL_RESULTS] [TOOL_CALLS] as
                       control ids 0..9 (pre-tokenizer qwen2 stands in for tekken's)
  functionary-v3.1     Llama 3.1's tokens, functionary's v3.1 template
  functionary-v3.2     Llama 3.1's tokens, functionary's v3.2 template
  firefunction-v2      Llama 3.0's tokens (no <|eom_id|>, <|python_tag|>); EOS <|eot_id|>
  command-r            Cohere's: <PAD> .. <EOP_TOKEN> ids 0..7, the turn tokens; EOS
                       <|END_OF_TURN_TOKEN|>; the command-r-plus tool_use template
  deepseek-r1          R1-Distill-Qwen's tokens and R1's tool tokens (<｜tool▁calls▁begin｜>
                       ...), llama.cpp's tool-capable R1 template (it opens with <think>)
  deepseek-r1-distill  R1-Distill-Qwen's tokens alone (the distills spell the tool markers
                       in plain text), the distill's own template

Added tokens have the type llama.cpp's converter gives them in a GGUF: control when
tokenizer_config.json calls them special or their text looks special (<|...|>, <｜...｜>),
else user-defined; the HF files keep each model's own "special" flag (hf_not_special).

Also turns a copied GGUF tokenizer (--vocab-from) into tokenizer.json: SentencePiece scores
become BPE merges (each merge ranked by the score of the piece it makes), byte-level merges are
copied. The chat templates are this project's own renderings of each family's format.
"""
import json
import os
import struct

VT_UINT32, VT_INT32, VT_FLOAT32, VT_BOOL, VT_STRING, VT_ARRAY = 4, 5, 6, 7, 8, 9
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6
SPACE = "\u2581"

WORDS = ["the", "a", "and", "to", "was", "once", "upon", "time", "there", "little", "hello",
         "hi", "tell", "me", "story", "more", "please", "you", "are", "helpful", "what", "is",
         "it", "of", "in", "user", "assistant", "system", "model", "girl", "named", "lily"]
CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'\n"
# More words for the tool-call families (their normal tokens spell JSON and identifiers from
# the 256 byte tokens; these make calls shorter).
TOOL_WORDS = ["name", "arguments", "parameters", "function", "get", "weather", "city",
              "location", "unit", "true", "false", "null", "json", "call", "tool"]

TEMPLATES = {
    "llama2": (
        "{%- for message in messages %}"
        "{%- if message['role'] == 'user' %}"
        "{{- bos_token + '[INST] ' + message['content'] | trim + ' [/INST]' }}"
        "{%- elif message['role'] == 'assistant' %}"
        "{{- ' ' + message['content'] | trim + ' ' + eos_token }}"
        "{%- endif %}{%- endfor %}"),
    "llama3": (
        "{{- bos_token }}"
        "{%- for message in messages %}"
        "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}"
        "{{- message['content'] | trim + '<|eot_id|>' }}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}"
        "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"),
    "chatml": (
        "{%- for message in messages %}"
        "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"),
    "phi3": (
        "{%- for message in messages %}"
        "{{- '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|assistant|>\\n' }}{%- else %}{{- eos_token }}"
        "{%- endif %}"),
    "gemma": (
        "{{- bos_token }}"
        "{%- for message in messages %}"
        "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
        "{{- '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}"),
}


class Vocab:
    """One tokenizer: model "llama" (SentencePiece, scores) or "gpt2" (byte-level, merges)."""

    def __init__(self, model):
        self.model = model
        self.tokens, self.types, self.scores, self.merges = [], [], [], []
        self.pre = None
        self.bos = self.eos = self.unk = self.pad = None
        self.eot = self.eom = None
        self.end_of_turn = None  # the family's end-of-turn id (written as eot only if eot is)
        self.add_bos, self.add_space_prefix = False, True
        self.chat_template = None
        self.stop_ids = []  # generation_config.json's eos_token_id list
        self.rstrip = set()  # added tokens that absorb the whitespace after them
        self.hf_not_special = set()  # control in the GGUF, "special": false in the HF files
        self.template_file = None  # a file of ../shared/models/chat_templates to embed

    def add(self, text, ttype=NORMAL, score=0.0):
        self.tokens.append(text)
        self.types.append(ttype)
        self.scores.append(score)
        return len(self.tokens) - 1

    def id(self, text):
        return self.tokens.index(text)


def word_ids(v):
    """The normal tokens that spell a word of two or more ASCII letters after an optional
    space."""
    to_byte = {c: b for b, c in byte_alphabet().items()}
    ids = []
    for i, t in enumerate(v.tokens):
        if v.model == "gpt2":
            t = "".join(chr(to_byte.get(c, 0)) for c in t)
        word = t.replace(SPACE, " ").lstrip(" ")
        if v.types[i] == NORMAL and len(word) >= 2 and word.isascii() and word.isalpha():
            ids.append(i)
    return ids


def byte_alphabet():
    """GPT-2's map of bytes to printable characters (the byte-level BPE token alphabet)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def spm_vocab(specials_first, specials_last, space_prefix):
    """Control tokens, 256 byte tokens, single characters and every prefix of the words."""
    v = Vocab("llama")
    for text, ttype in specials_first:
        v.add(text, ttype)
    for b in range(256):
        v.add(f"<0x{b:02X}>", BYTE)
    for c in SPACE + CHARS.replace("\n", ""):
        v.add(c, NORMAL, -1000.0)
    rank = 0
    for starts in ([SPACE, ""] if not space_prefix else [SPACE]):
        for word in WORDS:
            piece = starts + word
            for k in range(2, len(piece) + 1):
                if piece[:k] not in v.tokens:
                    rank += 1
                    v.add(piece[:k], NORMAL, -float(k) - rank * 1e-3)
    for text, ttype in specials_last:
        v.add(text, ttype)
    v.add_space_prefix = space_prefix
    return v


def looks_special(text):
    """llama.cpp's convert_hf_to_gguf makes an added token that tokenizer_config.json does not
    call special a control token all the same when its text looks like one."""
    return ((text.startswith("<|") and text.endswith("|>")) or
            (text.startswith("<\uff5c") and text.endswith("\uff5c>")))


def added(text, special):
    """An added token as (text, GGUF type, the HF "special" flag)."""
    return (text, CONTROL if special or looks_special(text) else USER_DEFINED, special)


def bpe_vocab(pre, specials, leading=(), words=WORDS):
    """`leading` tokens, the 256 byte characters, "\\n\\n", merges building every word left
    to right and then the word after a space, then the special tokens: (text, type) or (text,
    type, HF special flag)."""
    alphabet = byte_alphabet()
    v = Vocab("gpt2")
    v.pre = pre
    for entry in leading:
        v.add(entry[0], entry[1])
    for b in range(256):
        v.add(alphabet[b])
    space, newline = alphabet[ord(" ")], alphabet[ord("\n")]
    v.merges.append((newline, newline))
    v.add(newline + newline)
    for word in words:
        for k in range(2, len(word) + 1):
            if word[:k] not in v.tokens:
                v.merges.append((word[:k - 1], word[k - 1]))
                v.add(word[:k])
        v.merges.append((space, word))
        v.add(space + word)
    for entry in specials:
        v.add(entry[0], entry[1])
    for entry in list(leading) + list(specials):
        if len(entry) > 2 and not entry[2] and entry[1] == CONTROL:
            v.hf_not_special.add(v.id(entry[0]))
    return v


# ---------------------------------------------------------------------------------------------
# The tool-call families (issue 28). The token lists, their order, the "special" flags and the
# EOS / stop ids are those of each model's tokenizer_config.json and generation_config.json
# (added tokens the fixtures do not need, e.g. reserved or vision ones, are left out).

LLAMA31_TOKENS = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                  "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                  "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                  "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
# Llama 3.0 (firefunction-v2's base) had reserved tokens where 3.1 has these three.
LLAMA30_RENAMED = {"<|finetune_right_pad_id|>": "<|reserved_special_token_2|>",
                   "<|reserved_special_token_2|>": "<|reserved_special_token_3|>",
                   "<|eom_id|>": "<|reserved_special_token_4|>",
                   "<|python_tag|>": "<|reserved_special_token_5|>"}
DEEPSEEK_R1_DISTILL_TOKENS = [  # R1-Distill-Qwen's renames of Qwen2.5's added tokens
    ("<\uff5cend\u2581of\u2581sentence\uff5c>", True), ("<\uff5cUser\uff5c>", False),
    ("<\uff5cAssistant\uff5c>", False), ("<\uff5cbegin\u2581of\u2581sentence\uff5c>", True),
    ("<|EOT|>", False), ("<think>", False), ("</think>", False),
    ("<tool_call>", False), ("</tool_call>", False)]
DEEPSEEK_R1_TOOL_TOKENS = [  # DeepSeek-R1's (V3's) tool tokens, added tokens not special
    "<\uff5ctool\u2581calls\u2581begin\uff5c>", "<\uff5ctool\u2581calls\u2581end\uff5c>",
    "<\uff5ctool\u2581call\u2581begin\uff5c>", "<\uff5ctool\u2581call\u2581end\uff5c>",
    "<\uff5ctool\u2581outputs\u2581begin\uff5c>", "<\uff5ctool\u2581outputs\u2581end\uff5c>",
    "<\uff5ctool\u2581output\u2581begin\uff5c>", "<\uff5ctool\u2581output\u2581end\uff5c>",
    "<\uff5ctool\u2581sep\uff5c>"]
MISTRAL_CONTROL = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]",
                   "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]"]
COHERE_CONTROL = ["<PAD>", "<UNK>", "<CLS>", "<SEP>", "<MASK_TOKEN>", "<BOS_TOKEN>",
                  "<EOS_TOKEN>", "<EOP_TOKEN>"]
COHERE_TURN_TOKENS = [("<|START_OF_TURN_TOKEN|>", False), ("<|END_OF_TURN_TOKEN|>", True),
                      ("<|YES_TOKEN|>", False), ("<|NO_TOKEN|>", False),
                      ("<|GOOD_TOKEN|>", False), ("<|BAD_TOKEN|>", False),
                      ("<|USER_TOKEN|>", False), ("<|CHATBOT_TOKEN|>", False),
                      ("<|SYSTEM_TOKEN|>", False)]
TOOL_TEMPLATES = {
    "llama3.1": "meta-llama-Llama-3.1-8B-Instruct.jinja",
    "hermes": "Qwen-Qwen2.5-7B-Instruct.jinja",
    "mistral-nemo": "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "functionary-v3.1": "meetkai-functionary-medium-v3.1.jinja",
    "functionary-v3.2": "meetkai-functionary-medium-v3.2.jinja",
    "firefunction-v2": "fireworks-ai-llama-3-firefunction-v2.jinja",
    "command-r": "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
    "deepseek-r1": "llama-cpp-deepseek-r1.jinja",
    "deepseek-r1-distill": "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
}
BASE_FAMILIES = ["llama2", "llama3", "qwen2", "qwen3", "phi3", "gemma"]
FAMILIES = BASE_FAMILIES + list(TOOL_TEMPLATES)


def llama3_tool_vocab(renamed):
    """Llama 3's tokens (all special); EOS <|eot_id|> as the Instruct models name it."""
    names = [renamed.get(n, n) for n in LLAMA31_TOKENS]
    v = bpe_vocab("llama-bpe", [(n, CONTROL, True) for n in names],
                  words=WORDS + TOOL_WORDS)
    v.bos, v.add_bos = v.id("<|begin_of_text|>"), True
    v.eos = v.eot = v.end_of_turn = v.id("<|eot_id|>")
    if "<|eom_id|>" in v.tokens:
        v.eom = v.id("<|eom_id|>")
    v.stop_ids = [i for i in (v.id("<|end_of_text|>"), v.eom, v.eot) if i is not None]
    return v


def deepseek_r1_vocab(tool_tokens):
    specials = [added(t, s) for t, s in DEEPSEEK_R1_DISTILL_TOKENS]
    specials += [added(t, False) for t in tool_tokens]
    v = bpe_vocab("deepseek-r1-qwen", specials, words=WORDS + TOOL_WORDS)
    v.bos = v.id("<\uff5cbegin\u2581of\u2581sentence\uff5c>")
    v.eos = v.pad = v.end_of_turn = v.id("<\uff5cend\u2581of\u2581sentence\uff5c>")
    v.add_bos, v.stop_ids = True, [v.eos]
    return v


def tool_family_vocab(family):
    if family in ("llama3.1", "functionary-v3.1", "functionary-v3.2"):
        v = llama3_tool_vocab({})
    elif family == "firefunction-v2":
        v = llama3_tool_vocab(LLAMA30_RENAMED)
    elif family == "hermes":
        specials = [added("<|endoftext|>", True), added("<|im_start|>", True),
                    added("<|im_end|>", True), added("<tool_call>", False),
                    added("</tool_call>", False)]
        v = bpe_vocab("qwen2", specials, words=WORDS + TOOL_WORDS)
        v.pad = v.id("<|endoftext|>")
        v.eos = v.end_of_turn = v.id("<|im_end|>")
        v.stop_ids = [v.eos, v.pad]
    elif family == "mistral-nemo":
        # Tekken's pre-tokenizer is not one Tandem implements; qwen2's also splits digits.
        v = bpe_vocab("qwen2", [], leading=[(t, CONTROL, True) for t in MISTRAL_CONTROL],
                      words=WORDS + TOOL_WORDS)
        v.unk, v.bos, v.eos, v.add_bos = 0, 1, 2, True
        v.end_of_turn, v.stop_ids = v.eos, [v.eos]
    elif family == "command-r":
        v = bpe_vocab("command-r", [added(t, s) for t, s in COHERE_TURN_TOKENS],
                      leading=[(t, CONTROL, True) for t in COHERE_CONTROL],
                      words=WORDS + TOOL_WORDS)
        v.pad, v.bos, v.add_bos = v.id("<PAD>"), v.id("<BOS_TOKEN>"), True
        v.eos = v.end_of_turn = v.id("<|END_OF_TURN_TOKEN|>")
        v.stop_ids = [v.eos]
    elif family == "deepseek-r1":
        v = deepseek_r1_vocab(DEEPSEEK_R1_TOOL_TOKENS)
    else:  # deepseek-r1-distill
        v = deepseek_r1_vocab([])
    v.template_file = TOOL_TEMPLATES[family]
    return v


def family_vocab(family):
    """The vocabulary of `family` (FAMILIES). A tool-call family's template is left for the
    caller to read: v.template_file names it."""
    if family in TOOL_TEMPLATES:
        return tool_family_vocab(family)
    if family == "llama2":
        v = spm_vocab([("<unk>", UNKNOWN), ("<s>", CONTROL), ("</s>", CONTROL)], [], True)
        v.bos, v.eos, v.unk, v.add_bos, v.end_of_turn = 1, 2, 0, True, 2
        v.chat_template, v.stop_ids = TEMPLATES["llama2"], [2]
    elif family == "llama3":
        names = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                 "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                 "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                 "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
        v = bpe_vocab("llama-bpe", [(n, CONTROL) for n in names])
        v.bos, v.eos, v.add_bos = v.id("<|begin_of_text|>"), v.id("<|end_of_text|>"), True
        v.eot, v.eom = v.id("<|eot_id|>"), v.id("<|eom_id|>")
        v.end_of_turn = v.eot
        v.chat_template = TEMPLATES["llama3"]
        v.stop_ids = [v.eos, v.eom, v.eot]
    elif family in ("qwen2", "qwen3"):
        specials = [("<|endoftext|>", CONTROL), ("<|im_start|>", CONTROL), ("<|im_end|>", CONTROL)]
        if family == "qwen3":
            specials += [("<think>", USER_DEFINED), ("</think>", USER_DEFINED)]
        v = bpe_vocab("qwen2", specials)
        v.pad = v.id("<|endoftext|>")
        # Qwen3 names <|im_end|> as EOS; Qwen2 files name none: its text makes it a stop.
        v.eos = v.id("<|im_end|>") if family == "qwen3" else v.id("<|endoftext|>")
        v.end_of_turn = v.id("<|im_end|>")
        v.chat_template = TEMPLATES["chatml"]
        v.stop_ids = [v.id("<|im_end|>"), v.id("<|endoftext|>")]
    elif family == "phi3":
        chat = ["<|endoftext|>", "<|assistant|>", "<|placeholder1|>", "<|placeholder2|>",
                "<|placeholder3|>", "<|placeholder4|>", "<|system|>", "<|end|>",
                "<|placeholder5|>", "<|placeholder6|>", "<|user|>"]
        v = spm_vocab([("<unk>", UNKNOWN), ("<s>", CONTROL), ("</s>", CONTROL)],
                      [(n, CONTROL) for n in chat], True)
        v.bos, v.unk, v.eos, v.eot = 1, 0, v.id("<|endoftext|>"), v.id("<|end|>")
        v.end_of_turn = v.eot
        v.chat_template = TEMPLATES["phi3"]
        v.stop_ids = [v.eos, v.eot]
        # Phi-3's chat tokens (and </s>) swallow the newline after them.
        v.rstrip = {i for i, t in enumerate(v.tokens)
                    if v.types[i] == CONTROL and t not in ("<s>", "<|endoftext|>")}
    elif family == "gemma":
        v = spm_vocab([("<pad>", CONTROL), ("<eos>", CONTROL), ("<bos>", CONTROL),
                       ("<unk>", UNKNOWN), ("<mask>", USER_DEFINED),
                       ("<start_of_turn>", CONTROL), ("<end_of_turn>", CONTROL),
                       ("\n", NORMAL)], [], False)
        v.pad, v.eos, v.bos, v.unk, v.add_bos = 0, 1, 2, 3, True
        v.eot = v.end_of_turn = v.id("<end_of_turn>")
        v.chat_template = TEMPLATES["gemma"]
        v.stop_ids = [v.eos, v.eot]
    else:
        raise ValueError(f"unknown tokenizer family '{family}'")
    return v


# ---------------------------------------------------------------------------------------------
# GGUF keys.

def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_array(etype, items):
    return struct.pack("<IQ", etype, len(items)) + b"".join(items)


def gguf_kvs(v):
    """The tokenizer.* keys of `v`, as (key, value type, raw value bytes)."""
    def u32(key, value):
        return (key, VT_UINT32, struct.pack("<I", value))
    kvs = [("tokenizer.ggml.model", VT_STRING, gguf_string(v.model))]
    if v.pre:
        kvs.append(("tokenizer.ggml.pre", VT_STRING, gguf_string(v.pre)))
    kvs.append(("tokenizer.ggml.tokens", VT_ARRAY,
                gguf_array(VT_STRING, [gguf_string(t) for t in v.tokens])))
    if v.model == "llama":
        kvs.append(("tokenizer.ggml.scores", VT_ARRAY,
                    gguf_array(VT_FLOAT32, [struct.pack("<f", s) for s in v.scores])))
    kvs.append(("tokenizer.ggml.token_type", VT_ARRAY,
                gguf_array(VT_INT32, [struct.pack("<i", t) for t in v.types])))
    if v.model == "gpt2":
        kvs.append(("tokenizer.ggml.merges", VT_ARRAY,
                    gguf_array(VT_STRING, [gguf_string(f"{a} {b}") for a, b in v.merges])))
    for key, value in (("bos", v.bos), ("eos", v.eos), ("unknown", v.unk), ("padding", v.pad),
                       ("eot", v.eot), ("eom", v.eom)):
        if value is not None:
            kvs.append(u32(f"tokenizer.ggml.{key}_token_id", value))
    kvs.append(("tokenizer.ggml.add_bos_token", VT_BOOL, struct.pack("<?", v.add_bos)))
    if v.model == "llama":
        kvs.append(("tokenizer.ggml.add_space_prefix", VT_BOOL,
                    struct.pack("<?", v.add_space_prefix)))
    if v.chat_template:
        kvs.append(("tokenizer.chat_template", VT_STRING, gguf_string(v.chat_template)))
    return kvs


class _Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        value = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value[0]

    def string(self):
        n = self.take("<Q")
        self.pos += n
        return self.data[self.pos - n:self.pos].decode("utf-8")

    def value(self, vtype):
        scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                  10: "<Q", 11: "<q", 12: "<d"}
        if vtype == VT_STRING:
            return self.string()
        if vtype == VT_ARRAY:
            etype, count = self.take("<I"), self.take("<Q")
            return [self.value(etype) for _ in range(count)]
        return self.take(scalar[vtype])


def vocab_from_kvs(kvs):
    """A Vocab from copied tokenizer.* keys (make_fixture_model --vocab-from)."""
    keys = {key: _Reader(raw).value(vtype) for key, vtype, raw in kvs}
    model = keys["tokenizer.ggml.model"]
    if model not in ("llama", "gpt2"):
        raise ValueError(f"tokenizer model '{model}' has no tokenizer.json form here")
    v = Vocab(model)
    v.tokens = list(keys["tokenizer.ggml.tokens"])
    v.types = list(keys.get("tokenizer.ggml.token_type", [NORMAL] * len(v.tokens)))
    v.scores = list(keys.get("tokenizer.ggml.scores", [0.0] * len(v.tokens)))
    # The separator is the first space after the first character (a part may be a space).
    v.merges = [(m[:m.find(" ", 1)], m[m.find(" ", 1) + 1:])
                for m in keys.get("tokenizer.ggml.merges", [])]
    v.pre = keys.get("tokenizer.ggml.pre")
    default_bos, default_eos, default_unk = (1, 2, 0) if model == "llama" else (None,) * 3
    v.bos = keys.get("tokenizer.ggml.bos_token_id", default_bos)
    v.eos = keys.get("tokenizer.ggml.eos_token_id", default_eos)
    v.unk = keys.get("tokenizer.ggml.unknown_token_id", default_unk)
    v.pad = keys.get("tokenizer.ggml.padding_token_id")
    v.eot = keys.get("tokenizer.ggml.eot_token_id")
    v.eom = keys.get("tokenizer.ggml.eom_token_id")
    v.add_bos = keys.get("tokenizer.ggml.add_bos_token", model == "llama")
    v.add_space_prefix = keys.get("tokenizer.ggml.add_space_prefix", True)
    v.chat_template = keys.get("tokenizer.chat_template")
    for name in ("bos", "eos", "unk", "pad", "eot", "eom"):  # 0xFFFFFFFF or -1: none
        if getattr(v, name) is not None and not 0 <= getattr(v, name) < len(v.tokens):
            setattr(v, name, None)
    v.stop_ids = [i for i in (v.eos, v.eot, v.eom) if i is not None]
    v.end_of_turn = v.eot if v.eot is not None else v.eos
    return v


# ---------------------------------------------------------------------------------------------
# Hugging Face files.

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def spm_merges(v):
    """BPE merges equivalent to SentencePiece scores: every split of a normal piece into two
    tokens, ranked by the piece's score (highest first), then by the two ids."""
    ids = {t: i for i, t in enumerate(v.tokens)}
    merges = []
    for i, piece in enumerate(v.tokens):
        if v.types[i] != NORMAL or len(piece) < 2:
            continue
        for k in range(1, len(piece)):
            left, right = piece[:k], piece[k:]
            if left in ids and right in ids:
                merges.append((-v.scores[i], ids[left], ids[right], left, right))
    return [[m[3], m[4]] for m in sorted(merges)]


def byte_level_pre_tokenizer(pre):
    def split(regex):
        return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated",
                "invert": False}
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": False}
    if pre in ("llama-bpe", "llama3", "llama-v3"):
        steps = [split(LLAMA3_REGEX)]
    elif pre in ("qwen2", "qwen2.5", "deepseek-r1-qwen"):
        steps = [split(QWEN2_REGEX)]
    elif pre in (None, "gpt-2", "default"):
        steps, byte_level = [], dict(byte_level, use_regex=True)
    elif pre in ("starcoder", "smollm", "command-r"):
        steps = [{"type": "Digits", "individual_digits": True}]
        byte_level = dict(byte_level, use_regex=True)
    else:
        raise ValueError(f"pre-tokenizer '{pre}' has no tokenizer.json form here")
    return {"type": "Sequence", "pretokenizers": steps + [byte_level]}


def bos_template(v):
    bos = v.tokens[v.bos]
    return {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [v.bos], "tokens": [bos]}}}


def tokenizer_json(v):
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False,
              "rstrip": i in v.rstrip,
              "normalized": False,
              "special": v.types[i] in (CONTROL, UNKNOWN) and i not in v.hf_not_special}
             for i, t in enumerate(v.tokens) if v.types[i] in (CONTROL, UNKNOWN, USER_DEFINED)]
    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added}
    if v.model == "llama":
        replace = {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}
        doc["normalizer"] = ({"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE}, replace]} if v.add_space_prefix else replace)
        # Gemma's converter writes a Split on " " that the Replace has made a no-op.
        doc["pre_tokenizer"] = None if v.add_space_prefix else {
            "type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious",
            "invert": False}
        doc["post_processor"] = bos_template(v) if v.add_bos else None
        decoders = [{"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
                    {"type": "ByteFallback"}, {"type": "Fuse"}]
        if v.add_space_prefix:
            decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
        doc["decoder"] = {"type": "Sequence", "decoders": decoders}
        model = {"type": "BPE", "dropout": None, "unk_token": v.tokens[v.unk] if v.unk is not None
                 else None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
                 "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                 "vocab": {t: i for i, t in enumerate(v.tokens)}, "merges": spm_merges(v)}
    else:
        doc["normalizer"] = None if v.pre in ("llama-bpe", "llama3") else {"type": "NFC"}
        doc["pre_tokenizer"] = byte_level_pre_tokenizer(v.pre)
        byte_post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                     "use_regex": True}
        # Llama 3 chains ByteLevel and the template that adds <|begin_of_text|>.
        doc["post_processor"] = ({"type": "Sequence", "processors": [byte_post, bos_template(v)]}
                                 if v.add_bos else byte_post)
        doc["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                          "use_regex": True}
        model = {"type": "BPE", "dropout": None, "unk_token": None,
                 "continuing_subword_prefix": None, "end_of_word_suffix": None,
                 "fuse_unk": False, "byte_fallback": False,
                 "ignore_merges": v.pre in ("llama-bpe", "llama3", "llama-v3"),
                 "vocab": {t: i for i, t in enumerate(v.tokens) if v.types[i] == NORMAL},
                 "merges": [[a, b] for a, b in v.merges]}
    doc["model"] = model
    return doc


def write_hf_tokenizer(folder, v, context):
    """tokenizer.json, tokenizer_config.json (with the chat template) and
    generation_config.json (the end-of-turn ids) into `folder`."""
    def text(i):
        return v.tokens[i] if i is not None else None
    config = {"add_eos_token": False, "bos_token": text(v.bos), "eos_token": text(v.eos),
              "pad_token": text(v.pad), "unk_token": text(v.unk), "clean_up_tokenization_spaces":
              False, "model_max_length": context,
              "tokenizer_class": "LlamaTokenizerFast" if v.model == "llama"
              else "PreTrainedTokenizerFast",
              "added_tokens_decoder": {str(i): {"content": t, "special": v.types[i] != USER_DEFINED
                                                and i not in v.hf_not_special}
                                       for i, t in enumerate(v.tokens)
                                       if v.types[i] in (CONTROL, UNKNOWN, USER_DEFINED)}}
    if v.model == "llama" or not v.add_bos:  # Llama 3's BOS comes from its post-processor
        config["add_bos_token"] = bool(v.add_bos)
    if v.chat_template:
        config["chat_template"] = v.chat_template
    generation = {"_from_model_config": False, "bos_token_id": v.bos,
                  "eos_token_id": v.stop_ids if len(v.stop_ids) != 1 else v.stop_ids[0]}
    for name, doc in (("tokenizer.json", tokenizer_json(v)),
                      ("tokenizer_config.json", config),
                      ("generation_config.json", generation)):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
