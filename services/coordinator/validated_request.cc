#include "services/coordinator/validated_request.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/generation/sampler.h"
#include "core/generation/speculation_defaults.h"
#include "google/protobuf/unknown_field_set.h"
#include "services/coordinator/delta_logprobs.h"
#include "services/coordinator/reply_syntax.h"
#include "wire/proto_convert.h"

namespace tandem {
namespace {

absl::Status CheckCounts(const v1::GenerateRequest& request) {
  if (request.max_tokens() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("max_tokens ", request.max_tokens(), " < 0"));
  }
  const int32_t k = request.speculation().draft_tokens();
  if (k < 0 || k > SpeculationLimits::kMaxDraftTokens) {
    return absl::InvalidArgumentError(absl::StrCat("speculation.draft_tokens ", k,
                                                   " is outside [0, ",
                                                   SpeculationLimits::kMaxDraftTokens, "]"));
  }
  return absl::OkStatus();
}

// Enum values this build does not know (a newer client's) are refused, not guessed at.
absl::Status CheckEnums(const v1::Speculation& speculation) {
  const v1::SpeculationMethod method = speculation.method();
  if (!v1::SpeculationMethod_IsValid(method)) {
    return absl::InvalidArgumentError(
        absl::StrCat("speculation.method ", static_cast<int>(method), " is not a method"));
  }
  const v1::Coupling coupling = speculation.coupling();
  if (!v1::Coupling_IsValid(coupling)) {
    return absl::InvalidArgumentError(
        absl::StrCat("speculation.coupling ", static_cast<int>(coupling), " is not a coupling"));
  }
  return absl::OkStatus();
}

// What only the proto can tell: a kind this build does not know arrives as an unknown field of
// an otherwise empty Constraint, and is refused rather than read as "no constraint". The text
// itself is the compiler's to judge (the size was checked with the limits).
absl::Status CheckConstraint(const v1::Constraint& constraint) {
  if (!constraint.GetReflection()->GetUnknownFields(constraint).empty()) {
    return absl::InvalidArgumentError(
        "constraint has a field this server does not know (a newer kind of constraint?)");
  }
  if (constraint.has_json_schema() && constraint.json_schema().schema().empty()) {
    return absl::InvalidArgumentError("constraint.json_schema.schema is empty");
  }
  if (constraint.has_grammar() && constraint.grammar().empty()) {
    return absl::InvalidArgumentError("constraint.grammar is empty");
  }
  return absl::OkStatus();
}

// k, the drafter and the coupling; unset fields take the coordinator's settings.
void SetSpeculation(const v1::Speculation& s, const GenerateSettings& settings, RoundParams* p) {
  p->speculate = !s.has_enabled() || s.enabled();
  p->ngram = s.method() == v1::SPECULATION_METHOD_NGRAM;
  p->ngram_fallback = s.method() == v1::SPECULATION_METHOD_UNSPECIFIED && settings.ngram_fallback;
  const int32_t k = s.draft_tokens();
  p->draft_tokens =
      k > 0 ? k
            : (p->ngram ? SpeculationDefaults::kNgramDraftTokens : settings.default_draft_tokens);
  p->adaptive = s.adaptive() || settings.adaptive_draft;
  p->pipelined = s.pipelined();
  p->continue_tokens = settings.continue_tokens;
  p->sampler.coupling = CouplingFromProto(s.coupling());  // sampling.coupling is ignored
}

std::vector<int32_t> StopIds(const v1::GenerateRequest& request, const GenerateSettings& settings,
                             bool constrained) {
  std::vector<int32_t> ids(request.stop_token_ids().begin(), request.stop_token_ids().end());
  // A constrained output ends where its constraint ends, at an end-of-turn id, ignore_eos or
  // not (the grammar allows nothing else there).
  if (!request.ignore_eos() || constrained) {
    ids.insert(ids.end(), settings.end_of_turn_ids.begin(), settings.end_of_turn_ids.end());
  }
  return ids;
}

// The prompt's ids; `rendered` receives a chat's rendered text.
absl::StatusOr<std::vector<int32_t>> PromptTokens(const v1::GenerateRequest& r, int32_t vocab_size,
                                                  const PromptTokenizer& tokenize,
                                                  std::string* rendered) {
  v1::TokenizeRequest request;
  switch (r.prompt_case()) {
    case v1::GenerateRequest::kText:
      if (r.text().empty()) return absl::InvalidArgumentError("prompt text is empty");
      request.set_text(r.text());
      request.set_add_special(true);
      break;
    case v1::GenerateRequest::kChat:
      if (r.chat().messages().empty()) return absl::InvalidArgumentError("chat has no messages");
      *request.mutable_chat() = r.chat();
      break;
    case v1::GenerateRequest::kTokenIds: {
      if (r.token_ids().ids().empty()) return absl::InvalidArgumentError("prompt has no tokens");
      for (int32_t id : r.token_ids().ids()) {
        if (id < 0 || id >= vocab_size) {
          return absl::InvalidArgumentError(
              absl::StrCat("prompt token ", id, " is outside the vocabulary of ", vocab_size));
        }
      }
      return std::vector<int32_t>(r.token_ids().ids().begin(), r.token_ids().ids().end());
    }
    default:
      return absl::InvalidArgumentError("set one of text, chat or token_ids");
  }
  ASSIGN_OR_RETURN(v1::TokenizeResponse ids, tokenize(request));
  if (ids.token_ids().empty()) return absl::InvalidArgumentError("the prompt has no tokens");
  if (r.has_chat()) *rendered = ids.rendered_text();
  return std::vector<int32_t>(ids.token_ids().begin(), ids.token_ids().end());
}

// The prediction's ids (empty without one): text tokenized as output is, without specials.
absl::StatusOr<std::vector<int32_t>> PredictionTokens(const v1::Prediction& prediction,
                                                      int32_t vocab_size,
                                                      const PromptTokenizer& tokenize) {
  switch (prediction.content_case()) {
    case v1::Prediction::kText: {
      if (prediction.text().empty()) return std::vector<int32_t>();
      v1::TokenizeRequest request;
      request.set_text(prediction.text());
      ASSIGN_OR_RETURN(v1::TokenizeResponse ids, tokenize(request));
      return std::vector<int32_t>(ids.token_ids().begin(), ids.token_ids().end());
    }
    case v1::Prediction::kTokenIds:
      for (int32_t id : prediction.token_ids().ids()) {
        if (id < 0 || id >= vocab_size) {
          return absl::InvalidArgumentError(absl::StrCat(
              "prediction token ", id, " is outside the vocabulary of ", vocab_size));
        }
      }
      return std::vector<int32_t>(prediction.token_ids().ids().begin(),
                                  prediction.token_ids().ids().end());
    default:
      return std::vector<int32_t>();
  }
}

}  // namespace

