// The families whose calls are JSON objects: Hermes (<tool_call> blocks), Mistral and
// firefunction-v2 (arrays after a marker), Command-R (an action list) and Llama 3 (a bare
// object, or several separated by ';').
#include <memory>
#include <vector>

#include "core/toolcall/call_syntax.h"

namespace tandem::toolcall {
namespace {

// <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
class HermesSyntax : public CallSyntax {
 public:
  const std::vector<CallMarker>& markers() const override {
    static const auto* markers = new std::vector<CallMarker>{{"<tool_call>"}};
    return *markers;
  }
  void Begin(int, DeltaBuilder&) override {
    object_.Reset();
    closing_ = false;
  }
  ScanResult Step(char c, DeltaBuilder& out) override {
    if (closing_) return close_.StepAfterSpace(c);
    const ScanResult result = object_.Step(c, out);
    if (result != ScanResult::kDone) return result;
    closing_ = true;
    close_.Reset({"</tool_call>"});
    return ScanResult::kConsumed;
  }

 private:
  CallObjectReader object_{CallObjectKeys{}};
  LiteralMatcher close_;
  bool closing_ = false;
};

// [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": "abcdefghi"}, ...]; a single object
// after the marker is read too.
class MistralSyntax : public CallSyntax {
 public:
  const std::vector<CallMarker>& markers() const override {
    static const auto* markers = new std::vector<CallMarker>{{"[TOOL_CALLS]"}};
    return *markers;
  }
  void Begin(int, DeltaBuilder&) override { state_ = State::kStart; }
  ScanResult Step(char c, DeltaBuilder& out) override {
    switch (state_) {
      case State::kStart:
        if (IsJsonSpace(c)) return ScanResult::kConsumed;
        if (c == '[') {
          array_.Reset();
          state_ = State::kArray;
          return ScanResult::kConsumed;
        }
        object_.Reset();
        state_ = State::kObject;
        return object_.Step(c, out);
      case State::kArray:
        return array_.Step(c, out);
      case State::kObject:
        return object_.Step(c, out);
    }
    return ScanResult::kFail;
  }

 private:
  static CallObjectKeys Keys() {
    CallObjectKeys keys;
    keys.id = "id";
    return keys;
  }
  enum class State : uint8_t { kStart, kArray, kObject };
  State state_ = State::kStart;
  CallArrayReader array_{Keys()};
  CallObjectReader object_{Keys()};
};

// functools[{"name": "f", "arguments": {...}}, ...]
class FirefunctionSyntax : public CallSyntax {
 public:
  const std::vector<CallMarker>& markers() const override {
    static const auto* markers = new std::vector<CallMarker>{{"functools["}};
    return *markers;
  }
  void Begin(int, DeltaBuilder&) override { array_.Reset(); }
  ScanResult Step(char c, DeltaBuilder& out) override { return array_.Step(c, out); }

 private:
  CallArrayReader array_{CallObjectKeys{}};
};

// Command R7B: <|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {...}},
// ...]<|END_ACTION|>; Command-R+: Action: ```json\n[...]\n```. R7B's response delimiters are
// dropped from the content.
class CommandRSyntax : public CallSyntax {
 public:
  const std::vector<CallMarker>& markers() const override {
    static const auto* markers = new std::vector<CallMarker>{
        {"<|START_ACTION|>"},
        {"Action:"},
        {"<|START_RESPONSE|>", /*drop=*/true},
        {"<|END_RESPONSE|>", /*drop=*/true},
    };
    return *markers;
  }
  void Begin(int marker, DeltaBuilder&) override {
    if (marker == 0) {
      state_ = State::kOpen;
      close_text_ = "<|END_ACTION|>";
    } else {
      state_ = State::kFence;
      literal_.Reset({"```json"});
      close_text_ = "```";
    }
  }
  ScanResult Step(char c, DeltaBuilder& out) override {
    switch (state_) {
      case State::kFence: {
        const ScanResult result = literal_.StepAfterSpace(c);
        if (result == ScanResult::kDone) state_ = State::kOpen;
        return result == ScanResult::kDone ? ScanResult::kConsumed : result;
      }
      case State::kOpen:
        if (IsJsonSpace(c)) return ScanResult::kConsumed;
        if (c != '[') return ScanResult::kFail;
        array_.Reset();
        state_ = State::kArray;
        return ScanResult::kConsumed;
      case State::kArray: {
        const ScanResult result = array_.Step(c, out);
        if (result != ScanResult::kDone) return result;
        literal_.Reset({close_text_});
        state_ = State::kClose;
        return ScanResult::kConsumed;
      }
      case State::kClose:
        return literal_.StepAfterSpace(c);
    }
    return ScanResult::kFail;
  }

