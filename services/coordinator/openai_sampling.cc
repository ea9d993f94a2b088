#include "services/coordinator/openai_sampling.h"

#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/generation/sampler.h"
#include "services/coordinator/openai_fields.h"

namespace tandem::openai {
namespace {

// A token id as OpenAI's keys write it: decimal digits, no sign, no leading zero (so two keys
// never name the same id), at most int32's largest.
bool ParseTokenId(absl::string_view key, int32_t* id) {
  if (key.empty() || key.size() > 10 || (key.size() > 1 && key[0] == '0')) return false;
  for (char c : key) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  int64_t value = 0;
  if (!absl::SimpleAtoi(key, &value) || value > std::numeric_limits<int32_t>::max()) return false;
  *id = static_cast<int32_t>(value);
  return true;
}

// A number in [-limit, limit].
absl::StatusOr<float> Bounded(absl::string_view field, const json::Value& v, float limit) {
  ASSIGN_OR_RETURN(float f, Float(field, v));
  if (!(f >= -limit && f <= limit)) {
    return Invalid(field, absl::StrCat(f, " is outside [", -limit, ", ", limit, "]"));
  }
  return f;
}

absl::Status LogitBias(const json::Value& v, v1::SamplingParams* out) {
  if (!v.is_object()) return WrongType("logit_bias", "an object of token ids to biases", v);
  auto& entries = *out->mutable_logit_bias();
  entries.clear();
  for (const auto& [key, value] : v.as_object()) {
    int32_t id = 0;
    if (!ParseTokenId(key, &id)) {
      // The key may be long: name it only when short.
      return Invalid("logit_bias", key.size() <= 16
                                       ? absl::StrCat("key '", key, "' is not a token id")
                                       : std::string("a key is not a token id"));
    }
    ASSIGN_OR_RETURN(entries[id], Bounded("logit_bias", value, kMaxLogitBias));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status OpenAiSamplingField(const std::string& key, const json::Value& v,
                                 v1::SamplingParams* out) {
  if (key == "logit_bias") return LogitBias(v, out);
  ASSIGN_OR_RETURN(float penalty, Bounded(key, v, kMaxOpenAiPenalty));
  if (key == "presence_penalty") {
    out->set_presence_penalty(penalty);
  } else {
    out->set_frequency_penalty(penalty);
  }
  return absl::OkStatus();
}

}  // namespace tandem::openai
