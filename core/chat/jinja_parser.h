// Parses a Jinja template into a Program (see jinja_ast.h).
//
// Statements: if/elif/else, for (tuple targets, `if` filter, else), set (expression, namespace
// attribute, block form with optional filters), macro, filter blocks, break/continue, raw,
// comments, and {% generation %} (transformers' assistant-mask marker, rendered in place).
// Expressions follow Jinja's precedence: conditional, or, and, not, comparisons (chainable,
// `in`, `not in`), + -, ~, * / // %, **, unary - +, then postfix (.attr, [item], [a:b:c],
// calls) and filters/tests (`|name(args)`, `is [not] name arg`).
#ifndef TANDEM_CORE_CHAT_JINJA_PARSER_H_
#define TANDEM_CORE_CHAT_JINJA_PARSER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/chat/jinja_ast.h"
#include "core/chat/jinja_lexer.h"

namespace tandem::chat::jinja {

struct ParserOptions {
  LexerOptions lexer;
  // Nested blocks or expressions deeper than this are rejected (bounds the recursion).
  int max_depth = 200;
};

// kInvalidArgument "template error at L:C: ..." for any syntax error.
absl::StatusOr<std::unique_ptr<Program>> ParseTemplate(absl::string_view source,
                                                       const ParserOptions& options);

}  // namespace tandem::chat::jinja

#endif  // TANDEM_CORE_CHAT_JINJA_PARSER_H_
