#include "core/tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tandem {
namespace {

// The regexes are facts about each model family's Hugging Face tokenizer (as llama.cpp lists
// them). The case-insensitive contractions `(?i:'s|...)` are spelled out as classes so that
// Unicode case folding (e.g. 'ſ' ~ 's') cannot widen them.
constexpr absl::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr absl::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr absl::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek LLM's letters: the cased letters (Lu, Ll, Lt) as its tokenizer.json enumerates them.
constexpr absl::string_view kDeepSeekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
    R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
    R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})"
    R"(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
    R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})"
    R"(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124})"
    R"(\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F})"
    R"(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
    R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17})"
    R"(\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3})"
    R"(\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})"
    R"(\x{1E900}-\x{1E943}]+)";
// CJK ideographs, U+0800..U+4E00 and Hangul, as DeepSeek's tokenizers group them.
constexpr absl::string_view kDeepSeekCjk =
    R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

struct Family {
  std::vector<absl::string_view> names;
  std::vector<absl::string_view> regexes;
  bool ignore_merges = false;
};

const std::vector<Family>& Families() {
  static const auto* const families = new std::vector<Family>{
      {{"gpt-2", "default", "gpt-neox", "mpt", "olmo", "phi-2", "roberta-bpe", "jais"}, {kGpt2}},
      {{"llama-bpe", "llama3", "llama-v3", "falcon3"}, {kLlama3}, /*ignore_merges=*/true},
      {{"dbrx", "smaug-bpe"}, {kLlama3}},
      {{"qwen2", "qwen2.5", "deepseek-r1-qwen", "stablelm2", "megrez"}, {kQwen2}},
      {{"starcoder", "refact", "smollm", "command-r", "codeshell", "exaone", "minerva-7b"},
       {R"(\p{N})", kGpt2}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
      {{"deepseek-llm"},
       {R"([\r\n])", kDeepSeekLetters,
        R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
        R"(\s+$)", kDeepSeekCjk, R"(\p{N}+)"}},
      {{"deepseek-coder"}, {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepSeekCjk, R"(\p{N})"}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)"}},
  };
  return *families;
}

const Family* FindFamily(absl::string_view name) {
  for (const Family& family : Families()) {
    for (absl::string_view n : family.names) {
      if (n == name) return &family;
    }
  }
  return nullptr;
}

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
struct JitStackDeleter {
  void operator()(pcre2_jit_stack* stack) const { pcre2_jit_stack_free(stack); }
};
struct MatchContextDeleter {
  void operator()(pcre2_match_context* context) const { pcre2_match_context_free(context); }
};

struct Span {
  size_t begin;
  size_t end;
  int kind;  // the last regex that matched it, -1 if none
};

}  // namespace

struct PreTokenizer::Compiled {
  std::vector<std::unique_ptr<pcre2_code, CodeDeleter>> codes;
};

absl::StatusOr<std::vector<std::string>> PreTokenizer::FamilyRegexes(absl::string_view family) {
  const Family* f = FindFamily(family);
  if (f == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat("unknown pre-tokenizer '", family, "' (tokenizer.ggml.pre)"));
  }
  return std::vector<std::string>(f->regexes.begin(), f->regexes.end());
}

bool PreTokenizer::FamilyIgnoresMerges(absl::string_view family) {
  const Family* f = FindFamily(family);
  return f != nullptr && f->ignore_merges;
}

absl::StatusOr<PreTokenizer> PreTokenizer::Create(const std::vector<std::string>& regexes) {
  auto compiled = std::make_shared<Compiled>();
  for (const std::string& regex : regexes) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.data()), regex.size(),
                                     PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      return absl::InvalidArgumentError(absl::StrCat("pre-tokenizer regex '", regex,
                                                     "' does not compile at offset ", offset, ": ",
                                                     reinterpret_cast<char*>(message)));
    }
    // JIT is an optimisation only: without it (e.g. an unsupported CPU) matching interprets.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    compiled->codes.emplace_back(code);
  }
  return PreTokenizer(std::move(compiled));
}

absl::Status PreTokenizer::Split(absl::string_view text, std::vector<absl::string_view>* pieces,
                                 std::vector<int>* kinds) const {
  std::vector<Span> spans = {{0, text.size(), -1}};
  std::vector<Span> next;
  std::unique_ptr<pcre2_jit_stack, JitStackDeleter> stack(
      pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr));
  std::unique_ptr<pcre2_match_context, MatchContextDeleter> context(
      pcre2_match_context_create(nullptr));
  pcre2_jit_stack_assign(context.get(), nullptr, stack.get());
  for (size_t k = 0; k < compiled_->codes.size(); ++k) {
    const auto& code = compiled_->codes[k];
    std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
        pcre2_match_data_create_from_pattern(code.get(), nullptr));
    next.clear();
    for (const Span& span : spans) {
      const absl::string_view subject = text.substr(span.begin, span.end - span.begin);
      const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
      size_t pos = 0;
      size_t emitted = 0;  // subject[0, emitted) is in `next`
      while (pos < subject.size()) {
        // The text was validated as UTF-8 once, and pieces start on character boundaries.
        const int rc = pcre2_match(code.get(), data, subject.size(), pos, PCRE2_NO_UTF_CHECK,
                                   match.get(), context.get());
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
          PCRE2_UCHAR message[256];
          pcre2_get_error_message(rc, message, sizeof(message));
          return absl::ResourceExhaustedError(
              absl::StrCat("pre-tokenizer regex failed: ", reinterpret_cast<char*>(message)));
        }
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
        const size_t begin = ovector[0];
        const size_t end = ovector[1];
        if (end == begin) {
          // An empty match splits nothing; step over one character.
          pos = begin + 1;
          while (pos < subject.size() && (static_cast<uint8_t>(subject[pos]) & 0xC0) == 0x80) {
            ++pos;
          }
          continue;
        }
        if (begin > emitted) next.push_back({span.begin + emitted, span.begin + begin, span.kind});
        next.push_back({span.begin + begin, span.begin + end, static_cast<int>(k)});
        emitted = end;
        pos = end;
      }
      if (emitted < subject.size()) next.push_back({span.begin + emitted, span.end, span.kind});
    }
    spans.swap(next);
  }
  for (const Span& span : spans) {
    pieces->push_back(text.substr(span.begin, span.end - span.begin));
    if (kinds != nullptr) kinds->push_back(span.kind);
  }
  return absl::OkStatus();
}

}  // namespace tandem
