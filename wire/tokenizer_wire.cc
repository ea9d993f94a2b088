#include "wire/tokenizer_wire.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace tandem {
namespace {

v1::TextEncoding EncodingToProto(TextEncoding encoding) {
  switch (encoding) {
    case TextEncoding::kMetaspace:
      return v1::TEXT_ENCODING_METASPACE;
    case TextEncoding::kByteLevel:
      return v1::TEXT_ENCODING_BYTE_LEVEL;
    case TextEncoding::kWordPiece:
      return v1::TEXT_ENCODING_WORD_PIECE;
  }
  return v1::TEXT_ENCODING_UNSPECIFIED;
}

v1::MergeModel ModelToProto(MergeModel model) {
  switch (model) {
    case MergeModel::kScores:
      return v1::MERGE_MODEL_SCORES;
    case MergeModel::kRanks:
      return v1::MERGE_MODEL_RANKS;
    case MergeModel::kWordPiece:
      return v1::MERGE_MODEL_WORD_PIECE;
  }
  return v1::MERGE_MODEL_UNSPECIFIED;
}

v1::SpacePrefix PrefixToProto(SpacePrefix prefix) {
  switch (prefix) {
    case SpacePrefix::kNever:
      return v1::SPACE_PREFIX_NEVER;
    case SpacePrefix::kFirst:
      return v1::SPACE_PREFIX_FIRST;
    case SpacePrefix::kAlways:
      return v1::SPACE_PREFIX_ALWAYS;
  }
  return v1::SPACE_PREFIX_UNSPECIFIED;
}

absl::Status UnknownEnum(const char* field, int value) {
  return absl::DataLossError(
      absl::StrCat("tokenizer data: ", field, " ", value, " is not a known value"));
}

// The enums of `data` into `vocab`.
absl::Status EnumsFromProto(const v1::TokenizerData& data, Vocabulary& vocab) {
  switch (data.encoding()) {
    case v1::TEXT_ENCODING_METASPACE:
      vocab.encoding = TextEncoding::kMetaspace;
      break;
    case v1::TEXT_ENCODING_BYTE_LEVEL:
      vocab.encoding = TextEncoding::kByteLevel;
      break;
    case v1::TEXT_ENCODING_WORD_PIECE:
      vocab.encoding = TextEncoding::kWordPiece;
      break;
    default:
      return UnknownEnum("encoding", data.encoding());
  }
  switch (data.merge_model()) {
    case v1::MERGE_MODEL_SCORES:
      vocab.model = MergeModel::kScores;
      break;
    case v1::MERGE_MODEL_RANKS:
      vocab.model = MergeModel::kRanks;
      break;
    case v1::MERGE_MODEL_WORD_PIECE:
      vocab.model = MergeModel::kWordPiece;
      break;
    default:
      return UnknownEnum("merge_model", data.merge_model());
  }
  switch (data.space_prefix()) {
    case v1::SPACE_PREFIX_NEVER:
      vocab.space_prefix = SpacePrefix::kNever;
      break;
    case v1::SPACE_PREFIX_FIRST:
      vocab.space_prefix = SpacePrefix::kFirst;
      break;
    case v1::SPACE_PREFIX_ALWAYS:
      vocab.space_prefix = SpacePrefix::kAlways;
      break;
    default:
      return UnknownEnum("space_prefix", data.space_prefix());
  }
  return absl::OkStatus();
}

std::optional<int32_t> OptionalId(bool has, int32_t id) {
  return has ? std::optional<int32_t>(id) : std::nullopt;
}

}  // namespace

