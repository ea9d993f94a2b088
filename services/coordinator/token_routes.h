// The HTTP API's POST /tokenize and POST /detokenize bodies, as llama-server's clients send
// and read them (issue 30), over Generator.Tokenize and Generator.Detokenize:
//
//   /tokenize    {"content": "text", "add_special": false, "parse_special": true,
//                 "with_pieces": false}
//             -> {"tokens": [ids]}, or with with_pieces {"tokens": [{"id": 1, "piece": "text"}]}
//                (a piece that is not whole UTF-8 is its byte values: [226, 150])
//   /detokenize  {"tokens": [ids]} -> {"content": "text"}
//
// Unknown fields, wrong types and ids outside the vocabulary are kInvalidArgument with the
// field as error.param (openai_fields.h).
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_TOKEN_ROUTES_H_
#define TANDEM_SERVICES_COORDINATOR_TOKEN_ROUTES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

struct TokenizeBody {
  v1::TokenizeRequest request;
  bool with_pieces = false;
};

absl::StatusOr<TokenizeBody> ParseTokenizeBody(absl::string_view body);
// `token_bytes[id]`: the vocabulary's bytes (for the pieces).
std::string TokenizeReply(const v1::TokenizeResponse& response, bool with_pieces,
                          const std::vector<std::string>& token_bytes);

// Ids must be in [0, vocab_size); at most max_ids of them.
absl::StatusOr<v1::DetokenizeRequest> ParseDetokenizeBody(absl::string_view body,
                                                          int32_t vocab_size, size_t max_ids);
std::string DetokenizeReply(const v1::DetokenizeResponse& response);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_TOKEN_ROUTES_H_
