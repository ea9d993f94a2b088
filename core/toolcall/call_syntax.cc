#include "core/toolcall/call_syntax.h"

#include <algorithm>
#include <utility>

#include "core/base/json.h"

namespace tandem::toolcall {

std::unique_ptr<CallSyntax> NewCallSyntax(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone:
      return nullptr;
    case ToolCallFormat::kLlama3Json:
      return NewLlama3Syntax();
    case ToolCallFormat::kHermes:
      return NewHermesSyntax();
    case ToolCallFormat::kMistral:
      return NewMistralSyntax();
    case ToolCallFormat::kFunctionaryV31:
      return NewFunctionaryV31Syntax();
    case ToolCallFormat::kFunctionaryV32:
      return NewFunctionaryV32Syntax();
    case ToolCallFormat::kFirefunctionV2:
      return NewFirefunctionSyntax();
    case ToolCallFormat::kCommandR:
      return NewCommandRSyntax();
    case ToolCallFormat::kDeepSeekR1:
      return NewDeepSeekR1Syntax();
  }
  return nullptr;
}

// --- LiteralMatcher ---

void LiteralMatcher::Reset(std::vector<absl::string_view> candidates) {
  candidates_ = std::move(candidates);
  pos_ = 0;
  matched_ = absl::string_view();
}

ScanResult LiteralMatcher::Step(char c) {
  const size_t pos = pos_;
  candidates_.erase(std::remove_if(candidates_.begin(), candidates_.end(),
                                   [&](absl::string_view candidate) {
                                     return candidate.size() <= pos || candidate[pos] != c;
                                   }),
                    candidates_.end());
  if (candidates_.empty()) return ScanResult::kFail;
  ++pos_;
  for (absl::string_view candidate : candidates_) {
    if (candidate.size() == pos_) {
      matched_ = candidate;
      return ScanResult::kDone;
    }
  }
  return ScanResult::kConsumed;
}

ScanResult LiteralMatcher::StepAfterSpace(char c) {
  if (pos_ == 0 && IsJsonSpace(c)) return ScanResult::kConsumed;
  return Step(c);
}

// --- NameReader ---

void NameReader::Reset(char terminator) {
  terminator_ = terminator;
  name_.clear();
}

ScanResult NameReader::Step(char c) {
  if (c == terminator_) return name_.empty() ? ScanResult::kFail : ScanResult::kDone;
  const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '.' || c == '-';
  if (!allowed || name_.size() >= kMaxName) return ScanResult::kFail;
  name_.push_back(c);
  return ScanResult::kConsumed;
}

// --- ArgsReader ---

ScanResult ArgsReader::Step(char c, DeltaBuilder& out) {
  const bool first = !scanner_.started();
  if (first && IsJsonSpace(c)) return ScanResult::kConsumed;
  const ScanResult result = scanner_.Step(c);
  if (result == ScanResult::kFail || result == ScanResult::kDoneBefore) return result;
  if (first && !out.ArgsBegin()) return ScanResult::kFail;
  out.ArgsByte(c);
  return result;
}

// --- CallObjectReader ---

void CallObjectReader::Reset() {
  state_ = State::kOpen;
  role_ = Role::kOther;
  key_escape_ = false;
  key_.clear();
  text_.clear();
}

ScanResult CallObjectReader::Step(char c, DeltaBuilder& out) {
  const bool space = IsJsonSpace(c);
  switch (state_) {
    case State::kOpen:
      if (space) return ScanResult::kConsumed;
      if (c != '{') return ScanResult::kFail;
      out.BeginCall();
      state_ = State::kFirstKey;
      return ScanResult::kConsumed;
    case State::kFirstKey:
    case State::kKey:
      if (space) return ScanResult::kConsumed;
      if (c == '}' && state_ == State::kFirstKey) {
        return out.EndCall() ? ScanResult::kDone : ScanResult::kFail;
      }
      if (c != '"') return ScanResult::kFail;
      key_.clear();
      key_escape_ = false;
      state_ = State::kKeyText;
      return ScanResult::kConsumed;
    case State::kKeyText:
      return StepKey(c);
    case State::kColon:
      if (space) return ScanResult::kConsumed;
      if (c != ':') return ScanResult::kFail;
      state_ = State::kValue;
      value_.Reset();
      args_.Reset();
      text_.clear();
      return ScanResult::kConsumed;
    case State::kValue:
      return StepValue(c, out);
    case State::kAfter:
      if (space) return ScanResult::kConsumed;
      if (c == ',') {
        state_ = State::kKey;
        return ScanResult::kConsumed;
      }
      if (c != '}') return ScanResult::kFail;
      return out.EndCall() ? ScanResult::kDone : ScanResult::kFail;
  }
  return ScanResult::kFail;
}

