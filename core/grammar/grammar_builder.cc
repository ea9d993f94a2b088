#include "core/grammar/grammar_builder.h"

#include <algorithm>
#include <map>
#include <set>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/grammar/utf8_ranges.h"

namespace tandem {
namespace {

using Alternative = std::vector<int32_t>;
using Alternatives = std::vector<Alternative>;

// Depth of `e`, counting at most up to `limit` + 1 (so a deep tree costs no deep recursion).
int32_t Depth(const GrammarExpr& e, int32_t limit) {
  if (limit < 0) return 1;
  int32_t deepest = 0;
  for (const GrammarExpr& child : e.children) {
    deepest = std::max(deepest, Depth(child, limit - 1));
    if (deepest > limit) break;
  }
  return deepest + 1;
}

// The first repetition count past `max_repeat` in `e` (depth already bounded), or nullopt.
std::optional<int32_t> RepeatPastLimit(const GrammarExpr& e, int32_t max_repeat) {
  if (e.kind == GrammarExpr::Kind::kRepeat) {
    if (e.min > max_repeat) return e.min;
    if (e.max > max_repeat) return e.max;
  }
  for (const GrammarExpr& child : e.children) {
    if (auto past = RepeatPastLimit(child, max_repeat)) return past;
  }
  return std::nullopt;
}

}  // namespace

// The lowering of one Build(): rules (the declared ones, then helpers) to alternatives.
struct GrammarBuilder::Impl {
  explicit Impl(const GrammarLimits& limits) : limits(limits) {}

  const GrammarLimits& limits;
  std::vector<std::string> names;
  std::vector<GrammarExpr> bodies;   // declared rules and the non-empty forms made of them
  std::vector<bool> nullable;        // per rule with a body
  std::vector<int32_t> non_empty;    // rule -> its non-empty form's id; -1 not made; -2 none
  std::vector<Alternatives> lowered; // per rule id (helpers included)
  std::vector<ByteSet> byte_sets;
  std::map<std::array<uint64_t, 4>, int32_t> byte_set_ids;
  std::map<std::vector<std::pair<uint32_t, uint32_t>>, int32_t> class_rules;
  std::set<int32_t> class_rule_ids;  // the rules of class_rules
  int64_t elements = 0;

  std::vector<bool> has_body;        // declared and defined, or a non-empty form

  int32_t NewRule(std::string name) {
    names.push_back(std::move(name));
    lowered.emplace_back();
    bodies.emplace_back();
    nullable.push_back(false);
    non_empty.push_back(-1);
    has_body.push_back(false);
    return static_cast<int32_t>(names.size()) - 1;
  }

  absl::Status CountElements(int64_t n) {
    elements += n;
    if (elements > limits.max_elements) {
      return absl::InvalidArgumentError(absl::StrCat(
          "grammar too large: more than ", limits.max_elements,
          " elements after lowering (limit max_elements)"));
    }
    if (static_cast<int64_t>(names.size()) > limits.max_rules) {
      return absl::InvalidArgumentError(
          absl::StrCat("grammar too large: more than ", limits.max_rules,
                       " rules after lowering (limit max_rules)"));
    }
    return absl::OkStatus();
  }

  int32_t ByteSetId(const ByteSet& set) {
    auto [it, added] = byte_set_ids.emplace(set.words, static_cast<int32_t>(byte_sets.size()));
    if (added) byte_sets.push_back(set);
    return ByteSetElement(it->second);
  }

  bool Nullable(const GrammarExpr& e) const {
    switch (e.kind) {
      case GrammarExpr::Kind::kEmpty: return true;
      case GrammarExpr::Kind::kLiteral: return e.literal.empty();
      case GrammarExpr::Kind::kCharClass: return false;
      case GrammarExpr::Kind::kRule:
        return e.rule >= 0 && e.rule < static_cast<int32_t>(nullable.size()) && nullable[e.rule];
      case GrammarExpr::Kind::kSequence:
        return std::all_of(e.children.begin(), e.children.end(),
                           [this](const GrammarExpr& c) { return Nullable(c); });
      case GrammarExpr::Kind::kChoice:
        return std::any_of(e.children.begin(), e.children.end(),
                           [this](const GrammarExpr& c) { return Nullable(c); });
      case GrammarExpr::Kind::kRepeat: return e.min == 0 || Nullable(e.children[0]);
    }
    return false;
  }

