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

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Newer Hugging Face folders (transformers >= 4.50, e.g. Gemma 3) keep the template in its own
// file: chat_template.jinja, or chat_template.json {"chat_template": "..."}.
absl::StatusOr<std::optional<std::string>> FromTemplateFile(const std::string& folder) {
  std::error_code error;
  const std::string jinja = (std::filesystem::path(folder) / "chat_template.jinja").string();
  if (std::filesystem::is_regular_file(jinja, error)) return ReadAll(jinja);
  const std::string path = (std::filesystem::path(folder) / "chat_template.json").string();
  if (!std::filesystem::is_regular_file(path, error)) return std::nullopt;
  absl::StatusOr<json::Value> doc = json::Parse(ReadAll(path));
  const json::Value* source =
      doc.ok() && doc->is_object() ? doc->as_object().Find("chat_template") : nullptr;
  if (source == nullptr || !source->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a JSON object with a string chat_template"));
  }
  return source->as_string();
}

absl::StatusOr<std::optional<std::string>> FromTokenizerConfig(const std::string& folder) {
  ASSIGN_OR_RETURN(std::optional<std::string> own_file, FromTemplateFile(folder));
  if (own_file.has_value()) return own_file;
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
