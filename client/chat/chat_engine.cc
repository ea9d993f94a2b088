#include "client/chat/chat_engine.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
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
  ASSIGN_OR_RETURN(engine->model_, Model::Load(options.model_path, options.model_load));
  ASSIGN_OR_RETURN(Tokenizer tokenizer, LoadTokenizer(options.model_path));
  engine->tokenizer_.emplace(std::move(tokenizer));
  RETURN_IF_ERROR(engine->LoadFormat(options));

  SessionOptions session;
  session.sampler = options.sampler;
  session.context_size =
      std::min<int64_t>(options.context_size, engine->model_->config().context_length);
  session.kv_type = options.kv_type;
  if (!options.ignore_eos) session.stop_ids = EndOfTurnIds(*engine->tokenizer_);
  if (!options.constraint.empty()) {
    engine->constraints_ =
        std::make_unique<ConstraintCompiler>(ConstraintCompiler::TokenBytes(*engine->tokenizer_));
    engine->stop_ids_ = session.stop_ids;
    // Compiled now, so a bad schema, grammar or regex is refused before the first turn.
    RETURN_IF_ERROR(engine->constraints_->New(options.constraint, session.stop_ids).status());
  }
  if (options.draft_path.empty()) {
    ASSIGN_OR_RETURN(engine->session_, Session::Create(*engine->model_, *engine->pool_, session));
  } else {
    ASSIGN_OR_RETURN(engine->draft_, Model::Load(options.draft_path, options.model_load));
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
  std::optional<std::string> model_template;  // read only when the format is not named
  if (options.format.empty()) {
    ASSIGN_OR_RETURN(model_template, chat::ModelChatTemplate(model_->path()));
  }
  ASSIGN_OR_RETURN(chat::PromptRenderer renderer,
                   chat::PromptRenderer::Create(*tokenizer_, options.format, model_template));
  if (renderer.source() == chat::PromptFormatSource::kFamily) {
    notices_.push_back(
        absl::StrCat("the model has no chat template; its special tokens are "
                     "those of the ",
                     renderer.format_name(), " format: using it (choose another with --format)"));
  } else if (renderer.source() == chat::PromptFormatSource::kRaw) {
    notices_.push_back(
        "the model has no chat template: using the raw format (the text is "
        "the prompt); choose another with --format");
  }
  renderer_.emplace(std::move(renderer));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> ChatEngine::EncodeConversation() const {
  ASSIGN_OR_RETURN(chat::RenderedPrompt prompt, renderer_->Render(conversation_, true));
  return tokenizer_->Encode(prompt.text, prompt.encode);
}

absl::StatusOr<TurnResult> ChatEngine::Turn(absl::string_view user_text,
                                            const std::function<void(absl::string_view)>& on_text) {
  // Raw text is the user's own: no system message in it.
  if (conversation_.empty() && !options_.system.empty() && renderer_->templated()) {
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
  // Every reply matches the constraint: a fresh state per turn (cached compiled).
  std::unique_ptr<TokenConstraint> constraint;
  if (constraints_ != nullptr) {
    absl::StatusOr<std::unique_ptr<TokenConstraint>> fresh =
        constraints_->New(options_.constraint, stop_ids_);
    if (!fresh.ok()) {
      conversation_.pop_back();
      return fresh.status();
    }
    constraint = *std::move(fresh);
  }
  // In process every call runs on this thread: one state serves target, draft and forced.
  TokenConstraint* c = constraint.get();
  absl::StatusOr<GenerationResult> result =
      speculative_ ? speculative_->Generate(*context, options_.max_tokens, on_token, {c, c, c})
                   : session_->Generate(*context, options_.max_tokens, on_token, c);
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