  void ComputeNullable() {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < bodies.size(); ++r) {
        if (has_body[r] && !nullable[r] && Nullable(bodies[r])) nullable[r] = changed = true;
      }
    }
  }

  // `e` without the empty string: nullopt if e matches only the empty string. For rules, a
  // rule made of the body's non-empty form (memoised, so recursion terminates).
  std::optional<GrammarExpr> NonEmpty(const GrammarExpr& e) {
    using Kind = GrammarExpr::Kind;
    if (!Nullable(e)) return e;
    switch (e.kind) {
      case Kind::kEmpty: case Kind::kLiteral: case Kind::kCharClass: return std::nullopt;
      case Kind::kRule: {
        const int32_t id = NonEmptyRule(e.rule);
        if (id < 0) return std::nullopt;
        return GrammarExpr::Rule(id);
      }
      case Kind::kChoice: {
        std::vector<GrammarExpr> kept;
        for (const GrammarExpr& c : e.children) {
          if (auto ne = NonEmpty(c)) kept.push_back(std::move(*ne));
        }
        if (kept.empty()) return std::nullopt;
        return GrammarExpr::Choice(std::move(kept));
      }
      case Kind::kSequence: {
        // The first non-empty child is c_i; the ones before it match nothing (all nullable).
        std::vector<GrammarExpr> choices;
        for (size_t i = 0; i < e.children.size(); ++i) {
          if (auto ne = NonEmpty(e.children[i])) {
            std::vector<GrammarExpr> seq = {std::move(*ne)};
            seq.insert(seq.end(), e.children.begin() + i + 1, e.children.end());
            choices.push_back(GrammarExpr::Sequence(std::move(seq)));
          }
        }
        if (choices.empty()) return std::nullopt;
        return GrammarExpr::Choice(std::move(choices));
      }
      case Kind::kRepeat: {
        if (e.max == 0) return std::nullopt;
        auto ne = NonEmpty(e.children[0]);
        if (!ne) return std::nullopt;
        const int32_t rest_max = e.max == kUnbounded ? kUnbounded : e.max - 1;
        return GrammarExpr::Sequence(
            {std::move(*ne), GrammarExpr::Repeat(e.children[0], 0, rest_max)});
      }
    }
    return std::nullopt;
  }

  int32_t NonEmptyRule(int32_t rule) {
    if (non_empty[rule] != -1) return non_empty[rule];
    const int32_t id = NewRule(absl::StrCat(names[rule], "-nonempty"));
    non_empty[rule] = id;
    non_empty[id] = -2;
    const GrammarExpr original = bodies[rule];  // NonEmpty may grow `bodies`
    std::optional<GrammarExpr> body = NonEmpty(original);
    if (!body) {
      // Nothing refers to it: still, every rule keeps an alternative (one that never matches).
      lowered[id] = {Alternative{ByteSetId(ByteSet())}};
      non_empty[rule] = -2;
      return -2;
    }
    bodies[id] = std::move(*body);
    has_body[id] = true;
    return id;
  }

  absl::StatusOr<Alternatives> LowerAlternatives(const GrammarExpr& e) {
    Alternatives alts;
    if (e.kind == GrammarExpr::Kind::kChoice) {
      for (const GrammarExpr& c : e.children) {
        Alternative alt;
        RETURN_IF_ERROR(LowerSequence(c, &alt));
        RETURN_IF_ERROR(AddAlternative(std::move(alt), &alts));
      }
    } else {
      Alternative alt;
      RETURN_IF_ERROR(LowerSequence(e, &alt));
      RETURN_IF_ERROR(AddAlternative(std::move(alt), &alts));
    }
    return alts;
  }

  // Appends `alt`, or, when it is just a character class's rule, that rule's alternatives
  // (its UTF-8 sequences): then a repetition of the class loops inside one rule, and a stack
  // inside a string body stays on the string's rule instead of a one-character rule, which
  // keeps the tokens whose acceptance depends on the stack below few (position_token_sets.h).
  absl::Status AddAlternative(Alternative alt, Alternatives* alts) {
    if (alt.size() == 1 && IsRuleRef(alt[0]) && class_rule_ids.count(alt[0]) > 0) {
      for (const Alternative& inlined : lowered[alt[0]]) {
        RETURN_IF_ERROR(CountElements(static_cast<int64_t>(inlined.size()) + 1));
        alts->push_back(inlined);
      }
      return absl::OkStatus();
    }
    alts->push_back(std::move(alt));
    return absl::OkStatus();
  }

  absl::StatusOr<int32_t> HelperRule(std::string name, Alternatives alts) {
    const int32_t id = NewRule(std::move(name));
    int64_t n = 0;
    for (const Alternative& alt : alts) n += static_cast<int64_t>(alt.size()) + 1;
    RETURN_IF_ERROR(CountElements(n));
    lowered[id] = std::move(alts);
    return id;
  }

  absl::Status LowerSequence(const GrammarExpr& e, Alternative* out) {
    using Kind = GrammarExpr::Kind;
    switch (e.kind) {
      case Kind::kEmpty: return absl::OkStatus();
      case Kind::kLiteral:
        RETURN_IF_ERROR(CountElements(static_cast<int64_t>(e.literal.size())));
        for (unsigned char c : e.literal) {
          ByteSet set;
          set.Add(c);
          out->push_back(ByteSetId(set));
        }
        return absl::OkStatus();
      case Kind::kCharClass: return LowerClass(e, out);
      case Kind::kRule: out->push_back(e.rule); return CountElements(1);
      case Kind::kSequence:
        for (const GrammarExpr& c : e.children) RETURN_IF_ERROR(LowerSequence(c, out));
        return absl::OkStatus();
      case Kind::kChoice: {
        ASSIGN_OR_RETURN(Alternatives alts, LowerAlternatives(e));
        if (alts.size() == 1) {
          out->insert(out->end(), alts[0].begin(), alts[0].end());
          return absl::OkStatus();
        }
        ASSIGN_OR_RETURN(int32_t id, HelperRule("group", std::move(alts)));
        out->push_back(id);
        return CountElements(1);
      }
      case Kind::kRepeat: return LowerRepeat(e, out);
    }
    return absl::OkStatus();
  }

  absl::Status LowerClass(const GrammarExpr& e, Alternative* out) {
    const std::vector<CodepointRange> ranges = NormalizeRanges(e.ranges, e.negated);
    std::vector<std::pair<uint32_t, uint32_t>> key;
    for (CodepointRange r : ranges) key.emplace_back(r.lo, r.hi);
    if (ranges.empty() || ranges.back().hi < 0x80) {  // one byte (or nothing at all)
      ByteSet set;
      for (CodepointRange r : ranges) set.AddRange(r.lo, r.hi);
      out->push_back(ByteSetId(set));
      return CountElements(1);
    }
    auto it = class_rules.find(key);
    if (it == class_rules.end()) {
      Alternatives alts;
      ByteSet ascii;
      bool has_ascii = false;
      for (const Utf8Sequence& seq : Utf8Sequences(ranges)) {
        if (seq.size() == 1) {
          ascii.AddRange(seq[0].first, seq[0].second);
          has_ascii = true;
          continue;
        }
        Alternative alt;
        for (auto [lo, hi] : seq) {
          ByteSet set;
          set.AddRange(lo, hi);
          alt.push_back(ByteSetId(set));
        }
        alts.push_back(std::move(alt));
      }
      if (has_ascii) alts.insert(alts.begin(), Alternative{ByteSetId(ascii)});
      ASSIGN_OR_RETURN(int32_t id, HelperRule("char", std::move(alts)));
      it = class_rules.emplace(std::move(key), id).first;
      class_rule_ids.insert(id);
    }
    out->push_back(it->second);
    return CountElements(1);
  }

  absl::Status LowerRepeat(const GrammarExpr& e, Alternative* out) {
    const GrammarExpr& child = e.children[0];
    ASSIGN_OR_RETURN(Alternatives alts, LowerAlternatives(child));
    if (e.min > 0) {
      Alternative unit;  // one occurrence of the child
      if (alts.size() == 1) {
        unit = alts[0];
      } else {
        ASSIGN_OR_RETURN(int32_t id, HelperRule("repeat-item", alts));
        unit = {id};
      }
      RETURN_IF_ERROR(CountElements(static_cast<int64_t>(unit.size()) * e.min));
      for (int32_t i = 0; i < e.min; ++i) out->insert(out->end(), unit.begin(), unit.end());
    }
    if (e.max == kUnbounded) {
      // star ::= item star | ""   with the item's non-empty form, so the rule is never
      // left-recursive through an item that can match nothing.
      std::optional<GrammarExpr> ne = NonEmpty(child);
      if (!ne) return absl::OkStatus();
      ASSIGN_OR_RETURN(Alternatives items, LowerAlternatives(*ne));
      const int32_t star = NewRule("star");
      RETURN_IF_ERROR(DefineLoop(star, std::move(items), star));
      out->push_back(star);
      return CountElements(1);
    }
    // up_to_k ::= item up_to_(k-1) | ""   (unambiguous: each copy is taken in turn)
    int32_t previous = -1;
    for (int32_t k = 1; k <= e.max - e.min; ++k) {
      const int32_t rule = NewRule("optional");
      RETURN_IF_ERROR(DefineLoop(rule, alts, previous));
      previous = rule;
    }
    if (previous >= 0) {
      out->push_back(previous);
      return CountElements(1);
    }
    return absl::OkStatus();
  }

  // rule ::= item_1 next | ... | item_n next | ""   (next < 0: nothing after the items).
  absl::Status DefineLoop(int32_t rule, Alternatives items, int32_t next) {
    int64_t n = 1;
    for (Alternative& item : items) {
      if (next >= 0) item.push_back(next);
      n += static_cast<int64_t>(item.size()) + 1;
    }
    items.emplace_back();
    RETURN_IF_ERROR(CountElements(n));
    lowered[rule] = std::move(items);
    return absl::OkStatus();
  }
};

