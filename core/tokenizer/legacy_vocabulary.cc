#include "core/tokenizer/legacy_vocabulary.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/tokenizer/pre_tokenizer.h"

namespace tandem {
namespace {

// Protobuf wire format: a message is a run of (varint key = field << 3 | wire type, value).
enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

struct Field {
  uint32_t number = 0;
  WireType type = kVarint;
  uint64_t varint = 0;      // kVarint, kFixed64, kFixed32 (raw bits)
  absl::string_view bytes;  // kLengthDelimited
};

class WireReader {
 public:
  WireReader(absl::string_view data, absl::string_view what) : data_(data), what_(what) {}

  bool done() const { return pos_ >= data_.size(); }

  absl::StatusOr<Field> Next() {
    ASSIGN_OR_RETURN(uint64_t key, Varint());
    Field f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.type = static_cast<WireType>(key & 7);
    switch (f.type) {
      case kVarint: {
        ASSIGN_OR_RETURN(f.varint, Varint());
        return f;
      }
      case kFixed64:
      case kFixed32: {
        const size_t n = f.type == kFixed64 ? 8 : 4;
        if (data_.size() - pos_ < n) return Corrupt("truncated fixed-size field");
        f.varint = 0;
        for (size_t i = 0; i < n; ++i) {
          f.varint |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
        }
        pos_ += n;
        return f;
      }
      case kLengthDelimited: {
        ASSIGN_OR_RETURN(uint64_t n, Varint());
        if (n > data_.size() - pos_) return Corrupt("length runs past the end");
        f.bytes = data_.substr(pos_, n);
        pos_ += n;
        return f;
      }
    }
    return Corrupt(absl::StrCat("unsupported wire type ", key & 7));
  }

 private:
  absl::StatusOr<uint64_t> Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return Corrupt("truncated varint");
      const auto b = static_cast<uint8_t>(data_[pos_++]);
      value |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return value;
    }
    return Corrupt("varint longer than 10 bytes");
  }

  absl::Status Corrupt(absl::string_view why) const {
    return absl::DataLossError(
        absl::StrCat("malformed SentencePiece model: ", what_, " at byte ", pos_, ": ", why));
  }

  absl::string_view data_;
  absl::string_view what_;
  size_t pos_ = 0;
};

