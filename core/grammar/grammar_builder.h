// Lowers the front ends' rule bodies (grammar_expr.h) to the flat byte-level Grammar
// (grammar.h): sequences and choices become alternatives, nested groups and repetitions become
// helper rules (right-recursive, so a long repetition never deepens the matcher's stacks),
// character classes become UTF-8 byte sequences, and a repetition of something that can be
// empty repeats only its non-empty forms.
//
// Everything a client can send ends here, so the builder bounds it (GrammarLimits) and
// refuses, with kInvalidArgument naming the culprit:
//  - a rule that is referenced but never defined, or defined twice;
//  - left recursion (a rule that can reach itself without consuming a byte, as
//    `expr ::= expr "+" term`), naming the rule;
//  - a grammar past a limit (rules, elements after lowering, a repetition count, the nesting
//    of expressions), naming the limit and its value.
#ifndef TANDEM_CORE_GRAMMAR_GRAMMAR_BUILDER_H_
#define TANDEM_CORE_GRAMMAR_GRAMMAR_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/grammar/grammar.h"
#include "core/grammar/grammar_expr.h"

namespace tandem {

struct GrammarLimits {
  int32_t max_rules = 10000;         // rules after lowering, helper rules included
  int64_t max_elements = 1000000;    // elements in Grammar::code after lowering
  int32_t max_repeat = 10000;        // a bounded repetition's min and max
  int32_t max_nesting = 200;         // depth of nested GrammarExprs
};

class GrammarBuilder {
 public:
  explicit GrammarBuilder(GrammarLimits limits = {});

  // Declares a rule (named for messages; names need not be unique) and returns its id. A rule
  // may be referenced (GrammarExpr::Rule) before it is defined.
  int32_t AddRule(std::string name);
  // Defines rule `id`'s body; kInvalidArgument if `id` is unknown or already defined, or if
  // the body is past a limit (nesting, repetition counts).
  absl::Status DefineRule(int32_t id, GrammarExpr body);
  int32_t rule_count() const;

  // The grammar whose start rule is `root`; see the refusals above.
  absl::StatusOr<Grammar> Build(int32_t root) &&;

 private:
  struct Impl;
  std::vector<std::string> names_;
  std::vector<GrammarExpr> bodies_;
  std::vector<bool> defined_;
  GrammarLimits limits_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_GRAMMAR_BUILDER_H_
