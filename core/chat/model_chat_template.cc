#include "core/chat/model_chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/model/gguf_reader.h"

namespace tandem::chat {
namespace {

constexpr char kGgufKey[] = "tokenizer.chat_template";

absl::StatusOr<std::optional<std::string>> FromTokenizerConfig(const std::string& folder) {
  const std::string path = (std::filesystem::path(folder) / "tokenizer_config.json").string();
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<json::Value> config = json::Parse(text.str());
  if (!config.ok() || !config->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  }
  const json::Value* chat_template = config->as_object().Find("chat_template");
  if (chat_template == nullptr || chat_template->is_null()) return std::nullopt;
  if (chat_template->is_string()) return chat_template->as_string();
  if (chat_template->is_array()) {  // [{"name": "default", "template": "..."}, ...]
    for (const json::Value& entry : chat_template->as_array()) {
      if (!entry.is_object()) continue;
      const json::Value* name = entry.as_object().Find("name");
      const json::Value* source = entry.as_object().Find("template");
      if (name != nullptr && name->is_string() && name->as_string() == "default" &&
          source != nullptr && source->is_string()) {
        return source->as_string();
      }
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": chat_template is neither a string nor a named list"));
}

}  // namespace

absl::StatusOr<std::optional<std::string>> ModelChatTemplate(const std::string& model_path) {
  std::error_code error;
  if (std::filesystem::is_directory(model_path, error)) return FromTokenizerConfig(model_path);
  ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::Open(model_path));
  if (!gguf.HasKey(kGgufKey)) return std::nullopt;
  ASSIGN_OR_RETURN(absl::string_view source, gguf.GetString(kGgufKey));
  return std::string(source);
}

}  // namespace tandem::chat
