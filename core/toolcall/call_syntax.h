// One family's call syntax, as a byte-at-a-time machine the streaming parser drives
// (tool_call_parser.cc): the markers that leave plain text for calls, and what follows them.
// The machine reports names, ids and argument bytes to a DeltaBuilder and answers each byte
// with a ScanResult: kConsumed/kDone (back to text after it)/kDoneBefore (back to text, the
// byte is text)/kFail (not this syntax: the parser reads the byte as text).
//
// Also the small pieces the families share: literal matching, a call's name, an arguments
// value, a JSON call object ({"name": ..., "arguments": ...}) and an array of them.
#ifndef TANDEM_CORE_TOOLCALL_CALL_SYNTAX_H_
#define TANDEM_CORE_TOOLCALL_CALL_SYNTAX_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/toolcall/delta_builder.h"
#include "core/toolcall/json_value_scanner.h"
#include "core/toolcall/tool_call_format.h"

namespace tandem::toolcall {

// A text that switches plain text to the call syntax, or that is dropped from the content
// (Command R7B's response delimiters).
struct CallMarker {
  absl::string_view text;
  bool drop = false;
};

class CallSyntax {
 public:
  virtual ~CallSyntax() = default;
  virtual const std::vector<CallMarker>& markers() const = 0;
  // Whether the output begins inside the syntax (a bare Llama 3 call; functionary v3.2's
  // first recipient, whose ">>>" the prompt wrote).
  virtual bool starts_in_syntax() const { return false; }
  // Enters the syntax after markers()[marker], or at the output's start (marker -1).
  virtual void Begin(int marker, DeltaBuilder& out) = 0;
  virtual ScanResult Step(char c, DeltaBuilder& out) = 0;
};

// kNone: nullptr.
std::unique_ptr<CallSyntax> NewCallSyntax(ToolCallFormat format);

// The families' machines (one file each family group).
std::unique_ptr<CallSyntax> NewHermesSyntax();
std::unique_ptr<CallSyntax> NewMistralSyntax();
std::unique_ptr<CallSyntax> NewFirefunctionSyntax();
std::unique_ptr<CallSyntax> NewCommandRSyntax();
std::unique_ptr<CallSyntax> NewLlama3Syntax();
std::unique_ptr<CallSyntax> NewFunctionaryV31Syntax();
std::unique_ptr<CallSyntax> NewFunctionaryV32Syntax();
std::unique_ptr<CallSyntax> NewDeepSeekR1Syntax();

// --- Shared pieces ---

// Matches one of a few literals (none a prefix of another), byte by byte.
class LiteralMatcher {
 public:
  void Reset(std::vector<absl::string_view> candidates);
  // kDone when a candidate is complete (matched() says which), kFail when none fits.
  ScanResult Step(char c);
  // The same, but whitespace before the literal's first byte is consumed.
  ScanResult StepAfterSpace(char c);
  bool at_start() const { return pos_ == 0; }
  absl::string_view matched() const { return matched_; }

 private:
  std::vector<absl::string_view> candidates_;
  size_t pos_ = 0;
  absl::string_view matched_;
};

// A function name written outside JSON, up to a terminator byte: [A-Za-z0-9_.-]{1,64}.
class NameReader {
 public:
  static constexpr size_t kMaxName = 64;
  void Reset(char terminator);
  // kDone at the terminator (name() is complete), kFail on any other byte or an empty name.
  ScanResult Step(char c);
  const std::string& name() const { return name_; }

 private:
  char terminator_ = '\n';
  std::string name_;
};

// An arguments value: optional leading whitespace, then a JSON value whose bytes go to the
// call (DeltaBuilder::ArgsBegin at its first byte). kDone/kDoneBefore at its end.
class ArgsReader {
 public:
  void Reset() { scanner_.Reset(); }
  ScanResult Step(char c, DeltaBuilder& out);

 private:
  JsonValueScanner scanner_;
};

// Which keys of a JSON call object carry what.
struct CallObjectKeys {
  absl::string_view name = "name";
  absl::string_view arguments = "arguments";
  absl::string_view arguments2;  // a second accepted spelling ("" none)
  absl::string_view id;          // the model's call id ("" none)
  // Other keys are skipped; with `strict`, only "type" is (Llama 3, whose bare JSON message
  // is content unless it is a call).
  bool strict = false;
};

// One JSON call object, from its '{' (which begins the call) to its '}' (kDone).
class CallObjectReader {
 public:
  static constexpr size_t kMaxKey = 64;
  static constexpr size_t kMaxString = 256;  // a name or id, as written

  explicit CallObjectReader(CallObjectKeys keys) : keys_(keys) {}
  void Reset();
  ScanResult Step(char c, DeltaBuilder& out);

 private:
  enum class State : uint8_t { kOpen, kFirstKey, kKey, kKeyText, kColon, kValue, kAfter };
  enum class Role : uint8_t { kName, kArgs, kId, kOther };
  ScanResult StepKey(char c);
  ScanResult StartValue(char c, DeltaBuilder& out);
  ScanResult StepValue(char c, DeltaBuilder& out);
  ScanResult EndString(DeltaBuilder& out);

  CallObjectKeys keys_;
  State state_ = State::kOpen;
  Role role_ = Role::kOther;
  bool key_escape_ = false;
  std::string key_;
  std::string text_;  // a name or id string as written
  JsonValueScanner value_;
  ArgsReader args_;
};

// A JSON array of call objects, from after its '[' to its ']' (kDone).
class CallArrayReader {
 public:
  explicit CallArrayReader(CallObjectKeys keys) : object_(keys) {}
  void Reset();
  ScanResult Step(char c, DeltaBuilder& out);

 private:
  enum class State : uint8_t { kFirst, kObject, kAfter, kNext };
  State state_ = State::kFirst;
  CallObjectReader object_;
};

}  // namespace tandem::toolcall

#endif  // TANDEM_CORE_TOOLCALL_CALL_SYNTAX_H_
