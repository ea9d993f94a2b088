// OpenAI's `system_fingerprint` (and GenerationResult.system_fingerprint): one digest of what
// decides outputs besides the request, computed once when the coordinator starts, so that a
// client can tell when equal requests (and seeds) may stop giving equal outputs.
//
// Over: the target's and the draft's ModelInfo as the workers describe them (name,
// architecture, parameter count, weight type, KV type, activation precision, context size,
// vocabulary size, the vocabulary's and the whole tokenizer's fingerprints; never the file
// path, so a model moved on disk keeps its fingerprint), the coordinator's version, and its
// settings that change outputs (`settings`, "name=value" strings: default max_tokens, draft
// tokens, the tool-call and reasoning formats, ...). The weights' bytes are not read (the
// coordinator never sees them): two exports that agree on all of the above, e.g. the same name
// re-quantized to the same type, share a fingerprint.
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_SYSTEM_FINGERPRINT_H_
#define TANDEM_SERVICES_COORDINATOR_SYSTEM_FINGERPRINT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "tandem/v1/common.pb.h"

namespace tandem {

// "fp_" and 16 lower-case hex digits. `draft` null: no draft configured.
std::string SystemFingerprint(const v1::ModelInfo& target, const v1::ModelInfo* draft,
                              absl::string_view version, const std::vector<std::string>& settings);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_SYSTEM_FINGERPRINT_H_
