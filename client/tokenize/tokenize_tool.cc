#include "client/tokenize/tokenize_tool.h"

#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/chat/chat_template.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_loader.h"

namespace tandem {
namespace {

ToolResult Fail(int code, absl::string_view message) {
  ToolResult r;
  r.exit_code = code;
  r.err = absl::StrCat("tandem-tokenize: ", message, "\n");
  return r;
}

// Files that are missing or unreadable are the caller's mistake (2); anything else went wrong
// in the work (1).
ToolResult FailStatus(const absl::Status& status) {
  const bool usage = status.code() == absl::StatusCode::kNotFound ||
                     status.code() == absl::StatusCode::kPermissionDenied;
  return Fail(usage ? 2 : 1, status.message());
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

ToolResult RenderChat(const TokenizeToolOptions& options) {
  absl::StatusOr<std::string> source = ReadFile(options.chat_template);
  if (!source.ok()) return FailStatus(source.status());
  absl::StatusOr<std::string> messages_text = ReadFile(options.messages);
  if (!messages_text.ok()) return FailStatus(messages_text.status());
  absl::StatusOr<json::Value> messages = json::Parse(*messages_text);
  if (!messages.ok()) {
    return Fail(2, absl::StrCat(options.messages, ": ", messages.status().message()));
  }
  json::Object extra;
  if (messages->is_object()) {
    extra = messages->as_object();
    json::Value* list = extra.Find("messages");
    if (list == nullptr) return Fail(2, absl::StrCat(options.messages, ": no \"messages\" key"));
    json::Value inner = std::move(*list);
    extra.Erase("messages");
    *messages = std::move(inner);
  }
  if (!messages->is_array()) {
    return Fail(2, absl::StrCat(options.messages, ": messages must be a JSON array"));
  }
  chat::ChatTemplateOptions template_options;
  template_options.bos_token = options.bos_token;
  template_options.eos_token = options.eos_token;
  absl::StatusOr<chat::ChatTemplate> chat_template =
      chat::ChatTemplate::Create(*source, template_options);
  if (!chat_template.ok()) return Fail(1, chat_template.status().message());
  absl::StatusOr<std::string> prompt =
      chat_template->Render(*messages, options.add_generation_prompt, extra);
  if (!prompt.ok()) return Fail(1, prompt.status().message());
  ToolResult r;
  r.out = *std::move(prompt);
  return r;
}

absl::StatusOr<std::vector<int32_t>> ParseIds(absl::string_view input) {
  std::vector<int32_t> ids;
  for (absl::string_view field :
       absl::StrSplit(input, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty())) {
    int32_t id = 0;
    if (!absl::SimpleAtoi(field, &id)) {
      return absl::InvalidArgumentError(absl::StrCat("'", field, "' is not a token id"));
    }
    ids.push_back(id);
  }
  return ids;
}

ToolResult Bench(const Tokenizer& tokenizer, const EncodeOptions& encode, absl::string_view input) {
  using Clock = std::chrono::steady_clock;
  size_t tokens = 0;
  int rounds = 0;
  const Clock::time_point start = Clock::now();
  double seconds = 0;
  // At least three rounds and one second, so that short inputs are measured too.
  while (rounds < 3 || seconds < 1.0) {
    absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(input, encode);
    if (!ids.ok()) return FailStatus(ids.status());
    tokens = ids->size();
    ++rounds;
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  const double bytes = static_cast<double>(input.size()) * rounds;
  ToolResult r;
  r.out = absl::StrFormat("bytes %d\ntokens %d\nrounds %d\nseconds %.3f\nMB_per_s %.2f\n",
                          input.size(), tokens, rounds, seconds, bytes / seconds / 1e6);
  return r;
}

ToolResult Tokenize(const TokenizeToolOptions& options, absl::string_view input) {
  LoadOptions load;
  load.pre_tokenizer = options.pre_tokenizer;
  absl::StatusOr<Tokenizer> tokenizer = LoadTokenizer(options.model, load);
  if (!tokenizer.ok()) return FailStatus(tokenizer.status());
  const EncodeOptions encode{.add_special = options.add_special,
                             .parse_special = options.parse_special};
  if (options.bench) return Bench(*tokenizer, encode, input);
  ToolResult r;
  if (options.decode) {
    absl::StatusOr<std::vector<int32_t>> ids = ParseIds(input);
    if (!ids.ok()) return Fail(1, ids.status().message());
    absl::StatusOr<std::string> text =
        tokenizer->Decode(*ids, {.render_special = options.parse_special});
    if (!text.ok()) return Fail(1, text.status().message());
    r.out = *std::move(text);
    return r;
  }
  absl::StatusOr<std::vector<int32_t>> ids = tokenizer->Encode(input, encode);
  if (!ids.ok()) return Fail(1, ids.status().message());
  r.out = absl::StrCat(absl::StrJoin(*ids, " "), "\n");
  return r;
}

}  // namespace

ToolResult RunTokenizeTool(const TokenizeToolOptions& options, absl::string_view input) {
  const bool chat = !options.chat_template.empty() || !options.messages.empty();
  if (chat == !options.model.empty()) {
    return Fail(2, "give either --model or --chat-template with --messages (see --help)");
  }
  if (chat) {
    if (options.chat_template.empty() || options.messages.empty()) {
      return Fail(2, "--chat-template and --messages go together");
    }
    if (options.add_special || options.parse_special || options.decode || options.bench) {
      return Fail(2, "--add-special, --parse-special, --decode and --bench need --model");
    }
    return RenderChat(options);
  }
  if (options.decode && options.bench) return Fail(2, "--decode and --bench exclude each other");
  return Tokenize(options, input);
}

}  // namespace tandem
