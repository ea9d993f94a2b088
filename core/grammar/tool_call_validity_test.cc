// Forced tool calls are valid whatever the model picks: on real vocabularies (with the
// family's control tokens added where the family has them), walks of random allowed tokens
// through the compiled constraint, 50 seeds per family for `required` and for a named
// function, end in output that parses as the family's calls (a small checker below, written
// from tool_call_format.h, independent of the real parser) of the right functions, with
// arguments that are JSON objects holding the schema's required keys with the right types.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "core/base/json.h"
#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "core/grammar/compiled_constraint.h"
#include "core/grammar/special_token.h"
#include "core/grammar/tool_call_spec.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::SharedFile;
using toolcall::ToolCallFormat;
using toolcall::ToolChoice;
using toolcall::ToolFunction;

constexpr int kSeeds = 50;
constexpr int kMaxTokens = 3000;

std::vector<ToolFunction> Tools() {
  ToolFunction weather;
  weather.name = "get_weather";
  weather.parameters = *json::Parse(R"({"type": "object", "properties": {
      "city": {"type": "string", "maxLength": 12},
      "days": {"type": "integer", "minimum": 1, "maximum": 14},
      "unit": {"enum": ["celsius", "fahrenheit"]},
      "alerts": {"type": "boolean"}}, "required": ["city", "unit"]})");
  ToolFunction time;
  time.name = "get_time";
  time.parameters = *json::Parse(
      R"({"type": "object", "properties": {"tz": {"enum": ["UTC", "CET"]}}, "required": []})");
  return {weather, time};
}

// Reads the output a family writes; false at the first thing out of place.
class Cursor {
 public:
  explicit Cursor(std::string text) : text_(std::move(text)) {}
  bool Eat(absl::string_view literal) {
    if (text_.compare(pos_, literal.size(), literal.data(), literal.size()) != 0) return false;
    pos_ += literal.size();
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t'))
      ++pos_;
  }
  // Text up to (not including) `stop`.
  bool Until(char stop, std::string* out) {
    const size_t end = text_.find(stop, pos_);
    if (end == std::string::npos) return false;
    *out = text_.substr(pos_, end - pos_);
    pos_ = end;
    return true;
  }
  // One JSON object or array (brackets matched outside strings).
  bool Json(json::Value* out) {
    if (pos_ >= text_.size() || (text_[pos_] != '{' && text_[pos_] != '[')) return false;
    int depth = 0;
    bool in_string = false;
    for (size_t i = pos_; i < text_.size(); ++i) {
      const char c = text_[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        absl::StatusOr<json::Value> v =
            json::Parse(absl::string_view(text_).substr(pos_, i + 1 - pos_));
        if (!v.ok()) return false;
        *out = *std::move(v);
        pos_ = i + 1;
        return true;
      }
    }
    return false;
  }
  bool AtEnd() const { return pos_ == text_.size(); }
  size_t pos() const { return pos_; }

 private:
  std::string text_;
  size_t pos_ = 0;
};

struct Call {
  std::string name;
  json::Value arguments;
};

// The calls in an array of objects with `name_key` and `args_key`.
bool ArrayCalls(const json::Value& array, const std::string& name_key, const std::string& args_key,
                std::vector<Call>* calls) {
  if (!array.is_array() || array.as_array().empty()) return false;
  for (const json::Value& item : array.as_array()) {
    if (!item.is_object()) return false;
    const json::Value* name = item.as_object().Find(name_key);
    const json::Value* args = item.as_object().Find(args_key);
    if (name == nullptr || !name->is_string() || args == nullptr) return false;
    calls->push_back({name->as_string(), *args});
  }
  return true;
}

bool ObjectCall(Cursor& c, const std::string& args_key, std::vector<Call>* calls) {
  json::Value object;
  if (!c.Json(&object)) return false;
  return ArrayCalls(json::Array{object}, "name", args_key, calls);
}

