#include "core/tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/base/status_macros.h"
#include "core/base/utf8.h"
#include "core/tokenizer/bpe_merge.h"
#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/pre_tokenizer.h"
#include "core/tokenizer/wordpiece.h"

namespace tandem {
namespace {

constexpr absl::string_view kMetaspace = "\xE2\x96\x81";  // '▁' U+2581

// A stretch of the input: plain text, or a special token found in it.
struct Segment {
  absl::string_view text;
  int32_t id = -1;  // >= 0 for a special token
};

// The whitespace a stripping special token absorbs (as llama.cpp's isspace).
bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool IsSpecialType(TokenType type) {
  return type == TokenType::kControl || type == TokenType::kUnknown;
}

// The bytes a token stands for, as Decode emits them.
std::string TokenBytesOf(const Vocabulary& vocab, size_t id) {
  const std::string& text = vocab.tokens[id];
  const TokenType type = vocab.types[id];
  if (type == TokenType::kControl || type == TokenType::kUnknown ||
      type == TokenType::kUserDefined) {
    return text;
  }
  switch (vocab.encoding) {
    case TextEncoding::kByteLevel: {
      std::optional<std::string> bytes = ByteLevelDecode(text);
      return bytes.has_value() ? *std::move(bytes) : text;
    }
    case TextEncoding::kMetaspace: {
      unsigned int byte = 0;
      if (type == TokenType::kByte && text.size() == 6 &&
          absl::string_view(text).substr(0, 3) == "<0x" && text[5] == '>' &&
          absl::SimpleHexAtoi(absl::string_view(text).substr(3, 2), &byte)) {
        return std::string(1, static_cast<char>(byte));
      }
      return absl::StrReplaceAll(text, {{kMetaspace, " "}});
    }
    case TextEncoding::kWordPiece:
      return absl::StrReplaceAll(text, {{kMetaspace, " "}});
  }
  return text;
}

}  // namespace

struct Tokenizer::Impl {
  Vocabulary vocab;
  std::string fingerprint;
  TokenIndex index;                                       // stored text -> id (first id wins)
  absl::flat_hash_map<std::string, int32_t> bytes_index;  // kByteLevel: raw bytes -> id
  std::vector<std::string> token_bytes;
  std::array<int32_t, 256> byte_ids;  // the token of each byte, -1 if none
  MergeTable merges;
  std::optional<PreTokenizer> pre_tokenizer;
  std::optional<WordPiece> wordpiece;
  // Tokens recognised in text, by first byte, longest first: (text, id, control?).
  struct Special {
    std::string text;
    int32_t id;
    bool control;
    bool lstrip = false;  // absorbs the whitespace before it
    bool rstrip = false;  // ... after it
  };
  std::array<std::vector<Special>, 256> specials;

  absl::Status BuildMerges();
  void Partition(absl::string_view text, bool parse_special, std::vector<Segment>* out) const;
  absl::Status EncodeText(absl::string_view text, bool at_start, bool after_special,
                          std::vector<int32_t>* out) const;
  void EncodeMetaspace(absl::string_view normalized, std::vector<int32_t>* out) const;
  void AppendCharIds(absl::string_view chars, std::vector<int32_t>* out) const;
  absl::Status EncodeByteLevel(absl::string_view text, std::vector<int32_t>* out) const;
};

absl::Status Tokenizer::Impl::BuildMerges() {
  merges.reserve(vocab.merges.size());
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const auto& [left, right] = vocab.merges[rank];
    auto l = index.find(left);
    auto r = index.find(right);
    auto m = index.find(absl::StrCat(left, right));
    if (l == index.end() || r == index.end() || m == index.end()) {
      return absl::DataLossError(absl::StrCat("merge ", rank, " '", left, " ", right,
                                              "' joins text that is not in the vocabulary"));
    }
    // The first (lowest-rank) occurrence of a pair wins.
    merges.try_emplace(MergeKey(l->second, r->second),
                       MergeResult{static_cast<int32_t>(rank), m->second});
  }
  return absl::OkStatus();
}

