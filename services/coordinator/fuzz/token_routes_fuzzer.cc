// libFuzzer target for the HTTP API's POST /tokenize and /detokenize bodies (token_routes.h,
// issue 30): each input is parsed as both. Properties: a parse ends OK or kInvalidArgument
// (whose HTTP error body is JSON naming a field, except for a body that is not a JSON
// object); an OK /tokenize request survives a protobuf round trip (valid UTF-8) and its reply
// is JSON; an OK /detokenize request has at most kMaxIds ids, each in the vocabulary, and
// detokenizes to valid UTF-8. Nothing may crash, hang or exhaust memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/base/json.h"
#include "core/base/utf8.h"
#include "services/coordinator/detokenize.h"
#include "services/coordinator/http_error.h"
#include "services/coordinator/token_routes.h"

namespace tandem {
namespace {

constexpr int32_t kVocab = 6;
constexpr size_t kMaxIds = 64;

const std::vector<std::string>& Vocabulary() {
  static const auto* vocab =
      new std::vector<std::string>{"a", " b", "\xe2\x96", "\x81", "\xff", ""};
  return *vocab;
}

void CheckRefusal(const absl::Status& status) {
  TANDEM_FUZZ_ASSERT(absl::IsInvalidArgument(status), "unexpected %s", status.ToString().c_str());
  const HttpError error = ToHttpError(status);
  TANDEM_FUZZ_ASSERT(error.status == 400 && json::Parse(HttpErrorBody(error)).ok(),
                     "bad error body %s", HttpErrorBody(error).c_str());
}

void CheckTokenize(absl::string_view body) {
  absl::StatusOr<TokenizeBody> parsed = ParseTokenizeBody(body);
  if (!parsed.ok()) return CheckRefusal(parsed.status());
  std::string wire;
  v1::TokenizeRequest back;
  TANDEM_FUZZ_ASSERT(parsed->request.SerializeToString(&wire) && back.ParseFromString(wire),
                     "the request does not round trip");
  v1::TokenizeResponse ids;
  for (int32_t id : {0, 2, 4, 7}) ids.add_token_ids(id);
  TANDEM_FUZZ_ASSERT(json::Parse(TokenizeReply(ids, parsed->with_pieces, Vocabulary())).ok(),
                     "the reply is not JSON");
}

void CheckDetokenize(absl::string_view body) {
  absl::StatusOr<v1::DetokenizeRequest> parsed = ParseDetokenizeBody(body, kVocab, kMaxIds);
  if (!parsed.ok()) return CheckRefusal(parsed.status());
  TANDEM_FUZZ_ASSERT(static_cast<size_t>(parsed->token_ids_size()) <= kMaxIds, "%d ids",
                     parsed->token_ids_size());
  absl::StatusOr<v1::DetokenizeResponse> text = Detokenize(*parsed, Vocabulary(), kMaxIds);
  TANDEM_FUZZ_ASSERT(text.ok(), "%s", text.status().ToString().c_str());
  TANDEM_FUZZ_ASSERT(utf8::Validate(text->text()).ok(), "not UTF-8");
  TANDEM_FUZZ_ASSERT(json::Parse(DetokenizeReply(*text)).ok(), "the reply is not JSON");
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body(reinterpret_cast<const char*>(data), size);
  tandem::CheckTokenize(body);
  tandem::CheckDetokenize(body);
  return 0;
}
