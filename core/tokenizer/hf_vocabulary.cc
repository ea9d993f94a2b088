#include "core/tokenizer/hf_vocabulary.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/tokenizer/pre_tokenizer.h"

namespace tandem {
namespace {

constexpr absl::string_view kMetaspace = "\xE2\x96\x81";  // '▁'

absl::Status Malformed(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("malformed tokenizer.json: ", what));
}

// The string member `key` of `object`, or nullopt if absent or not a string.
std::optional<std::string> StringMember(const json::Value& object, absl::string_view key) {
  if (!object.is_object()) return std::nullopt;
  const json::Value* v = object.as_object().Find(key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->as_string();
}

bool BoolMember(const json::Value& object, absl::string_view key, bool fallback) {
  const json::Value* v = object.as_object().Find(key);
  return v != nullptr && v->is_bool() ? v->as_bool() : fallback;
}

std::string TypeOf(const json::Value& v) {
  std::optional<std::string> type = StringMember(v, "type");
  return type.value_or("");
}

// What the normaliser and pre-tokenizer amount to.
struct Normalisation {
  bool byte_level = false;
  bool byte_level_regex = false;  // ByteLevel's own (GPT-2) regex
  bool byte_prefix_space = false;
  bool metaspace = false;
  SpacePrefix space_prefix = SpacePrefix::kNever;
  bool metaspace_split = false;
  std::vector<std::string> regexes;  // from Split and Digits, in order
};

absl::Status ReadNormalizer(const json::Value& v, Normalisation* n) {
  if (v.is_null()) return absl::OkStatus();
  if (!v.is_object()) return Malformed("'normalizer' is not an object");
  const std::string type = TypeOf(v);
  if (type == "Sequence") {
    const json::Value* list = v.as_object().Find("normalizers");
    if (list == nullptr || !list->is_array()) return Malformed("Sequence has no 'normalizers'");
    for (const json::Value& item : list->as_array()) RETURN_IF_ERROR(ReadNormalizer(item, n));
    return absl::OkStatus();
  }
  if (type == "Prepend" && StringMember(v, "prepend") == std::string(kMetaspace)) {
    n->metaspace = true;
    n->space_prefix = SpacePrefix::kAlways;
    return absl::OkStatus();
  }
  if (type == "Replace" && StringMember(v, "content") == std::string(kMetaspace)) {
    const json::Value* pattern = v.as_object().Find("pattern");
    if (pattern != nullptr && StringMember(*pattern, "String") == std::string(" ")) {
      n->metaspace = true;
      return absl::OkStatus();
    }
  }
  if (type == "NFC") return absl::OkStatus();
  return absl::UnimplementedError(
      absl::StrCat("tokenizer.json normalizer '", type, "' is not supported"));
}

absl::Status ReadPreTokenizer(const json::Value& v, Normalisation* n) {
  if (v.is_null()) return absl::OkStatus();
  if (!v.is_object()) return Malformed("'pre_tokenizer' is not an object");
  const std::string type = TypeOf(v);
  if (type == "Sequence") {
    const json::Value* list = v.as_object().Find("pretokenizers");
    if (list == nullptr || !list->is_array()) return Malformed("Sequence has no 'pretokenizers'");
    for (const json::Value& item : list->as_array()) RETURN_IF_ERROR(ReadPreTokenizer(item, n));
    return absl::OkStatus();
  }
  if (type == "ByteLevel") {
    n->byte_level = true;
    n->byte_level_regex = BoolMember(v, "use_regex", true);
    n->byte_prefix_space = BoolMember(v, "add_prefix_space", false);
    return absl::OkStatus();
  }
  if (type == "Metaspace") {
    if (StringMember(v, "replacement").value_or(std::string(kMetaspace)) != kMetaspace) {
      return absl::UnimplementedError("Metaspace with a replacement other than '▁'");
    }
    n->metaspace = true;
    n->metaspace_split = BoolMember(v, "split", true);
    const std::optional<std::string> scheme = StringMember(v, "prepend_scheme");
    if (scheme.has_value()) {
      n->space_prefix = *scheme == "always"  ? SpacePrefix::kAlways
                        : *scheme == "first" ? SpacePrefix::kFirst
                                             : SpacePrefix::kNever;
    } else {
      n->space_prefix =
          BoolMember(v, "add_prefix_space", true) ? SpacePrefix::kAlways : SpacePrefix::kNever;
    }
    return absl::OkStatus();
  }
  if (type == "Split" && n->metaspace && !n->byte_level) {
    // Gemma's Split on " " after a normalizer that replaced every space by '▁' matches
    // nothing: a no-op (transformers' GemmaTokenizer writes it, merged_with_previous).
    const json::Value* pattern = v.as_object().Find("pattern");
    if (pattern != nullptr && StringMember(*pattern, "String") == std::string(" ") &&
        !BoolMember(v, "invert", false)) {
      return absl::OkStatus();
    }
  }
  if (type == "Split") {
    const json::Value* pattern = v.as_object().Find("pattern");
    std::optional<std::string> regex;
    if (pattern != nullptr) regex = StringMember(*pattern, "Regex");
    if (!regex.has_value() || StringMember(v, "behavior") != std::string("Isolated") ||
        BoolMember(v, "invert", false)) {
      return absl::UnimplementedError(
          "tokenizer.json Split pre-tokenizer other than a non-inverted Isolated Regex");
    }
    n->regexes.push_back(*regex);
    return absl::OkStatus();
  }
  if (type == "Digits") {
    n->regexes.push_back(BoolMember(v, "individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
    return absl::OkStatus();
  }
  return absl::UnimplementedError(
      absl::StrCat("tokenizer.json pre_tokenizer '", type, "' is not supported"));
}

absl::Status ReadMerges(const json::Value& merges, Vocabulary* vocab) {
  if (!merges.is_array()) return Malformed("'model.merges' is not an array");
  for (const json::Value& m : merges.as_array()) {
    const size_t i = vocab->merges.size();
    if (m.is_string()) {
      const std::string& s = m.as_string();
      const size_t space = s.size() > 1 ? s.find(' ', 1) : std::string::npos;
      if (space == std::string::npos) {
        return Malformed(absl::StrCat("merge ", i, " '", s, "' is not two tokens"));
      }
      vocab->merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.as_array().size() == 2 && m.as_array()[0].is_string() &&
               m.as_array()[1].is_string()) {
      vocab->merges.emplace_back(m.as_array()[0].as_string(), m.as_array()[1].as_string());
    } else {
      return Malformed(absl::StrCat("merge ", i, " is neither \"a b\" nor [a, b]"));
    }
  }
  return absl::OkStatus();
}

// Fills tokens/types from model.vocab and added_tokens.
absl::Status ReadTokens(const json::Object& root, const json::Object& model, Vocabulary* vocab) {
  const json::Value* v = model.Find("vocab");
  if (v == nullptr || !v->is_object()) return Malformed("'model.vocab' is not an object");
  std::vector<std::pair<int64_t, const std::string*>> entries;
  std::vector<std::pair<int64_t, bool>> added;  // id, special
  int64_t max_id = -1;
  for (const auto& [text, id] : v->as_object()) {
    if (!id.is_int() || id.as_int() < 0 || id.as_int() > (int64_t{1} << 24)) {
      return Malformed(absl::StrCat("the id of '", text, "' is not a token id"));
    }
    entries.emplace_back(id.as_int(), &text);
    max_id = std::max(max_id, id.as_int());
  }
  const json::Value* added_tokens = root.Find("added_tokens");
  if (added_tokens != nullptr && added_tokens->is_array()) {
    for (const json::Value& t : added_tokens->as_array()) {
      const json::Value* id = t.is_object() ? t.as_object().Find("id") : nullptr;
      const json::Value* content = t.is_object() ? t.as_object().Find("content") : nullptr;
      if (id == nullptr || !id->is_int() || id->as_int() < 0 || id->as_int() > (int64_t{1} << 24) ||
          content == nullptr || !content->is_string()) {
        return Malformed("an added token lacks an integer 'id' or a string 'content'");
      }
      entries.emplace_back(id->as_int(), &content->as_string());
      added.emplace_back(id->as_int(), BoolMember(t, "special", false));
      if (BoolMember(t, "lstrip", false)) vocab->lstrip_ids.push_back(id->as_int());
      if (BoolMember(t, "rstrip", false)) vocab->rstrip_ids.push_back(id->as_int());
      max_id = std::max(max_id, id->as_int());
    }
  }
  vocab->tokens.assign(max_id + 1, "");
  vocab->types.assign(max_id + 1, TokenType::kNormal);
  for (const auto& [id, text] : entries) vocab->tokens[id] = *text;
  for (int64_t id = 0; id <= max_id; ++id) {
    if (vocab->tokens[id].empty()) return Malformed(absl::StrCat("no token has id ", id));
    const std::string& t = vocab->tokens[id];
    if (vocab->byte_fallback && t.size() == 6 && absl::StartsWith(t, "<0x") && t[5] == '>') {
      vocab->types[id] = TokenType::kByte;
    }
  }
  for (const auto& [id, special] : added) {
    vocab->types[id] = special ? TokenType::kControl : TokenType::kUserDefined;
  }
  for (auto* ids : {&vocab->lstrip_ids, &vocab->rstrip_ids}) {
    std::sort(ids->begin(), ids->end());
    ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
  }
  return absl::OkStatus();
}

// A token named in tokenizer_config.json: a string, {"content": ...} or null.
std::optional<std::string> ConfigToken(const json::Value& config, absl::string_view key) {
  if (!config.is_object()) return std::nullopt;
  const json::Value* v = config.as_object().Find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return v->as_string();
  return StringMember(*v, "content");
}

absl::Status ReadSpecials(const json::Object& root, const json::Value& config,
                          const absl::flat_hash_map<std::string, int32_t>& ids, Vocabulary* vocab) {
  const auto lookup = [&](const std::optional<std::string>& text,
                          absl::string_view key) -> absl::StatusOr<std::optional<int32_t>> {
    if (!text.has_value()) return std::optional<int32_t>();
    auto it = ids.find(*text);
    if (it == ids.end()) {
      return absl::DataLossError(
          absl::StrCat("tokenizer_config.json: ", key, " '", *text, "' is not a token"));
    }
    return std::optional<int32_t>(it->second);
  };
  // The post-processor's template: a SpecialToken first adds BOS, one last adds EOS.
  const json::Value* post = root.Find("post_processor");
  if (post != nullptr && TypeOf(*post) == "Sequence") {
    // Llama 3: [ByteLevel, TemplateProcessing]; the template is what adds tokens.
    const json::Value* list = post->as_object().Find("processors");
    const json::Value* found = nullptr;
    if (list != nullptr && list->is_array()) {
      for (const json::Value& item : list->as_array()) {
        if (TypeOf(item) == "TemplateProcessing") found = &item;
      }
    }
    post = found;
  }
  if (post != nullptr && TypeOf(*post) == "TemplateProcessing") {
    const json::Value* single = post->as_object().Find("single");
    if (single != nullptr && single->is_array() && !single->as_array().empty()) {
      const auto special_of = [](const json::Value& item) -> std::optional<std::string> {
        const json::Value* s = item.is_object() ? item.as_object().Find("SpecialToken") : nullptr;
        return s == nullptr ? std::nullopt : StringMember(*s, "id");
      };
      const json::Array& items = single->as_array();
      if (auto text = special_of(items.front()); text.has_value()) {
        ASSIGN_OR_RETURN(vocab->bos_id, lookup(text, "post_processor"));
        vocab->add_bos = vocab->bos_id.has_value();
      }
      if (auto text = special_of(items.back()); items.size() > 1 && text.has_value()) {
        ASSIGN_OR_RETURN(vocab->eos_id, lookup(text, "post_processor"));
        vocab->add_eos = vocab->eos_id.has_value();
      }
    }
  }
  if (auto id = lookup(ConfigToken(config, "bos_token"), "bos_token"); !id.ok()) {
    return id.status();
  } else if (id->has_value()) {
    vocab->bos_id = *id;
  }
  if (auto id = lookup(ConfigToken(config, "eos_token"), "eos_token"); !id.ok()) {
    return id.status();
  } else if (id->has_value()) {
    vocab->eos_id = *id;
  }
  if (auto id = lookup(ConfigToken(config, "pad_token"), "pad_token"); id.ok() && id->has_value()) {
    vocab->pad_id = *id;
  }
  if (config.is_object()) {
    vocab->add_bos = BoolMember(config, "add_bos_token", vocab->add_bos);
    vocab->add_eos = BoolMember(config, "add_eos_token", vocab->add_eos);
  }
  if (vocab->add_bos && !vocab->bos_id.has_value()) {
    return absl::DataLossError("tokenizer_config.json adds a BOS token but names none");
  }
  if (vocab->add_eos && !vocab->eos_id.has_value()) {
    return absl::DataLossError("tokenizer_config.json adds an EOS token but names none");
  }
  return absl::OkStatus();
}

absl::Status ApplyNormalisation(const json::Object& root, Vocabulary* vocab) {
  Normalisation n;
  if (const json::Value* v = root.Find("normalizer"); v != nullptr) {
    RETURN_IF_ERROR(ReadNormalizer(*v, &n));
  }
  if (const json::Value* v = root.Find("pre_tokenizer"); v != nullptr) {
    RETURN_IF_ERROR(ReadPreTokenizer(*v, &n));
  }
  if (n.byte_level && !n.metaspace) {
    vocab->encoding = TextEncoding::kByteLevel;
    vocab->byte_prefix_space = n.byte_prefix_space;
    vocab->pre_tokenizer_regexes = n.regexes;
    if (n.byte_level_regex) {
      ASSIGN_OR_RETURN(std::vector<std::string> gpt2, PreTokenizer::FamilyRegexes("gpt-2"));
      vocab->pre_tokenizer_regexes.insert(vocab->pre_tokenizer_regexes.end(), gpt2.begin(),
                                          gpt2.end());
    }
    // An empty list would mean "the family's"; a regex that matches everything means none.
    if (vocab->pre_tokenizer_regexes.empty()) vocab->pre_tokenizer_regexes.push_back(R"((?s).+)");
    return absl::OkStatus();
  }
  if (n.metaspace && !n.byte_level && n.regexes.empty()) {
    vocab->encoding = TextEncoding::kMetaspace;
    vocab->space_prefix = n.space_prefix;
    vocab->metaspace_split = n.metaspace_split;
    return absl::OkStatus();
  }
  return absl::UnimplementedError(
      "tokenizer.json normalisation is neither byte-level nor Metaspace");
}

}  // namespace

absl::StatusOr<Vocabulary> VocabularyFromTokenizerJson(absl::string_view tokenizer_json,
                                                       absl::string_view tokenizer_config_json) {
  absl::StatusOr<json::Value> parsed = json::Parse(tokenizer_json);
  if (!parsed.ok()) return Malformed(parsed.status().message());
  if (!parsed->is_object()) return Malformed("not a JSON object");
  json::Value config;
  if (!tokenizer_config_json.empty()) {
    absl::StatusOr<json::Value> c = json::Parse(tokenizer_config_json);
    if (!c.ok()) {
      return absl::DataLossError(
          absl::StrCat("malformed tokenizer_config.json: ", c.status().message()));
    }
    config = *std::move(c);
  }
  const json::Object& root = parsed->as_object();
  const json::Value* model = root.Find("model");
  if (model == nullptr || !model->is_object()) return Malformed("no 'model' object");
  const std::string type = TypeOf(*model);
  if (!type.empty() && type != "BPE") {
    return absl::UnimplementedError(
        absl::StrCat("tokenizer.json model '", type, "' is not supported (only BPE)"));
  }
  for (absl::string_view key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (StringMember(*model, key).value_or("") != "") {
      return absl::UnimplementedError(absl::StrCat("tokenizer.json BPE with a ", key));
    }
  }
  Vocabulary vocab;
  vocab.model = MergeModel::kRanks;
  vocab.byte_fallback = BoolMember(*model, "byte_fallback", false);
  vocab.fuse_unk = BoolMember(*model, "fuse_unk", false);
  vocab.ignore_merges = BoolMember(*model, "ignore_merges", false);
  RETURN_IF_ERROR(ReadTokens(root, model->as_object(), &vocab));
  if (const json::Value* merges = model->as_object().Find("merges"); merges != nullptr) {
    RETURN_IF_ERROR(ReadMerges(*merges, &vocab));
  }
  RETURN_IF_ERROR(ApplyNormalisation(root, &vocab));

  absl::flat_hash_map<std::string, int32_t> ids;
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    ids.try_emplace(vocab.tokens[i], static_cast<int32_t>(i));
  }
  if (std::optional<std::string> unk = StringMember(*model, "unk_token"); unk.has_value()) {
    auto it = ids.find(*unk);
    if (it == ids.end()) return Malformed(absl::StrCat("unk_token '", *unk, "' is not a token"));
    vocab.unk_id = it->second;
    vocab.types[it->second] = TokenType::kUnknown;
  }
  RETURN_IF_ERROR(ReadSpecials(root, config, ids, &vocab));
  RETURN_IF_ERROR(ValidateVocabulary(vocab));
  return vocab;
}

}  // namespace tandem