absl::StatusOr<Tokenizer> Tokenizer::Create(Vocabulary vocab) {
  RETURN_IF_ERROR(ValidateVocabulary(vocab));
  auto impl = std::make_shared<Impl>();
  impl->fingerprint = VocabularyFingerprint(vocab);
  impl->vocab = std::move(vocab);
  for (auto* ids : {&impl->vocab.lstrip_ids, &impl->vocab.rstrip_ids}) {
    std::sort(ids->begin(), ids->end());  // for binary_search below
  }
  const Vocabulary& v = impl->vocab;
  const size_t n = v.tokens.size();

  impl->index.reserve(n);
  impl->token_bytes.reserve(n);
  impl->byte_ids.fill(-1);
  for (size_t id = 0; id < n; ++id) {
    impl->index.try_emplace(v.tokens[id], static_cast<int32_t>(id));
    impl->token_bytes.push_back(TokenBytesOf(v, id));
    const TokenType type = v.types[id];
    if (type == TokenType::kControl || type == TokenType::kUnknown ||
        type == TokenType::kUserDefined) {
      const auto first = static_cast<uint8_t>(v.tokens[id][0]);
      const auto has = [&](const std::vector<int32_t>& ids) {
        return std::binary_search(ids.begin(), ids.end(), static_cast<int32_t>(id));
      };
      impl->specials[first].push_back({v.tokens[id], static_cast<int32_t>(id),
                                       type != TokenType::kUserDefined, has(v.lstrip_ids),
                                       has(v.rstrip_ids)});
    }
    if (v.encoding == TextEncoding::kByteLevel && type != TokenType::kControl &&
        type != TokenType::kUnknown) {
      impl->bytes_index.try_emplace(impl->token_bytes[id], static_cast<int32_t>(id));
    }
  }
  for (auto& bucket : impl->specials) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [](const Impl::Special& a, const Impl::Special& b) {
                       return a.text.size() > b.text.size();
                     });
  }
  for (int b = 0; b < 256; ++b) {
    std::string text;
    if (v.encoding == TextEncoding::kByteLevel) {
      text = ByteLevelEncode(std::string(1, static_cast<char>(b)));
    } else {
      text = absl::StrFormat("<0x%02X>", b);
    }
    auto it = impl->index.find(text);
    if (it != impl->index.end()) impl->byte_ids[b] = it->second;
  }

  if (v.model == MergeModel::kRanks) RETURN_IF_ERROR(impl->BuildMerges());
  if (v.encoding == TextEncoding::kByteLevel) {
    std::vector<std::string> regexes = v.pre_tokenizer_regexes;
    if (regexes.empty()) {
      ASSIGN_OR_RETURN(regexes, PreTokenizer::FamilyRegexes(v.pre_tokenizer));
    }
    ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::Create(regexes));
    impl->pre_tokenizer.emplace(std::move(pre));
  }
  if (v.model == MergeModel::kWordPiece || v.encoding == TextEncoding::kWordPiece) {
    if (v.model != MergeModel::kWordPiece || v.encoding != TextEncoding::kWordPiece) {
      return absl::UnimplementedError(
          "WordPiece merging needs the WordPiece text encoding and vice versa");
    }
    ASSIGN_OR_RETURN(WordPiece wp, WordPiece::Create(&impl->index, v.unk_id));
    impl->wordpiece.emplace(std::move(wp));
  }
  return Tokenizer(std::move(impl));
}

void Tokenizer::Impl::Partition(absl::string_view text, bool parse_special,
                                std::vector<Segment>* out) const {
  size_t plain_begin = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const Special* found = nullptr;
    for (const Special& s : specials[static_cast<uint8_t>(text[pos])]) {
      if ((parse_special || !s.control) && text.substr(pos, s.text.size()) == s.text) {
        found = &s;
        break;
      }
    }
    if (found == nullptr) {
      ++pos;
      continue;
    }
    size_t plain_end = pos;
    if (found->lstrip) {
      while (plain_end > plain_begin && IsAsciiSpace(text[plain_end - 1])) --plain_end;
    }
    if (plain_end > plain_begin) {
      out->push_back({text.substr(plain_begin, plain_end - plain_begin)});
    }
    out->push_back({text.substr(pos, found->text.size()), found->id});
    pos += found->text.size();
    if (found->rstrip) {
      while (pos < text.size() && IsAsciiSpace(text[pos])) ++pos;
    }
    plain_begin = pos;
  }
  if (plain_begin < text.size()) out->push_back({text.substr(plain_begin)});
}

void Tokenizer::Impl::AppendCharIds(absl::string_view chars, std::vector<int32_t>* out) const {
  // One character without a token of its own: its bytes' tokens, else the unknown token.
  bool all_bytes = vocab.byte_fallback;
  for (size_t i = 0; all_bytes && i < chars.size(); ++i) {
    all_bytes = byte_ids[static_cast<uint8_t>(chars[i])] >= 0;
  }
  if (all_bytes) {
    for (char c : chars) out->push_back(byte_ids[static_cast<uint8_t>(c)]);
    return;
  }
  if (!vocab.unk_id.has_value()) return;
  if (vocab.fuse_unk && !out->empty() && out->back() == *vocab.unk_id) return;
  out->push_back(*vocab.unk_id);
}

void Tokenizer::Impl::EncodeMetaspace(absl::string_view normalized,
                                      std::vector<int32_t>* out) const {
  if (vocab.model == MergeModel::kScores) {
    for (absl::string_view piece : MergeByScores(normalized, index, vocab.scores)) {
      auto it = index.find(piece);
      if (it != index.end()) {
        out->push_back(it->second);
      } else {
        AppendCharIds(piece, out);
      }
    }
    return;
  }
  // Merge ranks over ids: characters first (byte fallback for those without a token).
  std::vector<int32_t> ids;
  for (size_t pos = 0; pos < normalized.size();) {
    const size_t n = utf8::CharLength(normalized, pos);
    auto it = index.find(normalized.substr(pos, n));
    if (it != index.end()) {
      ids.push_back(it->second);
    } else {
      AppendCharIds(normalized.substr(pos, n), &ids);
    }
    pos += n;
  }
  MergeByRanks(merges, &ids);
  out->insert(out->end(), ids.begin(), ids.end());
}

