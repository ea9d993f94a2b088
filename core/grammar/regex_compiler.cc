#include "core/grammar/regex_compiler.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/status_macros.h"
#include "core/base/utf8.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/grammar_expr.h"
#include "core/grammar/regex_char_class.h"
#include "core/grammar/regex_escape.h"
#include "core/grammar/regex_piece.h"

namespace tandem {
namespace {

// The top-level alternative or group alternative being read.
struct Alternative {
  std::vector<RegexPiece> pieces;
  bool starts_anchored = false;  // began with `^`
  bool ends_anchored = false;    // ended with `$`
};

// An open group; the pattern itself is the outermost.
struct Frame {
  size_t open = 0;  // the byte offset of its '('
  std::vector<RegexPiece> alternatives;
  Alternative current;
};

class RegexParser {
 public:
  RegexParser(absl::string_view pattern, const RegexOptions& options)
      : pattern_(pattern), options_(options), escapes_(pattern) {}

  absl::StatusOr<GrammarExpr> Parse();

 private:
  absl::Status Error(size_t offset, absl::string_view what) const {
    return RegexError(offset, what);
  }
  bool At(char c) const { return pos_ < pattern_.size() && pattern_[pos_] == c; }
  bool AtEnd() const { return pos_ >= pattern_.size(); }

  absl::Status Step();
  absl::Status OpenGroup();
  absl::Status CloseGroup();
  absl::Status EndAlternative(Frame& frame, bool top_level, size_t offset);
  absl::Status StartAnchor();
  absl::Status EndAnchor();
  absl::Status AddAtom(RegexPiece atom, size_t offset);
  absl::StatusOr<bool> ParseQuantifier(int32_t* min, int32_t* max);
  absl::Status ParseBraces(int32_t* min, int32_t* max);
  absl::StatusOr<int32_t> ParseCount(size_t offset);
  absl::StatusOr<RegexPiece> ParseClass();
  absl::StatusOr<ClassItem> ParseClassItem();
  absl::StatusOr<RegexPiece> FinishFrame(Frame frame, bool top_level, size_t end_offset);
  absl::Status CheckLimits(const RegexPiece& piece, size_t offset) const;
  RegexPiece ClassPiece(const CodepointSet& set);

