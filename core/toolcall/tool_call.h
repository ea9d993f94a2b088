// The values a tool-using request carries, as the interfaces hand them to core/ (OpenAI's
// `tools`, `tool_choice`, `parallel_tool_calls`; the gRPC request's equivalents) and as the
// parser hands calls back.
#ifndef TANDEM_CORE_TOOLCALL_TOOL_CALL_H_
#define TANDEM_CORE_TOOLCALL_TOOL_CALL_H_

#include <string>
#include <vector>

#include "core/base/json.h"

namespace tandem::toolcall {

// One function tool.
struct ToolFunction {
  std::string name;         // [A-Za-z0-9_.-]{1,64}, unique within a request
  std::string description;  // may be empty
  json::Value parameters;   // a JSON Schema for the arguments (an object schema); null: {}
};

// Which calls the output may or must make.
struct ToolChoice {
  enum class Mode {
    kNone,      // no call: the tools are only shown to the model; output unconstrained
    kAuto,      // text, or calls from the family's call marker on (a lazy constraint)
    kRequired,  // at least one call, nothing but calls
    kNamed,     // exactly a call of `function`
  };
  Mode mode = Mode::kAuto;
  std::string function;  // kNamed only
  bool parallel = true;  // parallel_tool_calls: several calls allowed (kAuto, kRequired)
};

// A call the model made, as OpenAI returns it.
struct ToolCall {
  std::string id;         // the model's own when the family writes one (Mistral), else empty
  std::string name;
  std::string arguments;  // the arguments as JSON text, as the model wrote them
};

}  // namespace tandem::toolcall

#endif  // TANDEM_CORE_TOOLCALL_TOOL_CALL_H_