GrammarBuilder::GrammarBuilder(GrammarLimits limits) : limits_(limits) {}

int32_t GrammarBuilder::AddRule(std::string name) {
  names_.push_back(std::move(name));
  bodies_.emplace_back();
  defined_.push_back(false);
  return static_cast<int32_t>(names_.size()) - 1;
}

int32_t GrammarBuilder::rule_count() const { return static_cast<int32_t>(names_.size()); }

absl::Status GrammarBuilder::DefineRule(int32_t id, GrammarExpr body) {
  if (id < 0 || id >= rule_count()) {
    return absl::InvalidArgumentError(absl::StrCat("no rule with id ", id));
  }
  if (defined_[id]) {
    return absl::InvalidArgumentError(absl::StrCat("rule '", names_[id], "' is defined twice"));
  }
  if (Depth(body, limits_.max_nesting) > limits_.max_nesting) {
    return absl::InvalidArgumentError(absl::StrCat("rule '", names_[id], "' nests deeper than ",
                                                   limits_.max_nesting, " levels"));
  }
  if (auto past = RepeatPastLimit(body, limits_.max_repeat)) {
    return absl::InvalidArgumentError(absl::StrCat("rule '", names_[id], "' repeats ", *past,
                                                   " times, more than the limit of ",
                                                   limits_.max_repeat));
  }
  bodies_[id] = std::move(body);
  defined_[id] = true;
  return absl::OkStatus();
}

