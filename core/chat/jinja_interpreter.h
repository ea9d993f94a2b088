// Renders a parsed Jinja template (a small interpreter of our own for chat templates).
//
//   ASSIGN_OR_RETURN(Template t, Template::Parse(source, options));
//   ASSIGN_OR_RETURN(std::string text, t.Render({{"messages", FromJson(messages)}}, {}));
//
// Scoping follows Jinja: `set` inside a for loop or macro stays there (namespace() objects carry
// state out), if-blocks share their parent's scope, macros see the variables of the scope they
// were defined in at call time. Besides the caller's globals a template sees Jinja's range(),
// namespace() and dict().
//
// Every error is an absl::Status naming the template position: kInvalidArgument for syntax and
// run-time errors (undefined operands, bad types, a failing global such as raise_exception),
// kResourceExhausted when a rendering exceeds RenderOptions' limits. A namespace() object
// cannot be put in a list, a dict or a namespace (kInvalidArgument): values never hold
// themselves. Nothing crashes.
//
// A Template is immutable after Parse; Render may run concurrently from several threads.
#ifndef TANDEM_CORE_CHAT_JINJA_INTERPRETER_H_
#define TANDEM_CORE_CHAT_JINJA_INTERPRETER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/chat/jinja_ast.h"
#include "core/chat/jinja_parser.h"
#include "core/chat/jinja_value.h"

namespace tandem::chat::jinja {

struct RenderOptions {
  // The rendered text, and any macro's or block's text, may not exceed this many bytes.
  size_t max_output_bytes = size_t{16} << 20;
  // Nested macro and function calls (bounds recursion).
  int max_call_depth = 64;
  // Loop iterations over the whole rendering.
  int64_t max_loop_iterations = 1'000'000;
  // Any value an expression makes: its Value::weight() (about the bytes printing it takes; a
  // string's size) and how deeply lists and dicts nest in it. Bounds the memory and the time
  // of a template that grows values without printing them, or prints a shared structure.
  uint64_t max_value_bytes = uint64_t{16} << 20;
  int max_value_depth = 128;
  // The weights of all the values the expressions of one rendering make (not the ones they
  // look up), summed: bounds the time of a loop that copies a large value on every iteration.
  uint64_t max_computed_bytes = uint64_t{1} << 30;
};

class Template {
 public:
  // Syntax errors are kInvalidArgument with the position; so are unknown filters and tests.
  static absl::StatusOr<Template> Parse(absl::string_view source,
                                        const ParserOptions& options = {});

  absl::StatusOr<std::string> Render(const std::vector<std::pair<std::string, Value>>& globals,
                                     const RenderOptions& options = {}) const;

 private:
  explicit Template(std::shared_ptr<const Program> program) : program_(std::move(program)) {}

  std::shared_ptr<const Program> program_;
};

}  // namespace tandem::chat::jinja

#endif  // TANDEM_CORE_CHAT_JINJA_INTERPRETER_H_
