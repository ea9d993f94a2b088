#include "core/tokenizer/tokenizer_loader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/model/gguf_reader.h"
#include "core/tokenizer/generation_config.h"
#include "core/tokenizer/gguf_vocabulary.h"
#include "core/tokenizer/hf_vocabulary.h"
#include "core/tokenizer/legacy_vocabulary.h"

namespace tandem {
namespace {

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    if (error == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", std::strerror(error)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return buffer.str();
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The eos_token_id list of a generation_config.json (or config.json) beside the tokenizer, if
// there is one.
absl::Status AddGenerationConfigIds(const std::string& path, Vocabulary* vocab) {
  if (!IsFile(path)) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::string json, ReadFile(path));
  absl::StatusOr<std::vector<int32_t>> ids =
      GenerationConfigEosIds(json, static_cast<int64_t>(vocab->tokens.size()));
  if (!ids.ok()) {
    return absl::Status(ids.status().code(), absl::StrCat(path, ": ", ids.status().message()));
  }
  for (int32_t id : *ids) {
    if (std::find(vocab->end_of_turn_ids.begin(), vocab->end_of_turn_ids.end(), id) ==
        vocab->end_of_turn_ids.end()) {
      vocab->end_of_turn_ids.push_back(id);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Vocabulary> FromTokenizerJson(const std::string& path) {
  ASSIGN_OR_RETURN(std::string json, ReadFile(path));
  std::string config;
  const std::string config_path = Dirname(path) + "/tokenizer_config.json";
  if (IsFile(config_path)) {
    ASSIGN_OR_RETURN(config, ReadFile(config_path));
  }
  absl::StatusOr<Vocabulary> vocab = VocabularyFromTokenizerJson(json, config);
  if (!vocab.ok()) {
    return absl::Status(vocab.status().code(), absl::StrCat(path, ": ", vocab.status().message()));
  }
  // Llama 3.1 lists its stops in both files; some folders have only config.json's.
  for (const char* name : {"/generation_config.json", "/config.json"}) {
    RETURN_IF_ERROR(AddGenerationConfigIds(Dirname(path) + name, &*vocab));
  }
  return vocab;
}

absl::StatusOr<Vocabulary> FromSentencePiece(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  absl::StatusOr<Vocabulary> vocab = VocabularyFromSentencePiece(bytes);
  if (!vocab.ok()) {
    return absl::Status(vocab.status().code(), absl::StrCat(path, ": ", vocab.status().message()));
  }
  return vocab;
}

absl::StatusOr<Vocabulary> FromFolder(const std::string& dir, const LoadOptions& options) {
  if (IsFile(dir + "/tokenizer.json")) return FromTokenizerJson(dir + "/tokenizer.json");
  if (IsFile(dir + "/tokenizer.model")) return FromSentencePiece(dir + "/tokenizer.model");
  if (IsFile(dir + "/encoder.json") && IsFile(dir + "/vocab.bpe")) {
    ASSIGN_OR_RETURN(std::string encoder, ReadFile(dir + "/encoder.json"));
    ASSIGN_OR_RETURN(std::string merges, ReadFile(dir + "/vocab.bpe"));
    absl::StatusOr<Vocabulary> vocab =
        VocabularyFromGpt2Files(encoder, merges, options.pre_tokenizer);
    if (!vocab.ok()) {
      return absl::Status(vocab.status().code(), absl::StrCat(dir, ": ", vocab.status().message()));
    }
    return vocab;
  }
  return absl::NotFoundError(absl::StrCat(
      dir, ": no tokenizer.json, tokenizer.model or encoder.json + vocab.bpe in this folder"));
}

}  // namespace

absl::StatusOr<Vocabulary> LoadVocabulary(const std::string& path, const LoadOptions& options) {
  if (IsDirectory(path)) return FromFolder(path, options);
  if (!IsFile(path)) return absl::NotFoundError(absl::StrCat(path, ": no such file or folder"));
  if (absl::EndsWith(path, ".json")) return FromTokenizerJson(path);
  if (absl::EndsWith(path, ".model")) return FromSentencePiece(path);
  ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::Open(path));
  absl::StatusOr<Vocabulary> vocab = VocabularyFromGguf(gguf);
  if (!vocab.ok()) {
    return absl::Status(vocab.status().code(), absl::StrCat(path, ": ", vocab.status().message()));
  }
  return vocab;
}

absl::StatusOr<Tokenizer> LoadTokenizer(const std::string& path, const LoadOptions& options) {
  ASSIGN_OR_RETURN(Vocabulary vocab, LoadVocabulary(path, options));
  absl::StatusOr<Tokenizer> tokenizer = Tokenizer::Create(std::move(vocab));
  if (!tokenizer.ok()) {
    return absl::Status(tokenizer.status().code(),
                        absl::StrCat(path, ": ", tokenizer.status().message()));
  }
  return tokenizer;
}

}  // namespace tandem