absl::StatusOr<ValidatedRequest> ValidateGenerateRequest(const v1::GenerateRequest& request,
                                                         const GenerateSettings& settings,
                                                         uint64_t fresh_seed,
                                                         const PromptTokenizer& tokenize) {
  RETURN_IF_ERROR(CheckGenerateLimits(request, settings.limits));
  ValidatedRequest valid;
  RoundParams& p = valid.rounds;
  // Unset fields take the one set of defaults (sampling_defaults.h).
  p.sampler = SamplerConfigFromProto(request.sampling(), fresh_seed);
  RETURN_IF_ERROR(ValidateSamplerConfig(p.sampler, settings.vocab_size));
  RETURN_IF_ERROR(CheckCounts(request));
  RETURN_IF_ERROR(CheckLogprobsRequest(request));
  RETURN_IF_ERROR(CheckEnums(request.speculation()));
  RETURN_IF_ERROR(CheckConstraint(request.constraint()));
  valid.constraint = ConstraintFromProto(request.constraint());
  p.max_tokens = request.max_tokens() > 0 ? request.max_tokens() : settings.default_max_tokens;
  p.logprobs = request.logprobs();
  p.top_logprobs = request.top_logprobs();
  SetSpeculation(request.speculation(), settings, &p);
  valid.stop_strings.assign(request.stop_strings().begin(), request.stop_strings().end());
  std::string rendered;
  ASSIGN_OR_RETURN(p.context, PromptTokens(request, settings.vocab_size, tokenize, &rendered));
  p.output_start = static_cast<int64_t>(p.context.size());
  if (p.speculate) {
    ASSIGN_OR_RETURN(p.prediction,
                     PredictionTokens(request.prediction(), settings.vocab_size, tokenize));
  }
  // Tools and reasoning (reply_syntax.h): the constraint tools force, where it starts.
  RETURN_IF_ERROR(ApplyReplySyntax(request, settings.syntax, rendered, &valid.constraint,
                                   &valid.parsing));
  p.stop_ids = StopIds(request, settings, !valid.constraint.empty());
  return valid;
}

}  // namespace tandem
