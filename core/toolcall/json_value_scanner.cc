#include "core/toolcall/json_value_scanner.h"

namespace tandem::toolcall {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

void JsonValueScanner::Reset() {
  state_ = State::kValue;
  key_ = false;
  stack_.clear();
}

ScanResult JsonValueScanner::Step(char c) {
  switch (state_) {
    case State::kString:
    case State::kEscape:
    case State::kUnicode:
      return StepString(c);
    case State::kNumber:
      return StepNumber(c);
    case State::kLiteral:
      if (*literal_ != c) return ScanResult::kFail;
      ++literal_;
      return *literal_ == '\0' ? EndValue() : ScanResult::kConsumed;
    default:
      return StepContainer(c);
  }
}

ScanResult JsonValueScanner::StepContainer(char c) {
  const bool space = IsJsonSpace(c);
  switch (state_) {
    case State::kValue:
      if (space && !stack_.empty()) return ScanResult::kConsumed;
      return BeginValue(c);
    case State::kArrayFirst:
      if (space) return ScanResult::kConsumed;
      if (c == ']') {
        stack_.pop_back();
        return EndValue();
      }
      return BeginValue(c);
    case State::kObjectFirst:
    case State::kObjectKey:
      if (space) return ScanResult::kConsumed;
      if (c == '}' && state_ == State::kObjectFirst) {
        stack_.pop_back();
        return EndValue();
      }
      if (c != '"') return ScanResult::kFail;
      state_ = State::kString;
      key_ = true;
      return ScanResult::kConsumed;
    case State::kColon:
      if (space) return ScanResult::kConsumed;
      if (c != ':') return ScanResult::kFail;
      state_ = State::kValue;
      return ScanResult::kConsumed;
    case State::kAfterValue:
      if (space) return ScanResult::kConsumed;
      if (c == ',') {
        state_ = stack_.back() == '{' ? State::kObjectKey : State::kValue;
        return ScanResult::kConsumed;
      }
      if ((c == '}' && stack_.back() == '{') || (c == ']' && stack_.back() == '[')) {
        stack_.pop_back();
        return EndValue();
      }
      return ScanResult::kFail;
    default:
      return ScanResult::kFail;
  }
}

ScanResult JsonValueScanner::BeginValue(char c) {
  switch (c) {
    case '{':
    case '[':
      return Open(c);
    case '"':
      state_ = State::kString;
      key_ = false;
      return ScanResult::kConsumed;
    case 't':
      literal_ = "rue";
      state_ = State::kLiteral;
      return ScanResult::kConsumed;
    case 'f':
      literal_ = "alse";
      state_ = State::kLiteral;
      return ScanResult::kConsumed;
    case 'n':
      literal_ = "ull";
      state_ = State::kLiteral;
      return ScanResult::kConsumed;
    case '-':
      state_ = State::kNumber;
      number_ = Number::kMinus;
      return ScanResult::kConsumed;
    default:
      if (!IsDigit(c)) return ScanResult::kFail;
      state_ = State::kNumber;
      number_ = c == '0' ? Number::kZero : Number::kInt;
      return ScanResult::kConsumed;
  }
}

ScanResult JsonValueScanner::Open(char bracket) {
  if (static_cast<int>(stack_.size()) >= kMaxDepth) return ScanResult::kFail;
  stack_.push_back(bracket);
  state_ = bracket == '{' ? State::kObjectFirst : State::kArrayFirst;
  return ScanResult::kConsumed;
}

ScanResult JsonValueScanner::EndValue() {
  if (stack_.empty()) {
    state_ = State::kEnd;
    return ScanResult::kDone;
  }
  state_ = State::kAfterValue;
  return ScanResult::kConsumed;
}

ScanResult JsonValueScanner::StepString(char c) {
  if (state_ == State::kEscape) {
    if (c == 'u') {
      state_ = State::kUnicode;
      unicode_left_ = 4;
      return ScanResult::kConsumed;
    }
    static constexpr char kEscapes[] = "\"\\/bfnrt";
    for (const char* e = kEscapes; *e != '\0'; ++e) {
      if (*e == c) {
        state_ = State::kString;
        return ScanResult::kConsumed;
      }
    }
    return ScanResult::kFail;
  }
  if (state_ == State::kUnicode) {
    if (!IsHex(c)) return ScanResult::kFail;
    if (--unicode_left_ == 0) state_ = State::kString;
    return ScanResult::kConsumed;
  }
  if (static_cast<unsigned char>(c) < 0x20) return ScanResult::kFail;
  if (c == '\\') {
    state_ = State::kEscape;
    return ScanResult::kConsumed;
  }
  if (c != '"') return ScanResult::kConsumed;
  if (key_) {
    key_ = false;
    state_ = State::kColon;
    return ScanResult::kConsumed;
  }
  return EndValue();
}

ScanResult JsonValueScanner::StepNumber(char c) {
  const bool digit = IsDigit(c);
  switch (number_) {
    case Number::kMinus:
      if (!digit) return ScanResult::kFail;
      number_ = c == '0' ? Number::kZero : Number::kInt;
      return ScanResult::kConsumed;
    case Number::kInt:
      if (digit) return ScanResult::kConsumed;
      [[fallthrough]];
    case Number::kZero:
      if (c == '.') {
        number_ = Number::kDot;
        return ScanResult::kConsumed;
      }
      [[fallthrough]];
    case Number::kFrac:
      if (digit && number_ == Number::kFrac) return ScanResult::kConsumed;
      if (c == 'e' || c == 'E') {
        number_ = Number::kE;
        return ScanResult::kConsumed;
      }
      break;
    case Number::kDot:
      if (!digit) return ScanResult::kFail;
      number_ = Number::kFrac;
      return ScanResult::kConsumed;
    case Number::kE:
      if (c == '+' || c == '-') {
        number_ = Number::kESign;
        return ScanResult::kConsumed;
      }
      [[fallthrough]];
    case Number::kESign:
      if (!digit) return ScanResult::kFail;
      number_ = Number::kExp;
      return ScanResult::kConsumed;
    case Number::kExp:
      if (digit) return ScanResult::kConsumed;
      break;
  }
  // `c` is past the number's end (which is complete: the incomplete states returned above).
  if (stack_.empty()) {
    state_ = State::kEnd;
    return ScanResult::kDoneBefore;
  }
  state_ = State::kAfterValue;
  return StepContainer(c);
}

}  // namespace tandem::toolcall