 private:
  static CallObjectKeys Keys() {
    CallObjectKeys keys;
    keys.name = "tool_name";
    keys.arguments = "parameters";
    return keys;
  }
  enum class State : uint8_t { kFence, kOpen, kArray, kClose };
  State state_ = State::kOpen;
  absl::string_view close_text_;
  LiteralMatcher literal_;
  CallArrayReader array_{Keys()};
};

// The whole message is {"name": "f", "parameters": {...}} (optionally after <|python_tag|>,
// "type": "function" allowed, "arguments" accepted), several separated by ';'. A message
// that starts otherwise is content.
class Llama3Syntax : public CallSyntax {
 public:
  const std::vector<CallMarker>& markers() const override {
    static const auto* markers = new std::vector<CallMarker>{{"<|python_tag|>"}};
    return *markers;
  }
  bool starts_in_syntax() const override { return true; }
  void Begin(int marker, DeltaBuilder&) override {
    state_ = marker < 0 ? State::kStart : State::kObjectStart;
  }
  ScanResult Step(char c, DeltaBuilder& out) override {
    switch (state_) {
      case State::kStart:
        if (c == '<') {
          tag_.Reset({"<|python_tag|>"});
          state_ = State::kTag;
          return tag_.Step(c);
        }
        [[fallthrough]];
      case State::kObjectStart:
        if (IsJsonSpace(c)) return ScanResult::kConsumed;
        if (c != '{') return ScanResult::kFail;
        object_.Reset();
        state_ = State::kObject;
        return object_.Step(c, out);
      case State::kTag: {
        const ScanResult result = tag_.Step(c);
        if (result == ScanResult::kDone) state_ = State::kObjectStart;
        return result == ScanResult::kDone ? ScanResult::kConsumed : result;
      }
      case State::kObject: {
        const ScanResult result = object_.Step(c, out);
        if (result == ScanResult::kDone) state_ = State::kAfter;
        return result == ScanResult::kDone ? ScanResult::kConsumed : result;
      }
      case State::kAfter:
        if (IsJsonSpace(c)) return ScanResult::kConsumed;
        if (c != ';') return ScanResult::kDoneBefore;
        state_ = State::kObjectStart;
        return ScanResult::kConsumed;
    }
    return ScanResult::kFail;
  }

 private:
  static CallObjectKeys Keys() {
    CallObjectKeys keys;
    keys.arguments = "parameters";
    keys.arguments2 = "arguments";
    keys.strict = true;
    return keys;
  }
  enum class State : uint8_t { kStart, kTag, kObjectStart, kObject, kAfter };
  State state_ = State::kStart;
  LiteralMatcher tag_;
  CallObjectReader object_{Keys()};
};

}  // namespace

std::unique_ptr<CallSyntax> NewHermesSyntax() { return std::make_unique<HermesSyntax>(); }
std::unique_ptr<CallSyntax> NewMistralSyntax() { return std::make_unique<MistralSyntax>(); }
std::unique_ptr<CallSyntax> NewFirefunctionSyntax() {
  return std::make_unique<FirefunctionSyntax>();
}
std::unique_ptr<CallSyntax> NewCommandRSyntax() { return std::make_unique<CommandRSyntax>(); }
std::unique_ptr<CallSyntax> NewLlama3Syntax() { return std::make_unique<Llama3Syntax>(); }

}  // namespace tandem::toolcall
