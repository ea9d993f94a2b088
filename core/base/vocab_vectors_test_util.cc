#include "core/base/vocab_vectors_test_util.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"
#include "core/base/shared_data_test_util.h"

namespace tandem::testing {
namespace {

const char kSeparator[] = "\n__ggml_vocab_test__\n";
constexpr size_t kSeparatorSize = sizeof(kSeparator) - 1;

}  // namespace

absl::StatusOr<VocabTestVectors> ReadVocabTestVectors(absl::string_view name) {
  const std::string base = absl::StrCat("models/vocab/", name);
  ASSIGN_OR_RETURN(std::string inp, ReadSharedFile(base + ".inp"));
  ASSIGN_OR_RETURN(std::string out, ReadSharedFile(base + ".out"));
  VocabTestVectors v;
  for (size_t pos = 0, end; (end = inp.find(kSeparator, pos)) != std::string::npos;
       pos = end + kSeparatorSize) {
    v.inputs.push_back(inp.substr(pos, end - pos));
  }
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (v.outputs.size() == v.inputs.size()) break;
    std::vector<int32_t> ids;
    for (absl::string_view field : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      int32_t id = 0;
      if (!absl::SimpleAtoi(field, &id)) {
        return absl::DataLossError(absl::StrCat(base, ".out: '", field, "' is not an id"));
      }
      ids.push_back(id);
    }
    v.outputs.push_back(std::move(ids));
  }
  return v;
}

}  // namespace tandem::testing