namespace {

// Adds to `out` each rule id referenced in `e`.
void References(const GrammarExpr& e, std::vector<int32_t>* out) {
  if (e.kind == GrammarExpr::Kind::kRule) out->push_back(e.rule);
  for (const GrammarExpr& child : e.children) References(child, out);
}

// Per rule of the lowered grammar: whether it can match the empty string.
std::vector<bool> NullableRules(const std::vector<Alternatives>& rules) {
  std::vector<bool> nullable(rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const Alternative& alt : rules[r]) {
        if (std::all_of(alt.begin(), alt.end(),
                        [&](int32_t el) { return IsRuleRef(el) && nullable[el]; })) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

// kInvalidArgument naming a rule that can reach itself without consuming a byte.
absl::Status CheckLeftRecursion(const std::vector<Alternatives>& rules,
                                const std::vector<std::string>& names, int32_t declared) {
  const std::vector<bool> nullable = NullableRules(rules);
  // left[r]: the rules r can start with (reached past nullable elements only).
  std::vector<std::vector<int32_t>> left(rules.size());
  for (size_t r = 0; r < rules.size(); ++r) {
    for (const Alternative& alt : rules[r]) {
      for (int32_t el : alt) {
        if (!IsRuleRef(el)) break;
        left[r].push_back(el);
        if (!nullable[el]) break;
      }
    }
  }
  // Iterative depth-first search; a grey rule reached again closes a cycle.
  enum : uint8_t { kWhite, kGrey, kBlack };
  std::vector<uint8_t> color(rules.size(), kWhite);
  std::vector<std::pair<int32_t, size_t>> stack;
  for (size_t start = 0; start < rules.size(); ++start) {
    if (color[start] != kWhite) continue;
    stack.emplace_back(static_cast<int32_t>(start), 0);
    color[start] = kGrey;
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == left[r].size()) {
        color[r] = kBlack;
        stack.pop_back();
        continue;
      }
      const int32_t to = left[r][next++];
      if (color[to] == kGrey) {
        // Name a declared rule on the cycle (helpers are numbered after them).
        int32_t named = to;
        for (auto it = stack.rbegin(); it != stack.rend() && named >= declared; ++it) {
          named = it->first;
          if (it->first == to) break;
        }
        return absl::InvalidArgumentError(absl::StrCat(
            "left recursion: rule '", names[named],
            "' can reach itself without consuming any text (write it right-recursively, e.g. "
            "list ::= item (\",\" list)?)"));
      }
      if (color[to] == kWhite) {
        color[to] = kGrey;
        stack.emplace_back(to, 0);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Grammar> GrammarBuilder::Build(int32_t root) && {
  if (root < 0 || root >= rule_count() || !defined_[root]) {
    return absl::InvalidArgumentError(
        root >= 0 && root < rule_count()
            ? absl::StrCat("the start rule '", names_[root], "' is not defined")
            : absl::StrCat("no start rule with id ", root));
  }
  for (int32_t r = 0; r < rule_count(); ++r) {
    std::vector<int32_t> refs;
    References(bodies_[r], &refs);
    for (int32_t ref : refs) {
      if (ref < 0 || ref >= rule_count()) {
        return absl::InvalidArgumentError(
            absl::StrCat("rule '", names_[r], "' refers to an unknown rule id ", ref));
      }
      if (!defined_[ref]) {
        return absl::InvalidArgumentError(
            absl::StrCat("rule '", names_[ref], "' is used but not defined"));
      }
    }
  }
  Impl impl(limits_);
  for (int32_t r = 0; r < rule_count(); ++r) {
    impl.NewRule(names_[r]);
    impl.bodies[r] = std::move(bodies_[r]);
    impl.has_body[r] = defined_[r];
  }
  impl.ComputeNullable();
  for (int32_t r = 0; r < static_cast<int32_t>(impl.names.size()); ++r) {
    if (!impl.has_body[r]) continue;
    const GrammarExpr body = impl.bodies[r];  // lowering may grow `bodies`
    ASSIGN_OR_RETURN(Alternatives alts, impl.LowerAlternatives(body));
    RETURN_IF_ERROR(impl.CountElements(static_cast<int64_t>(alts.size())));
    impl.lowered[r] = std::move(alts);
  }
  RETURN_IF_ERROR(CheckLeftRecursion(impl.lowered, impl.names, rule_count()));

  Grammar grammar;
  grammar.root = root;
  grammar.rule_names = std::move(impl.names);
  grammar.byte_sets = std::move(impl.byte_sets);
  grammar.rules.resize(impl.lowered.size());
  for (size_t r = 0; r < impl.lowered.size(); ++r) {
    for (const Alternative& alt : impl.lowered[r]) {
      grammar.rules[r].push_back(static_cast<int32_t>(grammar.code.size()));
      grammar.code.insert(grammar.code.end(), alt.begin(), alt.end());
      grammar.code.push_back(kEndOfAlternative);
    }
  }
  return grammar;
}

}  // namespace tandem
