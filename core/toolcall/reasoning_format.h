// How a model marks its reasoning, chosen from its chat template and special tokens (or named
// by the operator with --reasoning-format). The reasoning splitter (reasoning_splitter.h)
// implements each format; kNone keeps the whole output as content.
//
//   kThinkTags  DeepSeek-R1 and its distills, Qwen3, QwQ: <think>reasoning</think>answer. The
//               template may open the block itself (R1 distills end the generation prompt
//               with "<think>\n"), in which case the output starts inside the reasoning.
//
// Thread-safe (no state).
#ifndef TANDEM_CORE_TOOLCALL_REASONING_FORMAT_H_
#define TANDEM_CORE_TOOLCALL_REASONING_FORMAT_H_

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::toolcall {

enum class ReasoningFormat {
  kNone,  // no reasoning markers: everything the model writes is content
  kThinkTags,
};

// The markers of kThinkTags.
inline constexpr absl::string_view kThinkOpen = "<think>";
inline constexpr absl::string_view kThinkClose = "</think>";

// "none", "think".
absl::string_view ReasoningFormatName(ReasoningFormat format);

// The inverse; kInvalidArgument naming the name and listing the known ones.
absl::StatusOr<ReasoningFormat> ParseReasoningFormatName(absl::string_view name);

// The format a model reasons in, from its chat template's source (empty when it has none) and
// its vocabulary (`has_token`: a token of exactly this text exists): kThinkTags when either
// knows "<think>" or "</think>", else kNone.
ReasoningFormat DetectReasoningFormat(absl::string_view template_source,
                                      absl::FunctionRef<bool(absl::string_view)> has_token);

// Whether `rendered_prompt` (the text the model continues) ends inside an open <think> block,
// so that the output starts inside the reasoning: it ends with "<think>" and whitespace at most
// (e.g. "...<｜Assistant｜><think>\n"). A "<think>" further back (a user quoting the tag, a
// template closing an empty block) does not count.
bool PromptOpensReasoning(absl::string_view rendered_prompt);

}  // namespace tandem::toolcall

#endif  // TANDEM_CORE_TOOLCALL_REASONING_FORMAT_H_
