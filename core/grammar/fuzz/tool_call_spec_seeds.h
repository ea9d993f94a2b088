// Seeds for tool_call_spec_fuzzer: a spec per family and choice, and refusals. Used by the
// seeder (make_tool_call_spec_seeds) and the replay test.
#ifndef TANDEM_CORE_GRAMMAR_FUZZ_TOOL_CALL_SPEC_SEEDS_H_
#define TANDEM_CORE_GRAMMAR_FUZZ_TOOL_CALL_SPEC_SEEDS_H_

namespace tandem::fuzzing {

inline constexpr const char* kToolCallSpecSeeds[] = {
    R"({"format":"hermes","tools":[{"name":"get_weather","parameters":{"type":"object",)"
    R"("properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}],)"
    R"("choice":"required","parallel":true})",
    R"({"format":"llama3_json","tools":[{"name":"f","parameters":null},{"name":"g.h-1",)"
    R"("parameters":{}}],"choice":"auto","parallel":false})",
    R"({"format":"mistral","tools":[{"name":"f","parameters":{"type":"object","properties":)"
    R"({"a":{"enum":[1,"x",null]}}}}],"choice":{"function":"f"},"parallel":true})",
    R"({"format":"functionary_v3.1","tools":[{"name":"f","parameters":{}}],"choice":"auto",)"
    R"("parallel":true})",
    R"({"format":"functionary_v3.2","tools":[{"name":"f","parameters":{"type":"object",)"
    R"("properties":{"n":{"type":"number","minimum":0}}}}],"choice":"auto","parallel":true})",
    R"({"format":"firefunction_v2","tools":[{"name":"f","parameters":{"$defs":{"x":)"
    R"({"type":"boolean"}},"type":"object","properties":{"b":{"$ref":"#/$defs/x"}}}}],)"
    R"("choice":"required","parallel":false})",
    R"({"format":"command_r","tools":[{"name":"f","parameters":{}},{"name":"g","parameters":)"
    R"({"type":"object","properties":{"s":{"type":"string","maxLength":3}}}}],"choice":"auto",)"
    R"("parallel":true})",
    R"({"format":"deepseek_r1","tools":[{"name":"f","parameters":{"type":"object"}}],)"
    R"("choice":"required","parallel":true})",
    R"({"format":"hermes","tools":[{"name":"f","parameters":{"not":{}}}],"choice":"required",)"
    R"("parallel":true})",
    R"({"format":"none","tools":[],"choice":"none","parallel":true})",
    R"({"format":"hermes","tools":[{"name":"f","parameters":{}}],"choice":"none","parallel":1})",
    R"({"format":"hermes","tools":[{"name":"a b","parameters":{}}],"choice":{"function":"a b"},)"
    R"("parallel":true})",
};

}  // namespace tandem::fuzzing

#endif  // TANDEM_CORE_GRAMMAR_FUZZ_TOOL_CALL_SPEC_SEEDS_H_
