// The grammar front ends' common language: a rule body as a tree of expressions over text.
// GBNF (gbnf_parser.h), regular expressions (regex_compiler.h) and JSON Schema
// (json_schema_compiler.h) each build GrammarExprs and hand them to a GrammarBuilder
// (grammar_builder.h), which lowers them to the flat byte-level Grammar the matcher runs.
//
//   GrammarBuilder builder;
//   const int32_t root = builder.AddRule("root");
//   const int32_t digit = builder.AddRule("digit");
//   RETURN_IF_ERROR(builder.DefineRule(digit, GrammarExpr::CharClass({{'0', '9'}})));
//   RETURN_IF_ERROR(builder.DefineRule(root, GrammarExpr::Sequence({
//       GrammarExpr::Literal("n="), GrammarExpr::Repeat(GrammarExpr::Rule(digit), 1, -1)})));
//   ASSIGN_OR_RETURN(Grammar grammar, std::move(builder).Build(root));
//
// Text is UTF-8: a character class matches one code point, encoded as UTF-8 (1 to 4 bytes);
// a literal is matched byte for byte (any bytes, usually UTF-8 text).
#ifndef TANDEM_CORE_GRAMMAR_GRAMMAR_EXPR_H_
#define TANDEM_CORE_GRAMMAR_GRAMMAR_EXPR_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

// Code points lo..hi, inclusive; lo <= hi <= 0x10FFFF. Surrogates (D800..DFFF) are never
// matched, whatever the range says (they have no UTF-8 form).
struct CodepointRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};

// Unbounded GrammarExpr::Repeat.
inline constexpr int32_t kUnbounded = -1;

struct GrammarExpr {
  enum class Kind {
    kEmpty,      // matches the empty string
    kLiteral,    // `literal`, byte for byte (an empty literal is kEmpty)
    kCharClass,  // one code point in `ranges` (or, `negated`, one not in them)
    kRule,       // the rule `rule` (an id from GrammarBuilder::AddRule)
    kSequence,   // `children` one after the other
    kChoice,     // one of `children`
    kRepeat,     // children[0] between `min` and `max` times (max kUnbounded: no bound)
  };

  Kind kind = Kind::kEmpty;
  std::string literal;
  std::vector<CodepointRange> ranges;
  bool negated = false;
  int32_t rule = -1;
  std::vector<GrammarExpr> children;
  int32_t min = 0;
  int32_t max = 0;

  static GrammarExpr Empty() { return GrammarExpr(); }
  static GrammarExpr Literal(std::string bytes) {
    GrammarExpr e;
    e.kind = Kind::kLiteral;
    e.literal = std::move(bytes);
    return e;
  }
  static GrammarExpr CharClass(std::vector<CodepointRange> ranges, bool negated = false) {
    GrammarExpr e;
    e.kind = Kind::kCharClass;
    e.ranges = std::move(ranges);
    e.negated = negated;
    return e;
  }
  // Any one code point (what `.` matches in GBNF; a regex's `.` also excludes '\n').
  static GrammarExpr AnyChar() { return CharClass({}, /*negated=*/true); }
  static GrammarExpr Rule(int32_t id) {
    GrammarExpr e;
    e.kind = Kind::kRule;
    e.rule = id;
    return e;
  }
  static GrammarExpr Sequence(std::vector<GrammarExpr> children) {
    GrammarExpr e;
    e.kind = Kind::kSequence;
    e.children = std::move(children);
    return e;
  }
  static GrammarExpr Choice(std::vector<GrammarExpr> children) {
    GrammarExpr e;
    e.kind = Kind::kChoice;
    e.children = std::move(children);
    return e;
  }
  // `child` min..max times; 0 <= min, and max == kUnbounded or min <= max.
  static GrammarExpr Repeat(GrammarExpr child, int32_t min, int32_t max) {
    GrammarExpr e;
    e.kind = Kind::kRepeat;
    e.children.push_back(std::move(child));
    e.min = min;
    e.max = max;
    return e;
  }
  static GrammarExpr Optional(GrammarExpr child) { return Repeat(std::move(child), 0, 1); }
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_GRAMMAR_EXPR_H_
