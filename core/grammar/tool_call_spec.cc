#include "core/grammar/tool_call_spec.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"

namespace tandem {
namespace {

using toolcall::ToolCallFormat;
using toolcall::ToolChoice;
using toolcall::ToolFunction;

absl::Status SpecError(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("tool-call spec: ", what));
}

json::Value ChoiceValue(const ToolChoice& choice) {
  switch (choice.mode) {
    case ToolChoice::Mode::kNone:
      return "none";
    case ToolChoice::Mode::kAuto:
      return "auto";
    case ToolChoice::Mode::kRequired:
      return "required";
    case ToolChoice::Mode::kNamed:
      return json::Object{{"function", choice.function}};
  }
  return "none";
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

// The members of `object` must be exactly `names`.
absl::Status CheckMembers(const json::Object& object, std::initializer_list<const char*> names,
                          absl::string_view where) {
  for (const char* name : names) {
    if (!object.Contains(name)) return SpecError(absl::StrCat(where, ": '", name, "' is missing"));
  }
  for (const auto& [key, value] : object) {
    bool known = false;
    for (const char* name : names) known = known || key == name;
    if (!known) return SpecError(absl::StrCat(where, ": unknown member '", key, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ToolFunction>> ParseTools(const json::Value& value) {
  if (!value.is_array()) return SpecError("'tools' is not an array");
  const json::Array& array = value.as_array();
  if (array.empty()) return SpecError("'tools' is empty");
  if (array.size() > kMaxToolCallTools) {
    return SpecError(absl::StrCat("'tools' has ", array.size(), " functions, past the limit of ",
                                  kMaxToolCallTools));
  }
  std::vector<ToolFunction> tools;
  absl::flat_hash_set<std::string> names;
  for (size_t i = 0; i < array.size(); ++i) {
    const std::string where = absl::StrCat("tools[", i, "]");
    if (!array[i].is_object()) return SpecError(absl::StrCat(where, " is not an object"));
    const json::Object& tool = array[i].as_object();
    RETURN_IF_ERROR(CheckMembers(tool, {"name", "parameters"}, where));
    if (!tool.Find("name")->is_string())
      return SpecError(absl::StrCat(where, ".name is not a string"));
    ToolFunction function;
    function.name = tool.Find("name")->as_string();
    if (absl::Status valid = CheckToolName(function.name); !valid.ok()) {
      return SpecError(absl::StrCat(where, ": ", valid.message()));
    }
    if (!names.insert(function.name).second) {
      return SpecError(absl::StrCat(where, ": function '", function.name, "' is listed twice"));
    }
    function.parameters = *tool.Find("parameters");
    tools.push_back(std::move(function));
  }
  return tools;
}

absl::StatusOr<ToolChoice> ParseChoice(const json::Value& value,
                                       const std::vector<ToolFunction>& tools) {
  ToolChoice choice;
  if (value.is_string()) {
    const std::string& mode = value.as_string();
    if (mode == "none") {
      choice.mode = ToolChoice::Mode::kNone;
    } else if (mode == "auto") {
      choice.mode = ToolChoice::Mode::kAuto;
    } else if (mode == "required") {
      choice.mode = ToolChoice::Mode::kRequired;
    } else {
      return SpecError(absl::StrCat("'choice' '", mode, "' is not none, auto or required"));
    }
    return choice;
  }
  if (!value.is_object()) return SpecError("'choice' is neither a string nor an object");
  RETURN_IF_ERROR(CheckMembers(value.as_object(), {"function"}, "choice"));
  const json::Value& function = *value.as_object().Find("function");
  if (!function.is_string()) return SpecError("choice.function is not a string");
  choice.mode = ToolChoice::Mode::kNamed;
  choice.function = function.as_string();
  for (const ToolFunction& tool : tools) {
    if (tool.name == choice.function) return choice;
  }
  return SpecError(
      absl::StrCat("choice names function '", choice.function, "', which is not in 'tools'"));
}

}  // namespace

absl::Status CheckToolName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxToolNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a function name has 1 to ", kMaxToolNameBytes, " bytes, not ", name.size()));
  }
  for (char c : name) {
    if (!IsNameChar(c)) {
      return absl::InvalidArgumentError(
          absl::StrCat("function name '", name, "' has a character outside [A-Za-z0-9_.-]"));
    }
  }
  return absl::OkStatus();
}

std::string ToolCallSpecText(ToolCallFormat format, const std::vector<ToolFunction>& tools,
                             const ToolChoice& choice) {
  json::Array tool_values;
  for (const ToolFunction& tool : tools) {
    tool_values.push_back(json::Object{{"name", tool.name}, {"parameters", tool.parameters}});
  }
  const json::Object spec{{"format", toolcall::ToolCallFormatName(format)},
                          {"tools", std::move(tool_values)},
                          {"choice", ChoiceValue(choice)},
                          {"parallel", choice.parallel}};
  json::SerializeOptions compact;
  compact.item_separator = ",";
  compact.key_separator = ":";
  return json::Serialize(spec, compact);
}

absl::StatusOr<ToolCallSpec> ParseToolCallSpecText(absl::string_view text) {
  if (text.size() > kMaxToolCallSpecBytes) {
    return SpecError(absl::StrCat("the text is ", text.size(), " bytes, past the limit of ",
                                  kMaxToolCallSpecBytes));
  }
  absl::StatusOr<json::Value> parsed = json::Parse(text);
  if (!parsed.ok()) return SpecError(absl::StrCat("not JSON: ", parsed.status().message()));
  if (!parsed->is_object()) return SpecError("not a JSON object");
  const json::Object& object = parsed->as_object();
  RETURN_IF_ERROR(CheckMembers(object, {"format", "tools", "choice", "parallel"}, "the spec"));
  ToolCallSpec spec;
  const json::Value& format = *object.Find("format");
  if (!format.is_string()) return SpecError("'format' is not a string");
  absl::StatusOr<ToolCallFormat> parsed_format =
      toolcall::ParseToolCallFormatName(format.as_string());
  if (!parsed_format.ok()) return SpecError(parsed_format.status().message());
  if (*parsed_format == ToolCallFormat::kNone) {
    return SpecError("format 'none' has no tool-call syntax");
  }
  spec.format = *parsed_format;
  ASSIGN_OR_RETURN(spec.tools, ParseTools(*object.Find("tools")));
  ASSIGN_OR_RETURN(spec.choice, ParseChoice(*object.Find("choice"), spec.tools));
  const json::Value& parallel = *object.Find("parallel");
  if (!parallel.is_bool()) return SpecError("'parallel' is not a boolean");
  spec.choice.parallel = parallel.as_bool();
  return spec;
}

}  // namespace tandem
