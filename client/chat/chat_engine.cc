#include "client/chat/chat_engine.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/chat/builtin_formats.h"
#include "core/chat/family_format.h"
#include "core/chat/model_chat_template.h"
#include "core/kernels/thread_pool.h"
#include "core/tokenizer/special_tokens.h"
#include "core/tokenizer/streaming_detokenizer.h"
#include "core/tokenizer/tokenizer_loader.h"

namespace tandem {
absl::StatusOr<std::unique_ptr<ChatEngine>> ChatEngine::Create(const ChatOptions& options) {
  if (options.threads > kMaxPoolThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads ", options.threads, " exceeds ", kMaxPoolThreads));
  }
  std::unique_ptr<ChatEngine> engine(new ChatEngine());
  engine->options_ = options;
  engine->pool_ = std::make_unique<ThreadPool>(std::max(1, options.threads));
  ASSIGN_OR_RETURN(engine->model_, Model::Load(options.model_path));
  ASSIGN_OR_RETURN(Tokenizer tokenizer, LoadTokenizer(options.model_path));
  engine->tokenizer_.emplace(std::move(tokenizer));
  RETURN_IF_ERROR(engine->LoadFormat(options));

  SessionOptions session;
  session.sampler = options.sampler;
  session.context_size =
      std::min<int64_t>(options.context_size, engine->model_->config().context_length);
  session.kv_type = options.kv_type;
  if (!options.ignore_eos) session.stop_ids = EndOfTurnIds(*engine->tokenizer_);
  if (options.draft_path.empty()) {
    ASSIGN_OR_RETURN(engine->session_, Session::Create(*engine->model_, *engine->pool_, session));
  } else {
    ASSIGN_OR_RETURN(engine->draft_, Model::Load(options.draft_path));
    SpeculativeOptions speculative;
    speculative.session = session;
    speculative.draft_tokens = options.draft_tokens;
    speculative.adaptive = options.adaptive_draft;
    speculative.pipelined = options.pipelined;
    ASSIGN_OR_RETURN(
        engine->speculative_,
        SpeculativeSession::Create(*engine->model_, *engine->draft_, *engine->pool_, speculative));
  }
  return engine;
}

absl::Status ChatEngine::LoadFormat(const ChatOptions& options) {
  chat::ChatTemplateOptions template_options;
  template_options.bos_token = SpecialTokenText(*tokenizer_, tokenizer_->vocabulary().bos_id);
  template_options.eos_token = SpecialTokenText(*tokenizer_, tokenizer_->vocabulary().eos_id);
  if (!options.format.empty()) {
    format_name_ = options.format;
    if (options.format == "raw") {
      // Validate the name through the same table, but render raw ourselves (text = prompt).
      RETURN_IF_ERROR(chat::BuiltinFormatSource("raw").status());
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(chat::ChatTemplate t, chat::BuiltinFormat(options.format, template_options));
    template_.emplace(std::move(t));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::optional<std::string> source, chat::ModelChatTemplate(model_->path()));
  const std::optional<std::string> family = chat::FamilyFormatName(
      [&](absl::string_view text) { return tokenizer_->TokenId(text).has_value(); });
  if (!source.has_value() && family.has_value()) {
    ASSIGN_OR_RETURN(chat::ChatTemplate t, chat::BuiltinFormat(*family, template_options));
    template_.emplace(std::move(t));
    format_name_ = *family;
    notices_.push_back(
        absl::StrCat("the model has no chat template; its special tokens are "
                     "those of the ",
                     *family, " format: using it (choose another with --format)"));
    return absl::OkStatus();
  }
  if (!source.has_value()) {
    format_name_ = "raw";
    notices_.push_back(
        "the model has no chat template: using the raw format (the text is "
        "the prompt); choose another with --format");
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(chat::ChatTemplate t, chat::ChatTemplate::Create(*source, template_options));
  template_.emplace(std::move(t));
  format_name_ = "model";
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> ChatEngine::EncodeConversation() const {
  if (!template_.has_value()) {
    // raw: the turns' text, concatenated, is the prompt; BOS as the vocabulary says.
    std::string text;
    for (const chat::ChatMessage& m : conversation_) {
      if (m.content.is_string()) text += m.content.as_string();
    }
    return tokenizer_->Encode(text, {.add_special = true, .parse_special = false});
  }
  ASSIGN_OR_RETURN(std::string prompt, template_->Render(conversation_, true));
  // The template writes BOS and the other control tokens itself.
  return tokenizer_->Encode(prompt, {.add_special = false, .parse_special = true});
}

absl::StatusOr<TurnResult> ChatEngine::Turn(absl::string_view user_text,
                                            const std::function<void(absl::string_view)>& on_text) {
  if (conversation_.empty() && !options_.system.empty() && template_.has_value()) {
    conversation_.push_back({"system", json::Value(options_.system), {}});
  }
  conversation_.push_back({"user", json::Value(std::string(user_text)), {}});
  absl::StatusOr<std::vector<int32_t>> context = EncodeConversation();
  if (!context.ok()) {
    conversation_.pop_back();
    return context.status();
  }
  // A continuation of the prompt text keeps its leading space.
  StreamingDetokenizer detokenizer(&*tokenizer_, {.strip_leading_space = false});
  TurnResult turn;
  absl::Status stream_status = absl::OkStatus();
  auto on_token = [&](int32_t id) {
    absl::StatusOr<std::string> text = detokenizer.Add(id);
    if (!text.ok()) {
      stream_status = text.status();
      return false;
    }
    turn.reply += *text;
    if (!text->empty()) on_text(*text);
    return true;
  };
  absl::StatusOr<GenerationResult> result =
      speculative_ ? speculative_->Generate(*context, options_.max_tokens, on_token)
                   : session_->Generate(*context, options_.max_tokens, on_token);
  if (!result.ok() || !stream_status.ok()) {
    conversation_.pop_back();
    return result.ok() ? stream_status : result.status();
  }
  const std::string rest = detokenizer.Flush();
  turn.reply += rest;
  if (!rest.empty()) on_text(rest);
  turn.generation = *result;
  turn.stop_text = SpecialTokenText(*tokenizer_, result->stop_token >= 0
                                                     ? std::optional<int32_t>(result->stop_token)
                                                     : std::nullopt);
  conversation_.push_back({"assistant", json::Value(turn.reply), {}});
  return turn;
}

void ChatEngine::Reset() {
  conversation_.clear();
  if (session_) session_->Reset();
  if (speculative_) speculative_->Reset();
}

}  // namespace tandem
