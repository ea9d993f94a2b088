// An incremental scanner of one JSON value, fed a byte at a time, for the tool-call parsers:
// it says whether each byte belongs to the value and where the value ends, without building
// it, so argument text can stream out as soon as it is known to be inside the arguments.
//
//   JsonValueScanner scanner;
//   for (char c : R"({"a": [1, "x"]})") scanner.Step(c);  // kConsumed ... kDone at the '}'
//
// It validates the syntax (RFC 8259: strings with their escapes, numbers, literals) and
// refuses nesting deeper than kMaxDepth. Bytes inside strings are not checked as UTF-8 (the
// parsers are fed whole UTF-8 characters). Plain data, one thread at a time.
#ifndef TANDEM_CORE_TOOLCALL_JSON_VALUE_SCANNER_H_
#define TANDEM_CORE_TOOLCALL_JSON_VALUE_SCANNER_H_

#include <cstdint>
#include <string>

namespace tandem::toolcall {

// What a scanner made of one byte (the call parsers' machines answer the same way).
enum class ScanResult : uint8_t {
  kConsumed,    // the byte belongs to the construct, which goes on
  kDone,        // the byte belongs to it and completes it
  kDoneBefore,  // the construct had already ended: the byte is not its (feed it elsewhere)
  kFail,        // the byte cannot follow: the text is not this construct
};

// Whether `c` is JSON whitespace.
inline bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class JsonValueScanner {
 public:
  // Deeper nesting is refused as malformed (bounds the scanner's memory and the held text).
  static constexpr int kMaxDepth = 128;

  // The first byte must begin the value (no leading whitespace).
  ScanResult Step(char c);

  // Whether a byte of the value has been consumed.
  bool started() const { return state_ != State::kValue || !stack_.empty(); }
  // Back to the state before the first byte.
  void Reset();

 private:
  enum class State : uint8_t {
    kValue,        // a value must begin (whitespace allowed inside a container)
    kArrayFirst,   // after '[': a value or ']'
    kObjectFirst,  // after '{': a key or '}'
    kObjectKey,    // after ',' in an object: a key
    kColon,        // after a key
    kAfterValue,   // inside a container after a value: ',' or the closing bracket
    kString,
    kEscape,
    kUnicode,  // inside \uXXXX
    kNumber,
    kLiteral,  // true, false, null
    kEnd,      // the value is complete: nothing more belongs to it
  };
  enum class Number : uint8_t { kMinus, kZero, kInt, kDot, kFrac, kE, kESign, kExp };

  ScanResult BeginValue(char c);
  ScanResult EndValue();
  ScanResult StepContainer(char c);
  ScanResult StepString(char c);
  ScanResult StepNumber(char c);
  ScanResult Open(char bracket);

  State state_ = State::kValue;
  Number number_ = Number::kMinus;
  bool key_ = false;               // the string being scanned is an object key
  int unicode_left_ = 0;           // hex digits still expected in \uXXXX
  const char* literal_ = nullptr;  // the rest of the literal being matched
  std::string stack_;              // the open brackets, '{' or '['
};

}  // namespace tandem::toolcall

#endif  // TANDEM_CORE_TOOLCALL_JSON_VALUE_SCANNER_H_