  absl::string_view pattern_;
  const RegexOptions& options_;
  RegexEscapeReader escapes_;
  size_t pos_ = 0;
  std::vector<Frame> frames_;
  // The distinct classes so far (the builder defines a rule for each once) and their cost.
  std::set<std::vector<std::pair<uint32_t, uint32_t>>> classes_;
  LoweredCost class_definitions_;
};

absl::StatusOr<GrammarExpr> RegexParser::Parse() {
  frames_.emplace_back();
  while (!AtEnd()) RETURN_IF_ERROR(Step());
  if (frames_.size() > 1) {
    return Error(frames_.back().open, "'(' is never closed");
  }
  ASSIGN_OR_RETURN(RegexPiece whole,
                   FinishFrame(std::move(frames_.back()), /*top_level=*/true, pattern_.size()));
  frames_.clear();
  return std::move(whole.expr);
}

// Reads one construct at pos_: a group bracket, '|', an anchor, or an atom and its quantifier.
absl::Status RegexParser::Step() {
  const size_t offset = pos_;
  switch (pattern_[pos_]) {
    case '(':
      return OpenGroup();
    case ')':
      return CloseGroup();
    case '|':
      ++pos_;
      return EndAlternative(frames_.back(), frames_.size() == 1, offset);
    case '^':
      return StartAnchor();
    case '$':
      return EndAnchor();
    case '*':
    case '+':
    case '?':
    case '{':
      return Error(offset, absl::StrCat("quantifier '", pattern_.substr(offset, 1),
                                        "' has nothing to repeat (escape it to match it)"));
    case '}':
    case ']':
      return Error(offset,
                   absl::StrCat("lone '", pattern_.substr(offset, 1), "' (escape it to match it)"));
    case '[': {
      ASSIGN_OR_RETURN(RegexPiece atom, ParseClass());
      return AddAtom(std::move(atom), offset);
    }
    case '.':
      ++pos_;
      return AddAtom(ClassPiece(DotSet()), offset);
    case '\\': {
      ASSIGN_OR_RETURN(ClassItem item, escapes_.Read(&pos_, /*in_class=*/false));
      return AddAtom(item.is_set ? ClassPiece(item.set) : RegexPiece::Literal(item.codepoint),
                     offset);
    }
    default: {
      const uint32_t codepoint = escapes_.Decode(&pos_);
      return AddAtom(RegexPiece::Literal(codepoint), offset);
    }
  }
}

absl::Status RegexParser::OpenGroup() {
  const size_t offset = pos_;
  ++pos_;
  if (At('?')) {
    const absl::string_view rest = pattern_.substr(pos_);
    if (absl::StartsWith(rest, "?:")) {
      pos_ += 2;
    } else if (absl::StartsWith(rest, "?=") || absl::StartsWith(rest, "?!")) {
      return Error(offset, absl::StrCat("lookahead '(", rest.substr(0, 2), "' is not supported"));
    } else if (absl::StartsWith(rest, "?<=") || absl::StartsWith(rest, "?<!")) {
      return Error(offset, absl::StrCat("lookbehind '(", rest.substr(0, 3), "' is not supported"));
    } else if (absl::StartsWith(rest, "?<")) {
      pos_ += 2;
      RETURN_IF_ERROR(escapes_.SkipGroupName(&pos_, offset));
    } else {
      return Error(offset, absl::StrCat("group modifier or inline flags '(",
                                        rest.substr(0, std::min<size_t>(rest.size(), 2)),
                                        "' are not supported"));
    }
  }
  // Frames are the open groups plus the pattern itself.
  if (frames_.size() > static_cast<size_t>(options_.limits.max_nesting)) {
    return Error(offset, absl::StrCat("groups nest deeper than max_nesting (",
                                      options_.limits.max_nesting, ")"));
  }
  frames_.emplace_back();
  frames_.back().open = offset;
  return absl::OkStatus();
}

absl::Status RegexParser::CloseGroup() {
  const size_t offset = pos_;
  if (frames_.size() == 1) return Error(offset, "')' closes no group");
  ++pos_;
  Frame frame = std::move(frames_.back());
  frames_.pop_back();
  ASSIGN_OR_RETURN(RegexPiece group, FinishFrame(std::move(frame), /*top_level=*/false, offset));
  group.literal = false;
  return AddAtom(std::move(group), offset);
}

// Ends the current alternative of `frame` (`top_level`: the pattern's own) at `offset`.
absl::Status RegexParser::EndAlternative(Frame& frame, bool top_level, size_t offset) {
  Alternative alternative = std::move(frame.current);
  frame.current = Alternative();
  if (top_level && options_.search) {
    // JSON Schema semantics: an unanchored end matches any text (any code point at all).
    CodepointSet anything;
    anything.Add(0, kMaxCodepoint);
    auto any_text = [&] { return RegexPiece::Repeat(ClassPiece(anything), 0, kUnbounded); };
    if (!alternative.starts_anchored) {
      alternative.pieces.insert(alternative.pieces.begin(), any_text());
    }
    if (!alternative.ends_anchored) alternative.pieces.push_back(any_text());
  }
  RegexPiece sequence = RegexPiece::Sequence(std::move(alternative.pieces));
  RETURN_IF_ERROR(CheckLimits(sequence, offset));
  frame.alternatives.push_back(std::move(sequence));
  return absl::OkStatus();
}

// The choice of `frame`'s alternatives, its last one ending at `end_offset`.
absl::StatusOr<RegexPiece> RegexParser::FinishFrame(Frame frame, bool top_level,
                                                    size_t end_offset) {
  RETURN_IF_ERROR(EndAlternative(frame, top_level, end_offset));
  RegexPiece choice = RegexPiece::Choice(std::move(frame.alternatives));
  RETURN_IF_ERROR(CheckLimits(choice, end_offset));
  return choice;
}

// `^` is a no-op at the start of the pattern or of a top-level alternative, refused elsewhere.
absl::Status RegexParser::StartAnchor() {
  Alternative& current = frames_.back().current;
  if (frames_.size() > 1 || !current.pieces.empty() || current.starts_anchored) {
    return Error(pos_,
                 "anchor '^' is supported only at the start of the pattern or of a top-level "
                 "alternative");
  }
  current.starts_anchored = true;
  ++pos_;
  return absl::OkStatus();
}

// `$` is a no-op at the end of the pattern or of a top-level alternative, refused elsewhere.
absl::Status RegexParser::EndAnchor() {
  const bool at_end = pos_ + 1 == pattern_.size() || pattern_[pos_ + 1] == '|';
  if (frames_.size() > 1 || !at_end) {
    return Error(pos_,
                 "anchor '$' is supported only at the end of the pattern or of a top-level "
                 "alternative");
  }
  frames_.back().current.ends_anchored = true;
  ++pos_;
  return absl::OkStatus();
}

// Adds `atom` (which began at `offset`) to the current alternative with its quantifier, if one
// follows; an unquantified literal extends an unquantified literal before it.
absl::Status RegexParser::AddAtom(RegexPiece atom, size_t offset) {
  int32_t min = 1;
  int32_t max = 1;
  const size_t quantifier_offset = pos_;
  ASSIGN_OR_RETURN(const bool quantified, ParseQuantifier(&min, &max));
  std::vector<RegexPiece>& pieces = frames_.back().current.pieces;
  if (!quantified && atom.literal && !pieces.empty() && pieces.back().literal) {
    pieces.back().Extend(atom);
    return CheckLimits(pieces.back(), offset);
  }
  if (quantified) {
    atom = RegexPiece::Repeat(std::move(atom), min, max);
    RETURN_IF_ERROR(CheckLimits(atom, quantifier_offset));
  } else {
    RETURN_IF_ERROR(CheckLimits(atom, offset));
  }
  pieces.push_back(std::move(atom));
  return absl::OkStatus();
}

RegexPiece RegexParser::ClassPiece(const CodepointSet& set) {
  std::vector<CodepointRange> ranges = set.Ranges();
  std::vector<std::pair<uint32_t, uint32_t>> key;
  key.reserve(ranges.size());
  for (const CodepointRange& r : ranges) key.emplace_back(r.lo, r.hi);
  if (classes_.insert(std::move(key)).second) {
    class_definitions_ = class_definitions_ + ClassDefinitionCost(ranges);
  }
  return RegexPiece::Class(std::move(ranges));
}

// Refuses `piece` (at `offset`) if the pattern would be past a limit with it: its lowered
// cost with the classes' rules and the start rule's end of alternative, or its depth.
absl::Status RegexParser::CheckLimits(const RegexPiece& piece, size_t offset) const {
  const LoweredCost cost = piece.total() + class_definitions_ + LoweredCost{1, 1};
  if (cost.elements > options_.limits.max_elements) {
    return Error(offset, absl::StrCat("the pattern would lower to more than max_elements (",
                                      options_.limits.max_elements,
                                      ") grammar elements (counted repetitions multiply)"));
  }
  if (cost.rules > options_.limits.max_rules) {
    return Error(
        offset,
        absl::StrCat(
            "the pattern would lower to more than max_rules (", options_.limits.max_rules,
            ") grammar rules (a choice, a class and each optional copy of a repetition is one)"));
  }
  if (piece.depth > options_.limits.max_nesting) {
    return Error(offset, absl::StrCat("expressions nest deeper than max_nesting (",
                                      options_.limits.max_nesting, ")"));
  }
  return absl::OkStatus();
}

// Reads a quantifier at pos_, if any: * + ? {m} {m,} {m,n}, each maybe followed by '?' (lazy,
// which matches the same strings).
absl::StatusOr<bool> RegexParser::ParseQuantifier(int32_t* min, int32_t* max) {
  if (AtEnd()) return false;
  const char c = pattern_[pos_];
  if (c == '*' || c == '+' || c == '?') {
    *min = c == '+' ? 1 : 0;
    *max = c == '?' ? 1 : kUnbounded;
    ++pos_;
  } else if (c == '{') {
    RETURN_IF_ERROR(ParseBraces(min, max));
  } else {
    return false;
  }
  if (At('?')) ++pos_;
  return true;
}

// {m}, {m,} or {m,n} at pos_.
absl::Status RegexParser::ParseBraces(int32_t* min, int32_t* max) {
  const size_t offset = pos_;
  ++pos_;
  ASSIGN_OR_RETURN(*min, ParseCount(offset));
  *max = *min;
  if (At(',')) {
    ++pos_;
    *max = kUnbounded;
    if (!At('}')) {
      ASSIGN_OR_RETURN(*max, ParseCount(offset));
    }
  }
  if (!At('}')) {
    return Error(offset, "'{' is not a quantifier {m}, {m,} or {m,n} (escape it as \\{)");
  }
  ++pos_;
  if (*max != kUnbounded && *max < *min) {
    return Error(offset, absl::StrCat("quantifier '", pattern_.substr(offset, pos_ - offset),
                                      "' has its maximum below its minimum"));
  }
  return absl::OkStatus();
}

// A repetition count's decimal digits at pos_ (at least one), refused past max_repeat.
absl::StatusOr<int32_t> RegexParser::ParseCount(size_t offset) {
  const size_t start = pos_;
  int64_t value = 0;
  while (!AtEnd() && pattern_[pos_] >= '0' && pattern_[pos_] <= '9') {
    value = std::min<int64_t>(value * 10 + (pattern_[pos_] - '0'), int64_t{1} << 40);
    ++pos_;
  }
  if (pos_ == start) {
    return Error(offset, "'{' is not a quantifier {m}, {m,} or {m,n} (escape it as \\{)");
  }
  if (value > options_.limits.max_repeat) {
    return Error(offset, absl::StrCat("repetition count ", pattern_.substr(start, pos_ - start),
                                      " is past max_repeat (", options_.limits.max_repeat, ")"));
  }
  return static_cast<int32_t>(value);
}

// A class [...] or [^...] at pos_: members are code points, ranges a-b and class escapes.
absl::StatusOr<RegexPiece> RegexParser::ParseClass() {
  const size_t open = pos_;
  ++pos_;
  const bool negated = At('^');
  if (negated) ++pos_;
  CodepointSet set;
  while (true) {
    if (AtEnd()) return Error(open, "'[' is never closed");
    if (At(']')) {
      ++pos_;
      break;
    }
    const size_t item_offset = pos_;
    ASSIGN_OR_RETURN(ClassItem first, ParseClassItem());
    const bool range = At('-') && pos_ + 1 < pattern_.size() && pattern_[pos_ + 1] != ']';
    if (!range) {
      if (first.is_set) {
        set.AddAll(first.set);
      } else {
        set.Add(first.codepoint, first.codepoint);
      }
      continue;
    }
    ++pos_;
    ASSIGN_OR_RETURN(ClassItem last, ParseClassItem());
    if (first.is_set || last.is_set) {
      return Error(item_offset, "a class escape (\\d \\w \\s ...) cannot bound a range");
    }
    if (first.codepoint > last.codepoint) {
      return Error(item_offset, "range out of order in class");
    }
    set.Add(first.codepoint, last.codepoint);
  }
  return ClassPiece(negated ? set.Complement() : set);
}

absl::StatusOr<ClassItem> RegexParser::ParseClassItem() {
  if (At('\\')) return escapes_.Read(&pos_, /*in_class=*/true);
  ClassItem item;
  item.codepoint = escapes_.Decode(&pos_);
  return item;
}

}  // namespace

absl::StatusOr<GrammarExpr> RegexToExpr(absl::string_view pattern, GrammarBuilder& builder,
                                        const RegexOptions& options) {
  (void)builder;  // the expression needs no helper rule of its own
  if (pattern.size() > kMaxRegexBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("regex is ", pattern.size(), " bytes, past the limit of ", kMaxRegexBytes));
  }
  if (absl::Status valid = utf8::Validate(pattern); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("regex: ", valid.message()));
  }
  return RegexParser(pattern, options).Parse();
}

absl::StatusOr<Grammar> CompileRegex(absl::string_view pattern, const GrammarLimits& limits) {
  GrammarBuilder builder(limits);
  const int32_t root = builder.AddRule("root");
  RegexOptions options;
  options.limits = limits;
  ASSIGN_OR_RETURN(GrammarExpr body, RegexToExpr(pattern, builder, options));
  RETURN_IF_ERROR(builder.DefineRule(root, std::move(body)));
  return std::move(builder).Build(root);
}

}  // namespace tandem
