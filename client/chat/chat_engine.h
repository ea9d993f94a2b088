// The logic behind tandem-chat, with no flags and no printing: loads a model (and optional
// draft), its tokenizer and chat format, and answers conversation turns with a Session or a
// SpeculativeSession that keeps the KV cache between turns.
//
// Each turn renders the whole conversation and encodes it again; the session's prefix match
// then runs only the new tokens.
//
// Not thread-safe: one conversation.
#ifndef TANDEM_CLIENT_CHAT_CHAT_ENGINE_H_
#define TANDEM_CLIENT_CHAT_CHAT_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/chat/chat_template.h"
#include "core/chat/prompt_renderer.h"
#include "core/decoder/model.h"
#include "core/generation/generation_result.h"
#include "core/generation/sampler.h"
#include "core/generation/session.h"
#include "core/generation/speculation_defaults.h"
#include "core/generation/speculative_session.h"
#include "core/grammar/constraint_spec.h"
#include "core/kernels/thread_pool.h"
#include "core/tokenizer/tokenizer.h"
#include "wire/constraint_compiler.h"

namespace tandem {

struct ChatOptions {
  std::string model_path;
  std::string draft_path;  // empty: no speculation
  std::string format;      // built-in format name; empty: the model's own template, else the
                           // family format of its special tokens (family_format.h), else raw
  std::string system;      // optional system message
  SamplerConfig sampler;
  int64_t context_size = 4096;  // capped at the model's context length
  KvType kv_type = KvType::kF16;
  int64_t max_tokens = SpeculationDefaults::kChatMaxTokens;
  bool ignore_eos = false;  // no end-of-turn id stops a reply: every reply runs to max_tokens
  int threads = 2;
  int32_t draft_tokens = SpeculationDefaults::kDraftTokens;
  bool adaptive_draft = false;
  bool pipelined = false;  // pipelined rounds (round_driver.h)
  // What every reply must match (--json-schema, --grammar, --regex); kNone: nothing.
  ConstraintSpec constraint;
  // --- #31 activations flags ---
  ModelLoadOptions model_load;  // both models' (--activations)
  // --- end ---
};

struct TurnResult {
  std::string reply;
  GenerationResult generation;
  std::string stop_text;  // the stored text of generation.stop_token (e.g. "<|eot_id|>"), if any
};

class ChatEngine {
 public:
  // kNotFound for a missing model file; the loaders' codes for broken files;
  // kFailedPrecondition for a draft whose vocabulary differs; kInvalidArgument for bad
  // sampler values, an unknown format or a constraint that does not compile.
  static absl::StatusOr<std::unique_ptr<ChatEngine>> Create(const ChatOptions& options);

  // Adds a user turn, generates the reply (calling on_text with each piece of text as it
  // completes) and adds it to the conversation.
  absl::StatusOr<TurnResult> Turn(absl::string_view user_text,
                                  const std::function<void(absl::string_view)>& on_text);

  // Forgets the conversation and the cache.
  void Reset();

  // Notes for stderr at start-up (e.g. "no chat template: using raw").
  const std::vector<std::string>& notices() const { return notices_; }
  const Model& model() const { return *model_; }
  const Model* draft_model() const { return draft_.get(); }  // null without --draft
  bool speculative() const { return speculative_ != nullptr; }
  // The built-in format's name, or "model" for the model's own template.
  const std::string& format_name() const { return renderer_->format_name(); }

 private:
  ChatEngine() = default;
  absl::Status LoadFormat(const ChatOptions& options);
  absl::StatusOr<std::vector<int32_t>> EncodeConversation() const;

  ChatOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Model> draft_;
  std::optional<Tokenizer> tokenizer_;
  std::optional<chat::PromptRenderer> renderer_;  // set by Create
  std::unique_ptr<Session> session_;
  std::unique_ptr<SpeculativeSession> speculative_;
  // With options.constraint: compiled once over the tokenizer (kInvalidArgument from Create
  // naming the culprit); each turn gets a fresh state of it.
  std::unique_ptr<ConstraintCompiler> constraints_;
  std::vector<int32_t> stop_ids_;  // the constraint's end ids
  std::vector<chat::ChatMessage> conversation_;
  std::vector<std::string> notices_;
};

}  // namespace tandem

#endif  // TANDEM_CLIENT_CHAT_CHAT_ENGINE_H_