float FloatFromBits(uint64_t bits) {
  const auto u = static_cast<uint32_t>(bits);
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// SentencePiece's ModelProto.SentencePiece: 1 piece, 2 score, 3 type (default NORMAL).
absl::Status ReadPiece(absl::string_view bytes, Vocabulary* vocab) {
  WireReader reader(bytes, absl::StrCat("piece ", vocab->tokens.size()));
  std::string piece;
  float score = 0;
  int64_t type = static_cast<int64_t>(TokenType::kNormal);
  while (!reader.done()) {
    ASSIGN_OR_RETURN(Field f, reader.Next());
    if (f.number == 1 && f.type == kLengthDelimited) piece = std::string(f.bytes);
    if (f.number == 2 && f.type == kFixed32) score = FloatFromBits(f.varint);
    if (f.number == 3 && f.type == kVarint) type = static_cast<int64_t>(f.varint);
  }
  if (type < 1 || type > static_cast<int64_t>(TokenType::kByte)) {
    return absl::DataLossError(absl::StrCat("SentencePiece piece ", vocab->tokens.size(), " '",
                                            piece, "' has unknown type ", type));
  }
  vocab->tokens.push_back(std::move(piece));
  vocab->scores.push_back(score);
  vocab->types.push_back(static_cast<TokenType>(type));
  return absl::OkStatus();
}

// A proto int32 is a sign-extended varint.
std::optional<int32_t> IdOrNone(uint64_t varint) {
  const auto id = static_cast<int32_t>(static_cast<int64_t>(varint));
  if (id < 0) return std::nullopt;
  return id;
}

// TrainerSpec: 3 model_type (1 unigram, 2 bpe, 3 word, 4 char), 35 byte_fallback,
// 40 unk_id, 41 bos_id, 42 eos_id, 43 pad_id.
absl::Status ReadTrainerSpec(absl::string_view bytes, Vocabulary* vocab) {
  WireReader reader(bytes, "trainer_spec");
  while (!reader.done()) {
    ASSIGN_OR_RETURN(Field f, reader.Next());
    if (f.type != kVarint) continue;
    switch (f.number) {
      case 3:
        if (f.varint != 2) {
          return absl::UnimplementedError(absl::StrCat("SentencePiece model type ", f.varint,
                                                       " is not supported (only BPE = 2)"));
        }
        break;
      case 35:
        vocab->byte_fallback = f.varint != 0;
        break;
      case 40:
        vocab->unk_id = IdOrNone(f.varint);
        break;
      case 41:
        vocab->bos_id = IdOrNone(f.varint);
        break;
      case 42:
        vocab->eos_id = IdOrNone(f.varint);
        break;
      case 43:
        vocab->pad_id = IdOrNone(f.varint);
        break;
      default:
        break;
    }
  }
  return absl::OkStatus();
}

// NormalizerSpec: 3 add_dummy_prefix (default true).
absl::Status ReadNormalizerSpec(absl::string_view bytes, Vocabulary* vocab) {
  WireReader reader(bytes, "normalizer_spec");
  while (!reader.done()) {
    ASSIGN_OR_RETURN(Field f, reader.Next());
    if (f.number == 3 && f.type == kVarint) {
      vocab->space_prefix = f.varint != 0 ? SpacePrefix::kAlways : SpacePrefix::kNever;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Vocabulary> VocabularyFromSentencePiece(absl::string_view bytes) {
  Vocabulary vocab;
  vocab.encoding = TextEncoding::kMetaspace;
  vocab.model = MergeModel::kScores;
  vocab.space_prefix = SpacePrefix::kAlways;
  // SentencePiece's defaults; the trainer spec may override them.
  vocab.unk_id = 0;
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  vocab.add_bos = true;
  // ModelProto: 1 pieces (repeated), 2 trainer_spec, 3 normalizer_spec.
  WireReader reader(bytes, "ModelProto");
  while (!reader.done()) {
    ASSIGN_OR_RETURN(Field f, reader.Next());
    if (f.type != kLengthDelimited) continue;
    if (f.number == 1) RETURN_IF_ERROR(ReadPiece(f.bytes, &vocab));
    if (f.number == 2) RETURN_IF_ERROR(ReadTrainerSpec(f.bytes, &vocab));
    if (f.number == 3) RETURN_IF_ERROR(ReadNormalizerSpec(f.bytes, &vocab));
  }
  if (vocab.tokens.empty()) {
    return absl::DataLossError("malformed SentencePiece model: no pieces");
  }
  RETURN_IF_ERROR(ValidateVocabulary(vocab));
  return vocab;
}

absl::StatusOr<Vocabulary> VocabularyFromGpt2Files(absl::string_view encoder_json,
                                                   absl::string_view vocab_bpe,
                                                   absl::string_view pre_tokenizer) {
  RETURN_IF_ERROR(PreTokenizer::FamilyRegexes(pre_tokenizer).status());
  absl::StatusOr<json::Value> encoder = json::Parse(encoder_json);
  if (!encoder.ok()) {
    return absl::DataLossError(absl::StrCat("encoder.json: ", encoder.status().message()));
  }
  if (!encoder->is_object()) return absl::DataLossError("encoder.json is not a JSON object");
  Vocabulary vocab;
  vocab.encoding = TextEncoding::kByteLevel;
  vocab.model = MergeModel::kRanks;
  vocab.pre_tokenizer = std::string(pre_tokenizer);
  vocab.ignore_merges = PreTokenizer::FamilyIgnoresMerges(pre_tokenizer);
  const json::Object& object = encoder->as_object();
  vocab.tokens.resize(object.size());
  vocab.types.assign(object.size(), TokenType::kNormal);
  for (const auto& [text, id] : object) {
    if (!id.is_int() || id.as_int() < 0 || id.as_int() >= static_cast<int64_t>(object.size())) {
      return absl::DataLossError(
          absl::StrCat("encoder.json: the id of '", text, "' is not in [0, ", object.size(), ")"));
    }
    std::string& slot = vocab.tokens[id.as_int()];
    if (!slot.empty()) {
      return absl::DataLossError(absl::StrCat("encoder.json: id ", id.as_int(), " is used twice"));
    }
    slot = text;
  }
  size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(vocab_bpe, '\n')) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_number == 1 && absl::StartsWith(line, "#version"))) continue;
    const size_t space = line.find(' ', 1);
    if (space == absl::string_view::npos) {
      return absl::DataLossError(
          absl::StrCat("vocab.bpe line ", line_number, ": '", line, "' is not two tokens"));
    }
    vocab.merges.emplace_back(std::string(line.substr(0, space)),
                              std::string(line.substr(space + 1)));
  }
  RETURN_IF_ERROR(ValidateVocabulary(vocab));
  return vocab;
}

}  // namespace tandem
