#include "core/tokenizer/generation_config.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/json.h"

namespace tandem {

absl::StatusOr<std::vector<int32_t>> GenerationConfigEosIds(absl::string_view json,
                                                            int64_t vocab_size) {
  absl::StatusOr<json::Value> parsed = json::Parse(json);
  if (!parsed.ok() || !parsed->is_object()) {
    return absl::DataLossError(absl::StrCat(
        "not a JSON object", parsed.ok() ? "" : absl::StrCat(": ", parsed.status().message())));
  }
  const json::Value* eos = parsed->as_object().Find("eos_token_id");
  std::vector<const json::Value*> items;
  if (eos != nullptr && eos->is_array()) {
    for (const json::Value& item : eos->as_array()) items.push_back(&item);
  } else if (eos != nullptr && !eos->is_null()) {
    items.push_back(eos);
  }
  std::vector<int32_t> ids;
  for (const json::Value* item : items) {
    if (!item->is_int()) {
      return absl::DataLossError("eos_token_id holds a non-integer");
    }
    if (item->as_int() < 0 || item->as_int() >= vocab_size) {
      return absl::DataLossError(absl::StrCat("eos_token_id ", item->as_int(),
                                              " is outside the vocabulary of ", vocab_size,
                                              " tokens"));
    }
    ids.push_back(static_cast<int32_t>(item->as_int()));
  }
  return ids;
}

}  // namespace tandem
