#include "services/coordinator/reply_syntax.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/grammar/tool_call_spec.h"
#include "core/toolcall/tool_call.h"

namespace tandem {
namespace {

using toolcall::ToolCallFormat;
using toolcall::ToolChoice;

absl::StatusOr<std::vector<toolcall::ToolFunction>> Functions(const v1::ChatConversation& chat) {
  std::vector<toolcall::ToolFunction> functions;
  for (int i = 0; i < chat.tools_size(); ++i) {
    const v1::Tool& tool = chat.tools(i);
    toolcall::ToolFunction f{tool.name(), "", json::Value(json::Object{})};
    if (!tool.parameters_json().empty()) {
      absl::StatusOr<json::Value> parameters = json::Parse(tool.parameters_json());
      if (!parameters.ok() || !parameters->is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tools[", i, "] ('", tool.name(), "'): parameters_json is not a JSON ",
                         "object", parameters.ok() ? "" : ": ", parameters.status().message()));
      }
      f.parameters = *std::move(parameters);
    }
    functions.push_back(std::move(f));
  }
  return functions;
}

absl::StatusOr<ToolChoice> Choice(const v1::GenerateRequest& request) {
  ToolChoice choice;
  choice.parallel = !request.has_parallel_tool_calls() || request.parallel_tool_calls();
  switch (request.tool_choice().mode()) {
    case v1::ToolChoice::MODE_NONE:
      choice.mode = ToolChoice::Mode::kNone;
      break;
    case v1::ToolChoice::MODE_UNSPECIFIED:
    case v1::ToolChoice::MODE_AUTO:
      choice.mode = ToolChoice::Mode::kAuto;
      break;
    case v1::ToolChoice::MODE_REQUIRED:
      choice.mode = ToolChoice::Mode::kRequired;
      break;
    case v1::ToolChoice::MODE_FUNCTION:
      choice.mode = ToolChoice::Mode::kNamed;
      choice.function = request.tool_choice().function();
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "tool_choice.mode ", static_cast<int>(request.tool_choice().mode()), " is not a mode"));
  }
  return choice;
}

absl::Status CheckChoice(const ToolChoice& choice, const v1::ChatConversation& chat) {
  if (choice.mode != ToolChoice::Mode::kNamed) return absl::OkStatus();
  for (const v1::Tool& tool : chat.tools()) {
    if (tool.name() == choice.function) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("tool_choice.function '", choice.function, "' is not one of the tools"));
}

absl::Status NoToolFormat() {
  std::vector<std::string> names;
  for (ToolCallFormat f : toolcall::AllToolCallFormats()) {
    names.emplace_back(toolcall::ToolCallFormatName(f));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "tools: the model's chat template has no tool-call format Tandem knows; start the "
      "coordinator with --tool-call-format (",
      absl::StrJoin(names, ", "), ") if the model was trained on one"));
}

// The tools part: the constraint the choice forces and the format the reply is parsed in.
absl::Status ApplyTools(const v1::GenerateRequest& request, const OutputSyntax& syntax,
                        ConstraintSpec* constraint, ReplyParsing* parsing) {
  const bool has_tools = request.has_chat() && request.chat().tools_size() > 0;
  if (!has_tools) {
    const v1::ToolChoice::Mode mode = request.tool_choice().mode();
    if (mode == v1::ToolChoice::MODE_REQUIRED || mode == v1::ToolChoice::MODE_FUNCTION) {
      return absl::InvalidArgumentError("tool_choice needs tools");
    }
    return absl::OkStatus();
  }
  if (syntax.tool_format == ToolCallFormat::kNone) return NoToolFormat();
  ASSIGN_OR_RETURN(ToolChoice choice, Choice(request));
  if (choice.mode == ToolChoice::Mode::kNone) return absl::OkStatus();
  RETURN_IF_ERROR(CheckChoice(choice, request.chat()));
  if (!constraint->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tools with tool_choice other than none cannot be combined with a ",
        ConstraintKindName(constraint->kind),
        " constraint (the calls are constrained to the tools' parameters)"));
  }
  ASSIGN_OR_RETURN(std::vector<toolcall::ToolFunction> functions, Functions(request.chat()));
  constraint->kind = ConstraintSpec::Kind::kToolCalls;
  constraint->text = ToolCallSpecText(syntax.tool_format, functions, choice);
  parsing->tool_format = syntax.tool_format;
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyReplySyntax(const v1::GenerateRequest& request, const OutputSyntax& syntax,
                              absl::string_view rendered_prompt, ConstraintSpec* constraint,
                              ReplyParsing* parsing) {
  if (request.constraint().has_tool_calls()) {
    return absl::InvalidArgumentError(
        "constraint.tool_calls is the coordinator's; send chat.tools and tool_choice instead");
  }
  if (request.constraint().start() != v1::CONSTRAINT_START_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        "constraint.start is the coordinator's: it follows the model's reasoning format");
  }
  RETURN_IF_ERROR(ApplyTools(request, syntax, constraint, parsing));
  if (syntax.reasoning == toolcall::ReasoningFormat::kThinkTags && request.has_chat()) {
    parsing->split_reasoning = true;
    parsing->starts_in_reasoning = toolcall::PromptOpensReasoning(rendered_prompt);
    if (!constraint->empty()) {
      constraint->reasoning =
          parsing->starts_in_reasoning ? ReasoningPrefix::kInPrompt : ReasoningPrefix::kOptional;
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem
