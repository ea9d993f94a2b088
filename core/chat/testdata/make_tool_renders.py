#!/usr/bin/env python3
"""Writes tool_renders.json: the shared tool-use chat templates rendered over a three-turn tool
conversation by Jinja2 itself, the way transformers' apply_chat_template renders (sandboxed,
trim_blocks, lstrip_blocks, loop controls, tojson with ensure_ascii=False, raise_exception,
strftime_now at 26 Jul 2024). tool_messages_test.cc holds Tandem's renders to them byte for
byte.

Each template is rendered over the conversation in the shape its family wants (the shape
ProbeToolCallShape must find): arguments as an object or as JSON text, a null content kept or
made "".

  make_tool_renders.py SHARED_DIR > tool_renders.json   (needs jinja2 >= 3.1)
"""
import datetime
import json
import os
import sys
import types

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

# template file -> (object_arguments, empty_content)
SHAPES = {
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": (True, True),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": (True, False),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": (False, False),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": (False, False),
    "Qwen-Qwen2.5-7B-Instruct.jinja": (True, False),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": (False, False),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": (False, False),
    "fireworks-ai-llama-3-firefunction-v2.jinja": (False, False),
    "llama-cpp-deepseek-r1.jinja": (False, False),
    "meetkai-functionary-medium-v3.1.jinja": (False, False),
    "meetkai-functionary-medium-v3.2.jinja": (False, False),
    "meta-llama-Llama-3.1-8B-Instruct.jinja": (True, False),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": (True, False),
    "meta-llama-Llama-3.3-70B-Instruct.jinja": (True, False),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": (True, False),
}

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object",
                   "properties": {"city": {"type": "string", "description": "The city"}},
                   "required": ["city"]}}}]

ARGUMENTS = '{"city": "Paris"}'


def conversation(object_arguments, empty_content):
    arguments = json.loads(ARGUMENTS) if object_arguments else ARGUMENTS
    return [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "" if empty_content else None,
         "tool_calls": [{"id": "call12345", "type": "function",
                         "function": {"name": "get_weather", "arguments": arguments}}]},
        {"role": "tool", "content": "sunny, 21 C", "tool_call_id": "call12345"},
    ]


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])

    def tojson(value, indent=None, separators=None, sort_keys=False):
        if isinstance(value, types.GeneratorType):  # `tools | map(...) | tojson` (a list here)
            value = list(value)
        return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda f: datetime.datetime(2024, 7, 26).strftime(f)
    return env


def main():
    folder = os.path.join(sys.argv[1], "models", "chat_templates")
    env = environment()
    renders = {}
    for name, (object_arguments, empty_content) in SHAPES.items():
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            template = env.from_string(f.read())
        renders[name] = template.render(
            messages=conversation(object_arguments, empty_content), add_generation_prompt=True,
            bos_token="<s>", eos_token="</s>", tools=TOOLS,
            functions=json.dumps(TOOLS, ensure_ascii=False, indent=2),
            datetime="Jul 26 2024 00:00:00 GMT")
    json.dump({"_how": __doc__.strip().splitlines()[0:4], "renders": renders}, sys.stdout,
              ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