// The calls a family's output holds (control tokens read as their text).
bool ParseCalls(ToolCallFormat format, const std::string& output, std::vector<Call>* calls) {
  Cursor c(absl::StrReplaceAll(output, {{std::string(1, kSpecialTokenMark), ""}}));
  json::Value value;
  std::string name;
  switch (format) {
    case ToolCallFormat::kLlama3Json:
      do {
        c.SkipSpace();
        if (!ObjectCall(c, "parameters", calls)) return false;
      } while (c.Eat(";"));
      return c.AtEnd();
    case ToolCallFormat::kHermes:
      while (c.Eat("<tool_call>\n")) {
        if (!ObjectCall(c, "arguments", calls) || !c.Eat("\n</tool_call>")) return false;
        c.Eat("\n");
      }
      return c.AtEnd() && !calls->empty();
    case ToolCallFormat::kMistral:
      return c.Eat("[TOOL_CALLS]") && c.Json(&value) &&
             ArrayCalls(value, "name", "arguments", calls) && c.AtEnd();
    case ToolCallFormat::kFunctionaryV31:
      while (c.Eat("<function=")) {
        if (!c.Until('>', &name) || !c.Eat(">") || !c.Json(&value) || !c.Eat("</function>")) {
          return false;
        }
        calls->push_back({name, value});
      }
      return c.AtEnd() && !calls->empty();
    case ToolCallFormat::kFunctionaryV32:
      do {
        if (!c.Until('\n', &name) || !c.Eat("\n") || !c.Json(&value)) return false;
        calls->push_back({name, value});
      } while (c.Eat(">>>"));
      return c.AtEnd();
    case ToolCallFormat::kFirefunctionV2:
      c.Eat(" ");
      return c.Eat("functools") && c.Json(&value) &&
             ArrayCalls(value, "name", "arguments", calls) && c.AtEnd();
    case ToolCallFormat::kCommandR:
      if (c.Eat("<|START_ACTION|>")) {
        return c.Json(&value) && ArrayCalls(value, "tool_name", "parameters", calls) &&
               c.Eat("<|END_ACTION|>") && c.AtEnd();
      }
      if (!c.Eat("Action:")) return false;
      c.SkipSpace();
      if (!c.Eat("```json")) return false;
      c.SkipSpace();
      if (!c.Json(&value) || !ArrayCalls(value, "tool_name", "parameters", calls)) return false;
      c.SkipSpace();
      return c.Eat("```") && c.AtEnd();
    case ToolCallFormat::kDeepSeekR1:
      if (!c.Eat("<｜tool▁calls▁begin｜>")) return false;
      while (c.Eat("<｜tool▁call▁begin｜>function<｜tool▁sep｜>")) {
        if (!c.Until('\n', &name) || !c.Eat("\n```json\n") || !c.Json(&value) ||
            !c.Eat("\n```<｜tool▁call▁end｜>")) {
          return false;
        }
        calls->push_back({name, value});
        c.Eat("\n");
      }
      return c.Eat("<｜tool▁calls▁end｜>") && c.AtEnd() && !calls->empty();
    case ToolCallFormat::kNone:
      break;
  }
  return false;
}

// Whether `arguments` hold the schema's required keys, only declared keys, with their types.
bool ArgumentsValid(const ToolFunction& tool, const json::Value& arguments) {
  if (!arguments.is_object()) return false;
  const json::Object& schema = tool.parameters.as_object();
  const json::Object& properties = schema.Find("properties")->as_object();
  for (const json::Value& key : schema.Find("required")->as_array()) {
    if (!arguments.as_object().Contains(key.as_string())) return false;
  }
  for (const auto& [key, value] : arguments.as_object()) {
    const json::Value* property = properties.Find(key);
    if (property == nullptr) return false;
    const json::Object& p = property->as_object();
    if (const json::Value* values = p.Find("enum")) {
      bool found = false;
      for (const json::Value& v : values->as_array()) found = found || v == value;
      if (!found) return false;
      continue;
    }
    const std::string& type = p.Find("type")->as_string();
    if (type == "string" && (!value.is_string() || value.as_string().size() > 4 * 12)) return false;
    if (type == "integer" && (!value.is_int() || value.as_int() < 1 || value.as_int() > 14)) {
      return false;
    }
    if (type == "boolean" && !value.is_bool()) return false;
  }
  return true;
}

struct Family {
  ToolCallFormat format;
  std::string vocabulary;  // under models/
  std::string pre_tokenizer;
  std::vector<std::string> control_tokens;  // added as control tokens
  std::vector<std::string> user_tokens;     // added as user-defined tokens
};

absl::StatusOr<Tokenizer> FamilyTokenizer(const Family& family) {
  ASSIGN_OR_RETURN(std::string path, SharedFile("models/" + family.vocabulary));
  LoadOptions options;
  options.pre_tokenizer = family.pre_tokenizer;
  ASSIGN_OR_RETURN(Vocabulary vocab, LoadVocabulary(path, options));
  auto add = [&](const std::string& text, TokenType type) {
    vocab.tokens.push_back(text);
    vocab.types.push_back(type);
    if (!vocab.scores.empty()) vocab.scores.push_back(0);
  };
  for (const std::string& t : family.control_tokens) add(t, TokenType::kControl);
  for (const std::string& t : family.user_tokens) add(t, TokenType::kUserDefined);
  if (!vocab.eos_id.has_value()) {
    add("<|end|>", TokenType::kControl);
    vocab.eos_id = static_cast<int32_t>(vocab.tokens.size() - 1);
  }
  return Tokenizer::Create(std::move(vocab));
}

