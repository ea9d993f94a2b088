// `pattern` for the JSON Schema compiler (json_schema_compilation.h): the regex compiler
// (regex_compiler.h) gives an expression over the string's characters; JSON writes some of
// them escaped, so each literal and character class is rewritten to the characters' JSON
// encodings (canonical: raw, or \" \\ \b \f \n \r \t \u00xx).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/grammar/json_grammar_rules.h"
#include "core/grammar/json_schema_compilation.h"
#include "core/grammar/regex_compiler.h"

namespace tandem {
namespace {

using E = GrammarExpr;

// Whether `cp` is in `ranges` (surrogates never are).
bool InRanges(const std::vector<CodepointRange>& ranges, uint32_t cp) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [cp](const CodepointRange& r) { return r.lo <= cp && cp <= r.hi; });
}

// The code points JSON writes escaped: control characters, '"' and '\'.
bool NeedsEscape(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

// A character class over JSON-encoded characters: the raw ones as a class, the escaped ones as
// literals.
E EncodeClass(const E& cls) {
  std::vector<E> alternatives;
  std::vector<CodepointRange> raw;
  // The class minus what needs escaping: intersect with [0x20-0x21] [0x23-0x5B] [0x5D-...].
  const CodepointRange allowed[] = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}};
  if (!cls.negated) {
    for (const CodepointRange& r : cls.ranges) {
      for (const CodepointRange& a : allowed) {
        const uint32_t lo = std::max(r.lo, a.lo), hi = std::min(r.hi, a.hi);
        if (lo <= hi) raw.push_back({lo, hi});
      }
    }
    if (!raw.empty()) alternatives.push_back(E::CharClass(std::move(raw)));
  } else {
    // [^ranges] minus the escaped characters = [^ranges, escaped].
    raw = cls.ranges;
    raw.push_back({0x00, 0x1F});
    raw.push_back({'"', '"'});
    raw.push_back({'\\', '\\'});
    alternatives.push_back(E::CharClass(std::move(raw), /*negated=*/true));
  }
  for (uint32_t cp = 0; cp < 0x80; ++cp) {
    if (NeedsEscape(cp) && InRanges(cls.ranges, cp) != cls.negated) {
      alternatives.push_back(E::Literal(CanonicalJsonChar(cp)));
    }
  }
  if (alternatives.size() == 1) return std::move(alternatives[0]);
  return E::Choice(std::move(alternatives));
}

// `expr` over characters rewritten over their JSON encodings. The regex compiler bounds the
// expression's depth (GrammarLimits::max_nesting), which bounds this recursion.
absl::StatusOr<E> EncodeForJson(const E& expr, const std::string& pointer) {
  switch (expr.kind) {
    case E::Kind::kEmpty:
      return E::Empty();
    case E::Kind::kLiteral:
      return E::Literal(CanonicalJsonChars(expr.literal));
    case E::Kind::kCharClass:
      return EncodeClass(expr);
    case E::Kind::kRule:
      return SchemaError("pattern", pointer, "the regex compiler gave a rule reference");
    case E::Kind::kSequence:
    case E::Kind::kChoice:
    case E::Kind::kRepeat: {
      E out = expr;
      for (E& child : out.children) {
        ASSIGN_OR_RETURN(child, EncodeForJson(child, pointer));
      }
      return out;
    }
  }
  return E::Empty();
}

}  // namespace

absl::StatusOr<GrammarExpr> JsonSchemaCompilation::PatternExpr(absl::string_view pattern,
                                                               const std::string& pointer) {
  RegexOptions regex_options;
  regex_options.search = true;  // JSON Schema: the pattern may match anywhere
  regex_options.limits = limits_;
  absl::StatusOr<GrammarExpr> expr = RegexToExpr(pattern, builder_, regex_options);
  if (!expr.ok()) return SchemaError("pattern", pointer, expr.status().message());
  return EncodeForJson(*expr, pointer);
}

}  // namespace tandem
