#include "core/tokenizer/gguf_vocabulary.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/status_macros.h"
#include "core/model/gguf_reader.h"
#include "core/tokenizer/pre_tokenizer.h"

namespace tandem {
namespace {

// Adds the key to a getter's error (the reader's messages name it already for type errors;
// a missing required key is corruption of a model file).
absl::Status Required(const absl::Status& status, absl::string_view key) {
  if (absl::IsNotFound(status)) {
    return absl::DataLossError(absl::StrCat("the model file has no '", key, "'"));
  }
  return status;
}

// An optional special id: the default if absent, none if 0xFFFFFFFF or -1.
absl::Status ReadId(const GgufFile& gguf, absl::string_view key, std::optional<int32_t>* id) {
  if (!gguf.HasKey(key)) return absl::OkStatus();
  absl::StatusOr<uint32_t> value = gguf.GetUint32(key);
  if (!value.ok()) {
    absl::StatusOr<int32_t> signed_value = gguf.GetInt32(key);
    if (!signed_value.ok() || *signed_value != -1) {
      return absl::DataLossError(
          absl::StrCat("'", key, "' is not a token id: ", value.status().message()));
    }
    *id = std::nullopt;
    return absl::OkStatus();
  }
  if (*value == 0xFFFFFFFFu) {
    *id = std::nullopt;
  } else {
    *id = static_cast<int32_t>(*value);
  }
  return absl::OkStatus();
}

absl::Status ReadBool(const GgufFile& gguf, absl::string_view key, bool* value) {
  if (!gguf.HasKey(key)) return absl::OkStatus();
  absl::StatusOr<bool> v = gguf.GetBool(key);
  if (!v.ok()) return absl::DataLossError(v.status().message());
  *value = *v;
  return absl::OkStatus();
}

absl::Status ReadMerges(const GgufFile& gguf, Vocabulary* vocab) {
  constexpr absl::string_view kKey = "tokenizer.ggml.merges";
  absl::StatusOr<absl::Span<const absl::string_view>> merges = gguf.GetStringArray(kKey);
  if (!merges.ok()) return Required(merges.status(), kKey);
  vocab->merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const absl::string_view merge = (*merges)[i];
    // The separator is the first space after the first character (a part may be a space).
    const size_t space = merge.size() > 1 ? merge.find(' ', 1) : absl::string_view::npos;
    if (space == absl::string_view::npos) {
      return absl::DataLossError(
          absl::StrCat("'", kKey, "'[", i, "] = '", merge, "' is not two tokens"));
    }
    vocab->merges.emplace_back(std::string(merge.substr(0, space)),
                               std::string(merge.substr(space + 1)));
  }
  return absl::OkStatus();
}

absl::Status ReadTokens(const GgufFile& gguf, Vocabulary* vocab) {
  constexpr absl::string_view kTokens = "tokenizer.ggml.tokens";
  absl::StatusOr<absl::Span<const absl::string_view>> tokens = gguf.GetStringArray(kTokens);
  if (!tokens.ok()) return Required(tokens.status(), kTokens);
  const size_t n = tokens->size();
  vocab->tokens.reserve(n);
  for (absl::string_view token : *tokens) vocab->tokens.emplace_back(token);
  vocab->types.assign(n, TokenType::kNormal);
  constexpr absl::string_view kTypes = "tokenizer.ggml.token_type";
  if (gguf.HasKey(kTypes)) {
    ASSIGN_OR_RETURN(std::vector<int32_t> types, gguf.GetInt32Array(kTypes));
    if (types.size() != n) {
      return absl::DataLossError(
          absl::StrCat("'", kTypes, "' has ", types.size(), " entries for ", n, " tokens"));
    }
    for (size_t i = 0; i < n; ++i) {
      if (types[i] < 0 || types[i] > static_cast<int32_t>(TokenType::kByte)) {
        return absl::DataLossError(
            absl::StrCat("'", kTypes, "'[", i, "] = ", types[i], " is not a token type"));
      }
      vocab->types[i] = static_cast<TokenType>(types[i]);
    }
  }
  constexpr absl::string_view kScores = "tokenizer.ggml.scores";
  if (vocab->model == MergeModel::kScores) {
    if (gguf.HasKey(kScores)) {
      ASSIGN_OR_RETURN(vocab->scores, gguf.GetFloat32Array(kScores));
      if (vocab->scores.size() != n) {
        return absl::DataLossError(absl::StrCat("'", kScores, "' has ", vocab->scores.size(),
                                                " entries for ", n, " tokens"));
      }
    } else {
      vocab->scores.assign(n, 0.0f);
    }
  }
  return absl::OkStatus();
}

// GGUF keeps no strip attributes; llama.cpp gives Phi-3's special (control, user-defined,
// unknown) tokens and </s> the rstrip its tokenizer.json has, all but <unk>, <s> and
// <|endoftext|>, by model name (here also by architecture).
absl::Status ApplyPhi3Strips(const GgufFile& gguf, Vocabulary* vocab) {
  bool phi3 = false;
  if (gguf.HasKey("general.architecture")) {
    ASSIGN_OR_RETURN(absl::string_view arch, gguf.GetString("general.architecture"));
    phi3 = arch == "phi3";
  }
  if (gguf.HasKey("general.name")) {
    ASSIGN_OR_RETURN(absl::string_view name, gguf.GetString("general.name"));
    const std::string lower = absl::AsciiStrToLower(name);
    phi3 = phi3 || absl::StrContains(lower, "phi-3") || absl::StrContains(lower, "phi3");
  }
  if (!phi3) return absl::OkStatus();
  for (size_t id = 0; id < vocab->tokens.size(); ++id) {
    const std::string& text = vocab->tokens[id];
    const TokenType type = vocab->types[id];
    const bool special = type == TokenType::kControl || type == TokenType::kUserDefined ||
                         type == TokenType::kUnknown;
    if ((special || text == "</s>") && text != "<unk>" && text != "<s>" &&
        text != "<|endoftext|>") {
      vocab->rstrip_ids.push_back(static_cast<int32_t>(id));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Vocabulary> VocabularyFromGguf(const GgufFile& gguf) {
  constexpr absl::string_view kModel = "tokenizer.ggml.model";
  absl::StatusOr<absl::string_view> model = gguf.GetString(kModel);
  if (!model.ok()) return Required(model.status(), kModel);

  Vocabulary vocab;
  if (*model == "llama") {
    vocab.encoding = TextEncoding::kMetaspace;
    vocab.model = MergeModel::kScores;
    vocab.space_prefix = SpacePrefix::kAlways;
    vocab.byte_fallback = true;
    vocab.add_bos = true;
    vocab.bos_id = 1;
    vocab.eos_id = 2;
    vocab.unk_id = 0;
  } else if (*model == "gpt2") {
    vocab.encoding = TextEncoding::kByteLevel;
    vocab.model = MergeModel::kRanks;
  } else if (*model == "bert") {
    vocab.encoding = TextEncoding::kWordPiece;
    vocab.model = MergeModel::kWordPiece;
  } else {
    return absl::UnimplementedError(
        absl::StrCat("tokenizer model '", *model, "' ('", kModel, "') is not supported"));
  }
  RETURN_IF_ERROR(ReadTokens(gguf, &vocab));

  if (vocab.encoding == TextEncoding::kByteLevel) {
    RETURN_IF_ERROR(ReadMerges(gguf, &vocab));
    constexpr absl::string_view kPre = "tokenizer.ggml.pre";
    if (gguf.HasKey(kPre)) {
      ASSIGN_OR_RETURN(absl::string_view pre, gguf.GetString(kPre));
      vocab.pre_tokenizer = std::string(pre);
    } else {
      vocab.pre_tokenizer = "default";
    }
    // Fail here, naming the key, rather than later in Tokenizer::Create.
    RETURN_IF_ERROR(PreTokenizer::FamilyRegexes(vocab.pre_tokenizer).status());
    vocab.ignore_merges = PreTokenizer::FamilyIgnoresMerges(vocab.pre_tokenizer);
  }

  RETURN_IF_ERROR(ReadId(gguf, "tokenizer.ggml.bos_token_id", &vocab.bos_id));
  RETURN_IF_ERROR(ReadId(gguf, "tokenizer.ggml.eos_token_id", &vocab.eos_id));
  RETURN_IF_ERROR(ReadId(gguf, "tokenizer.ggml.unknown_token_id", &vocab.unk_id));
  RETURN_IF_ERROR(ReadId(gguf, "tokenizer.ggml.padding_token_id", &vocab.pad_id));
  // End of turn (<|eot_id|>, <end_of_turn>) and end of message (Llama 3.1's <|eom_id|>).
  for (absl::string_view key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    std::optional<int32_t> id;
    RETURN_IF_ERROR(ReadId(gguf, key, &id));
    if (id.has_value() && static_cast<size_t>(*id) >= vocab.tokens.size()) {
      return absl::DataLossError(absl::StrCat(
          "'", key, "' = ", *id, " is outside the vocabulary of ", vocab.tokens.size(), " tokens"));
    }
    if (id.has_value() && std::find(vocab.end_of_turn_ids.begin(), vocab.end_of_turn_ids.end(),
                                    *id) == vocab.end_of_turn_ids.end()) {
      vocab.end_of_turn_ids.push_back(*id);
    }
  }
  if (vocab.encoding == TextEncoding::kWordPiece) {
    // BERT frames a text as [CLS] ... [SEP].
    RETURN_IF_ERROR(ReadId(gguf, "tokenizer.ggml.cls_token_id", &vocab.bos_id));
    RETURN_IF_ERROR(ReadId(gguf, "tokenizer.ggml.seperator_token_id", &vocab.eos_id));
    vocab.add_bos = vocab.bos_id.has_value();
    vocab.add_eos = vocab.eos_id.has_value();
  }
  RETURN_IF_ERROR(ReadBool(gguf, "tokenizer.ggml.add_bos_token", &vocab.add_bos));
  RETURN_IF_ERROR(ReadBool(gguf, "tokenizer.ggml.add_eos_token", &vocab.add_eos));
  if (vocab.encoding == TextEncoding::kMetaspace) {
    bool add_space_prefix = true;
    RETURN_IF_ERROR(ReadBool(gguf, "tokenizer.ggml.add_space_prefix", &add_space_prefix));
    vocab.space_prefix = add_space_prefix ? SpacePrefix::kAlways : SpacePrefix::kNever;
  }
  // The file says BOS should be added but names none: don't add it.
  if (vocab.add_bos && !vocab.bos_id.has_value()) vocab.add_bos = false;
  if (vocab.add_eos && !vocab.eos_id.has_value()) vocab.add_eos = false;
  RETURN_IF_ERROR(ApplyPhi3Strips(gguf, &vocab));
  RETURN_IF_ERROR(ValidateVocabulary(vocab));
  return vocab;
}

}  // namespace tandem