// A random walk to the end; the output's bytes, or an error naming the dead end.
absl::StatusOr<std::string> RandomOutput(std::shared_ptr<const CompiledConstraint> compiled,
                                         const ConstraintVocabulary& vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  auto constraint = NewTokenConstraint(std::move(compiled));
  std::vector<int32_t> tokens;
  std::string output;
  TokenMask mask;
  std::vector<int32_t> allowed;
  const int32_t end = vocab.end_ids[0];
  for (int step = 0; step < kMaxTokens; ++step) {
    constraint->FillMask(&mask);
    allowed.clear();
    for (int32_t t = 0; t < constraint->vocab_size(); ++t) {
      if (mask.Allowed(t)) allowed.push_back(t);
    }
    if (allowed.empty()) return absl::InternalError("dead end after '" + output + "'");
    if (mask.Allowed(end) && rng() % 2 == 0) return output;
    const int32_t pick = allowed[rng() % allowed.size()];
    if (pick == end) return output;
    tokens.push_back(pick);
    output += vocab.token_bytes[pick];
    RETURN_IF_ERROR(constraint->Sync(tokens));
  }
  return absl::InternalError("no end after " + std::to_string(kMaxTokens) + " tokens: " + output);
}

class ToolCallValidityTest : public ::testing::TestWithParam<Family> {};

TEST_P(ToolCallValidityTest, RandomWalksEndInValidCalls) {
  const Family& family = GetParam();
  ASSERT_OK_AND_ASSIGN(Tokenizer tokenizer, FamilyTokenizer(family));
  auto vocab = std::make_shared<const ConstraintVocabulary>(
      ConstraintVocabulary::FromTokenizer(tokenizer, {*tokenizer.vocabulary().eos_id}));
  const std::vector<ToolFunction> tools = Tools();
  ToolChoice required;
  required.mode = ToolChoice::Mode::kRequired;
  ToolChoice named;
  named.mode = ToolChoice::Mode::kNamed;
  named.function = "get_weather";
  for (const ToolChoice& choice : {required, named}) {
    const ConstraintSpec spec{ConstraintSpec::Kind::kToolCalls,
                              ToolCallSpecText(family.format, tools, choice)};
    ASSERT_OK_AND_ASSIGN(auto compiled, CompileConstraint(spec, vocab));
    int specials = 0;
    for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
      ASSERT_OK_AND_ASSIGN(std::string output, RandomOutput(compiled, *vocab, seed));
      specials += output.find(kSpecialTokenMark) != std::string::npos;
      std::vector<Call> calls;
      ASSERT_TRUE(ParseCalls(family.format, output, &calls)) << "seed " << seed << ": " << output;
      if (choice.mode == ToolChoice::Mode::kNamed) {
        ASSERT_EQ(calls.size(), 1u) << output;
      }
      for (const Call& call : calls) {
        const ToolFunction* tool = nullptr;
        for (const ToolFunction& t : tools) {
          if (t.name == call.name) tool = &t;
        }
        ASSERT_NE(tool, nullptr) << "seed " << seed << ": " << output;
        if (choice.mode == ToolChoice::Mode::kNamed) {
          ASSERT_EQ(call.name, named.function);
        }
        EXPECT_TRUE(ArgumentsValid(*tool, call.arguments))
            << "seed " << seed << ": " << json::Serialize(call.arguments);
      }
    }
    // Where the family's markers are control tokens, some walks write them as such.
    if (!family.control_tokens.empty() && family.format != ToolCallFormat::kLlama3Json) {
      EXPECT_GT(specials, 0) << ToolCallSpecText(family.format, tools, choice);
    }
  }
}

const std::vector<std::string> kDeepSeekTokens = {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
                                                  "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
                                                  "<｜tool▁sep｜>"};

INSTANTIATE_TEST_SUITE_P(
    Families, ToolCallValidityTest,
    ::testing::Values(
        Family{ToolCallFormat::kLlama3Json,
               "llama3-bpe-tokenizer",
               "llama-bpe",
               {"<|python_tag|>", "<|eot_id|>"},
               {}},
        Family{ToolCallFormat::kHermes,
               "vocab/ggml-vocab-llama-spm.gguf",
               "",
               {},
               {"<tool_call>", "</tool_call>"}},
        Family{
            ToolCallFormat::kMistral, "vocab/ggml-vocab-llama-spm.gguf", "", {"[TOOL_CALLS]"}, {}},
        Family{ToolCallFormat::kFunctionaryV31, "vocab/ggml-vocab-llama-spm.gguf", "", {}, {}},
        Family{ToolCallFormat::kFunctionaryV32, "vocab/ggml-vocab-starcoder.gguf", "gpt-2", {}, {}},
        Family{ToolCallFormat::kFirefunctionV2, "vocab/ggml-vocab-starcoder.gguf", "gpt-2", {}, {}},
        Family{ToolCallFormat::kCommandR,
               "vocab/ggml-vocab-gpt-2.gguf",
               "gpt-2",
               {"<|START_ACTION|>", "<|END_ACTION|>", "<|START_THINKING|>"},
               {}},
        Family{ToolCallFormat::kDeepSeekR1,
               "vocab/ggml-vocab-deepseek-llm.gguf",
               "",
               kDeepSeekTokens,
               {}}),
    [](const ::testing::TestParamInfo<Family>& info) {
      std::string name(toolcall::ToolCallFormatName(info.param.format));
      for (char& c : name) {
        if (c == '.') c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace tandem
