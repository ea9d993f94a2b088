// What a request asks its output to match, as the interfaces carry it (OpenAI's
// response_format and tools, Tandem's `grammar` and `regex` fields, the gRPC Constraint,
// tandem-chat's flags), before it is compiled (compiled_constraint.h).
#ifndef TANDEM_CORE_GRAMMAR_CONSTRAINT_SPEC_H_
#define TANDEM_CORE_GRAMMAR_CONSTRAINT_SPEC_H_

#include <string>

#include "absl/strings/string_view.h"

namespace tandem {

// Where the constrained part of the output starts for a reasoning model (<think>...</think>,
// DeepSeek-R1 distills, Qwen3); reasoning_prefix.h builds it.
enum class ReasoningPrefix {
  kNone,      // at the first generated token
  kInPrompt,  // the prompt opened the reasoning: free text without "</think>", then
              // "</think>", optional whitespace, then the constrained part
  kOptional,  // the output may open with "<think>" ... "</think>" and whitespace first
};

struct ConstraintSpec {
  enum class Kind {
    kNone,        // unconstrained
    kJsonObject,  // any JSON object (OpenAI's {"type": "json_object"}); `text` unused
    kJsonSchema,  // `text` is a JSON Schema document
    kGrammar,     // `text` is a GBNF grammar (llama.cpp's format; start rule `root`)
    kRegex,       // `text` is a regular expression the whole output must match
    kToolCalls,   // `text` is a tool-call spec (tool_call_spec.h: ToolCallSpecText)
  };
  Kind kind = Kind::kNone;
  std::string text;
  // Applies to every kind but kNone.
  ReasoningPrefix reasoning = ReasoningPrefix::kNone;

  bool empty() const { return kind == Kind::kNone; }
  // Equal specs compile to the same constraint (ConstraintCache's key).
  bool operator==(const ConstraintSpec& other) const {
    return kind == other.kind && text == other.text && reasoning == other.reasoning;
  }
};

// "json_object", "json_schema", "grammar", "regex", "tool_calls" or "none" (logs and metrics
// labels).
absl::string_view ConstraintKindName(ConstraintSpec::Kind kind);

// "none", "in_prompt" or "optional".
absl::string_view ReasoningPrefixName(ReasoningPrefix reasoning);

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_CONSTRAINT_SPEC_H_
