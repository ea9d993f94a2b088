// What the streaming tool-call parser has made certain, as deltas: content (with the
// whitespace rule below), the text held back while it may still be a call, and the calls,
// each announced once its name is known and its arguments begin.
//
// The family syntaxes (call_syntax.h) report what they recognise through the call methods;
// the parser (tool_call_parser.cc) routes text and the held text. Rules:
//  - a call is announced (its first delta: index, name, the model's id if already seen, the
//    arguments so far) when its arguments begin and its name is known, or when its syntax
//    ends without arguments (arguments "{}"); from then on it stays a call;
//  - argument bytes go out as they come once announced (before: kept with the call);
//  - whitespace next to a call is dropped from the content; other whitespace is held until
//    the next non-space content byte (or the end, when no call was made next to it).
// Plain data, one thread at a time.
#ifndef TANDEM_CORE_TOOLCALL_DELTA_BUILDER_H_
#define TANDEM_CORE_TOOLCALL_DELTA_BUILDER_H_

#include <string>

#include "absl/strings/string_view.h"
#include "core/toolcall/tool_call_parser.h"

namespace tandem::toolcall {

class DeltaBuilder {
 public:
  // --- Content ---
  void Content(char c);
  void Content(absl::string_view text);

  // --- Held text: the call syntax's own text from its marker (or the start of a call) while
  // no call has been announced from it. ---
  // The parser enters a call syntax after `marker` (may be empty).
  void StartHolding(absl::string_view marker);
  bool holding() const { return holding_; }
  // Appends a byte the syntax consumed, while holding.
  void Hold(char c);
  // The held text was not a call: it becomes content; the unfinished call is forgotten.
  void ReleaseHeld();
  // The syntax ended (or broke after its calls): the held text was syntax; any unfinished
  // call is forgotten.
  void DropHeld();

  // --- Calls, reported by the syntaxes ---
  // A call's text starts with the byte being consumed (starts holding unless already).
  void BeginCall();
  // Its name (decoded; non-empty) and the model's id. SetName returns false (malformed) when
  // the call already has a name or `name` is empty.
  bool SetName(std::string name);
  void SetId(std::string id);
  bool has_name() const { return !name_.empty(); }
  // Its arguments value begins (returns false if it already had one), and one of its bytes.
  bool ArgsBegin();
  void ArgsByte(char c);
  // Its syntax is complete. False (malformed) when it has no name.
  bool EndCall();

  // --- Output ---
  // End of output: trailing whitespace not next to a call goes out.
  void FinishContent();
  ParsedDelta Take();

 private:
  void Announce();
  void ResetCall();
  ToolCallDelta& CallDelta();

  ParsedDelta out_;
  std::string pending_space_;  // content whitespace not yet known to stay
  bool after_call_ = false;    // only whitespace since the last call
  bool holding_ = false;
  std::string held_;
  // The call being read.
  int next_index_ = 0;
  bool announced_ = false;
  bool args_begun_ = false;
  std::string name_;
  std::string id_;
  std::string args_;  // before the announcement
};

}  // namespace tandem::toolcall

#endif  // TANDEM_CORE_TOOLCALL_DELTA_BUILDER_H_