absl::Status Tokenizer::Impl::EncodeByteLevel(absl::string_view text,
                                              std::vector<int32_t>* out) const {
  std::vector<absl::string_view> pieces;
  RETURN_IF_ERROR(pre_tokenizer->Split(text, &pieces));
  std::vector<int32_t> ids;
  for (absl::string_view piece : pieces) {
    if (vocab.ignore_merges) {
      auto it = bytes_index.find(piece);
      if (it != bytes_index.end()) {
        out->push_back(it->second);
        continue;
      }
    }
    ids.clear();
    for (char c : piece) {
      const int32_t id = byte_ids[static_cast<uint8_t>(c)];
      if (id >= 0) {
        ids.push_back(id);
      } else if (vocab.unk_id.has_value()) {
        ids.push_back(*vocab.unk_id);
      }
    }
    MergeByRanks(merges, &ids);
    out->insert(out->end(), ids.begin(), ids.end());
  }
  return absl::OkStatus();
}

absl::Status Tokenizer::Impl::EncodeText(absl::string_view text, bool at_start, bool after_special,
                                         std::vector<int32_t>* out) const {
  switch (vocab.encoding) {
    case TextEncoding::kMetaspace: {
      std::string normalized;
      if (vocab.space_prefix == SpacePrefix::kAlways ||
          (vocab.space_prefix == SpacePrefix::kFirst && at_start)) {
        if (at_start || after_special) normalized = std::string(kMetaspace);
      }
      normalized += absl::StrReplaceAll(text, {{" ", kMetaspace}});
      if (!vocab.metaspace_split) {
        EncodeMetaspace(normalized, out);
        return absl::OkStatus();
      }
      // Each word starts at a '▁' and is merged on its own.
      size_t begin = 0;
      while (begin < normalized.size()) {
        size_t end = normalized.find(kMetaspace.data(), begin + 1, kMetaspace.size());
        if (end == std::string::npos) end = normalized.size();
        EncodeMetaspace(absl::string_view(normalized).substr(begin, end - begin), out);
        begin = end;
      }
      return absl::OkStatus();
    }
    case TextEncoding::kByteLevel:
      if (vocab.byte_prefix_space && at_start && !absl::StartsWith(text, " ")) {
        return EncodeByteLevel(absl::StrCat(" ", text), out);
      }
      return EncodeByteLevel(text, out);
    case TextEncoding::kWordPiece:
      return wordpiece->Encode(text, out);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::Encode(absl::string_view text,
                                                       const EncodeOptions& options) const {
  RETURN_IF_ERROR(utf8::Validate(text));
  const Vocabulary& v = impl_->vocab;
  std::vector<int32_t> ids;
  if (options.add_special && v.add_bos) ids.push_back(*v.bos_id);
  std::vector<Segment> segments;
  impl_->Partition(text, options.parse_special, &segments);
  bool after_special = true;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& segment = segments[i];
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      after_special = true;
      continue;
    }
    RETURN_IF_ERROR(impl_->EncodeText(segment.text, /*at_start=*/i == 0, after_special, &ids));
    after_special = false;
  }
  if (options.add_special && v.add_eos) ids.push_back(*v.eos_id);
  return ids;
}

absl::StatusOr<std::string> Tokenizer::Decode(absl::Span<const int32_t> ids,
                                              const DecodeOptions& options) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("token id ", id, " is outside the vocabulary of ", vocab_size(), " tokens"));
    }
    absl::StrAppend(&out, Piece(id, options.render_special));
  }
  if (options.strip_leading_space && adds_leading_space() && absl::StartsWith(out, " ")) {
    out.erase(0, 1);
  }
  return out;
}

absl::StatusOr<absl::string_view> Tokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("token id ", id, " is outside the vocabulary of ", vocab_size(), " tokens"));
  }
  return absl::string_view(impl_->token_bytes[id]);
}

absl::string_view Tokenizer::Piece(int32_t id, bool render_special) const {
  if (!render_special && IsSpecialType(impl_->vocab.types[id])) return {};
  return impl_->token_bytes[id];
}

std::optional<int32_t> Tokenizer::TokenId(absl::string_view text) const {
  auto it = impl_->index.find(text);
  if (it == impl_->index.end()) return std::nullopt;
  return it->second;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->vocab.tokens.size()); }

const Vocabulary& Tokenizer::vocabulary() const { return impl_->vocab; }

bool Tokenizer::adds_leading_space() const {
  const Vocabulary& v = impl_->vocab;
  return (v.encoding == TextEncoding::kMetaspace && v.space_prefix != SpacePrefix::kNever) ||
         v.encoding == TextEncoding::kWordPiece;
}

const std::string& Tokenizer::fingerprint() const { return impl_->fingerprint; }

}  // namespace tandem