ScanResult CallObjectReader::StepKey(char c) {
  if (static_cast<unsigned char>(c) < 0x20) return ScanResult::kFail;
  if (key_escape_ || c != '"') {
    key_escape_ = !key_escape_ && c == '\\';
    // Past kMaxKey the key matches none of ours: keep one byte more than that, no more.
    if (key_.size() <= kMaxKey) key_.push_back(c);
    return ScanResult::kConsumed;
  }
  if (key_ == keys_.name) {
    role_ = Role::kName;
  } else if (key_ == keys_.arguments || (!keys_.arguments2.empty() && key_ == keys_.arguments2)) {
    role_ = Role::kArgs;
  } else if (!keys_.id.empty() && key_ == keys_.id) {
    role_ = Role::kId;
  } else if (keys_.strict && key_ != "type") {
    return ScanResult::kFail;
  } else {
    role_ = Role::kOther;
  }
  state_ = State::kColon;
  return ScanResult::kConsumed;
}

ScanResult CallObjectReader::StepValue(char c, DeltaBuilder& out) {
  ScanResult result;
  if (role_ == Role::kArgs) {
    result = args_.Step(c, out);
  } else {
    const bool first = !value_.started();
    if (first && IsJsonSpace(c)) return ScanResult::kConsumed;
    const bool string_role = role_ == Role::kName || role_ == Role::kId;
    if (first && string_role && c != '"') return ScanResult::kFail;
    result = value_.Step(c);
    if (string_role && result != ScanResult::kFail) {
      if (text_.size() >= kMaxString) return ScanResult::kFail;
      text_.push_back(c);
      if (result == ScanResult::kDone) result = EndString(out);
    }
  }
  switch (result) {
    case ScanResult::kConsumed:
    case ScanResult::kFail:
      return result;
    case ScanResult::kDone:
      state_ = State::kAfter;
      return ScanResult::kConsumed;
    case ScanResult::kDoneBefore:  // a number ended: `c` follows the value
      state_ = State::kAfter;
      return Step(c, out);
  }
  return ScanResult::kFail;
}

ScanResult CallObjectReader::EndString(DeltaBuilder& out) {
  absl::StatusOr<json::Value> value = json::Parse(text_);
  if (!value.ok() || !value->is_string()) return ScanResult::kFail;
  if (role_ == Role::kId) {
    out.SetId(value->as_string());
    return ScanResult::kDone;
  }
  return out.SetName(value->as_string()) ? ScanResult::kDone : ScanResult::kFail;
}

// --- CallArrayReader ---

void CallArrayReader::Reset() { state_ = State::kFirst; }

ScanResult CallArrayReader::Step(char c, DeltaBuilder& out) {
  const bool space = IsJsonSpace(c);
  switch (state_) {
    case State::kFirst:
    case State::kNext:
      if (space) return ScanResult::kConsumed;
      if (c == ']' && state_ == State::kFirst) return ScanResult::kDone;
      if (c != '{') return ScanResult::kFail;
      object_.Reset();
      state_ = State::kObject;
      return object_.Step(c, out);
    case State::kObject: {
      const ScanResult result = object_.Step(c, out);
      if (result != ScanResult::kDone) return result;
      state_ = State::kAfter;
      return ScanResult::kConsumed;
    }
    case State::kAfter:
      if (space) return ScanResult::kConsumed;
      if (c == ',') {
        state_ = State::kNext;
        return ScanResult::kConsumed;
      }
      return c == ']' ? ScanResult::kDone : ScanResult::kFail;
  }
  return ScanResult::kFail;
}

}  // namespace tandem::toolcall