void TokenizerToProto(const Vocabulary& vocab, const std::optional<std::string>& chat_template,
                      v1::TokenizerData* data) {
  data->set_encoding(EncodingToProto(vocab.encoding));
  data->set_merge_model(ModelToProto(vocab.model));
  data->mutable_tokens()->Assign(vocab.tokens.begin(), vocab.tokens.end());
  for (TokenType type : vocab.types) data->add_token_types(static_cast<int32_t>(type));
  data->mutable_scores()->Assign(vocab.scores.begin(), vocab.scores.end());
  for (const auto& [left, right] : vocab.merges) {
    data->add_merge_left(left);
    data->add_merge_right(right);
  }
  data->set_pre_tokenizer(vocab.pre_tokenizer);
  data->mutable_pre_tokenizer_regexes()->Assign(vocab.pre_tokenizer_regexes.begin(),
                                                vocab.pre_tokenizer_regexes.end());
  if (vocab.bos_id.has_value()) data->set_bos_id(*vocab.bos_id);
  if (vocab.eos_id.has_value()) data->set_eos_id(*vocab.eos_id);
  if (vocab.unk_id.has_value()) data->set_unk_id(*vocab.unk_id);
  if (vocab.pad_id.has_value()) data->set_pad_id(*vocab.pad_id);
  data->mutable_end_of_turn_ids()->Assign(vocab.end_of_turn_ids.begin(),
                                          vocab.end_of_turn_ids.end());
  data->mutable_lstrip_ids()->Assign(vocab.lstrip_ids.begin(), vocab.lstrip_ids.end());
  data->mutable_rstrip_ids()->Assign(vocab.rstrip_ids.begin(), vocab.rstrip_ids.end());
  data->set_add_bos(vocab.add_bos);
  data->set_add_eos(vocab.add_eos);
  data->set_space_prefix(PrefixToProto(vocab.space_prefix));
  data->set_metaspace_split(vocab.metaspace_split);
  data->set_byte_prefix_space(vocab.byte_prefix_space);
  data->set_byte_fallback(vocab.byte_fallback);
  data->set_ignore_merges(vocab.ignore_merges);
  data->set_fuse_unk(vocab.fuse_unk);
  if (chat_template.has_value()) data->set_chat_template(*chat_template);
}

absl::StatusOr<Vocabulary> VocabularyFromProto(const v1::TokenizerData& data) {
  Vocabulary vocab;
  if (absl::Status s = EnumsFromProto(data, vocab); !s.ok()) return s;
  if (data.merge_left_size() != data.merge_right_size()) {
    return absl::DataLossError(absl::StrCat("tokenizer data: ", data.merge_left_size(),
                                            " merge_left but ", data.merge_right_size(),
                                            " merge_right"));
  }
  vocab.tokens.assign(data.tokens().begin(), data.tokens().end());
  for (int32_t type : data.token_types()) vocab.types.push_back(static_cast<TokenType>(type));
  vocab.scores.assign(data.scores().begin(), data.scores().end());
  vocab.merges.reserve(data.merge_left_size());
  for (int i = 0; i < data.merge_left_size(); ++i) {
    vocab.merges.emplace_back(data.merge_left(i), data.merge_right(i));
  }
  vocab.pre_tokenizer = data.pre_tokenizer();
  vocab.pre_tokenizer_regexes.assign(data.pre_tokenizer_regexes().begin(),
                                     data.pre_tokenizer_regexes().end());
  vocab.bos_id = OptionalId(data.has_bos_id(), data.bos_id());
  vocab.eos_id = OptionalId(data.has_eos_id(), data.eos_id());
  vocab.unk_id = OptionalId(data.has_unk_id(), data.unk_id());
  vocab.pad_id = OptionalId(data.has_pad_id(), data.pad_id());
  vocab.end_of_turn_ids.assign(data.end_of_turn_ids().begin(), data.end_of_turn_ids().end());
  vocab.lstrip_ids.assign(data.lstrip_ids().begin(), data.lstrip_ids().end());
  vocab.rstrip_ids.assign(data.rstrip_ids().begin(), data.rstrip_ids().end());
  vocab.add_bos = data.add_bos();
  vocab.add_eos = data.add_eos();
  vocab.metaspace_split = data.metaspace_split();
  vocab.byte_prefix_space = data.byte_prefix_space();
  vocab.byte_fallback = data.byte_fallback();
  vocab.ignore_merges = data.ignore_merges();
  vocab.fuse_unk = data.fuse_unk();
  return vocab;
}

std::optional<std::string> ChatTemplateFromProto(const v1::TokenizerData& data) {
  if (!data.has_chat_template()) return std::nullopt;
  return data.chat_template();
}

}  // namespace tandem
