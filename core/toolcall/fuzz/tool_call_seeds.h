// Seeds for tool_call_parser_fuzzer: the first byte picks the family ('0' + i picks
// AllToolCallFormats()[i]), the second the mode ('r': the rest is the model's output; 'g': the
// rest drives a generator of well-formed output in the family's format, checked exactly).
#ifndef TANDEM_CORE_TOOLCALL_FUZZ_TOOL_CALL_SEEDS_H_
#define TANDEM_CORE_TOOLCALL_FUZZ_TOOL_CALL_SEEDS_H_

namespace tandem::fuzzing {

inline constexpr const char* kToolCallSeeds[] = {
    // llama3_json
    "0r{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
    "0r<|python_tag|>{\"type\": \"function\", \"name\": \"f\", \"parameters\": {}}; "
    "{\"name\": \"g\", \"arguments\": {\"a\": [1, 2.5e3, \"x\"]}}",
    "0r  The answer is 42.",
    "0gabcdefghijklmnopqrstuvwxyz0123456789",
    // hermes
    "1rLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
    "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"arguments\": {}, \"name\": \"g\"}\n"
    "</tool_call>",
    "1r<tool_call>{\"name\": \"f\", \"arguments\": {\"q\": \"\\\"<tool_call>\\\"\\u00e9\"}",
    "1g\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14",
    // mistral
    "2r[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": \"abc123XYZ\"}, "
    "{\"name\": \"g\", \"id\": \"zzzzzzzz9\", \"arguments\": {}}]",
    "2g\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5\xf4\xf3\xf2\xf1\xf0",
    // functionary_v3.1
    "3rSure.<function=get_weather>{\"city\": \"Paris\"}</function><function=t>{}</function>",
    "3g0123456789abcdef0123456789abcdef",
    // functionary_v3.2
    "4rall\nLet me check.>>>get_weather\n{\"city\": \"Paris\"}\n>>>time\n{}",
    "4rget_weather\n{\"city\": \"Paris\"}",
    "4g\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0\xd0\xe0\xf0",
    // firefunction_v2
    "5rSure functools[{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"name\": \"g\", "
    "\"arguments\": {}}]",
    "5gzyxwvutsrqponmlkjihgfedcba",
    // command_r
    "6r<|START_THINKING|>plan<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", "
    "\"tool_name\": \"f\", \"parameters\": {\"a\": 1}}\n]<|END_ACTION|>",
    "6rAction: ```json\n[\n    {\n        \"tool_name\": \"f\",\n        \"parameters\": {}\n"
    "    }\n]\n```",
    "6g\x07\x06\x05\x04\x03\x02\x01\x07\x06\x05\x04\x03\x02\x01",
    // deepseek_r1
    "7rI will call.\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n"
    "```json\n{\"a\": 1}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>g\n"
    "```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "7g\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff",
};

}  // namespace tandem::fuzzing

#endif  // TANDEM_CORE_TOOLCALL_FUZZ_TOOL_CALL_SEEDS_H_
